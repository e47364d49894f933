#!/usr/bin/env bash
# A local LAVA lab (Debian 12's lava-server and lava-dispatcher 2023.01),
# started by hand without systemd, with all of its state in $LAVA_HOME:
#
#   lava-lab.sh up      install what is missing, then start what is not
#                       running: PostgreSQL (a cluster of its own), gunicorn,
#                       the publisher, the scheduler and one worker with
#                       $LAVA_DEVICES QEMU (TCG) devices. Safe to run again.
#   lava-lab.sh down    stop what "up" started, by the PIDs it recorded
#   lava-lab.sh env     the lab's URL and token, as shell assignments
#
# What was measured when this was written: ../shared/lava/README.md in the
# project's notes (install, pitfalls, costs). Nothing here touches the
# system's own PostgreSQL cluster or /etc/lava-server: the server reads its
# settings from the environment (DATABASE_URL, LAVA_JSON_SETTINGS).
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin # Debian's python3 (LAVA pitfall 1)

LAVA_HOME=${LAVA_HOME:-/var/lib/ila-conformance-lava}
LAVA_PORT=${LAVA_PORT:-8470}      # gunicorn: web UI, XML-RPC and REST
LAVA_WS_PORT=$((LAVA_PORT + 1))   # publisher: the worker's websocket
LAVA_EV_PORT=$((LAVA_PORT + 2))   # publisher: the scheduler's events
LAVA_PG_PORT=$((LAVA_PORT + 3))
LAVA_DEVICES=${LAVA_DEVICES:-$(nproc)}
LAVA_WORKER=${LAVA_WORKER:-ila-w1}
LAVA_MEMORY=${LAVA_MEMORY:-512}
RUN=$LAVA_HOME/run
URL=http://127.0.0.1:$LAVA_PORT

say() { echo "lava-lab: $*"; }
fail() {
	echo "lava-lab: $*" >&2
	exit 1
}

# The Debian packages, installed with no service started by their scripts
# (a policy-rc.d of our own while apt runs, where the machine has none).
install() {
	local policy=/usr/sbin/policy-rc.d ours=
	if [ ! -e $policy ]; then
		printf '#!/bin/sh\nexit 101\n' >$policy
		chmod 755 $policy
		ours=1
	fi
	"$(dirname "$0")"/deps.sh lava-server lava-dispatcher lavacli postgresql ||
		{ [ -z "$ours" ] || rm -f $policy; fail "installing LAVA failed"; }
	[ -z "$ours" ] || rm -f $policy
}

pg_bin() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
	[ -x "$d/initdb" ] || fail "no PostgreSQL server binaries in /usr/lib/postgresql"
	echo "$d"
}

# The server's environment: its database, key and paths, all in $LAVA_HOME.
server_env() {
	local settings
	settings=$(printf '{"MEDIA_ROOT": "%s/server/media/", "DEVICES_PATH": "%s/devices",
 "DEVICE_TYPES_PATHS": ["/usr/share/lava-server/device-types"],
 "HEALTH_CHECKS_PATH": "%s/health-checks", "DISPATCHER_CONFIG_PATH": "%s/dispatcher.d",
 "DJANGO_LOGFILE": "%s/server/log/django.log", "EVENT_NOTIFICATION": true,
 "INTERNAL_EVENT_SOCKET": "ipc://%s/server/events", "EVENT_SOCKET": "tcp://127.0.0.1:%s",
 "ALLOWED_HOSTS": ["*"], "WORKER_AUTO_REGISTER": false}' \
		"$LAVA_HOME" "$LAVA_HOME" "$LAVA_HOME" "$LAVA_HOME" "$LAVA_HOME" "$LAVA_HOME" \
		"$LAVA_EV_PORT")
	export DATABASE_URL=postgres://lava@127.0.0.1:$LAVA_PG_PORT/lava
	SECRET_KEY=$(cat "$LAVA_HOME/secret")
	export SECRET_KEY
	LAVA_JSON_SETTINGS=$(printf '%s' "$settings" | base64 -w0)
	export LAVA_JSON_SETTINGS
}

manage() { lava-server manage "$@"; }

# alive NAME: its recorded process is running
alive() {
	local pid
	pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
	kill -0 "$pid" 2>/dev/null
}

# start NAME COMMAND...: unless it is already running; its PID recorded
start() {
	local name=$1
	shift
	if alive "$name"; then
		say "$name: running (PID $(cat "$RUN/$name.pid")), reused"
		return
	fi
	setsid "$@" >"$RUN/$name.out" 2>&1 </dev/null &
	echo $! >"$RUN/$name.pid"
	say "$name: started (PID $!)"
}

database() {
	local bin
	bin=$(pg_bin)
	if [ ! -f "$LAVA_HOME/pg/PG_VERSION" ]; then
		mkdir -p "$LAVA_HOME/pg"
		chown postgres: "$LAVA_HOME/pg"
		runuser -u postgres -- "$bin/initdb" -D "$LAVA_HOME/pg" -U lava --auth=trust \
			>"$RUN/initdb.out" || fail "initdb failed: see $RUN/initdb.out"
	fi
	if alive postgres; then
		say "postgres: running (PID $(cat "$RUN/postgres.pid")), reused"
	else
		runuser -u postgres -- "$bin/pg_ctl" -D "$LAVA_HOME/pg" -w -l "$LAVA_HOME/pg/log" \
			-o "-p $LAVA_PG_PORT -c listen_addresses=127.0.0.1 -k $LAVA_HOME/pg" start \
			>/dev/null || fail "PostgreSQL did not start: $(tail -n5 "$LAVA_HOME/pg/log")"
		head -n1 "$LAVA_HOME/pg/postmaster.pid" >"$RUN/postgres.pid"
		say "postgres: started (PID $(cat "$RUN/postgres.pid"), port $LAVA_PG_PORT)"
	fi
	"$bin/psql" -h 127.0.0.1 -p "$LAVA_PG_PORT" -U lava -d postgres -tAc \
		"SELECT 1 FROM pg_database WHERE datname = 'lava'" | grep -x 1 >/dev/null ||
		"$bin/createdb" -h 127.0.0.1 -p "$LAVA_PG_PORT" -U lava lava
}

# The admin, the device type, the worker and its devices (first start only
# for what exists; devices are added up to $LAVA_DEVICES).
objects() {
	manage migrate --noinput >"$RUN/migrate.out" 2>&1 ||
		fail "lava-server migrate failed: $(tail -n5 "$RUN/migrate.out")"
	if [ ! -s "$LAVA_HOME/token" ]; then
		DJANGO_SUPERUSER_PASSWORD=$(head -c 12 /dev/urandom | base64) \
			manage createsuperuser --noinput --username admin --email admin@localhost \
			>/dev/null 2>&1 || true
		manage tokens add --user admin >"$LAVA_HOME/token"
	fi
	manage device-types list 2>/dev/null | grep -w qemu >/dev/null || manage device-types add qemu
	if ! manage workers list 2>/dev/null | grep -w "$LAVA_WORKER" >/dev/null; then
		manage workers add "$LAVA_WORKER" >/dev/null
	fi
	manage workers details "$LAVA_WORKER" 2>/dev/null | sed -n 's/^token *: *//p' \
		>"$LAVA_HOME/worker-token"
	[ -s "$LAVA_HOME/worker-token" ] || fail "no token for worker $LAVA_WORKER"
	local i name
	for i in $(seq 1 "$LAVA_DEVICES"); do
		name=$(printf 'qemu%02d' "$i")
		# TCG: qemu.jinja2 adds -enable-kvm unless no_kvm
		printf "{%% extends 'qemu.jinja2' %%}\n{%% set arch = 'amd64' %%}\n%s\n%s\n" \
			"{% set no_kvm = True %}" "{% set memory = $LAVA_MEMORY %}" \
			>"$LAVA_HOME/devices/$name.jinja2"
		manage devices list 2>/dev/null | grep -w "$name" >/dev/null ||
			manage devices add --device-type qemu --worker "$LAVA_WORKER" "$name"
	done
}

up() {
	[ "$(id -u)" = 0 ] || fail "needs root (the worker runs QEMU and the lab's processes)"
	install
	mkdir -p "$RUN" "$LAVA_HOME"/{devices,health-checks,dispatcher.d,worker}
	mkdir -p "$LAVA_HOME"/server/{media,log}
	chmod 755 "$LAVA_HOME"
	[ -s "$LAVA_HOME/secret" ] || head -c 48 /dev/urandom | base64 -w0 >"$LAVA_HOME/secret"
	chown -R lavaserver: "$LAVA_HOME/server"
	chmod 644 "$LAVA_HOME/secret"
	database
	server_env
	objects
	chown -R lavaserver: "$LAVA_HOME/server" # manage, as root, made django.log
	start gunicorn gunicorn3 lava_server.wsgi -u lavaserver -g lavaserver \
		--worker-class eventlet --workers 2 --bind 127.0.0.1:"$LAVA_PORT" \
		--log-file "$LAVA_HOME/server/log/gunicorn.log"
	start publisher lava-server manage lava-publisher --host 127.0.0.1 --port "$LAVA_WS_PORT" \
		--log-file "$LAVA_HOME/server/log/publisher.log"
	start scheduler lava-server manage lava-scheduler \
		--event-url tcp://127.0.0.1:"$LAVA_EV_PORT" \
		--log-file "$LAVA_HOME/server/log/scheduler.log"
	start worker lava-worker --name "$LAVA_WORKER" --url "$URL/" \
		--ws-url ws://127.0.0.1:"$LAVA_WS_PORT"/ws/ --ping-interval 5 \
		--token-file "$LAVA_HOME/worker-token" --worker-dir "$LAVA_HOME/worker" \
		--log-file "$LAVA_HOME/worker.log"
	wait_online
	env_lines >"$LAVA_HOME/env"
	say "up: $URL/ ($LAVA_DEVICES devices on $LAVA_WORKER); state in $LAVA_HOME"
}

# The REST API answers and the worker is online, within a minute.
wait_online() {
	local i state=
	for i in $(seq 1 120); do
		state=$(python3 - "$URL" "$(cat "$LAVA_HOME/token")" "$LAVA_WORKER" <<-'EOF' 2>/dev/null || true
			import json, sys, urllib.request
			url, token, worker = sys.argv[1:]
			req = urllib.request.Request(f"{url}/api/v0.2/workers/{worker}/",
			                             headers={"Authorization": f"Token {token}"})
			print(json.load(urllib.request.urlopen(req, timeout=5))["state"])
		EOF
		)
		[ "$state" = Online ] && return
		sleep 0.5
	done
	fail "worker $LAVA_WORKER not online after 60 s (state: ${state:-no answer});" \
		"see $LAVA_HOME/worker.log and $LAVA_HOME/server/log/"
}

env_lines() {
	echo "LAVA_URL=$URL"
	echo "LAVA_TOKEN=$(cat "$LAVA_HOME/token")"
	echo "LAVA_HOME=$LAVA_HOME"
}

# stop NAME: TERM, then KILL after 30 s (LAVA shuts down gracefully)
stop() {
	local pid i
	alive "$1" || { rm -f "$RUN/$1.pid"; return 0; }
	pid=$(cat "$RUN/$1.pid")
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
	for i in $(seq 1 60); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"
		say "$1: killed (PID $pid)"
	else
		say "$1: stopped (PID $pid)"
	fi
	rm -f "$RUN/$1.pid"
}

down() {
	[ -d "$RUN" ] || { say "nothing recorded in $RUN"; return; }
	stop worker
	stop scheduler
	stop publisher
	stop gunicorn
	if alive postgres; then
		runuser -u postgres -- "$(pg_bin)/pg_ctl" -D "$LAVA_HOME/pg" -m fast -w stop >/dev/null
		say "postgres: stopped (PID $(cat "$RUN/postgres.pid"))"
		rm -f "$RUN/postgres.pid"
	fi
}

case "${1:-}" in
up) up ;;
down) down ;;
env)
	[ -s "$LAVA_HOME/token" ] || fail "no lab in $LAVA_HOME: run make lava-up"
	env_lines
	;;
*) fail "usage: $0 up|down|env" ;;
esac
