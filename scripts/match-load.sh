#!/usr/bin/env bash
# Measures the match service under load on this machine, in one run:
#   1. the Redis ceiling: redis-benchmark, one small Lua script per request
#      (EVALSHA of an INCR script, 50 clients, no pipelining), and the same
#      from go-redis and the gRPC ceiling (a bare unary call, empty handler)
#      as loadgen measures them after the closed loop;
#   2. throughput: cmd/loadgen in the closed loop (GAMES games moving as fast
#      as replies arrive), with the CPU time the service, Redis and the load
#      tool each spent per move;
#   3. latency: cmd/loadgen with 1,000 games, each moving once per second.
# Service, Redis and load tool share this machine's cores, as the numbers in
# docs/match.md were taken. Nothing else should run meanwhile.
#
# Usage: scripts/match-load.sh [all|closed|latency]
# Environment: GAMES (closed loop, default 400), DURATION (seconds measured,
# default 20), WARMUP (seconds before measuring, default 5), REDIS_PORT
# (default 6390), GRPC_PORT (default 18080), ADMIN_PORT (default 19090),
# SERVICE_GOGC (default 400, as deploy/base sets it), LOADGEN_GOGC (400),
# LOADGEN_FLAGS (more loadgen flags for both runs, for example -watch).
set -euo pipefail

what=${1:-all}
GAMES=${GAMES:-400}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-5}
REDIS_PORT=${REDIS_PORT:-6390}
GRPC_PORT=${GRPC_PORT:-18080}
ADMIN_PORT=${ADMIN_PORT:-19090}
SERVICE_GOGC=${SERVICE_GOGC:-400}
LOADGEN_GOGC=${LOADGEN_GOGC:-400}

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "building into $work"
(cd "$repo" && go build -o "$work/match" ./services/match/cmd/match && go build -o "$work/loadgen" ./cmd/loadgen)
"$work/loadgen" -write-keys "$work/keys.json"

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
redis_pid=$!
pids+=("$redis_pid")
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

start_service() {
	redis-cli -p "$REDIS_PORT" flushall >/dev/null
	AUTH_KEYS_FILE="$work/keys.public.json" INTERNAL_PLAINTEXT=true REDIS_ADDR="127.0.0.1:$REDIS_PORT" GRPC_ADDR="127.0.0.1:$GRPC_PORT" \
		ADMIN_ADDR="127.0.0.1:$ADMIN_PORT" RATE_LIMIT_RPS=0 LOG_LEVEL=warn GOGC="$SERVICE_GOGC" \
		"$work/match" >"$work/match.log" 2>&1 &
	svc_pid=$!
	pids+=("$svc_pid")
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && return; sleep 0.1; done
	echo "match service did not become ready:" >&2
	cat "$work/match.log" >&2
	exit 1
}

stop_service() {
	kill "$svc_pid"
	wait "$svc_pid" 2>/dev/null || true
}

# cpu prints a process's user+system CPU time in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# load runs loadgen with the given arguments and prints its report and the
# CPU time each process spent per measured move.
load() {
	GOGC="$LOADGEN_GOGC" "$work/loadgen" -addr "127.0.0.1:$GRPC_PORT" -keys "$work/keys.json" -warmup "${WARMUP}s" -duration "${DURATION}s" "$@" >"$work/load.out" &
	local lg=$!
	sleep "$WARMUP"
	if ! kill -0 "$lg" 2>/dev/null; then
		echo "loadgen ended during the warm-up:" >&2
		cat "$work/load.out" >&2
		wait "$lg"
		return 1
	fi
	local s0 r0 l0 s1 r1 l1
	s0=$(cpu "$svc_pid") r0=$(cpu "$redis_pid") l0=$(cpu "$lg")
	sleep "$(echo "$DURATION - 0.2" | bc)"
	s1=$(cpu "$svc_pid") r1=$(cpu "$redis_pid") l1=$(cpu "$lg")
	wait "$lg"
	cat "$work/load.out"
	local moves
	moves=$(grep -o 'moves=[0-9]*' "$work/load.out" | head -1 | cut -d= -f2)
	if [ "${moves:-0}" -gt 0 ]; then
		echo "CPU per move: service $(((s1 - s0) * 1000000 / hz / moves)) us, redis $(((r1 - r0) * 1000000 / hz / moves)) us, loadgen $(((l1 - l0) * 1000000 / hz / moves)) us"
	fi
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$what" = all ] || [ "$what" = closed ]; then
	sha=$(redis-cli -p "$REDIS_PORT" script load "return redis.call('INCR', KEYS[1])")
	echo "== redis-benchmark: EVALSHA of one small script, 50 clients, no pipelining"
	redis-benchmark -p "$REDIS_PORT" -n 200000 -c 50 -q evalsha "$sha" 1 k | tr '\r' '\n' | tail -1
	echo "== closed loop: $GAMES games"
	start_service
	load -games "$GAMES" -redis "127.0.0.1:$REDIS_PORT" -grpc-baseline ${LOADGEN_FLAGS:-}
	stop_service
fi
if [ "$what" = all ] || [ "$what" = latency ]; then
	echo "== latency: 1000 games, one move per second each"
	start_service
	load -games 1000 -think 1s ${LOADGEN_FLAGS:-}
	stop_service
fi
