#!/usr/bin/env bash
# Install the Debian packages the suite needs, printing what it does.
# Nothing is installed when everything is already there. Arguments name
# packages that one target needs on top (make bench: gnuplot-nox).
set -euo pipefail

packages=(
	build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils
	qemu-system-x86 python3-scapy tshark tcpdump
	busybox-static iproute2 kmod patch python3-junitparser rsync nftables
	"$@"
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#packages[@]} packages installed"
	exit 0
fi
echo "deps: missing: ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
	echo "deps: not root: run 'sudo apt-get update && sudo apt-get install -y ${missing[*]}'" >&2
	exit 1
fi
echo "deps: apt-get update"
apt-get update -q
echo "deps: apt-get install -y ${missing[*]}"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
