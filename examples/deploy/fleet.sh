#!/usr/bin/env bash
# fleet.sh: a Relay fleet on this machine, to try by hand. It starts redis-server, three
# instances of examples/everything (a, b, c) that share that Redis and one state key, and
# nginx in front of them with plain round-robin (fleet/nginx.conf, no affinity), all on
# 127.0.0.1; prints the URL to give an MCP client; and stops everything on Ctrl-C.
#
#   examples/deploy/fleet.sh
#
# Needs bash, go, redis-server and nginx (Debian packages redis-server, nginx). The ports can be
# chosen: RELAY_FLEET_PORT (nginx, 8080), RELAY_FLEET_REDIS_PORT (6390),
# RELAY_FLEET_PORT_A/_B/_C (9001, 9002, 9003). Every answer names the instance that served it
# in its Relay-Instance header: `curl -i` shows the requests going round. Redis keeps nothing
# on disk here: stop it (kill the redis-server this prints) and the sessions are gone.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
lb=${RELAY_FLEET_PORT:-8080}
redis_port=${RELAY_FLEET_REDIS_PORT:-6390}
port_a=${RELAY_FLEET_PORT_A:-9001}
port_b=${RELAY_FLEET_PORT_B:-9002}
port_c=${RELAY_FLEET_PORT_C:-9003}

for tool in go redis-server nginx; do
	if ! command -v "$tool" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$tool" ]; then
		echo "fleet.sh: $tool is not installed (go from go.dev; Debian packages redis-server, nginx)" >&2
		exit 1
	fi
done
nginx=$(command -v nginx || echo /usr/sbin/nginx)

dir=$(mktemp -d "${TMPDIR:-/tmp}/relay-fleet.XXXXXX")
pids=""          # every process of the fleet, to watch
instances=""     # then by kind, to stop in order
nginx_pid=""
redis_pid=""
stop() {
	trap - INT TERM EXIT
	# The instances first (SIGTERM: they finish what they serve, with Redis still up), then
	# nginx (SIGQUIT: graceful), then Redis.
	for pid in $instances; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in $instances; do wait "$pid" 2>/dev/null || true; done
	if [ -n "$nginx_pid" ]; then kill -QUIT "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; fi
	if [ -n "$redis_pid" ]; then kill -TERM "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
	rm -rf "$dir"
	echo "fleet.sh: stopped" >&2
}
trap stop EXIT
trap 'exit 130' INT TERM

# RELAY_FLEET_EVERYTHING: a binary of examples/everything already built (the tests give theirs).
if [ -n "${RELAY_FLEET_EVERYTHING:-}" ]; then
	cp "$RELAY_FLEET_EVERYTHING" "$dir/everything"
else
	echo "fleet.sh: building examples/everything" >&2
	(cd "$here/../everything" && go build -o "$dir/everything" .)
fi

# Wait until something listens on 127.0.0.1:$1 (ten seconds at most).
wait_port() {
	i=0
	until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then
			echo "fleet.sh: nothing listens on 127.0.0.1:$1" >&2
			tail -n 5 "$dir"/*.log >&2
			exit 1
		fi
		sleep 0.1
	done
}

redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
	--logfile "$dir/redis.log" &
redis_pid=$!
pids="$pids $!"
echo "fleet.sh: redis-server on 127.0.0.1:$redis_port (pid $!)" >&2
wait_port "$redis_port"

# One state key for all three: a 2026-07-28 input_required retry may land on any of them.
od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$dir/state-key"

for inst in a b c; do
	eval port=\$port_$inst
	"$dir/everything" -http "127.0.0.1:$port" -instance "$inst" \
		--redis "redis://127.0.0.1:$redis_port/?prefix=relay-fleet:" \
		--state-key-file "$dir/state-key" -poll-after 10s 2>"$dir/$inst.log" &
	instances="$instances $!"
	pids="$pids $!"
	echo "fleet.sh: instance $inst on 127.0.0.1:$port (pid $!, log $dir/$inst.log)" >&2
done
for port in $port_a $port_b $port_c; do wait_port "$port"; done

sed -e "s|@PREFIX@|$dir|g" -e "s|@PORT_A@|$port_a|g" -e "s|@PORT_B@|$port_b|g" \
	-e "s|@PORT_C@|$port_c|g" -e "s|@PORT_LB@|$lb|g" "$here/fleet/nginx.conf" >"$dir/nginx.conf"
"$nginx" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
nginx_pid=$!
pids="$pids $nginx_pid"
wait_port "$lb"

echo "fleet.sh: serving MCP on http://127.0.0.1:$lb/mcp (round-robin over a, b, c; Ctrl-C stops all)"
# Stay until interrupted, or until a process of the fleet exits on its own.
while :; do
	for pid in $pids; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "fleet.sh: process $pid exited; stopping the fleet. The logs end:" >&2
			tail -n 5 "$dir"/*.log >&2
			exit 1
		fi
	done
	sleep 1
done
