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
// pipelining, the Redis-side ceiling to compare moves/s against.
//
//	loadgen -write-keys /tmp/keys.json   # then start the service with AUTH_KEYS_FILE=/tmp/keys.json
//	loadgen -addr 127.0.0.1:8080 -keys dev/keys.json -games 50 -duration 30s -redis 127.0.0.1:6379
//	loadgen -addr 127.0.0.1:8080 -keys dev/keys.json -games 1000 -think 1s -duration 30s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
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
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
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
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "match service gRPC address")
	fs.StringVar(&o.keys, "keys", "", "auth key set file with a private key (to mint tokens)")
	fs.IntVar(&o.games, "games", 100, "concurrent games")
	fs.DurationVar(&o.think, "think", 0, "pause between moves of one game (0: closed loop)")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "time before measuring: games are created, tokens verified once, caches filled")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "measurement time, after the warm-up")
	fs.IntVar(&o.conns, "conns", 4, "gRPC connections shared by the games")
	fs.StringVar(&o.redis, "redis", "", "standalone Redis for the EVALSHA baseline (empty: skip)")
	fs.StringVar(&o.cluster, "redis-cluster", "", "comma-separated cluster seeds for the baseline instead")
	fs.DurationVar(&o.baseline, "baseline-duration", 5*time.Second, "baseline measurement time")
	writeKeys := fs.String("write-keys", "", "write a fresh key set to this file for the service and exit")
	cpuProfile := fs.String("cpuprofile", "", "write the load tool's own CPU profile to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *writeKeys != "" {
		ks, err := auth.GenerateKeySet("loadgen")
		if err != nil {
			return err
		}
		return ks.WriteFile(*writeKeys)
	}
	if o.keys == "" || o.games < 1 || o.conns < 1 {
		return errors.New("need -keys, -games >= 1 and -conns >= 1")
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
	res := lg.drive(ctx)
	fmt.Fprintf(out, "games=%d think=%v warmup=%v duration=%v\n", o.games, o.think, o.warmup, res.elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "moves=%d moves/s=%.0f games finished=%d\n", len(res.lat), float64(len(res.lat))/res.elapsed.Seconds(), res.finished)
	if len(res.lat) > 0 {
		fmt.Fprintf(out, "MakeMove latency p50=%v p90=%v p99=%v max=%v\n", pct(res.lat, 50), pct(res.lat, 90), pct(res.lat, 99), res.lat[len(res.lat)-1])
	}
	if len(lg.codes) > 0 {
		fmt.Fprintf(out, "errors by code: %v\n", lg.codes)
	}
	if o.redis != "" || o.cluster != "" {
		ops, err := baseline(ctx, o)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		fmt.Fprintf(out, "baseline EVALSHA (50 conns, no pipelining): %.0f ops/s; moves/s = %.0f%% of it\n",
			ops, 100*float64(len(res.lat))/res.elapsed.Seconds()/ops)
	}
	return nil
}

type loadgen struct {
	o      options
	ks     *auth.KeySet
	conns  []*grpc.ClientConn
	svcTok grpc.CallOption
	seq    atomic.Int64

	mu    sync.Mutex
	codes map[codes.Code]int
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
}

// drive runs the games for the warm-up and the measurement time; only
// moves started after the warm-up count.
func (lg *loadgen) drive(ctx context.Context) result {
	ctx, cancel := context.WithTimeout(ctx, lg.o.warmup+lg.o.duration)
	defer cancel()
	start := time.Now().Add(lg.o.warmup)
	end := start.Add(lg.o.duration)
	lats := make([][]time.Duration, lg.o.games)
	var finished atomic.Int64
	var wg sync.WaitGroup
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
				done, err := lg.play(ctx, client, rng, start, &lats[g])
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
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	return result{lat: all, elapsed: min(time.Since(start), lg.o.duration), finished: finished.Load()}
}

// play creates a game and plays it until it ends or ctx ends.
func (lg *loadgen) play(ctx context.Context, c matchv1.MatchServiceClient, rng *rand.Rand, from time.Time, lat *[]time.Duration) (bool, error) {
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
	// The local mirror: no player resigns or flags, so no zombie (random)
	// moves happen and the server's game follows the same moves exactly.
	g, err := rules.NewGame(rules.FourKingdoms(), 0, "")
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
			*lat = append(*lat, time.Since(t0))
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

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// baseline measures EVALSHA of one small script from 50 connections.
func baseline(ctx context.Context, o options) (float64, error) {
	var rdb redis.UniversalClient
	if o.cluster != "" {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(o.cluster, ","), PoolSize: 50})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: o.redis, PoolSize: 50})
	}
	defer rdb.Close()
	script := redis.NewScript(`return redis.call('INCR', KEYS[1])`)
	if err := script.Load(ctx, rdb).Err(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.baseline)
	defer cancel()
	var ops atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 50 {
		wg.Go(func() {
			key := fmt.Sprintf("loadgen:baseline:{%d}", i)
			for ctx.Err() == nil {
				if err := script.EvalSha(ctx, rdb, []string{key}).Err(); err == nil {
					ops.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(ops.Load()) / time.Since(start).Seconds(), nil
}
