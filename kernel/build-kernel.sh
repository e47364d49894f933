#!/usr/bin/env bash
# Build the guest kernel out of the repository, keyed by what goes into it.
#
#   kernel/build-kernel.sh             build it unless it is already built
#   kernel/build-kernel.sh --dir       print the O= build directory
#   kernel/build-kernel.sh --describe  print the kernel's label and version
#   kernel/build-kernel.sh --fixed     print the kernel/patches/ already in the source
#   kernel/build-kernel.sh --source    print the source directory (extracted or not)
#
# The source is Debian's or the user's:
#   KVER=6.1 (default), KVER=6.12   the installed linux-source-SERIES package
#   KVER=6.1.176-1                  that Debian release, downloaded into the cache
#                                   with `apt-get download` (nothing is installed)
#   KSRC=/path/to/linux             any kernel tree, never written to (O= only),
#                                   identified by its git describe and a hash of its
#                                   diff (or of its sources' names, sizes and times)
# A Debian tarball is extracted once per release into $ILA_CACHE/src; each
# distinct source and set of config fragments gets its own O= build directory
# under $ILA_CACHE/build, so a second run reuses it and a change builds afresh.
# Fragments come from $KERNEL_FRAGMENTS (space-separated paths), default
# kernel/config/base.config. Before anything is built, each of kernel/patches/
# must apply to the source or be in it already: a release they do not fit is
# refused at once.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${ILA_CACHE:-$HOME/.cache/ila-conformance}
fragments=${KERNEL_FRAGMENTS:-$here/config/base.config}
jobs=${JOBS:-$(nproc)}
kver=${KVER:-6.1}
# Bump when the recipe below changes in a way that needs a rebuild.
recipe=1

die() { echo "build-kernel: $*" >&2; exit 1; }
for f in $fragments; do [ -f "$f" ] || die "config fragment $f not found"; done

deb= tarball=
if [ -n "${KSRC:-}" ]; then
	[ -d "$KSRC" ] || die "KSRC=$KSRC: no such directory"
	src=$(cd "$KSRC" && pwd)
	[ -f "$src/Makefile" ] && [ -d "$src/net/ipv6/ila" ] ||
		die "KSRC=$KSRC is not a kernel tree with net/ipv6/ila (no Makefile or net/ipv6/ila/)"
	if [ -e "$src/.config" ] || [ -d "$src/include/config" ]; then
		die "KSRC=$KSRC is configured in place (it has .config or include/config): kbuild's O=" \
			"needs a clean source tree. Run 'make mrproper' in it, or point KSRC at a clean copy"
	fi
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		version=$(git -C "$src" describe --always --tags --dirty)
		identity="$version $(git -C "$src" diff HEAD | sha256sum | cut -c1-12)"
	else
		version=$(sed -n 's/^\(VERSION\|PATCHLEVEL\|SUBLEVEL\) = //p' "$src/Makefile" | paste -sd.)
		identity="$version $(find "$src" -type f \( -name '*.[chS]' -o -name 'Kconfig*' \
			-o -name 'Makefile*' -o -name 'Kbuild*' \) -printf '%P %s %T@\n' |
			sort | sha256sum | cut -c1-12)"
	fi
	label=ksrc-$(basename "$src")
	key=$( { echo "recipe=$recipe ksrc=$src $identity"; cat $fragments; } |
		sha256sum | cut -c1-12)
	bdir=$cache/build/$label-$key
else
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
	if [ "$version" = "$installed" ]; then
		tarball=/usr/src/$pkg.tar.xz
		[ -f "$tarball" ] || die "$tarball is missing (reinstall $pkg)"
	else
		deb=$cache/debs/${pkg}_${version}_all.deb
		tarball=$deb
	fi
	label=$kver
	key=$( { echo "recipe=$recipe version=$version"; cat $fragments; } |
		sha256sum | cut -c1-12)
	src=$cache/src/$pkg-$version
	bdir=$cache/build/$version-$key
fi

# The fix series against the source, in order on a copy of net/ipv6/ila:
# "NAME missing" (applies), "NAME applied" (in the source already) or
# "NAME conflict", one line per patch.
series_state() {
	local tmp p
	tmp=$(mktemp -d)
	mkdir -p "$tmp/net/ipv6" && cp -r "$src/net/ipv6/ila" "$tmp/net/ipv6/"
	for p in $(ILA_LEAVE_OUT= "$here/series.sh"); do
		if patch -p1 --fuzz=0 --batch --quiet -d "$tmp" <"$p" >/dev/null 2>&1; then
			echo "$(basename "$p") missing"
		elif patch -p1 -R --dry-run --fuzz=0 --batch --quiet -d "$tmp" <"$p" >/dev/null 2>&1; then
			echo "$(basename "$p") applied"
		else
			echo "$(basename "$p") conflict"
		fi
	done
	rm -rf "$tmp"
}

case ${1:-} in
--dir) echo "$bdir"; exit 0 ;;
--describe) echo "$label $version"; exit 0 ;;
--source) echo "$src"; exit 0 ;;
--fixed)
	[ -d "$src/net" ] || exit 0  # not extracted yet: nothing to say
	series_state | awk '$2 == "applied" { print $1 }'
	exit 0 ;;
"") ;;
*) die "unknown argument $1 (--dir, --describe, --fixed, --source)" ;;
esac

mkdir -p "$cache/src" "$cache/build" "$cache/locks"
# One build at a time per source (extraction) and per build directory, so
# that two kernels build side by side while one source is never extracted twice.
exec 8>"$cache/locks/src-$(basename "$src")"
flock 8
exec 9>"$cache/locks/build-$(basename "$bdir")"
flock 9

if [ -z "${KSRC:-}" ] && [ ! -f "$src/.ila-extracted" ]; then
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
flock -u 8

# The intree+patches column needs each of kernel/patches/ to apply to this
# source, or to be in it already: say so now rather than after the build.
for p in $(series_state | awk '$2 == "conflict" { print $1 }'); do
	if [ -n "${KSRC:-}" ]; then
		die "KSRC=$KSRC: kernel/patches/ $p neither applies to it nor is in it" \
			"already; the intree+patches column cannot be built from this tree"
	fi
	die "$pkg $version is not supported: kernel/patches/ $p" \
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
