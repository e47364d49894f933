#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The program of make kselftest-run's guest (init runs it for ila.run=). It
# needs no host: the collection in /kselftest runs once per column listed in
# /etc/ila-kselftest/columns (LABEL COLUMN MODULE_PATH MODULE_NAME RIVAL_PATH:
# a mutant of ours is labelled by its module and judged as the module
# column), with that column's module loaded; then each
# kernel tree's own runner in /etc/ila-kselftest/runners runs it once more
# (run_kselftest.sh -c net/ila), with ours loaded. Everything printed goes
# to the host on the control port, which parses the TAP.
#
# The columns of one module share a load of it. A column's packet cases run
# side by side, one runner per CPU (--shard K/N: every Nth case), each in
# namespaces of its own; the control cases, which load and unload modules,
# run after them one column at a time.
set -u
# a line of its own: on a console, the first bytes may follow the firmware's
# screen reset, and the host's parser reads whole lines
echo
conf=/etc/ila-kselftest
collection=/kselftest/net/ila
mount -t tmpfs tmpfs /run 2>/dev/null
# what udev would make: the runners append their programs' output to /dev/stdout
for fd in stdin:0 stdout:1 stderr:2; do
	[ -e "/dev/${fd%:*}" ] || ln -s "/proc/self/fd/${fd#*:}" "/dev/${fd%:*}"
done
mkdir -p /tmp/ila-kselftest
# CASE= of make kselftest-run, as --case (the runners run every case), and
# the runner's other options (--stop-on-fail for mutants)
cases=$(cat "$conf/cases")
args=$(cat "$conf/args")
jobs=$(nproc)
# ila.columns=LABEL,... on the kernel command line: only those columns run
# (a LAVA job's share of one initramfs that holds them all)
columns=$conf/columns
want=$(sed -n 's/.*ila\.columns=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$want" ]; then
	columns=/tmp/ila-kselftest/columns
	: >"$columns"
	for label in $(echo "$want" | tr ',' ' '); do
		if ! grep "^$label " "$conf/columns" >>"$columns"; then
			echo "ila-kselftest-run: column $label"
			echo "ila-kselftest-run: no column $label in this initramfs"
		fi
	done
fi
packet=$(ls "$collection/bundle" | grep -v -x -e control -e topology -e index.json |
	tr '\n' ',')

# rmmod NAME, waiting while cached routes of closing sockets hold it (EAGAIN)
unload() {
	tries=0
	while ! rmmod "$1" 2>/dev/null; do
		tries=$((tries + 1))
		if [ "$tries" -gt 150 ]; then
			echo "ila-kselftest-run: cannot unload $1 after 30 s"
			return 1
		fi
		sleep 0.2
	done
}

# run LABEL COLUMN MODULE RIVAL FOLDERS PART [SHARD]: one runner's TAP, into a file
run() {
	out=/tmp/ila-kselftest/$1.$6
	# shellcheck disable=SC2086 # args and the shard option are words
	ILA_IMPL=$2 ILA_MODULE=$3 ILA_RIVAL_MODULE=$4 \
		"$collection/ila_conformance" --case "$cases" --folder "$5" $args ${7:-} \
		>"$out" 2>&1
	echo "ila-kselftest-run: exit $?" >>"$out"
}

# run_sharded LABEL COLUMN MODULE RIVAL FOLDERS: the column's packet cases,
# one runner per CPU, into LABEL.packet with one exit line: the first that
# is not 0 (pass), 4 (all skipped) or 1 (a failure), else 1 if any failed,
# else 0 unless every part skipped everything.
run_sharded() {
	k=0
	while [ "$k" -lt "$jobs" ]; do
		run "$1" "$2" "$3" "$4" "$5" "packet.$k" "--shard $k/$jobs" </dev/null &
		k=$((k + 1))
	done
	wait
	worst= failed= ran=
	for part in /tmp/ila-kselftest/"$1".packet.*; do
		rc=$(sed -n 's/^ila-kselftest-run: exit //p' "$part")
		case $rc in
		0) ran=1 ;;
		1) failed=1 ;;
		4) ;;
		*) worst=${worst:-$rc} ;;
		esac
		grep -v '^ila-kselftest-run: exit ' "$part"
		rm -f "$part"
	done >"/tmp/ila-kselftest/$1.packet"
	if [ -n "$worst" ]; then rc=$worst
	elif [ -n "$failed" ]; then rc=1
	elif [ -n "$ran" ]; then rc=0
	else rc=4
	fi
	echo "ila-kselftest-run: exit $rc" >>"/tmp/ila-kselftest/$1.packet"
}

# print LABEL PART: a finished runner's TAP, under the column's header
print() {
	echo "ila-kselftest-run: column $1"
	cat "/tmp/ila-kselftest/$1.$2"
}

for group in $(cut -d' ' -f3 "$columns" | uniq); do
	grep " $group " "$columns" >/tmp/ila-kselftest/group
	loaded=$(head -n1 /tmp/ila-kselftest/group | cut -d' ' -f4)
	if ! insmod "$group"; then
		while read -r label column module name rival; do
			echo "ila-kselftest-run: column $label"
			echo "ila-kselftest-run: insmod $module failed"
		done </tmp/ila-kselftest/group
		continue
	fi
	while read -r label column module name rival; do
		run_sharded "$label" "$column" "$module" "$rival" "$packet"
	done </tmp/ila-kselftest/group
	while read -r label column module name rival; do
		print "$label" packet
		# a mutant is killed by its first failure (--stop-on-fail)
		case "$args" in *--stop-on-fail*)
			grep -q '^not ok' "/tmp/ila-kselftest/$label.packet" && continue ;;
		esac
		run "$label" "$column" "$module" "$rival" control control
		print "$label" control
	done </tmp/ila-kselftest/group
	unload "$loaded"
done

while read -r label dir module name rival; do
	echo "ila-kselftest-run: runner $label"
	insmod "$module" || echo "ila-kselftest-run: insmod $module failed"
	(cd "$dir" && ILA_CASE=$(cat "$conf/runner-cases") ILA_MODULE=$module \
		ILA_RIVAL_MODULE=$rival ./run_kselftest.sh -c net/ila)
	echo "ila-kselftest-run: exit $?"
	unload "$name"
done <"$conf/runners"
echo "ila-kselftest-run: done"
