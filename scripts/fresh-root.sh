#!/usr/bin/env bash
# Run a command in a brand-new Debian 12 root, as a new user's machine would.
#
#   scripts/fresh-root.sh [--suites stock|bookworm] [--keep] [--] COMMAND...
#
# mmdebstrap builds a minbase bookworm root with only ca-certificates, git
# and make (no compiler: stock Debian 12 images have none), this
# repository's committed HEAD is cloned into /root/project, proc, sys and
# dev are mounted, and COMMAND runs there as root with CI=true. Uncommitted
# changes are not tried: commit first.
#   --suites stock     bookworm, bookworm-updates and bookworm-security,
#                      what stock Debian 12 images list (the default)
#   --suites bookworm  bookworm alone: an older linux-source-6.1 (6.1.176-1)
#   --keep             leave the root in place (its path is printed)
# The root lives under $FRESH_ROOT_DIR (default /var/tmp). The command's
# exit status is this script's; its log is kept beside the root.
set -euo pipefail

suites=stock keep=0
while [ $# -gt 0 ]; do
	case $1 in
	--suites) suites=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--) shift; break ;;
	-*) echo "fresh-root: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--suites stock|bookworm] [--keep] [--] COMMAND..." >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "fresh-root: run as root (chroot and mounts)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "fresh-root: apt-get install -y mmdebstrap" >&2; exit 1; }

mirror=http://deb.debian.org/debian
case $suites in
stock) lists=("deb $mirror bookworm main" "deb $mirror bookworm-updates main"
	"deb http://deb.debian.org/debian-security bookworm-security main") ;;
bookworm) lists=("deb $mirror bookworm main") ;;
*) echo "fresh-root: --suites stock or --suites bookworm, not $suites" >&2; exit 2 ;;
esac

repo=$(cd "$(dirname "$0")/.." && pwd)
base=${FRESH_ROOT_DIR:-/var/tmp}
root=$(mktemp -d "$base/ila-fresh-$suites.XXXXXX")
log=$root.log

cleanup() {
	umount -R "$root/dev" "$root/proc" "$root/sys" 2>/dev/null || true
	if [ "$keep" = 1 ]; then
		echo "fresh-root: root kept in $root" >&2
	else
		rm -rf "$root"
	fi
}
trap cleanup EXIT

start=$(date +%s)
echo "fresh-root: mmdebstrap bookworm ($suites) into $root" >&2
mmdebstrap --quiet --variant=minbase --include=ca-certificates,git,make \
	bookworm "$root" "${lists[@]}"
git clone --quiet "$repo" "$root/root/project"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --rbind /dev "$root/dev"
mount --make-rslave "$root/dev"
made=$(date +%s)
echo "fresh-root: root ready in $((made - start)) s; running '$*' (log $log)" >&2

set +e
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	CI=true TERM=dumb bash -c 'cd /root/project && "$@"' bash "$@" 2>&1 |
	tee "$log"
rc=${PIPESTATUS[0]}
set -e
echo "fresh-root: '$*' exited $rc after $(($(date +%s) - made)) s ($suites suites; log $log)" >&2
exit "$rc"
