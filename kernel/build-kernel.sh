#!/usr/bin/env bash
# Build the guest kernel out of the repository, keyed by what goes into it.
#
#   kernel/build-kernel.sh --dir    print the build directory for the fragments
#   kernel/build-kernel.sh          build it unless it is already built
#
# KVER picks Debian's source: a series (6.1, the default, or 6.12) means the
# installed linux-source-SERIES package; a full Debian version (6.1.176-1)
# means that release, downloaded into the cache with `apt-get download` when
# it is not the installed one (nothing is installed). The tarball is
# extracted once per release into $ILA_CACHE/src; each distinct set of config
# fragments gets its own O= build directory $ILA_CACHE/build/<version>-<hash>,
# so a second run reuses it and a changed fragment builds afresh. Fragments
# come from $KERNEL_FRAGMENTS (space-separated paths), default
# kernel/config/base.config. Before anything is built, kernel/patches/ must
# apply to the source: a release they do not fit is refused at once.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${ILA_CACHE:-$HOME/.cache/ila-conformance}
fragments=${KERNEL_FRAGMENTS:-$here/config/base.config}
jobs=${JOBS:-$(nproc)}
kver=${KVER:-6.1}
# Bump when the recipe below changes in a way that needs a rebuild.
recipe=1

die() { echo "build-kernel: $*" >&2; exit 1; }

case $kver in
[0-9]*.[0-9]*-*) series=$(echo "$kver" | cut -d. -f1,2) version=$kver ;;
[0-9]*.[0-9]*) series=$kver version= ;;
*) die "KVER=$kver: give a series (KVER=6.1, KVER=6.12) or a Debian version (KVER=6.1.176-1)" ;;
esac
pkg=linux-source-$series
installed=$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null || true)
if [ -z "$version" ]; then
	[ -n "$installed" ] || die "package $pkg is not installed (run: make deps KVER=$kver)"
	version=$installed
fi
deb=
if [ "$version" = "$installed" ]; then
	tarball=/usr/src/$pkg.tar.xz
	[ -f "$tarball" ] || die "$tarball is missing (reinstall $pkg)"
else
	deb=$cache/debs/${pkg}_${version}_all.deb
	tarball=$deb
fi
for f in $fragments; do [ -f "$f" ] || die "config fragment $f not found"; done

key=$( { echo "recipe=$recipe version=$version"; cat $fragments; } |
	sha256sum | cut -c1-12)
src=$cache/src/$pkg-$version
bdir=$cache/build/$version-$key

if [ "${1:-}" = --dir ]; then
	echo "$bdir"
	exit 0
fi

mkdir -p "$cache/src" "$cache/build"
exec 9>"$cache/lock"
flock 9

if [ ! -f "$src/.ila-extracted" ]; then
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	if [ -n "$deb" ] && [ ! -f "$deb" ]; then
		mkdir -p "$cache/debs"
		echo "kernel: downloading $pkg=$version into $cache/debs" >&2
		# The _apt user cannot write into root's cache: fetch as the caller.
		(cd "$cache/debs" && apt-get download -q -o APT::Sandbox::User="$(id -un)" \
			"$pkg=$version" >&2) ||
			die "cannot download $pkg=$version ('apt-cache madison $pkg' lists the releases apt knows)"
	fi
	echo "kernel: extracting $tarball into $src (about 15 s)" >&2
	if [ -n "$deb" ]; then
		dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" |
			tar -C "$src.tmp" --strip-components=1 -xJ
	else
		tar -C "$src.tmp" --strip-components=1 -xJf "$tarball"
	fi
	touch "$src.tmp/.ila-extracted"
	mv "$src.tmp" "$src"
fi

# The intree+patches column needs kernel/patches/ to fit this release: say
# so now rather than after a five-minute build.
for p in "$here"/patches/*.patch; do
	patch -p1 --dry-run --fuzz=0 --batch --quiet -d "$src" <"$p" >/dev/null 2>&1 ||
		die "$pkg $version is not supported: kernel/patches/$(basename "$p")" \
			"does not apply to it. Releases it applies to" \
			"(kernel/check-patches.sh): $(paste -sd' ' "$here/patches/RELEASES")." \
			"Pick one: make KVER=<release> (downloads it), or apt-get install $pkg=<release>"
done

if [ -f "$bdir/.ila-built" ]; then
	echo "kernel: reusing $bdir" >&2
	exit 0
fi

mkdir -p "$bdir"
log=$bdir/build.log
: >"$log"
fail() {
	echo "kernel: build FAILED ($1); last lines of $log:" >&2
	tail -n 40 "$log" >&2
	echo "kernel: full log: $log" >&2
	exit 1
}

echo "kernel: configuring $bdir (tinyconfig + $fragments)" >&2
make -C "$src" O="$bdir" tinyconfig >>"$log" 2>&1 || fail "tinyconfig"
# shellcheck disable=SC2086
(cd "$bdir" && "$src/scripts/kconfig/merge_config.sh" -m -O "$bdir" \
	"$bdir/.config" $fragments) >>"$log" 2>&1 || fail "merge_config.sh"
make -C "$src" O="$bdir" olddefconfig >>"$log" 2>&1 || fail "olddefconfig"

# merge_config.sh only warns when olddefconfig drops an option: refuse instead.
missing=0
for f in $fragments; do
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) grep -qxF "$line" "$bdir/.config" || {
			echo "kernel: $f asks for $line but the merged .config has" \
				"'$(grep -E "^(# )?${line%%=*}[= ]" "$bdir/.config" || echo nothing)'" >&2
			missing=1
		} ;;
		esac
	done <"$f"
done
[ "$missing" = 0 ] || fail "options dropped by olddefconfig (missing dependency?)"

echo "kernel: building bzImage and modules with -j$jobs (cold: about 5 minutes; log $log)" >&2
start=$(date +%s)
make -C "$src" O="$bdir" -j"$jobs" bzImage modules >>"$log" 2>&1 || fail "make"
echo "kernel: built in $(( $(date +%s) - start )) s" >&2
touch "$bdir/.ila-built"
