#!/usr/bin/env bash
# Build the external implementations named in IMPL (external:DIR or
# external:NAME=DIR, comma separated) against the cached kernel.
#
#   build-externals.sh KDIR OUTDIR "IMPL" "NAME"
#
# Each is copied and built by build-module.sh (its directory is never
# written to); the module lands in OUTDIR/NAME.ko. OUTDIR/list gets one line
# per external: NAME MODULE_NAME KO SRC, read by the runner and mkinitramfs.
# NAME defaults to the directory's base name, or to the NAME variable when
# IMPL holds a single external.
set -euo pipefail

kdir=$1 outdir=$2 impl=$3 name_var=$4
here=$(dirname "$0")
mkdir -p "$outdir"
: >"$outdir/list.tmp"
specs=()
IFS=, read -ra words <<<"$impl"
for w in "${words[@]}"; do
	case $w in external:*) specs+=("${w#external:}") ;; esac
done
if [ -n "$name_var" ] && [ ${#specs[@]} -ne 1 ]; then
	echo "externals: NAME=$name_var needs exactly one external: in IMPL (use external:NAME=DIR for several)" >&2
	exit 1
fi
for spec in "${specs[@]}"; do
	dir=$spec name=
	case $spec in *=*) name=${spec%%=*} dir=${spec#*=} ;; esac
	[ -n "$dir" ] || { echo "externals: 'external:$spec' names no directory" >&2; exit 1; }
	[ -d "$dir" ] || { echo "externals: $dir (from IMPL=external:$spec) is not a directory" >&2; exit 1; }
	dir=$(realpath "$dir")
	name=${name:-${name_var:-$(basename "$dir")}}
	case $name in
	module | intree* | all | floor | *[!A-Za-z0-9_.+-]*)
		echo "externals: '$name' cannot name a column (reserved, or not [A-Za-z0-9_.+-])" >&2
		exit 1 ;;
	esac
	if grep -q "^$name " "$outdir/list.tmp"; then
		echo "externals: two externals are named '$name': give one external:NAME=DIR" >&2
		exit 1
	fi
	echo "externals: building $name from $dir" >&2
	built=$("$here/build-module.sh" "$kdir" "$dir" "$outdir/$name.build")
	ko=$built
	# A tree that also builds helpers (a copy of kernel/ila builds its
	# micro-benchmark too): the implementation is the module that
	# registers an lwtunnel encap.
	if [ "$(echo "$built" | wc -l)" -gt 1 ]; then
		ko=$(for k in $built; do
			if nm -u "$k" | grep -qw lwtunnel_encap_add_ops; then echo "$k"; fi
		done)
	fi
	[ -n "$ko" ] && [ "$(echo "$ko" | wc -l)" -eq 1 ] || {
		echo "externals: $dir must build one module, or one among several that registers" \
			"an lwtunnel encap (calls lwtunnel_encap_add_ops); it built:" $built >&2
		exit 1
	}
	cp "$ko" "$outdir/$name.ko"
	modname=$(modinfo -F name "$outdir/$name.ko")
	echo "externals: built $outdir/$name.ko (module $modname)" >&2
	echo "$name $modname /lib/modules/ext/$name.ko $dir" >>"$outdir/list.tmp"
done
mv "$outdir/list.tmp" "$outdir/list"
