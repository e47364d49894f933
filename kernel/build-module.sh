#!/usr/bin/env bash
# Build an out-of-tree module against the cached kernel, from a copy.
#
#   build-module.sh KDIR SRC DEST [--patch-root ROOT PATCH...]
#
# SRC is copied to DEST (the source is never written to), optional patches
# are applied with `patch -p1` in ROOT (a directory above DEST, for patches
# written against the kernel tree; one the source holds already is skipped),
# and kbuild builds DEST with M=DEST. ROOT is emptied first: it holds
# nothing but this build.
# Prints the built modules, one per line. A failure prints the last lines
# of DEST.log and its path.
#
# A build whose inputs are those of the last one is not redone (make test
# and every make conformance ask for each module again): the key is a hash
# of the kernel built against, KCFLAGS, the source, the patches and this
# script.
set -euo pipefail

kdir=$1 src=$2 dest=$3
shift 3
[ -d "$src" ] || { echo "build-module: $src is not a directory" >&2; exit 1; }
[ -e "$src/Kbuild" ] || [ -e "$src/Makefile" ] ||
	{ echo "build-module: $src has neither a Kbuild nor a Makefile" >&2; exit 1; }
root=
if [ "${1:-}" = --patch-root ]; then
	root=$2
	case $(realpath -m "$dest") in "$(realpath -m "$root")"/*) ;; *)
		echo "build-module: $dest is not under the patch root $root" >&2; exit 1 ;;
	esac
fi

key=$({
	echo "$kdir ${KCFLAGS:-} $dest $root"
	for f in "$kdir/.config" "$kdir/Module.symvers" "$kdir/include/generated/compile.h" \
		"$kdir/include/generated/utsversion.h"; do
		[ ! -e "$f" ] || sha256sum "$f"
	done
	sha256sum "$0"
	(cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
	[ -z "$root" ] || sha256sum "${@:3}" </dev/null
} | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dest/.build-key" 2>/dev/null)" = "$key" ]; then
	kos=$(find "$dest" -maxdepth 1 -name '*.ko' | sort)
	if [ -n "$kos" ]; then
		echo "build-module: $dest is up to date" >&2
		echo "$kos"
		exit 0
	fi
fi

log=$dest.log
[ -z "$root" ] || rm -rf "$root"
rm -rf "$dest"
mkdir -p "$dest"
cp -r "$src"/. "$dest"/
if [ -n "$root" ]; then
	shift 2
	for p in "$@"; do
		if patch -p1 --dry-run --quiet --batch --fuzz=0 -d "$root" <"$p" >"$log" 2>&1; then
			patch -p1 --quiet --batch --fuzz=0 -d "$root" <"$p" >"$log" 2>&1
			echo "build-module: applied $(basename "$p")" >&2
		elif patch -p1 -R --dry-run --quiet --batch --fuzz=0 -d "$root" <"$p" >/dev/null 2>&1; then
			echo "build-module: $(basename "$p") is in the source already" >&2
		else
			echo "build-module: $p does not apply:" >&2
			tail -n 20 "$log" >&2
			exit 1
		fi
	done
fi
make -C "$kdir" M="$(realpath "$dest")" modules >"$log" 2>&1 || {
	echo "build-module: building $src FAILED; last lines of $log:" >&2
	tail -n 30 "$log" >&2
	exit 1
}
kos=$(find "$dest" -maxdepth 1 -name '*.ko' | sort)
[ -n "$kos" ] || { echo "build-module: $src built no module (see $log)" >&2; exit 1; }
echo "$key" >"$dest/.build-key"
echo "$kos"
