package matchmaker

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/grouping"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// BenchmarkRepeatPlayers simulates a population of players who play game
// after game: each player queues, is matched by real formation rounds
// (real Redis, one round per simulated second), plays a game of 5 to 15
// simulated minutes, and queues again 5 to 30 s after leaving it: half of
// the players leave early (30 % to 100 % into the game) while it goes on,
// the others at its end, at about the same time as the rest. Ratings are
// fixed, N(1500, 350), a fifth provisional; the rating service is an
// in-process fake that reports each player's finished games, as the real
// one does. The window settings are the service defaults (50 points, +5/s,
// x2 provisional, cap 500: reached after 90 s, 45 s provisional).
//
// It runs the same simulation (same seed) without anti-teaming (apart=0)
// and with the default (apart=10m, 3 games) and reports, for the matches
// formed after a 20-minute warm-up in one simulated hour: the wait at match
// p50/p90/p99, and the share of groups that repeat a pair from one of its
// members' latest 3 games that still runs or ended less than 10 minutes
// before.
//
//	go test -run '^$' -bench BenchmarkRepeatPlayers -benchtime 1x ./internal/matchmaker
func BenchmarkRepeatPlayers(b *testing.B) {
	for _, players := range []int{1000, 4000} {
		for _, apart := range []time.Duration{0, 10 * time.Minute} {
			b.Run(fmt.Sprintf("players=%d/apart=%v", players, apart), func(b *testing.B) { simRepeat(b, players, apart) })
		}
	}
}

// simGame is a finished game as the fake rating service reports it.
type simGame struct {
	match    string
	finished time.Time
	players  [4]string
}

// simService is the rating and match service of the simulation.
type simService struct {
	mu      sync.Mutex
	ratings map[string]Rating
	games   map[string][]simGame // player -> finished games, oldest first
	created []simGame            // matches created since the last look (no finish time yet)
	byReq   map[string]Match
}

func (s *simService) BatchRatings(_ context.Context, _ string, ids []string, recent int) (map[string]Rating, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Rating, len(ids))
	for _, id := range ids {
		r := s.ratings[id]
		r.Recent = nil
		gs := s.games[id]
		for k := len(gs) - 1; k >= max(len(gs)-recent, 0); k-- { // newest first
			g := Game{MatchID: gs[k].match, Ended: gs[k].finished}
			for _, p := range gs[k].players {
				if p != id {
					g.CoPlayers = append(g.CoPlayers, p)
				}
			}
			r.Recent = append(r.Recent, g)
		}
		out[id] = r
	}
	return out, nil
}

func (s *simService) CreateMatch(_ context.Context, req MatchRequest) (Match, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.byReq[req.RequestID]; ok {
		return m, nil
	}
	m := Match{ID: fmt.Sprintf("m%d", len(s.byReq)), Seats: map[string]int{}}
	var four [4]string
	for i, p := range req.Players {
		m.Seats[p.ID] = i + 1
		four[i] = p.ID
	}
	s.byReq[req.RequestID] = m
	s.created = append(s.created, simGame{match: m.ID, players: four})
	return m, nil
}

// recentPair reports whether two of the four shared one of their latest
// three games (joined: by start, with their end time) that is still running
// or ended less than ten minutes before now.
func recentPair(joined map[string][]simGame, four [4]string, now time.Time) bool {
	for _, p := range four {
		gs := joined[p]
		for _, g := range gs[max(len(gs)-3, 0):] {
			if now.Sub(g.finished) >= 10*time.Minute {
				continue
			}
			for _, o := range four {
				if o != p && slices.Contains(g.players[:], o) {
					return true
				}
			}
		}
	}
	return false
}

func simRepeat(b *testing.B, players int, apart time.Duration) {
	rdb, _ := redistest.Standalone(b)
	prefix := redistest.Prefix(b) // each run its own keys: a run leaves tickets waiting
	q := queue5
	q.Apart, q.ApartGames = apart, 3
	cfg := testConfig
	cfg.Window = grouping.Window{Initial: 50, GrowthPerSecond: 5, ProvisionalFactor: 2, Max: 500}
	cfg.TicketTTL = 24 * time.Hour // nobody expires: waits are measured whole
	const (
		simLength = time.Hour
		warmUp    = 20 * time.Minute
	)
	var waits []time.Duration
	var groups, repeats int
	run := 0
	b.ReportAllocs()
	for b.Loop() {
		run++
		st := store.New(rdb, fmt.Sprintf("%ssim%d:", prefix, run), []string{q.Name()}, testStoreSettings)
		rng := rand.New(rand.NewPCG(uint64(players), 7)) // same seed with and without anti-teaming
		svc := &simService{ratings: map[string]Rating{}, games: map[string][]simGame{}, byReq: map[string]Match{}}
		start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		type event struct {
			at      time.Time
			arrival string  // a player queues
			game    simGame // a game ends
		}
		var events []event
		for i := range players {
			id := fmt.Sprintf("p%d", i)
			svc.ratings[id] = Rating{Value: math.Round(1500 + rng.NormFloat64()*350), Provisional: rng.IntN(5) == 0}
			events = append(events, event{at: start.Add(time.Duration(rng.Int64N(int64(10 * time.Minute)))), arrival: id})
		}
		enqueued := map[string]time.Time{}
		joined := map[string][]simGame{} // player -> games joined, with their end
		now := start
		m := New(cfg, st, svc, svc, noop.Meter{}, discard())
		m.now = func() time.Time { return now }
		waits, groups, repeats = waits[:0], 0, 0
		ctx := context.Background()
		for ; now.Sub(start) < simLength; now = now.Add(time.Second) {
			// Due events, in time order.
			slices.SortFunc(events, func(a, c event) int { return a.at.Compare(c.at) })
			due := 0
			for due < len(events) && !events[due].at.After(now) {
				due++
			}
			for _, ev := range events[:due] {
				if ev.arrival != "" {
					if _, _, err := st.Enqueue(ctx, q.Name(), store.Player{ID: ev.arrival, DisplayName: ev.arrival}, now); err != nil {
						b.Fatal(err)
					}
					enqueued[ev.arrival] = now
					continue
				}
				svc.mu.Lock()
				for _, p := range ev.game.players {
					svc.games[p] = append(svc.games[p], simGame{match: ev.game.match, finished: ev.at, players: ev.game.players})
				}
				svc.mu.Unlock()
			}
			events = slices.Delete(events, 0, due)

			if _, err := m.Round(ctx, q); err != nil {
				b.Fatal(err)
			}
			svc.mu.Lock()
			created := svc.created
			svc.created = nil
			svc.mu.Unlock()
			for _, game := range created {
				four := game.players
				if now.Sub(start) >= warmUp {
					groups++
					if recentPair(joined, four, now) {
						repeats++
					}
					for _, p := range four {
						waits = append(waits, now.Sub(enqueued[p]))
					}
				}
				length := 5*time.Minute + time.Duration(rng.Int64N(int64(10*time.Minute)))
				game.finished = now.Add(length)
				events = append(events, event{at: game.finished, game: game})
				for _, p := range four {
					joined[p] = append(joined[p], game)
					// Half of the players leave early (resigned, mated,
					// timed out: 30 % to 100 % into the game) and queue
					// again while it goes on; the others stay to the end.
					// Either way they queue again 5 to 30 s later.
					left := game.finished
					if rng.IntN(2) == 0 {
						left = now.Add(time.Duration(float64(length) * (0.3 + 0.7*rng.Float64())))
					}
					events = append(events, event{at: left.Add(5*time.Second + time.Duration(rng.Int64N(int64(25*time.Second)))), arrival: p})
				}
			}
		}
	}
	slices.SortFunc(waits, cmp.Compare)
	pct := func(p float64) float64 {
		if len(waits) == 0 {
			return 0
		}
		return waits[min(int(math.Ceil(p*float64(len(waits))))-1, len(waits)-1)].Seconds()
	}
	b.ReportMetric(pct(0.5), "wait-p50-s")
	b.ReportMetric(pct(0.9), "wait-p90-s")
	b.ReportMetric(pct(0.99), "wait-p99-s")
	b.ReportMetric(float64(groups), "groups")
	if groups > 0 {
		b.ReportMetric(100*float64(repeats)/float64(groups), "repeat-%")
	}
}
