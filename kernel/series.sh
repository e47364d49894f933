#!/usr/bin/env bash
# The fix series of kernel/patches/, one path per line, in the order they
# apply: net/ (fixes), then net-next/. Cover letters are mail, not code.
# ILA_LEAVE_OUT (LEAVE_OUT= of make; comma-separated, each a file name or
# SERIES/NNNN, e.g. net/0002) drops patches, for the leave-one-out runs; an
# unknown name is an error. --only prints the named patches instead (all
# of them when none is named).
set -euo pipefail
only=0
[ "${1:-}" = --only ] && only=1
here=$(cd "$(dirname "$0")" && pwd)
# Whether patch $1 is the one named $2.
named() {
	local f
	f=$(basename "$1")
	[ "$f" = "$2" ] || [ "$(basename "$(dirname "$1")")/${f:0:4}" = "$2" ]
}
all=()
for s in net net-next; do
	for p in "$here/patches/$s"/[0-9][0-9][0-9][0-9]-*.patch; do
		[ -f "$p" ] && [ "$(basename "$p")" != 0000-cover-letter.patch ] && all+=("$p")
	done
done
IFS=, read -ra out <<<"${ILA_LEAVE_OUT:-}"
for o in "${out[@]}"; do
	found=0
	for p in "${all[@]}"; do named "$p" "$o" && found=1; done
	[ $found = 1 ] || {
		echo "series: LEAVE_OUT=$o is no patch of kernel/patches/ (the series:" \
			"$(for p in "${all[@]}"; do basename "$p"; done | paste -sd' '))" >&2
		exit 1
	}
done
for p in "${all[@]}"; do
	hit=0
	for o in "${out[@]}"; do named "$p" "$o" && hit=1; done
	if [ $only = 1 ]; then
		[ $hit = 1 ] || [ ${#out[@]} = 0 ] && echo "$p"
	else
		[ $hit = 1 ] || echo "$p"
	fi
done
