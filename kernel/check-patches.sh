#!/usr/bin/env bash
# Check that kernel/patches/ applies to every Debian release of the kernel
# sources, without installing any of them.
#
#   kernel/check-patches.sh [--write] [SERIES|VERSION...]
#
# Default: every release `apt-cache madison` lists for linux-source-6.1 and
# linux-source-6.12. Each .deb is fetched once into $ILA_CACHE/debs (shared
# with build-kernel.sh), only net/ipv6/ila is extracted, and the series
# (kernel/series.sh) is applied in order with `patch --fuzz=0`, as
# build-kernel.sh and build-module.sh apply it, with `git am` on a
# git-initialized copy, and with each patch left out in turn (the others
# must still apply: make leave-one-out builds them so). --write records the releases that pass in
# kernel/patches/RELEASES, the list build-kernel.sh names when it refuses one.
# Exits 1 if any release fails.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${ILA_CACHE:-$HOME/.cache/ila-conformance}
write=0
[ "${1:-}" = --write ] && { write=1; shift; }
[ $# -gt 0 ] || set -- 6.1 6.12

releases=()
for arg; do
	case $arg in
	*-*) releases+=("$arg") ;;
	*) mapfile -t -O "${#releases[@]}" releases < <(apt-cache madison "linux-source-$arg" |
		awk '{ print $3 }' | sort -uV) ;;
	esac
done
[ ${#releases[@]} -gt 0 ] || { echo "check-patches: apt knows no such release: $*" >&2; exit 1; }

mkdir -p "$cache/debs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
good=() bad=0
for v in "${releases[@]}"; do
	series=$(echo "$v" | cut -d. -f1,2)
	pkg=linux-source-$series
	deb=$cache/debs/${pkg}_${v}_all.deb
	[ -f "$deb" ] || (cd "$cache/debs" &&
		apt-get download -q -o APT::Sandbox::User="$(id -un)" "$pkg=$v" >/dev/null) || {
		echo "not ok $v: cannot download $pkg=$v"
		bad=1
		continue
	}
	rm -rf "${tmp:?}/$v" "$tmp/$v.git" && mkdir -p "$tmp/$v"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" |
		tar -C "$tmp/$v" --strip-components=1 -xJ --wildcards '*/net/ipv6/ila/*'
	failed=
	# patch(1) in order, as build-kernel.sh and build-module.sh apply them,
	# then git am on a git-initialized copy, as a maintainer applies them
	cp -r "$tmp/$v" "$tmp/$v.git"
	for p in $(ILA_LEAVE_OUT= "$here/series.sh"); do
		patch -p1 --fuzz=0 --batch -d "$tmp/$v" <"$p" >"$tmp/$v.log" 2>&1 ||
			failed+=" $(basename "$p") ($(grep -m1 -i 'failed\|can.t' "$tmp/$v.log"))"
	done
	# each patch left out, the others still apply (make leave-one-out)
	for skip in $(ILA_LEAVE_OUT= "$here/series.sh"); do
		rm -rf "$tmp/$v.loo" && cp -r "$tmp/$v.git" "$tmp/$v.loo"
		for p in $(ILA_LEAVE_OUT= "$here/series.sh"); do
			[ "$p" = "$skip" ] && continue
			patch -p1 --fuzz=0 --batch --quiet -d "$tmp/$v.loo" <"$p" >/dev/null 2>&1 ||
				failed+=" without $(basename "$skip"): $(basename "$p") does not apply"
		done
	done
	rm -rf "$tmp/$v.loo"
	(cd "$tmp/$v.git" && git init -q && git add -A &&
		git -c user.name=check -c user.email=check@invalid commit -qm "$v" &&
		git -c user.name=check -c user.email=check@invalid am -q \
			$(ILA_LEAVE_OUT= "$here/series.sh")) >"$tmp/$v.am" 2>&1 ||
		failed+=" git am ($(head -n 1 "$tmp/$v.am"))"
	if [ -z "$failed" ]; then
		echo "ok $v"
		good+=("$v")
	else
		echo "not ok $v:$failed"
		bad=1
	fi
done
if [ "$write" = 1 ]; then
	printf '%s\n' "${good[@]}" >"$here/patches/RELEASES"
	echo "check-patches: wrote ${#good[@]} releases to kernel/patches/RELEASES"
fi
exit $bad
