#!/usr/bin/env bash
# Another Debian release's net/ipv6/ila, for a column of its own.
#
#   kernel/fetch-ila.sh VERSION     (e.g. 6.1.176-1) prints the directory
#
# The release's linux-source .deb is fetched once with `apt-get download`
# into $ILA_CACHE/debs (shared with build-kernel.sh and check-patches.sh;
# nothing is installed, the installed package is never replaced), and only
# net/ipv6/ila/ is extracted, into $ILA_CACHE/src/ila-VERSION. It is then
# built against the cached kernel as intree+patches is (build-module.sh).
set -euo pipefail

cache=${ILA_CACHE:-$HOME/.cache/ila-conformance}
version=${1:?usage: fetch-ila.sh VERSION (a release apt-cache madison linux-source-6.1 lists)}
series=$(echo "$version" | cut -d. -f1,2)
pkg=linux-source-$series
deb=$cache/debs/${pkg}_${version}_all.deb
dir=$cache/src/ila-$version

die() { echo "fetch-ila: $*" >&2; exit 1; }

# Checked under the lock: another run (from a second checkout) may have
# extracted it while this one waited, and may be building from it now.
mkdir -p "$cache/debs" "$cache/src" "$cache/locks"
exec 9>"$cache/locks/fetch-ila-$version"
flock 9
if [ ! -f "$dir/.ila-extracted" ]; then
	if [ ! -f "$deb" ]; then
		echo "fetch-ila: downloading $pkg=$version into $cache/debs" >&2
		(cd "$cache/debs" && apt-get download -q -o APT::Sandbox::User="$(id -un)" \
			"$pkg=$version" >&2) ||
			die "cannot download $pkg=$version ('apt-cache madison $pkg' lists the releases apt knows)"
	fi
	rm -rf "$dir" "$dir.tmp"
	mkdir -p "$dir.tmp"
	echo "fetch-ila: extracting net/ipv6/ila of $pkg $version (about 15 s)" >&2
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" |
		tar -C "$dir.tmp" --strip-components=4 -xJ --wildcards '*/net/ipv6/ila/*'
	[ -f "$dir.tmp/ila_lwt.c" ] || die "$deb holds no net/ipv6/ila/ila_lwt.c"
	touch "$dir.tmp/.ila-extracted"
	mv "$dir.tmp" "$dir"
fi
echo "$dir"
