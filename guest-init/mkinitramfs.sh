#!/usr/bin/env bash
# Write the guest's initramfs: our init, injector and netlink tool, the modules under test,
# and the host's real iproute2 `ip` with the shared libraries it needs.
#
#   mkinitramfs.sh OUTPUT GEN_INIT_CPIO INIT INJECT ILA_NL [SUBDIR=]MODULE.ko|PROGRAM...
#
# The cpio list is sorted and timestamped 0, so the same inputs give the
# same archive.
set -euo pipefail

out=$1 gen=$2 init=$3 inject=$4 ila_nl=$5
shift 5
ip=/usr/sbin/ip
[ -x "$ip" ] || { echo "mkinitramfs: $ip missing (apt-get install iproute2)" >&2; exit 1; }

list=$(mktemp)
trap 'rm -f "$list"' EXIT
{
	for d in /bin /sbin /dev /proc /sys /tmp /lib /lib/modules /lib64 \
		/lib/x86_64-linux-gnu /etc /run /var; do
		echo "dir $d 0755 0 0"
	done
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "file /init $init 0755 0 0"
	echo "file /bin/ila-inject $inject 0755 0 0"
	echo "file /bin/ila-nl $ila_nl 0755 0 0"
	echo "file /sbin/ip $ip 0755 0 0"
	# MODULE.ko goes to /lib/modules/, SUBDIR=MODULE.ko to /lib/modules/SUBDIR/,
	# any other file (a guest program) to /bin/.
	for arg in "$@"; do
		case $arg in *.ko) ;; *)
			echo "file /bin/$(basename "$arg") $arg 0755 0 0"
			continue ;;
		esac
		sub= ko=$arg
		case $arg in *=*) sub=${arg%%=*}/ ko=${arg#*=} ;; esac
		[ -z "$sub" ] || echo "dir /lib/modules/${sub%/} 0755 0 0"
		echo "file /lib/modules/$sub$(basename "$ko") $ko 0644 0 0"
	done
	# The dynamic loader and every library ip (or a dynamically linked
	# program, such as perf for make bench-profile) links against, at their
	# paths. Our own programs are static: ldd has nothing to say about them.
	progs=("$ip")
	for arg in "$@"; do
		case $arg in *.ko) ;; *) progs+=("$arg") ;; esac
	done
	for p in "${progs[@]}"; do
		ldd "$p" 2>/dev/null || true
	done | awk '/=>/ { print $3 } /^\t\/lib/ { print $1 }' | sort -u |
	while read -r lib; do
		[ -n "$lib" ] || continue
		echo "file $lib $(readlink -f "$lib") 0755 0 0"
	done
} >"$list"

# The same list of the same files gives the same archive: keep the last one.
key=$({ cat "$list"; sha256sum "$0"; awk '$1 == "file" { print $3 }' "$list" | xargs sha256sum; } |
	sha256sum | cut -d' ' -f1)
if [ -e "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
	echo "initramfs: $out is up to date" >&2
	exit 0
fi
"$gen" -t 0 "$list" | gzip -n -9 >"$out.tmp"
mv "$out.tmp" "$out"
echo "$key" >"$out.key"
echo "initramfs: $out ($(du -k "$out" | cut -f1) KiB)" >&2
