#!/usr/bin/env bash
# Measures the match service under load on this machine, in one run:
#   1. the Redis ceiling: redis-benchmark, one small Lua script per request
#      (EVALSHA of an INCR script, 50 clients, no pipelining), and the same
#      from go-redis and the gRPC ceiling (a bare unary call, empty handler)
#      as loadgen measures them after the closed loop;
#   2. throughput: cmd/loadgen in the closed loop (GAMES games moving as fast
#      as replies arrive), with the CPU time the service, Redis and the load
#      tool each spent per move;
#   3. latency: cmd/loadgen with 1,000 games, each moving once per second;
#   4. watched: the load real players make, the latency run with every game
#      watched by its four players (-watch: 4,000 WatchMatch streams), with
#      the move-to-watcher delay, the service's own MakeMove histogram, GC
#      and scheduling figures (its /metrics over the measured window), and
#      the service's CPU per move divided by the server-side CPU of a bare
#      unary gRPC call (a plain grpc.Server in its own process, called from
#      50 goroutines after the load, in the same run);
#   5. floor: the watched load against the floor (loadgen -serve-floor: a
#      plain grpc.Server whose MakeMove hands the event to the game's
#      streams, nothing else), then against the floor making one Redis round
#      trip per move, then against the service, in one sitting: what the
#      machine, gRPC, Redis and the load tool cost by themselves, to read
#      the service's figures against;
#   6. ramp: the capacity ramp, RAMP_START games with four watchers each
#      moving once per second, RAMP_STEP more at each step, until MakeMove
#      p99 exceeds RAMP_P99; it reports the largest passing count.
# "all" runs 1 to 4. Service, Redis and load tool share this machine's
# cores, as the numbers in docs/match.md were taken. Nothing else should run
# meanwhile.
#
# Usage: scripts/match-load.sh [all|closed|latency|watched|floor|ramp]
# Environment: GAMES (closed loop, default 400), WATCH_GAMES (latency and
# watched runs, default 1000), DURATION (seconds measured, default 20; per
# ramp step too), WARMUP (seconds before measuring, default 5), RAMP_START
# (default 250), RAMP_STEP (default 250), RAMP_MAX (default 4000), RAMP_P99
# (default 5ms), REDIS_PORT (default 6390), GRPC_PORT (default 18080),
# ADMIN_PORT (default 19090), BASELINE_PORT (default 18081), SERVICE_GOGC
# (default 400, as deploy/base sets it), LOADGEN_GOGC (400), LOADGEN_FLAGS
# (more loadgen flags for every run).
set -euo pipefail

what=${1:-all}
GAMES=${GAMES:-400}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-5}
REDIS_PORT=${REDIS_PORT:-6390}
GRPC_PORT=${GRPC_PORT:-18080}
ADMIN_PORT=${ADMIN_PORT:-19090}
BASELINE_PORT=${BASELINE_PORT:-18081}
WATCH_GAMES=${WATCH_GAMES:-1000}
RAMP_START=${RAMP_START:-250}
RAMP_STEP=${RAMP_STEP:-250}
RAMP_MAX=${RAMP_MAX:-4000}
RAMP_P99=${RAMP_P99:-5ms}
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
	# loadgen reports its own CPU: it may be gone by the second reading.
	local s0 r0 s1 r1
	s0=$(cpu "$svc_pid") r0=$(cpu "$redis_pid")
	sleep "$(echo "$DURATION - 0.2" | bc)"
	s1=$(cpu "$svc_pid") r1=$(cpu "$redis_pid")
	wait "$lg"
	cat "$work/load.out"
	local moves
	moves=$(grep -o 'moves=[0-9]*' "$work/load.out" | head -1 | cut -d= -f2)
	svc_us=0
	if [ "${moves:-0}" -gt 0 ]; then
		svc_us=$(((s1 - s0) * 1000000 / hz / moves))
		echo "CPU per move: service $svc_us us, redis $(((r1 - r0) * 1000000 / hz / moves)) us (loadgen: its own line above)"
	fi
}

# start_baseline starts the bare gRPC server (loadgen -serve-grpc-baseline)
# in its own process, so that its CPU can be read apart.
start_baseline() {
	"$work/loadgen" -serve-grpc-baseline "127.0.0.1:$BASELINE_PORT" &
	base_pid=$!
	pids+=("$base_pid")
	base0=$(cpu "$base_pid")
}

# baseline_ratio prints the bare call's server CPU and the service's CPU
# per move in units of it, from the last load.
baseline_ratio() {
	local calls base_us
	calls=$(grep '^baseline gRPC unary' "$work/load.out" | grep -o 'calls=[0-9]*' | cut -d= -f2)
	if [ "${calls:-0}" -gt 0 ]; then
		base_us=$(echo "scale=1; ($(cpu "$base_pid") - $base0) * 1000000 / $hz / $calls" | bc)
		echo "bare unary gRPC call: server CPU $base_us us/call; service CPU per move = $(echo "scale=2; $svc_us / $base_us" | bc) bare calls"
	fi
	kill "$base_pid"
}

metrics_flag="-metrics http://127.0.0.1:$ADMIN_PORT/metrics"

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
	echo "== latency: $WATCH_GAMES games, one move per second each"
	start_service
	load -games "$WATCH_GAMES" -think 1s $metrics_flag ${LOADGEN_FLAGS:-}
	stop_service
fi
if [ "$what" = floor ]; then
	for with in "" redis; do
		echo "== floor${with:+ with one Redis round trip per move}: $WATCH_GAMES games, one move per second each, four watch streams per game, against loadgen -serve-floor"
		start_baseline
		redis-cli -p "$REDIS_PORT" flushall >/dev/null
		"$work/loadgen" -serve-floor "127.0.0.1:$GRPC_PORT" ${with:+-floor-redis "127.0.0.1:$REDIS_PORT"} &
		svc_pid=$!
		pids+=("$svc_pid")
		for _ in $(seq 50); do (echo >"/dev/tcp/127.0.0.1/$GRPC_PORT") 2>/dev/null && break; sleep 0.1; done
		load -games "$WATCH_GAMES" -think 1s -watch -grpc-baseline -grpc-baseline-addr "127.0.0.1:$BASELINE_PORT" ${LOADGEN_FLAGS:-}
		stop_service
		baseline_ratio
	done
fi
if [ "$what" = all ] || [ "$what" = watched ] || [ "$what" = floor ]; then
	echo "== watched: $WATCH_GAMES games, one move per second each, four watch streams per game"
	start_baseline
	start_service
	load -games "$WATCH_GAMES" -think 1s -watch $metrics_flag -grpc-baseline -grpc-baseline-addr "127.0.0.1:$BASELINE_PORT" ${LOADGEN_FLAGS:-}
	stop_service
	baseline_ratio
fi
if [ "$what" = ramp ]; then
	echo "== capacity ramp: from $RAMP_START games by $RAMP_STEP, four watch streams per game, one move per second each, until MakeMove p99 > $RAMP_P99"
	start_service
	GOGC="$LOADGEN_GOGC" "$work/loadgen" -addr "127.0.0.1:$GRPC_PORT" -keys "$work/keys.json" -warmup "${WARMUP}s" -duration "${DURATION}s" \
		-think 1s -watch $metrics_flag -games "$RAMP_START" -ramp-step "$RAMP_STEP" -ramp-max "$RAMP_MAX" -ramp-p99 "$RAMP_P99" ${LOADGEN_FLAGS:-}
	stop_service
fi
