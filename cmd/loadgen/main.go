// Command loadgen drives concurrent four-player games through the match
// service's gRPC API and reports move throughput and MakeMove latency.
//
// Each game is played by four simulated clients (one token per seat) that
// pick uniformly random legal moves; a local copy of the game (pkg/rules)
// supplies the legal moves, so each move costs exactly one MakeMove call.
// With -think 0 every game moves as fast as its replies arrive (closed loop:
// a throughput test); with -think D each game waits D between moves (open
// loop at games/D moves per second: a latency test). A finished game is
// replaced by a new one. Moves count only after -warmup: the start is
// dominated by creating every game and verifying each player's token once,
// which a running service does once per game or token, not per move.
// With -redis set, loadgen also measures the
// baseline: EVALSHA of one small script from 50 connections without
// pipelining, the Redis-side ceiling to compare moves/s against. With
// -grpc-baseline it measures the gRPC-side ceiling too: the standard health
// Check, an empty handler, served in-process by a plain grpc.Server and
// called from 50 goroutines over -conns loopback connections. No unary gRPC
// service can answer faster than that with its client on the same cores.
//
// With -watch each game also opens one WatchMatch stream per seat (with
// that seat's token, from version 0, as a player's client does) and waits
// for their snapshots before the first move. loadgen then checks that every
// event of every measured move reaches every stream of its game once and in
// order, and reports the watch delay: from the moment the mover sent the
// MakeMove to the moment a stream received an event it caused (what the
// other three players feel; the mover's own stream counts too).
//
// With -check-sample N every Nth game is also followed by a spectator
// through the event-contract checker (cmd/internal/matchcheck, as the bots
// and fk do): its events replayed with the rules engine, the legal moves
// offered, and at its end the PGN4 export re-imported and a stream from
// version 1 compared with the live one. loadgen reports how many sampled
// games passed and fails the run on any violation.
//
// With -metrics (the service's /metrics URL) loadgen also reports what the
// service itself saw over the measured window: its MakeMove histogram, its
// garbage collection (cycles, pauses, mark assists against its CPU) and its
// scheduling latency. With -ramp-step N it runs the load again with N more
// games at each step until MakeMove p99 exceeds -ramp-p99, and reports the
// largest passing number of games (the capacity). -serve-grpc-baseline runs
// the bare gRPC baseline server alone, for -grpc-baseline-addr, so that its
// server-side CPU can be read from its own process (scripts/match-load.sh).
// -serve-floor serves the floor (floor.go): the least a match service can
// do for this load, to run loadgen against in the same sitting.
//
//	loadgen -write-keys /tmp/keys.json   # also /tmp/keys.public.json: start the service with AUTH_KEYS_FILE=/tmp/keys.public.json
//	loadgen -addr 127.0.0.1:8081 -keys dev/keys.json -games 50 -duration 30s -redis 127.0.0.1:6379
//	loadgen -addr 127.0.0.1:8081 -keys dev/keys.json -games 1000 -think 1s -duration 30s
//	loadgen -addr 127.0.0.1:8081 -keys dev/keys.json -games 200 -think 1s -duration 30s -watch
//	loadgen -addr 127.0.0.1:8081 -keys dev/keys.json -games 20 -duration 30s -check-sample 5
//	loadgen -addr 127.0.0.1:8081 -keys dev/keys.json -games 250 -ramp-step 250 -think 1s -watch -metrics http://127.0.0.1:9090/metrics
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/matchcheck"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type options struct {
	addr     string
	keys     string
	games    int
	think    time.Duration
	warmup   time.Duration
	duration time.Duration
	conns    int
	redis    string
	cluster  string
	baseline time.Duration
	grpcBase bool
	watch    bool
	// checkSample > 0 follows every checkSample-th game through the checker.
	checkSample int
	// metrics is the service's /metrics URL, scraped when the measurement
	// starts and ends (empty: not read).
	metrics string
	// grpcBaseAddr is a bare gRPC server for the baseline in another
	// process (-serve-grpc-baseline), so that its CPU is its own.
	grpcBaseAddr string
	// The capacity ramp: from games, rampStep more at each step, while
	// MakeMove p99 stays within rampP99 (0 rampStep: one run).
	rampStep, rampMax int
	rampP99           time.Duration
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8081", "match service gRPC address (the match service's default port)")
	fs.StringVar(&o.keys, "keys", "", "auth key set file with a private key (to mint tokens)")
	fs.IntVar(&o.games, "games", 100, "concurrent games")
	fs.DurationVar(&o.think, "think", 0, "pause between moves of one game (0: closed loop)")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "time before measuring: games are created, tokens verified once, caches filled")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "measurement time, after the warm-up")
	fs.IntVar(&o.conns, "conns", 4, "gRPC connections shared by the games")
	fs.StringVar(&o.redis, "redis", "", "standalone Redis for the EVALSHA baseline (empty: skip)")
	fs.StringVar(&o.cluster, "redis-cluster", "", "comma-separated cluster seeds for the baseline instead")
	fs.DurationVar(&o.baseline, "baseline-duration", 5*time.Second, "baseline measurement time")
	fs.BoolVar(&o.grpcBase, "grpc-baseline", false, "also measure a bare unary gRPC call (health Check, in-process server) from 50 callers")
	fs.BoolVar(&o.watch, "watch", false, "also watch every game from each seat and report the move-to-watcher delay")
	fs.IntVar(&o.checkSample, "check-sample", 0, "follow every Nth game through the event-contract checker and fail on a violation (0: none)")
	fs.StringVar(&o.metrics, "metrics", "", "the service's metrics URL (http://ADMIN_ADDR/metrics): report its own MakeMove histogram, GC and scheduling figures over the measured window")
	fs.StringVar(&o.grpcBaseAddr, "grpc-baseline-addr", "", "with -grpc-baseline: call the bare gRPC server at this address (loadgen -serve-grpc-baseline) instead of one in this process")
	serveFloorAddr := fs.String("serve-floor", "", "serve the floor (the least a match service can do for the watched load, see floor.go) on this address until interrupted, and do nothing else")
	floorRedis := fs.String("floor-redis", "", "with -serve-floor: make one Redis round trip per move (EVALSHA of an INCR script) on this server")
	serveBase := fs.String("serve-grpc-baseline", "", "serve the bare gRPC baseline (health Check) on this address until interrupted, and do nothing else")
	fs.IntVar(&o.rampStep, "ramp-step", 0, "capacity ramp: after a run with -games, run again with this many more games, until MakeMove p99 exceeds -ramp-p99 (0: one run)")
	fs.IntVar(&o.rampMax, "ramp-max", 10000, "capacity ramp: the most games tried")
	fs.DurationVar(&o.rampP99, "ramp-p99", 5*time.Millisecond, "capacity ramp: the MakeMove p99 a step must stay within")
	writeKeys := fs.String("write-keys", "", "write a fresh signing key set to this file (for -keys) and its public keys to <file>.public.json (the service's AUTH_KEYS_FILE), and exit")
	cpuProfile := fs.String("cpuprofile", "", "write the load tool's own CPU profile to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *serveBase != "" {
		return serveBaseline(ctx, *serveBase)
	}
	if *serveFloorAddr != "" {
		lis, err := net.Listen("tcp", *serveFloorAddr)
		if err != nil {
			return err
		}
		return serveFloor(ctx, lis, *floorRedis)
	}
	if *writeKeys != "" {
		ks, err := auth.GenerateKeySet("loadgen")
		if err != nil {
			return err
		}
		if err := ks.WriteFile(*writeKeys); err != nil {
			return err
		}
		// The match service verifies tokens only: it refuses private keys.
		return ks.PublicOnly().WriteFile(PublicKeysFile(*writeKeys))
	}
	if o.keys == "" || o.games < 1 || o.conns < 1 || o.checkSample < 0 {
		return errors.New("need -keys, -games >= 1, -conns >= 1 and -check-sample >= 0")
	}
	ks, err := auth.LoadFile(o.keys)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	conns := make([]*grpc.ClientConn, o.conns)
	for i := range conns {
		c, err := grpc.NewClient(o.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer c.Close()
		conns[i] = c
	}
	lg := &loadgen{o: o, ks: ks, conns: conns, codes: map[codes.Code]int{}}
	if err := lg.tokens(); err != nil {
		return err
	}
	if o.checkSample > 0 {
		// The checker's spectators have their own connection; each sampled
		// game gets its own spectator identity (sample), since the
		// services cap the streams one caller holds open
		// (GRPC_MAX_STREAMS_PER_CALLER).
		cc, err := grpc.NewClient(o.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		lg.checker = &client.Client{Match: matchv1.NewMatchServiceClient(cc)}
	}
	var violated error
	movesPerSec := 0.0
	if o.rampStep > 0 {
		lg.ramp(ctx, out)
	} else {
		res := lg.drive(ctx)
		lg.report(out, res)
		movesPerSec = float64(len(res.lat)) / res.elapsed.Seconds()
		violated = lg.reportChecks(out)
	}
	if o.redis != "" || o.cluster != "" {
		ops, err := baseline(ctx, o)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		fmt.Fprintf(out, "baseline EVALSHA (50 conns, no pipelining): %.0f ops/s, client CPU %.1f µs/op; moves/s = %.0f%% of it\n",
			ops.perSec, ops.cpuPerOp, 100*movesPerSec/ops.perSec)
	}
	if o.grpcBase {
		calls, err := grpcBaseline(ctx, o)
		if err != nil {
			return fmt.Errorf("gRPC baseline: %w", err)
		}
		if o.grpcBaseAddr != "" {
			// The server's CPU is its process's: the caller reads it.
			fmt.Fprintf(out, "baseline gRPC unary (empty handler, server %s, 50 callers, %d conns): calls=%d %.0f calls/s, client CPU %.1f µs/call\n",
				o.grpcBaseAddr, o.conns, calls.n, calls.perSec, calls.cpuPerOp)
		} else {
			fmt.Fprintf(out, "baseline gRPC unary (empty handler, in-process server, 50 callers, %d conns): calls=%d %.0f calls/s, client and server CPU %.1f µs/call\n",
				o.conns, calls.n, calls.perSec, calls.cpuPerOp)
		}
	}
	return violated
}

// report prints one run's figures.
func (lg *loadgen) report(out io.Writer, res result) {
	o := lg.o
	fmt.Fprintf(out, "games=%d think=%v warmup=%v duration=%v\n", o.games, o.think, o.warmup, res.elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "moves=%d moves/s=%.0f games finished=%d\n", len(res.lat), float64(len(res.lat))/res.elapsed.Seconds(), res.finished)
	if len(res.lat) > 0 {
		fmt.Fprintf(out, "loadgen CPU per move: %.0f µs\n", float64(res.cpu.Microseconds())/float64(len(res.lat)))
	}
	if len(res.lat) > 0 {
		fmt.Fprintf(out, "MakeMove latency p50=%v p90=%v p99=%v max=%v\n", pct(res.lat, 50), pct(res.lat, 90), pct(res.lat, 99), res.lat[len(res.lat)-1])
	}
	if o.watch {
		w := res.watch
		fmt.Fprintf(out, "watch events delivered=%d expected=%d\n", w.delivered, w.expected)
		if w.undrained > 0 {
			fmt.Fprintf(out, "watch streams still behind when the %v drain ran out: %d (their missing events were late, not lost)\n", watchDrain, w.undrained)
		}
		if len(w.delay) > 0 {
			fmt.Fprintf(out, "watch delay p50=%v p90=%v p99=%v max=%v\n", pct(w.delay, 50), pct(w.delay, 90), pct(w.delay, 99), w.delay[len(w.delay)-1])
		}
		if n := w.errors(); n > 0 {
			fmt.Fprintf(out, "watch errors=%d gaps=%d repeated=%d snapshots=%d failed streams=%d streams ended early=%d\n", n, w.gaps, w.repeated, w.snapshots, w.failed, w.endedShort)
		}
	}
	if len(lg.codes) > 0 {
		fmt.Fprintf(out, "errors by code: %v\n", lg.codes)
	}
	if res.before != nil && res.after != nil {
		reportService(out, res.before, res.after)
	} else if res.scrapeErr != nil {
		fmt.Fprintf(out, "service metrics not read: %v\n", res.scrapeErr)
	}
}

// reportChecks prints the checker's tally (-check-sample) and returns an
// error if a sampled game broke the event contract.
func (lg *loadgen) reportChecks(out io.Writer) error {
	if lg.o.checkSample == 0 {
		return nil
	}
	var violated error
	c := lg.checks
	fmt.Fprintf(out, "check games=%d passed=%d unfinished=%d violations=%d not followed=%d\n",
		c.games, c.passed, c.unfinished, len(c.violations), len(c.notFollowed))
	for _, v := range c.violations {
		fmt.Fprintf(out, "check violation: %v\n", v)
	}
	for _, e := range c.notFollowed {
		fmt.Fprintf(out, "check not followed: %v\n", e)
	}
	switch {
	case len(c.violations) > 0:
		violated = fmt.Errorf("%d sampled games broke the event contract", len(c.violations))
	case len(c.notFollowed) > 0:
		violated = fmt.Errorf("%d sampled games could not be followed", len(c.notFollowed))
	}
	return violated
}

// ramp runs the load with more games at each step (-ramp-step), each a
// whole run with its warm-up, while MakeMove p99 stays within -ramp-p99
// and nothing fails, and reports the largest number of games that passed.
// A step's games are left behind when it ends (their clocks run out
// later): each step starts fresh games.
func (lg *loadgen) ramp(ctx context.Context, out io.Writer) {
	best := 0
	for games := lg.o.games; games <= lg.o.rampMax && ctx.Err() == nil; games += lg.o.rampStep {
		lg.o.games = games
		lg.mu.Lock()
		lg.codes = map[codes.Code]int{}
		lg.mu.Unlock()
		fmt.Fprintf(out, "== ramp step: %d games\n", games)
		res := lg.drive(ctx)
		lg.report(out, res)
		p99 := time.Duration(math.MaxInt64)
		if len(res.lat) > 0 {
			p99 = pct(res.lat, 99)
		}
		failed := len(lg.codes) > 0 || (lg.o.watch && (res.watch.errors() > 0 || res.watch.delivered < res.watch.expected))
		if p99 > lg.o.rampP99 || failed {
			fmt.Fprintf(out, "ramp step %d games: MakeMove p99 %v (limit %v), failures %v: stop\n", games, p99, lg.o.rampP99, failed)
			break
		}
		best = games
	}
	fmt.Fprintf(out, "capacity: largest passing games=%d (MakeMove p99 <= %v, watch=%v, think=%v)\n", best, lg.o.rampP99, lg.o.watch, lg.o.think)
}

type loadgen struct {
	o      options
	ks     *auth.KeySet
	conns  []*grpc.ClientConn
	svcTok grpc.CallOption
	seq    atomic.Int64

	// checker follows the sampled games (-check-sample).
	checker *client.Client

	mu     sync.Mutex
	codes  map[codes.Code]int
	checks checkStats
}

// checkStats tallies the games followed through the checker.
type checkStats struct {
	games, passed int
	// unfinished games were still running when the run ended: checked up
	// to there, without the end-of-game checks.
	unfinished int
	violations []error
	// notFollowed are the sampled games the checker never saw (its
	// stream refused or unreachable throughout).
	notFollowed []error
}

// errNotFollowed marks a sampled game of which the checker saw nothing.
var errNotFollowed = errors.New("sampled game not followed")

// sample follows game id through the checker until it ends or stop is
// called; wait reports the outcome once, after play stopped: finished
// says whether the game ended (then the follower gets watchDrain to see
// the end and run its final checks).
func (lg *loadgen) sample(ctx context.Context, id string) (wait func(finished bool)) {
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	tok, _, err := lg.ks.Sign(auth.Identity{Subject: "lg-checker-" + id, Role: auth.RolePlayer, Bot: true}, time.Now(), 24*time.Hour)
	if err != nil {
		done <- err
	} else {
		fctx = metadata.AppendToOutgoingContext(fctx, "authorization", "Bearer "+tok)
		go func() {
			m, err := lg.checker.Follow(fctx, id, client.FollowOptions{Check: true}, func(client.Update) error { return nil })
			if m == nil && err != nil && !errors.Is(err, matchcheck.ErrViolation) {
				// Not a single item of the game reached the checker
				// (refused, unreachable): the sample checked nothing.
				err = fmt.Errorf("%w: %w", errNotFollowed, err)
			}
			done <- err
		}()
	}
	return func(finished bool) {
		if !finished {
			cancel()
		}
		var err error
		select {
		case err = <-done:
		case <-time.After(watchDrain):
			cancel()
			err = <-done
		}
		cancel()
		lg.mu.Lock()
		defer lg.mu.Unlock()
		lg.checks.games++
		switch {
		case errors.Is(err, matchcheck.ErrViolation):
			lg.checks.violations = append(lg.checks.violations, err)
		case errors.Is(err, errNotFollowed):
			lg.checks.notFollowed = append(lg.checks.notFollowed, err)
		case err == nil && finished:
			lg.checks.passed++
		default:
			lg.checks.unfinished++
		}
	}
}

func (lg *loadgen) tokens() error {
	tok, _, err := lg.ks.Sign(auth.Identity{Subject: "loadgen", Role: auth.RoleService}, time.Now(), 24*time.Hour)
	if err != nil {
		return err
	}
	lg.svcTok = grpc.PerRPCCredentials(auth.BearerToken(tok, true))
	return nil
}

func (lg *loadgen) fail(err error) {
	lg.mu.Lock()
	lg.codes[status.Code(err)]++
	lg.mu.Unlock()
}

type result struct {
	lat      []time.Duration
	elapsed  time.Duration
	finished int64
	watch    watchStats // with -watch; delay sorted
	// before and after are the service's metrics at the start and the
	// end of the measurement (-metrics).
	before, after metrics
	scrapeErr     error
	// cpu is this process's CPU time over the measurement.
	cpu time.Duration
}

// gameStats is what one game goroutine measured, merged after the run.
type gameStats struct {
	lat   []time.Duration
	watch watchStats
}

// drive runs the games for the warm-up and the measurement time; only
// moves started after the warm-up count.
func (lg *loadgen) drive(ctx context.Context) result {
	start := time.Now().Add(lg.o.warmup)
	end := start.Add(lg.o.duration)
	// The run's deadline is end itself: grpc-go fails a call whose
	// deadline has passed before the context's timer fires, and such a
	// call must still count as cut off by the end (time.Now() >= end).
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	stats := make([]gameStats, lg.o.games)
	var finished atomic.Int64
	var wg sync.WaitGroup
	var res result
	wg.Go(func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start)):
		}
		cpu0 := processCPU()
		<-ctx.Done()
		res.cpu = processCPU() - cpu0
	})
	if lg.o.metrics != "" {
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(start)):
			}
			if res.before, res.scrapeErr = scrape(ctx, lg.o.metrics); res.scrapeErr != nil {
				return
			}
			<-ctx.Done()
			res.after, res.scrapeErr = scrape(context.WithoutCancel(ctx), lg.o.metrics)
		})
	}
	for g := range lg.o.games {
		wg.Go(func() {
			client := matchv1.NewMatchServiceClient(lg.conns[g%len(lg.conns)])
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			if lg.o.think > 0 {
				// Spread the games' first moves over one think time.
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Duration(rng.Int64N(int64(lg.o.think)))):
				}
			}
			for ctx.Err() == nil {
				done, err := lg.play(ctx, client, rng, start, &stats[g])
				// Calls cut off by the end of the run are not failures.
				if err != nil && ctx.Err() == nil && time.Now().Before(end) {
					lg.fail(err)
					time.Sleep(100 * time.Millisecond)
				}
				if done {
					finished.Add(1)
				}
			}
		})
	}
	wg.Wait()
	var all []time.Duration
	var watch watchStats
	for _, st := range stats {
		all = append(all, st.lat...)
		watch.add(st.watch)
	}
	slices.Sort(all)
	slices.Sort(watch.delay)
	res.lat, res.elapsed, res.finished, res.watch = all, min(time.Since(start), lg.o.duration), finished.Load(), watch
	return res
}

// play creates a game and plays it until it ends or ctx ends. With -watch
// it watches the game from every seat until the game ends, or until the
// watchers have caught up with the last move after play stops.
func (lg *loadgen) play(ctx context.Context, c matchv1.MatchServiceClient, rng *rand.Rand, from time.Time, st *gameStats) (bool, error) {
	n := lg.seq.Add(1)
	req := &matchv1.CreateMatchRequest{RequestId: fmt.Sprintf("lg-%d-%d", time.Now().UnixNano(), n),
		TimeControl: &gamev1.TimeControl{Name: "60+0"}}
	var seatTok [4]grpc.CallOption
	for s := range 4 {
		id := fmt.Sprintf("lg-%d-%d", n, s)
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: id, IsBot: true}})
		tok, _, err := lg.ks.Sign(auth.Identity{Subject: id, Role: auth.RolePlayer, Bot: true}, time.Now(), 24*time.Hour)
		if err != nil {
			return false, err
		}
		seatTok[s] = grpc.PerRPCCredentials(auth.BearerToken(tok, true))
	}
	created, err := c.CreateMatch(ctx, req, lg.svcTok)
	if err != nil {
		return false, err
	}
	id := created.GetMatch().GetMatchId()
	version := created.GetMatch().GetVersion() // the last version acknowledged to the mover
	var g *rules.Game                          // the local mirror, below
	if lg.checker != nil && (n-1)%int64(lg.o.checkSample) == 0 {
		wait := lg.sample(ctx, id)
		finished := false
		defer func() { wait(finished) }()
		defer func() { finished = g != nil && g.Over() }()
	}
	var w *gameWatch
	if lg.o.watch {
		w = lg.watch(ctx, c, id, seatTok)
		defer func() { st.watch.add(w.close(ctx, version, watchDrain)) }()
		// A player's client shows the board before it plays: wait for
		// every snapshot, so that every event after it is streamed.
		if !w.reach(ctx, version) {
			return false, nil
		}
	}
	// The local mirror: no player resigns or flags, so no zombie (random)
	// moves happen and the server's game follows the same moves exactly.
	g, err = rules.NewGame(rules.FourKingdoms(), 0, "")
	if err != nil {
		return false, err
	}
	for !g.Over() {
		seat := g.ToMove()
		moves := g.LegalMoves(seat)
		if len(moves) == 0 {
			return false, errors.New("local game: no legal move")
		}
		mv := moves[rng.IntN(len(moves))]
		ply := uint32(g.Ply())
		t0 := time.Now()
		resp, err := c.MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: id, Move: g.MoveText(mv), ExpectedPly: &ply}, seatTok[seat])
		if err != nil {
			return false, err
		}
		if t0.After(from) {
			st.lat = append(st.lat, time.Since(t0))
		}
		if w != nil {
			// Only this goroutine moves in this game, so the move caused
			// exactly the versions after the last one it was told.
			if resp.GetVersion() <= version {
				return false, fmt.Errorf("MakeMove reply at version %d, not after %d", resp.GetVersion(), version)
			}
			if t0.After(from) {
				w.moves = append(w.moves, sentMove{first: version + 1, last: resp.GetVersion(), sent: t0})
			}
			version = resp.GetVersion()
		}
		if _, err := g.Play(seat, mv); err != nil {
			return false, err
		}
		if resp.GetPly() != uint32(g.Ply()) {
			return false, fmt.Errorf("server at ply %d, local game at %d", resp.GetPly(), g.Ply())
		}
		if lg.o.think > 0 {
			select {
			case <-ctx.Done():
				return false, nil
			case <-time.After(lg.o.think):
			}
		}
	}
	return true, nil
}

// watchDrain bounds how long a game waits, once its mover has stopped, for
// its streams to receive the events of the moves already acknowledged.
const watchDrain = 5 * time.Second

// watchStats is the -watch tally of one stream, one game or the whole run.
type watchStats struct {
	delivered int             // events of measured moves received, per stream
	expected  int             // events of measured moves times the streams of their game
	delay     []time.Duration // MakeMove sent to event received, per delivered event
	gaps      int             // events received after a missing version
	repeated  int             // events at or below the last version seen: duplicates or out of order
	snapshots int             // snapshots after the first item: events replaced by a snapshot
	failed    int             // streams ended by an error before loadgen closed them
	// endedShort counts streams the server ended cleanly before the last
	// acknowledged version (an error: a stream ends with the match).
	endedShort int
	// undrained counts streams still behind the last acknowledged version
	// when watchDrain ran out: their missing events are late, not lost.
	undrained int
}

func (s *watchStats) add(o watchStats) {
	s.delivered += o.delivered
	s.expected += o.expected
	s.delay = append(s.delay, o.delay...)
	s.gaps += o.gaps
	s.repeated += o.repeated
	s.snapshots += o.snapshots
	s.failed += o.failed
	s.endedShort += o.endedShort
	s.undrained += o.undrained
}

func (s *watchStats) errors() int { return s.gaps + s.repeated + s.snapshots + s.failed + s.endedShort }

// sentMove is a measured move: its MakeMove, sent at sent, caused the
// events first..last.
type sentMove struct {
	first, last uint64
	sent        time.Time
}

// gameWatch is one game's WatchMatch streams, one per seat. Each stream's
// goroutine records what it receives in its seatWatch; the mover records
// its moves. The two are matched only in close, after the goroutines are
// done, so the hot path shares nothing but each stream's progress.
type gameWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	moves  []sentMove // the mover's, in version order
	seats  [4]seatWatch

	mu      sync.Mutex
	target  uint64        // the version reach waits for
	reached chan struct{} // closed when every stream is at target or ended; nil if no one waits
}

// seatWatch is one stream's record. got and stats belong to the stream's
// goroutine until gameWatch.wg is done; last and ended are guarded by
// gameWatch.mu.
type seatWatch struct {
	got   []delivery // events in arrival order, each version above the one before
	stats watchStats
	last  uint64 // version of the last item received
	ended bool
}

type delivery struct {
	version uint64
	at      time.Time
}

// watch opens one WatchMatch stream per seat with that seat's token. The
// streams outlive ctx (the run) until close, so that the events of the
// last acknowledged moves still reach them after the run's end.
func (lg *loadgen) watch(ctx context.Context, c matchv1.MatchServiceClient, id string, seatTok [4]grpc.CallOption) *gameWatch {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &gameWatch{cancel: cancel}
	for s := range w.seats {
		w.wg.Go(func() {
			if err := w.read(sctx, c, id, &w.seats[s], seatTok[s]); err != nil {
				lg.fail(err)
			}
		})
	}
	return w
}

// read receives one stream until it ends and checks that the versions
// follow each other. It returns the error that ended the stream, nil if
// the stream ended with OK or was closed by close.
func (w *gameWatch) read(ctx context.Context, c matchv1.MatchServiceClient, id string, sw *seatWatch, tok grpc.CallOption) error {
	stream, err := c.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id}, tok)
	var last uint64
	for first := true; err == nil; first = false {
		var item *matchv1.WatchMatchResponse
		if item, err = stream.Recv(); err != nil {
			break
		}
		at, v := time.Now(), item.GetVersion()
		switch {
		case item.GetSnapshot() != nil:
			if !first {
				sw.stats.snapshots++
			}
			last = max(last, v)
		case v <= last:
			sw.stats.repeated++
			continue
		default:
			if v != last+1 {
				sw.stats.gaps++
			}
			sw.got = append(sw.got, delivery{version: v, at: at})
			last = v
		}
		w.publish(sw, last, false)
	}
	w.publish(sw, last, true)
	if errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	sw.stats.failed++
	return fmt.Errorf("WatchMatch %s: %w", id, err)
}

// publish records a stream's progress and wakes reach once every stream
// has got far enough.
func (w *gameWatch) publish(sw *seatWatch, last uint64, ended bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sw.last, sw.ended = last, ended
	if w.reached != nil && w.allAt(w.target) {
		close(w.reached)
		w.reached = nil
	}
}

func (w *gameWatch) allAt(v uint64) bool {
	for i := range w.seats {
		if s := &w.seats[i]; !s.ended && s.last < v {
			return false
		}
	}
	return true
}

// reach waits until every stream has received version v or ended. It
// reports false if ctx ended first.
func (w *gameWatch) reach(ctx context.Context, v uint64) bool {
	w.mu.Lock()
	if w.allAt(v) {
		w.mu.Unlock()
		return true
	}
	reached := make(chan struct{})
	w.target, w.reached = v, reached
	w.mu.Unlock()
	select {
	case <-reached:
		return true
	case <-ctx.Done():
		return false
	}
}

// close waits, at most wait (watchDrain), until every stream has received the
// events up to version (the last one acknowledged to the mover), ends the
// streams, and tallies the game: each stream's deliveries against the
// measured moves. Events of moves that were not measured (warm-up, or a
// MakeMove cut off by the run's end) are checked for order only.
func (w *gameWatch) close(ctx context.Context, version uint64, wait time.Duration) watchStats {
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	w.reach(drain, version)
	cancel()
	// Which streams are behind now, and whether they had ended: read
	// before w.cancel ends them all.
	behind, ended := make([]bool, len(w.seats)), make([]bool, len(w.seats))
	w.mu.Lock()
	for i := range w.seats {
		behind[i], ended[i] = w.seats[i].last < version, w.seats[i].ended
	}
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()

	var st watchStats
	for i := range w.seats {
		switch {
		case !behind[i]:
		case !ended[i]:
			st.undrained++
		case w.seats[i].stats.failed == 0: // an error is counted as failed
			st.endedShort++
		}
	}

	var events int
	for _, m := range w.moves {
		events += int(m.last - m.first + 1)
	}
	for i := range w.seats {
		sw := &w.seats[i]
		st.add(sw.stats)
		st.expected += events
		// Both lists are in version order: walk them together.
		m := 0
		for _, d := range sw.got {
			for m < len(w.moves) && w.moves[m].last < d.version {
				m++
			}
			if m == len(w.moves) {
				break
			}
			if w.moves[m].first <= d.version {
				st.delivered++
				st.delay = append(st.delay, d.at.Sub(w.moves[m].sent))
			}
		}
	}
	return st
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// rate is a baseline's result: operations per second, and this process's
// CPU time per operation.
type rate struct {
	perSec, cpuPerOp float64
	n                int64
}

// measure runs op from 50 goroutines for d, and on past d until at least
// minBaselineOps succeeded (at most maxBaselineOverrun more): on a loaded
// machine the first calls (dials, a script's first EVAL) can take longer
// than a short d, and a rate of 0 measures nothing. Calls in flight at
// the end finish and count; none is cut off by a deadline.
func measure(ctx context.Context, d time.Duration, op func(ctx context.Context, i int) error) rate {
	var ops atomic.Int64
	var wg sync.WaitGroup
	cpu0 := processCPU()
	start := time.Now()
	done := func() bool {
		el := time.Since(start)
		return ctx.Err() != nil || el >= d && (ops.Load() >= minBaselineOps || el >= d+maxBaselineOverrun)
	}
	for i := range 50 {
		wg.Go(func() {
			for !done() {
				if err := op(ctx, i); err == nil {
					ops.Add(1)
				}
			}
		})
	}
	wg.Wait()
	n := float64(max(ops.Load(), 1))
	return rate{perSec: float64(ops.Load()) / time.Since(start).Seconds(), cpuPerOp: float64((processCPU() - cpu0).Microseconds()) / n, n: ops.Load()}
}

// minBaselineOps and maxBaselineOverrun: see measure.
const (
	minBaselineOps     = 200
	maxBaselineOverrun = 30 * time.Second
)

// processCPU returns the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serveBaseline serves the bare gRPC baseline, the health service's Check
// from a plain grpc.Server, on addr until ctx ends.
func serveBaseline(ctx context.Context, addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	return serveUntil(ctx, srv, lis)
}

// serveUntil serves srv on lis until ctx ends (nil) or serving fails.
func serveUntil(ctx context.Context, srv *grpc.Server, lis net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case <-ctx.Done():
		srv.Stop()
		<-served
		return nil
	case err := <-served:
		return err
	}
}

// grpcBaseline measures the health service's Check, served in-process or
// (-grpc-baseline-addr) by another process.
func grpcBaseline(ctx context.Context, o options) (rate, error) {
	addr := o.grpcBaseAddr
	if addr == "" {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return rate{}, err
		}
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, health.NewServer())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(lis) }()
		defer func() {
			srv.Stop()
			<-served
		}()
		addr = lis.Addr().String()
	}
	clients := make([]healthpb.HealthClient, o.conns)
	for i := range clients {
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return rate{}, err
		}
		defer c.Close()
		clients[i] = healthpb.NewHealthClient(c)
	}
	req := &healthpb.HealthCheckRequest{}
	if _, err := clients[0].Check(ctx, req); err != nil {
		return rate{}, err
	}
	return measure(ctx, o.baseline, func(ctx context.Context, i int) error {
		_, err := clients[i%len(clients)].Check(ctx, req)
		return err
	}), nil
}

// baseline measures EVALSHA of one small script from 50 connections.
func baseline(ctx context.Context, o options) (rate, error) {
	var rdb redis.UniversalClient
	if o.cluster != "" {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(o.cluster, ","), PoolSize: 50})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: o.redis, PoolSize: 50})
	}
	defer rdb.Close()
	// Run sends EVALSHA, as the services do; the first call on each node
	// falls back to EVAL once, which caches the script there.
	script := redisconn.NewScript(`return redis.call('INCR', KEYS[1])`)
	var keys [50][]string
	for i := range keys {
		keys[i] = []string{fmt.Sprintf("loadgen:baseline:{%d}", i)}
	}
	return measure(ctx, o.baseline, func(ctx context.Context, i int) error {
		return script.Run(ctx, rdb, keys[i]).Err()
	}), nil
}

// PublicKeysFile is where -write-keys puts the public keys of the set it
// writes to signing: the same name with .public.json for .json.
func PublicKeysFile(signing string) string {
	return strings.TrimSuffix(signing, ".json") + ".public.json"
}
