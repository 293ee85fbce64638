package match_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisbatch"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// BenchmarkMakeMove measures a move through the service, without gRPC:
// Service.MakeMove from 50 concurrent games of random legal moves on a
// standalone Redis, commits shared through redisbatch as the service runs
// them. It isolates what the match service itself spends per move (rules,
// state encoding, events, the Redis client) from the transport, which
// scripts/match-load.sh measures with it. An op is one move; a finished
// game is replaced by a new one (not timed). The game mirror that picks
// the moves runs in this process too, so go-cpu-µs/move includes it (one
// legal-move generation and one play per move).
//
//	go test ./internal/match -run '^$' -bench MakeMove -count 6 | benchstat -
func BenchmarkMakeMove(b *testing.B) { benchMakeMove(b, false, false) }

// BenchmarkMakeMoveThinkTime is BenchmarkMakeMove with every move claiming
// a think time, as the project's clients send: MakeMove then reads no
// round-trip estimate (ping.go). Compare with BenchmarkMakeMove in one run
// for the cost of that read.
//
//	go test ./internal/match -run '^$' -bench 'MakeMove(ThinkTime)?$' -count 6 | benchstat -
func BenchmarkMakeMoveThinkTime(b *testing.B) { benchMakeMove(b, false, true) }

// BenchmarkMakeMoveWatched is BenchmarkMakeMove with the load real players
// make: every game watched by its four players (Service.Watch through the
// fan-out hub, as WatchMatch runs it, without the transport: a watcher's
// send only counts the item). An op is still one move; each move's events
// reach four watchers.
//
//	go test ./internal/match -run '^$' -bench MakeMoveWatched -count 6 | benchstat -
func BenchmarkMakeMoveWatched(b *testing.B) { benchMakeMove(b, true, false) }

func benchMakeMove(b *testing.B, watched, think bool) {
	rdb, _ := redistest.Standalone(b)
	commits := redisbatch.New(rdb, redisbatch.DefaultConfig())
	defer commits.Close()
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(b)
	st, err := store.New(rdb, cfg, commits)
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var hub *fanout.Hub
	if watched {
		hub = fanout.New(st, log, 64)
		defer hub.Close()
	}
	svc, err := match.New(st, hub, match.DefaultConfig(), log, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	var watchers sync.WaitGroup
	var delivered atomic.Int64
	ctx, cancel := context.WithCancel(b.Context())
	defer func() {
		cancel()
		watchers.Wait()
	}()
	g0, r0 := redistest.ProcessCPU(b), redistest.ServerCPU(b, rdb)
	b.ReportAllocs()
	b.SetParallelism(25) // 50 games on 2 CPUs
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(uint64(seq.Add(1)), 1))
		var g benchGame
		var stop context.CancelFunc = func() {}
		defer func() { stop() }()
		for pb.Next() {
			if g.game == nil || g.game.Over() {
				b.StopTimer()
				stop()
				if err := g.start(ctx, svc, fmt.Sprintf("%s-%d", b.Name(), seq.Add(1))); err != nil {
					b.Error(err)
					return
				}
				if watched {
					stop = g.watch(ctx, svc, &watchers, &delivered)
				}
				b.StartTimer()
			}
			if err := g.move(ctx, svc, rng, think); err != nil {
				b.Error(err)
				return
			}
		}
	})
	goCPU, redisCPU := redistest.ProcessCPU(b)-g0, redistest.ServerCPU(b, rdb)-r0
	// Creating games is in the CPU figures too; a game lasts hundreds of
	// moves, so it adds a fraction of a percent.
	b.ReportMetric(float64(goCPU.Nanoseconds())/1e3/float64(b.N), "go-cpu-µs/move")
	b.ReportMetric(float64(redisCPU.Nanoseconds())/1e3/float64(b.N), "redis-cpu-µs/move")
}

// watch opens one watcher per seat of the game; the returned func stops
// them. Each watcher's send counts the items.
func (g *benchGame) watch(ctx context.Context, svc *match.Service, wg *sync.WaitGroup, delivered *atomic.Int64) context.CancelFunc {
	ctx, cancel := context.WithCancel(ctx)
	started := make(chan struct{}, rules.NumSeats)
	for _, p := range g.players {
		wg.Go(func() {
			first := true
			_ = svc.Watch(ctx, p, g.id, 0, func(match.WatchItem) error {
				if first {
					first = false
					started <- struct{}{}
				}
				delivered.Add(1)
				return nil
			})
		})
	}
	for range g.players {
		select {
		case <-started:
		case <-ctx.Done():
		}
	}
	return cancel
}

// benchGame is one game of the benchmark and its local mirror.
type benchGame struct {
	id      string
	players [rules.NumSeats]match.Caller
	game    *rules.Game
}

func (g *benchGame) start(ctx context.Context, svc *match.Service, name string) error {
	req := &matchv1.CreateMatchRequest{RequestId: name, TimeControl: &gamev1.TimeControl{Name: "60+0"}}
	for s := range rules.NumSeats {
		id := fmt.Sprintf("%s-%d", name, s)
		g.players[s] = match.Caller{ID: id}
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: id, IsBot: true}})
	}
	m, err := svc.Create(ctx, match.Caller{ID: "bench", Service: true}, req)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	g.id = m.ID
	// Nobody resigns or flags, so no zombie moves: the mirror follows the
	// server's game exactly.
	g.game, err = rules.NewGame(rules.FourKingdoms(), 0, "")
	return err
}

func (g *benchGame) move(ctx context.Context, svc *match.Service, rng *rand.Rand, think bool) error {
	seat := g.game.ToMove()
	moves := g.game.LegalMoves(seat)
	mv := moves[rng.IntN(len(moves))]
	ply := uint32(g.game.Ply())
	req := &matchv1.MakeMoveRequest{MatchId: g.id, Move: g.game.MoveText(mv), ExpectedPly: &ply}
	if think {
		req.ClientThinkTime = durationpb.New(0)
	}
	out, err := svc.MakeMove(ctx, g.players[seat], req)
	if err != nil {
		return fmt.Errorf("move %d of %s: %w", ply, g.id, err)
	}
	if _, err := g.game.Play(seat, mv); err != nil {
		return err
	}
	if out.Ply != g.game.Ply() {
		return fmt.Errorf("server at ply %d, mirror at %d", out.Ply, g.game.Ply())
	}
	return nil
}
