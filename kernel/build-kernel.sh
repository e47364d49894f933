#!/usr/bin/env bash
# Build the guest kernel out of the repository, keyed by what goes into it.
#
#   kernel/build-kernel.sh --dir    print the build directory for the fragments
#   kernel/build-kernel.sh          build it unless it is already built
#
# The Debian source tarball is extracted once per package version into
# $ILA_CACHE/src; each distinct set of config fragments gets its own O= build
# directory $ILA_CACHE/build/<version>-<hash>, so a second run reuses it and a
# changed fragment builds afresh. Fragments come from $KERNEL_FRAGMENTS
# (space-separated paths), default kernel/config/base.config.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${ILA_CACHE:-$HOME/.cache/ila-conformance}
tarball=/usr/src/linux-source-6.1.tar.xz
fragments=${KERNEL_FRAGMENTS:-$here/config/base.config}
jobs=${JOBS:-$(nproc)}
# Bump when the recipe below changes in a way that needs a rebuild.
recipe=1

die() { echo "build-kernel: $*" >&2; exit 1; }

version=$(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null) ||
	die "package linux-source-6.1 is not installed (run: make deps)"
[ -f "$tarball" ] || die "$tarball is missing (reinstall linux-source-6.1)"
for f in $fragments; do [ -f "$f" ] || die "config fragment $f not found"; done

key=$( { echo "recipe=$recipe version=$version"; cat $fragments; } |
	sha256sum | cut -c1-12)
src=$cache/src/linux-source-6.1-$version
bdir=$cache/build/$version-$key

if [ "${1:-}" = --dir ]; then
	echo "$bdir"
	exit 0
fi

mkdir -p "$cache/src" "$cache/build"
exec 9>"$cache/lock"
flock 9

if [ -f "$bdir/.ila-built" ]; then
	echo "kernel: reusing $bdir" >&2
	exit 0
fi

if [ ! -f "$src/.ila-extracted" ]; then
	echo "kernel: extracting $tarball into $src (about 15 s)" >&2
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -C "$src.tmp" --strip-components=1 -xJf "$tarball"
	touch "$src.tmp/.ila-extracted"
	mv "$src.tmp" "$src"
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
