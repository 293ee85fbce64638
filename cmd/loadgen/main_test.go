package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/workspace"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestRunAgainstMatchService is the Performance recipe of docs/match.md at
// a small scale: a real Redis, the match service built from this tree and
// started as its own process, and loadgen driving it in the closed loop
// (with the EVALSHA baseline) and in the open loop (-think).
func TestRunAgainstMatchService(t *testing.T) {
	if os.Getenv("CI") != "true" {
		if testing.Short() {
			t.Skip("builds and starts the match service")
		}
		if _, err := exec.LookPath("go"); err != nil {
			t.Skip("the go command is not on PATH: cannot build the match service")
		}
	}
	_, redisAddr := redistest.Standalone(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	if err := run(ctx, []string{"-write-keys", keys}, io.Discard); err != nil {
		t.Fatalf("write keys: %v", err)
	}
	addr, admin := startMatchService(ctx, t, dir, []string{
		"AUTH_KEYS_FILE=" + PublicKeysFile(keys), "INTERNAL_PLAINTEXT=true",
		"REDIS_ADDR=" + redisAddr,
		"REDIS_CLUSTER_ADDRS=",
		"MATCH_KEY_PREFIX=" + redistest.Prefix(t),
		"RATE_LIMIT_RPS=0",
		// One open stream per caller: each sampled game's checker must
		// watch as a caller of its own.
		"GRPC_MAX_STREAMS_PER_CALLER=1",
		"LOG_LEVEL=warn",
		// Flags within a fifth of a second of the deadline (the
		// time-loss endings).
		"MATCH_KEEPER_INTERVAL=200ms",
	})

	t.Run("closed loop with baseline", func(t *testing.T) {
		out := runLoadgen(ctx, t, "-addr", addr, "-keys", keys, "-games", "4",
			"-warmup", "500ms", "-duration", "2s", "-redis", redisAddr, "-grpc-baseline", "-baseline-duration", "500ms")
		r, err := parseReport(out)
		if err != nil {
			t.Errorf("bad report: %v\n%s", err, out)
		}
		if r.baseline <= 0 {
			t.Errorf("no baseline measured with -redis:\n%s", out)
		}
		if r.grpcBaseline <= 0 {
			t.Errorf("no gRPC baseline measured with -grpc-baseline:\n%s", out)
		}
		if r.watched {
			t.Errorf("watch lines without -watch:\n%s", out)
		}
	})

	t.Run("capacity ramp with the service's metrics", func(t *testing.T) {
		// A limit no step can meet: the ramp stops after its first step
		// and reports no passing count.
		out := runLoadgen(ctx, t, "-addr", addr, "-keys", keys, "-watch", "-games", "2", "-think", "100ms",
			"-warmup", "500ms", "-duration", "1s", "-ramp-step", "2", "-ramp-max", "4", "-ramp-p99", "1ns",
			"-metrics", "http://"+admin+"/metrics")
		for _, want := range []string{"== ramp step: 2 games\n", "service MakeMove histogram: calls=", "service GC: cycles=",
			"ramp step 2 games: MakeMove p99", "capacity: largest passing games=0 "} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in the ramp's report:\n%s", want, out)
			}
		}
		if strings.Contains(out, "== ramp step: 4 games") {
			t.Errorf("the ramp went on after a failing step:\n%s", out)
		}
		// A limit every step meets: the last step tried is the capacity.
		out = runLoadgen(ctx, t, "-addr", addr, "-keys", keys, "-games", "1", "-think", "100ms",
			"-warmup", "500ms", "-duration", "1s", "-ramp-step", "1", "-ramp-max", "2", "-ramp-p99", "1h")
		if !strings.Contains(out, "== ramp step: 2 games\n") || !strings.Contains(out, "capacity: largest passing games=2 ") {
			t.Errorf("a ramp whose steps all pass should end at -ramp-max:\n%s", out)
		}
	})

	t.Run("watching every game from each seat", func(t *testing.T) {
		out := runLoadgen(ctx, t, "-addr", addr, "-keys", keys, "-watch", "-games", "3",
			"-warmup", "500ms", "-duration", "2s")
		r, err := parseReport(out)
		if err != nil {
			t.Errorf("bad report: %v\n%s", err, out)
		}
		if !r.watched {
			t.Errorf("no watch lines with -watch:\n%s", out)
		}
	})

	t.Run("sampled games through the checker", func(t *testing.T) {
		// Random games from the standard start rarely end within the
		// run: their events are checked up to the end of the run (a
		// violation fails it); the endings below check whole games.
		// Three games at once, each followed by its own checker: the
		// service allows one open stream per caller
		// (GRPC_MAX_STREAMS_PER_CALLER=1), so a checker identity shared
		// by the games leaves some unfollowed (and fails the run).
		out := runLoadgen(ctx, t, "-addr", addr, "-keys", keys, "-games", "3", "-check-sample", "1",
			"-think", "100ms", "-warmup", "200ms", "-duration", "2s")
		r, err := parseReport(out)
		if err != nil {
			t.Errorf("bad report: %v\n%s", err, out)
		}
		if r.checkGames < 1 {
			t.Errorf("no game sampled with -check-sample 1:\n%s", out)
		}
	})

	t.Run("endings through the checker", func(t *testing.T) { testEndings(ctx, t, addr, keys) })

	t.Run("open loop with think time", func(t *testing.T) {
		const games, think, duration = 4, 50 * time.Millisecond, 2 * time.Second
		out := runLoadgen(ctx, t, "-addr", addr, "-keys", keys, "-games", strconv.Itoa(games),
			"-think", think.String(), "-warmup", "500ms", "-duration", duration.String())
		r, err := parseReport(out)
		if err != nil {
			t.Errorf("bad report: %v\n%s", err, out)
		}
		if !strings.Contains(out, "think=50ms") {
			t.Errorf("the header does not report the think time:\n%s", out)
		}
		// Every game waits at least -think between moves, so it starts at
		// most duration/think+1 counted moves: more means the pause is
		// skipped. This is an upper bound, so a slow machine cannot trip it.
		if limit := games * (int(duration/think) + 1); r.moves > limit {
			t.Errorf("moves = %d with -think %v, want at most %d\n%s", r.moves, think, limit, out)
		}
		if r.baseline != 0 || r.grpcBaseline != 0 {
			t.Errorf("baseline measured without -redis or -grpc-baseline:\n%s", out)
		}
	})
}

// report is what every load run prints, parsed.
type report struct {
	moves       int
	movesPerSec float64
	baseline    float64 // EVALSHA ops/s; 0 without a baseline line
	// grpcBaseline is the bare unary gRPC calls/s; 0 without its line.
	grpcBaseline float64
	watched      bool // the -watch lines are present
	delivered    int  // watch events delivered (and expected)
	checkGames   int  // games sampled by -check-sample (0: no tally line)
}

var (
	headerLine   = regexp.MustCompile(`(?m)^games=\d+ think=\S+ warmup=\S+ duration=(\S+)$`)
	movesLine    = regexp.MustCompile(`(?m)^moves=(\d+) moves/s=(\S+) games finished=(\d+)$`)
	latencyLine  = regexp.MustCompile(`(?m)^MakeMove latency p50=(\S+) p90=(\S+) p99=(\S+) max=(\S+)$`)
	baselineLine = regexp.MustCompile(`(?m)^baseline EVALSHA \(50 conns, no pipelining\): (\S+) ops/s, client CPU (\S+) µs/op; moves/s = (\S+)% of it$`)
	grpcLine     = regexp.MustCompile(`(?m)^baseline gRPC unary \(empty handler, in-process server, 50 callers, \d+ conns\): calls=\d+ (\S+) calls/s, client and server CPU (\S+) µs/call$`)
	anyBaseline  = regexp.MustCompile(`(?m)^baseline `)
	watchLine    = regexp.MustCompile(`(?m)^watch events delivered=(\d+) expected=(\d+)$`)
	delayLine    = regexp.MustCompile(`(?m)^watch delay p50=(\S+) p90=(\S+) p99=(\S+) max=(\S+)$`)
	watchErrLine = regexp.MustCompile(`(?m)^watch errors=(\d+) gaps=\d+ repeated=\d+ snapshots=\d+ failed streams=\d+$`)
	anyWatchLine = regexp.MustCompile(`(?m)^watch `)
	checkLine    = regexp.MustCompile(`(?m)^check games=(\d+) passed=(\d+) unfinished=(\d+) violations=(\d+) not followed=(\d+)$`)
	anyCheckLine = regexp.MustCompile(`(?m)^check `)
)

// parseReport checks the lines a successful run prints: the header, a
// positive move count with a finite rate consistent with it, an ordered
// latency line, no failed calls, (if present) a positive baseline whose
// share matches the move rate, and (if present) the -watch lines: every
// expected event delivered, at least one per stream per move, an ordered
// delay line and no watch errors. Every problem found is returned.
func parseReport(out string) (report, error) {
	var r report
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	h := headerLine.FindStringSubmatch(out)
	m := movesLine.FindStringSubmatch(out)
	if h == nil || m == nil {
		return r, errors.New("no header or moves line")
	}
	elapsed, err := time.ParseDuration(h[1])
	if err != nil || elapsed <= 0 {
		bad("measured duration %q: want a positive duration", h[1])
	}
	r.moves, _ = strconv.Atoi(m[1])
	r.movesPerSec, err = strconv.ParseFloat(m[2], 64)
	switch {
	case err != nil || math.IsInf(r.movesPerSec, 0) || math.IsNaN(r.movesPerSec):
		bad("moves/s = %q: want a finite number", m[2])
	case r.moves <= 0 || r.movesPerSec <= 0:
		bad("moves = %d, moves/s = %v: want both positive", r.moves, r.movesPerSec)
	case elapsed > 0:
		// moves/s is moves over the measured time, printed rounded.
		if want := float64(r.moves) / elapsed.Seconds(); math.Abs(r.movesPerSec-want) > 1+want*0.01 {
			bad("moves/s = %v, want about %.1f (%d moves in %v)", r.movesPerSec, want, r.moves, elapsed)
		}
	}

	if l := latencyLine.FindStringSubmatch(out); l == nil {
		bad("no latency line")
	} else {
		checkPercentiles("latency", l[1:], bad)
	}
	if strings.Contains(out, "errors by code") {
		bad("calls failed")
	}

	known := 0
	if b := baselineLine.FindStringSubmatch(out); b != nil {
		known++
		ops, err1 := strconv.ParseFloat(b[1], 64)
		share, err2 := strconv.ParseFloat(b[3], 64)
		switch {
		case err1 != nil || err2 != nil || !(ops > 0) || math.IsInf(ops, 0):
			bad("baseline %q ops/s, %q%%: want a positive finite rate", b[1], b[3])
		case !positive(b[2]):
			bad("baseline client CPU %q µs/op: want a positive finite number", b[2])
		default:
			r.baseline = ops
			// Both printed numbers are rounded to integers: allow a point
			// of slack plus the relative rounding error of ops/s.
			if want := 100 * r.movesPerSec / ops; math.Abs(share-want) > 1+want*0.5/ops {
				bad("baseline share = %v%%, want %.2f%% (moves/s %v over %v ops/s)", share, want, r.movesPerSec, ops)
			}
		}
	}
	if g := grpcLine.FindStringSubmatch(out); g != nil {
		known++
		if !positive(g[1]) || !positive(g[2]) {
			bad("gRPC baseline %q calls/s, %q µs/call: want positive finite numbers", g[1], g[2])
		} else {
			r.grpcBaseline, _ = strconv.ParseFloat(g[1], 64)
		}
	}
	if n := len(anyBaseline.FindAllString(out, -1)); n != known {
		bad("%d baseline lines, %d of them well-formed", n, known)
	}

	if w := watchLine.FindStringSubmatch(out); w != nil {
		r.watched = true
		r.delivered, _ = strconv.Atoi(w[1])
		expected, _ := strconv.Atoi(w[2])
		switch {
		case r.delivered != expected:
			bad("watch events delivered = %d, expected = %d: want all delivered", r.delivered, expected)
		case expected < 4*r.moves:
			// Every move causes at least one event, seen by four streams.
			bad("watch events expected = %d for %d moves: want at least 4 per move", expected, r.moves)
		}
		if d := delayLine.FindStringSubmatch(out); d == nil {
			bad("no watch delay line")
		} else {
			checkPercentiles("watch delay", d[1:], bad)
		}
		known := 2 // delivered and delay
		if e := watchErrLine.FindStringSubmatch(out); e != nil {
			known++
			if e[1] != "0" {
				bad("watch errors = %s", e[1])
			}
		}
		if n := len(anyWatchLine.FindAllString(out, -1)); n != known {
			bad("%d watch lines, %d of them well-formed", n, known)
		}
	} else if strings.Contains(out, "watch") {
		bad("watch lines without a well-formed delivered line")
	}

	if c := checkLine.FindStringSubmatch(out); c != nil {
		r.checkGames, _ = strconv.Atoi(c[1])
		passed, _ := strconv.Atoi(c[2])
		unfinished, _ := strconv.Atoi(c[3])
		if c[4] != "0" || r.checkGames != passed+unfinished {
			bad("checked games = %s: %s passed, %s unfinished, %s violations: want every game passed or unfinished", c[1], c[2], c[3], c[4])
		}
		if n := len(anyCheckLine.FindAllString(out, -1)); n != 1 {
			bad("%d check lines: want only the tally", n)
		}
	} else if anyCheckLine.MatchString(out) {
		bad("check lines without a well-formed tally")
	}
	return r, errors.Join(errs...)
}

// positive reports whether s is a positive finite number.
func positive(s string) bool {
	x, err := strconv.ParseFloat(s, 64)
	return err == nil && x > 0 && !math.IsInf(x, 0)
}

// checkPercentiles checks a p50, p90, p99, max quadruple: durations,
// positive and non-decreasing.
func checkPercentiles(what string, ps []string, bad func(string, ...any)) {
	var d [4]time.Duration
	for i := range d {
		var err error
		if d[i], err = time.ParseDuration(ps[i]); err != nil {
			bad("%s %q: %v", what, ps[i], err)
		}
	}
	if d[0] <= 0 || d[0] > d[1] || d[1] > d[2] || d[2] > d[3] {
		bad("%s p50, p90, p99, max = %v: want positive and non-decreasing", what, d)
	}
}

// TestParseReportRejectsBadRuns makes sure the checks on the load runs'
// output can fail: each case spoils one line of a good report.
func TestParseReportRejectsBadRuns(t *testing.T) {
	const good = "games=4 think=0s warmup=500ms duration=2s\n" +
		"moves=1991 moves/s=996 games finished=0\n" +
		"MakeMove latency p50=2.8ms p90=6.5ms p99=26.3ms max=65.7ms\n" +
		"watch events delivered=8120 expected=8120\n" +
		"watch delay p50=3.1ms p90=7.2ms p99=28.8ms max=70.1ms\n" +
		"baseline EVALSHA (50 conns, no pipelining): 5012 ops/s, client CPU 21.5 µs/op; moves/s = 20% of it\n" +
		"baseline gRPC unary (empty handler, in-process server, 50 callers, 4 conns): calls=180450 36090 calls/s, client and server CPU 46.4 µs/call\n"
	r, err := parseReport(good)
	if err != nil {
		t.Fatalf("parseReport(good report) = %v", err)
	}
	if r.moves != 1991 || r.movesPerSec != 996 || r.baseline != 5012 || r.grpcBaseline != 36090 || !r.watched || r.delivered != 8120 {
		t.Fatalf("parseReport(good report) = %+v, want 1991 moves, 996 moves/s, 5012 ops/s, 36090 calls/s, 8120 watch events", r)
	}
	zeroErrs := strings.Replace(good, "max=70.1ms\n", "max=70.1ms\nwatch errors=0 gaps=0 repeated=0 snapshots=0 failed streams=0\n", 1)
	if _, err := parseReport(zeroErrs); err != nil {
		t.Errorf("parseReport(good report with watch errors=0) = %v", err)
	}
	tests := []struct{ name, old, new string }{
		{"no moves", "moves=1991 moves/s=996", "moves=0 moves/s=0"},
		{"infinite rate", "moves/s=996", "moves/s=+Inf"},
		{"NaN rate", "moves/s=996", "moves/s=NaN"},
		{"rate not moves over time", "moves/s=996", "moves/s=1991"},
		{"no latency line", "MakeMove latency p50=2.8ms p90=6.5ms p99=26.3ms max=65.7ms\n", ""},
		{"zero latency", "p50=2.8ms", "p50=0s"},
		{"unordered latency", "p99=26.3ms", "p99=1ms"},
		{"failed calls", "games finished=0\n", "games finished=0\nerrors by code: map[Unavailable:3]\n"},
		{"zero baseline", "5012 ops/s", "0 ops/s"},
		{"baseline share off", "= 20% of it", "= 50% of it"},
		{"malformed baseline", "(50 conns, no pipelining)", "(50 conns)"},
		{"zero baseline client CPU", "client CPU 21.5", "client CPU 0"},
		{"zero gRPC baseline", "36090 calls/s", "0 calls/s"},
		{"gRPC baseline CPU not a number", "CPU 46.4 µs/call", "CPU ? µs/call"},
		{"malformed gRPC baseline", "in-process server, ", ""},
		{"watch events lost", "delivered=8120", "delivered=8119"},
		{"watch events extra", "delivered=8120", "delivered=8121"},
		{"no watch events", "delivered=8120 expected=8120", "delivered=0 expected=0"},
		{"fewer watch events than moves", "delivered=8120 expected=8120", "delivered=7963 expected=7963"},
		{"malformed watch events", "watch events delivered=8120 expected=8120", "watch events delivered=8120"},
		{"no watch delay line", "watch delay p50=3.1ms p90=7.2ms p99=28.8ms max=70.1ms\n", ""},
		{"zero watch delay", "p50=3.1ms", "p50=0s"},
		{"unordered watch delay", "p90=7.2ms", "p90=1ms"},
		{"watch delay not a duration", "max=70.1ms", "max=soon"},
		{"watch errors", "max=70.1ms\n", "max=70.1ms\nwatch errors=2 gaps=1 repeated=1 snapshots=0 failed streams=0\n"},
		{"malformed watch errors", "max=70.1ms\n", "max=70.1ms\nwatch errors=2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := strings.Replace(good, tt.old, tt.new, 1)
			if out == good {
				t.Fatalf("%q is not in the good report", tt.old)
			}
			if _, err := parseReport(out); err == nil {
				t.Errorf("parseReport accepted:\n%s", out)
			}
		})
	}
}

// TestWatchChecksEveryStream feeds scripted streams (the same script to
// all four seats) through the -watch reader and tally, checking that gaps,
// repeats, late snapshots, failed streams, streams ended early and streams
// still behind at the end of the drain are counted and that only the
// events of measured moves count as expected and delivered.
func TestWatchChecksEveryStream(t *testing.T) {
	snap := func(v uint64) *matchv1.WatchMatchResponse {
		return &matchv1.WatchMatchResponse{Version: v, Item: &matchv1.WatchMatchResponse_Snapshot{Snapshot: &matchv1.Match{Version: v}}}
	}
	ev := func(v uint64) *matchv1.WatchMatchResponse {
		return &matchv1.WatchMatchResponse{Version: v, Item: &matchv1.WatchMatchResponse_Event{Event: &eventsv1.MatchEvent{Version: v}}}
	}
	unavailable := status.Error(codes.Unavailable, "shutting down")
	tests := []struct {
		name    string
		items   []*matchv1.WatchMatchResponse
		end     error       // after the items; nil: the stream waits to be closed
		moves   [][2]uint64 // measured moves: first and last version caused
		version uint64      // the last version acknowledged to the mover
		want    watchStats  // all four streams; delay is checked by count
	}{
		{name: "in order, closed at the run's end", items: []*matchv1.WatchMatchResponse{snap(1), ev(2), ev(3), ev(4)},
			moves: [][2]uint64{{2, 2}, {3, 4}}, version: 4, want: watchStats{delivered: 12, expected: 12}},
		{name: "ended with OK after the game", items: []*matchv1.WatchMatchResponse{snap(1), ev(2), ev(3)}, end: io.EOF,
			moves: [][2]uint64{{2, 3}}, version: 3, want: watchStats{delivered: 8, expected: 8}},
		{name: "warm-up moves not counted", items: []*matchv1.WatchMatchResponse{snap(1), ev(2), ev(3), ev(4)},
			moves: [][2]uint64{{4, 4}}, version: 4, want: watchStats{delivered: 4, expected: 4}},
		{name: "cut-off move not counted", items: []*matchv1.WatchMatchResponse{snap(1), ev(2), ev(3)},
			moves: [][2]uint64{{2, 2}}, version: 2, want: watchStats{delivered: 4, expected: 4}},
		{name: "gap", items: []*matchv1.WatchMatchResponse{snap(1), ev(2), ev(4)},
			moves: [][2]uint64{{2, 2}, {3, 4}}, version: 4, want: watchStats{delivered: 8, expected: 12, gaps: 4}},
		{name: "duplicate and out of order", items: []*matchv1.WatchMatchResponse{snap(1), ev(2), ev(3), ev(3), ev(2), ev(4)},
			moves: [][2]uint64{{2, 4}}, version: 4, want: watchStats{delivered: 12, expected: 12, repeated: 8}},
		{name: "events replaced by a snapshot", items: []*matchv1.WatchMatchResponse{snap(1), ev(2), snap(4)},
			moves: [][2]uint64{{2, 4}}, version: 4, want: watchStats{delivered: 4, expected: 12, snapshots: 4}},
		{name: "failed stream", items: []*matchv1.WatchMatchResponse{snap(1), ev(2)}, end: unavailable,
			moves: [][2]uint64{{2, 3}}, version: 3, want: watchStats{delivered: 4, expected: 8, failed: 4}},
		{name: "ended with OK before the last acknowledged event", items: []*matchv1.WatchMatchResponse{snap(1), ev(2)}, end: io.EOF,
			moves: [][2]uint64{{2, 3}}, version: 3, want: watchStats{delivered: 4, expected: 8, endedShort: 4}},
		{name: "still behind when the drain ran out", items: []*matchv1.WatchMatchResponse{snap(1), ev(2)},
			moves: [][2]uint64{{2, 3}}, version: 3, want: watchStats{delivered: 4, expected: 8, undrained: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lg := &loadgen{codes: map[codes.Code]int{}}
			sent := time.Now()
			w := lg.watch(t.Context(), scriptedWatch{items: tt.items, end: tt.end}, "m", [4]grpc.CallOption{})
			if !w.reach(t.Context(), 1) {
				t.Fatal("reach(1) = false")
			}
			for _, m := range tt.moves {
				w.moves = append(w.moves, sentMove{first: m[0], last: m[1], sent: sent})
			}
			got := w.close(t.Context(), tt.version, 200*time.Millisecond)
			if len(got.delay) != got.delivered {
				t.Errorf("%d delays for %d delivered events", len(got.delay), got.delivered)
			}
			for _, d := range got.delay {
				if d < 0 {
					t.Errorf("negative delay %v", d)
				}
			}
			got.delay = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("watch stats = %+v, want %+v", got, tt.want)
			}
			if n := lg.codes[codes.Unavailable]; n != tt.want.failed {
				t.Errorf("errors by code = %v, want %d Unavailable", lg.codes, tt.want.failed)
			}
		})
	}
}

// scriptedWatch is a match client whose WatchMatch streams return items,
// then end (nil: wait until the call's context ends, as a live stream does).
type scriptedWatch struct {
	matchv1.MatchServiceClient // nil: only WatchMatch is called
	items                      []*matchv1.WatchMatchResponse
	end                        error
}

func (s scriptedWatch) WatchMatch(ctx context.Context, _ *matchv1.WatchMatchRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[matchv1.WatchMatchResponse], error) {
	return &scriptedStream{ctx: ctx, items: s.items, end: s.end}, nil
}

type scriptedStream struct {
	grpc.ClientStream // nil: only Recv is called
	ctx               context.Context
	items             []*matchv1.WatchMatchResponse
	end               error
}

func (s *scriptedStream) Recv() (*matchv1.WatchMatchResponse, error) {
	if len(s.items) > 0 {
		item := s.items[0]
		s.items = s.items[1:]
		return item, nil
	}
	if s.end != nil {
		return nil, s.end
	}
	<-s.ctx.Done()
	return nil, status.FromContextError(s.ctx.Err()).Err()
}

func runLoadgen(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	var out strings.Builder
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("loadgen %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("loadgen %s\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// startMatchService builds the match service from this tree, starts it on
// free loopback ports with env, waits until its health check reports
// SERVING and returns its gRPC address. It is stopped when t ends: SIGTERM
// to its process group, SIGKILL if it has not exited after a few seconds.
func startMatchService(ctx context.Context, t *testing.T, dir string, env []string) (addr, admin string) {
	t.Helper()
	repo, err := workspace.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "match")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./services/match/cmd/match")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build the match service: %v\n%s", err, out)
	}

	addr, admin = redistest.FreeAddr(t), redistest.FreeAddr(t)
	logPath := filepath.Join(dir, "match.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), append(env, "GRPC_ADDR="+addr, "ADMIN_ADDR="+admin)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, killed with the test binary should that die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start the match service: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		pgid := -cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-exited:
			if waitErr != nil {
				t.Errorf("the match service exited with %v on SIGTERM\n%s", waitErr, readLog(logPath))
			}
			return
		case <-time.After(5 * time.Second):
		}
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-exited
		t.Errorf("the match service did not stop within 5s of SIGTERM: killed\n%s", readLog(logPath))
	})

	if err := waitServing(ctx, addr, exited); err != nil {
		t.Fatalf("match service: %v\n%s", err, readLog(logPath))
	}
	return addr, admin
}

// waitServing polls the gRPC health service at addr until it reports
// SERVING, the process exits, or ctx ends.
func waitServing(ctx context.Context, addr string, exited <-chan struct{}) error {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		resp, err := hc.Check(cctx, &healthpb.HealthCheckRequest{})
		ccancel()
		switch {
		case err != nil:
			last = err
		case resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
			return nil
		default:
			last = fmt.Errorf("health status %v", resp.GetStatus())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not serving: %w (last check: %v)", ctx.Err(), last)
		case <-exited:
			return errors.New("exited at start")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readLog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return "service log:\n" + string(b)
}

// TestRunRejectsBadFlags checks that invalid settings come back as errors
// before any connection is made, never as a panic or an exit.
func TestRunRejectsBadFlags(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := run(t.Context(), []string{"-write-keys", keys}, io.Discard); err != nil {
		t.Fatalf("write keys: %v", err)
	}
	tests := []struct {
		name string
		args []string
		want string // a substring of the error
	}{
		{"no keys", []string{"-games", "1"}, "need -keys"},
		{"zero games", []string{"-keys", keys, "-games", "0"}, "-games >= 1"},
		{"negative games", []string{"-keys", keys, "-games", "-3"}, "-games >= 1"},
		{"zero conns", []string{"-keys", keys, "-conns", "0"}, "-conns >= 1"},
		{"negative check sample", []string{"-keys", keys, "-check-sample", "-1"}, "-check-sample >= 0"},
		{"missing key file", []string{"-keys", filepath.Join(t.TempDir(), "absent.json")}, "absent.json"},
		{"games not a number", []string{"-keys", keys, "-games", "many"}, "invalid value"},
		{"bad duration", []string{"-keys", keys, "-duration", "soon"}, "invalid value"},
		{"unknown flag", []string{"-keys", keys, "-players", "4"}, "not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			err := run(t.Context(), tt.args, &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
			if out.Len() > 0 {
				t.Errorf("run(%q) printed a report for invalid flags:\n%s", tt.args, out.String())
			}
		})
	}
}
