package matchmaker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/grouping"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/queues"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

var (
	queue5  = queues.Queue{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}}
	queueBF = queues.Queue{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: time.Minute}, BotFillAfter: 20 * time.Second}
)

var testStoreSettings = store.Settings{
	TicketTTL:        10 * time.Minute,
	Retention:        10 * time.Minute,
	FormationTimeout: 30 * time.Second,
	PointerGrace:     5 * time.Second,
	WaitSamples:      1000,
}

var testConfig = Config{
	Interval:      50 * time.Millisecond,
	TicketTTL:     10 * time.Minute,
	Window:        grouping.Window{Initial: 50, GrowthPerSecond: 5, ProvisionalFactor: 2, Max: 400},
	DefaultRating: 1500,
	RatingBatch:   100_000,
	CreateTimeout: 5 * time.Second,
	Concurrency:   16,
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fakeRatings serves fixed ratings and counts calls.
type fakeRatings struct {
	mu      sync.Mutex
	ratings map[string]Rating
	calls   int
	fail    bool
	// recentAsked is the number of recent games the last call asked for.
	recentAsked int
}

func (f *fakeRatings) BatchRatings(_ context.Context, _ string, ids []string, recentGames int) (map[string]Rating, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.recentAsked = recentGames
	if f.fail {
		return nil, errors.New("rating service down")
	}
	out := map[string]Rating{}
	for _, id := range ids {
		if r, ok := f.ratings[id]; ok {
			r.Recent = r.Recent[:min(recentGames, len(r.Recent))]
			out[id] = r
		}
	}
	return out, nil
}

// fakeMatches is an idempotent in-memory match service.
type fakeMatches struct {
	mu      sync.Mutex
	byReq   map[string]Match
	players map[string]string // player -> match id
	calls   atomic.Int64
	fail    atomic.Bool
	dup     []string // players seated in two matches
	now     func() time.Time
	created map[string]time.Time
}

func newFakeMatches() *fakeMatches {
	return &fakeMatches{byReq: map[string]Match{}, players: map[string]string{}, now: time.Now, created: map[string]time.Time{}}
}

func (f *fakeMatches) CreateMatch(_ context.Context, req MatchRequest) (Match, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		return Match{}, errors.New("match service down")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.byReq[req.RequestID]; ok {
		return m, nil
	}
	m := Match{ID: fmt.Sprintf("m%d", len(f.byReq)+1), Seats: map[string]int{}}
	for i, p := range req.Players {
		m.Seats[p.ID] = i + 1
		if _, dup := f.players[p.ID]; dup {
			f.dup = append(f.dup, p.ID)
		}
		f.players[p.ID] = m.ID
	}
	f.byReq[req.RequestID] = m
	f.created[m.ID] = f.now()
	return m, nil
}

func (f *fakeMatches) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byReq)
}

type env struct {
	store   *store.Store
	rdb     redis.UniversalClient
	ratings *fakeRatings
	matches *fakeMatches
}

func forEachRedis(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := kind.Client(t)
			e := &env{
				store:   store.New(rdb, prefix, []string{queue5.Name(), queueBF.Name()}, testStoreSettings),
				rdb:     rdb,
				ratings: &fakeRatings{ratings: map[string]Rating{}},
				matches: newFakeMatches(),
			}
			f(t, e)
		})
	}
}

func (e *env) matchmaker() *Matchmaker {
	return New(testConfig, e.store, e.ratings, e.matches, noop.Meter{}, discard())
}

func (e *env) enqueue(t *testing.T, q queues.Queue, id string, rating float64, at time.Time) store.Ticket {
	t.Helper()
	e.ratings.mu.Lock()
	e.ratings.ratings[id] = Rating{Value: rating}
	e.ratings.mu.Unlock()
	tk, _, err := e.store.Enqueue(context.Background(), q.Name(), store.Player{ID: id, DisplayName: id}, at)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestRoundFormsMatches(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		now := time.Now()
		var tks []store.Ticket
		for i := range 8 {
			// Two rating clusters far apart, interleaved in enqueue order.
			tks = append(tks, e.enqueue(t, queue5, fmt.Sprintf("p%d", i), 1000+float64(i%2)*1000+float64(i), now))
		}
		e.enqueue(t, queue5, "loner", 3000, now) // nobody near: keeps waiting
		m := e.matchmaker()
		res, err := m.Round(ctx, queue5)
		if err != nil {
			t.Fatal(err)
		}
		if res.Formed != 2 || res.Waiting != 9 || e.ratings.calls != 1 {
			t.Fatalf("round = %+v, %d rating calls; want 2 formed of 9 waiting, 1 call", res, e.ratings.calls)
		}
		seats := map[string]map[int]bool{}
		for i, tk := range tks {
			got, err := e.store.Ticket(ctx, tk.ID)
			if err != nil || got.State != store.Matched {
				t.Fatalf("ticket %d = %+v, %v; want matched", i, got, err)
			}
			if seats[got.MatchID] == nil {
				seats[got.MatchID] = map[int]bool{}
			}
			if seats[got.MatchID][got.Seat] {
				t.Errorf("match %s: seat %d given twice", got.MatchID, got.Seat)
			}
			seats[got.MatchID][got.Seat] = true
			// Same cluster, same match.
			first, _ := e.store.Ticket(ctx, tks[i%2].ID)
			if got.MatchID != first.MatchID {
				t.Errorf("ticket %d in %s, want %s with its rating cluster", i, got.MatchID, first.MatchID)
			}
		}
		// A second round rates nobody again and forms nothing.
		res, err = m.Round(ctx, queue5)
		if err != nil || res.Formed != 0 || res.Waiting != 1 || e.ratings.calls != 1 {
			t.Errorf("second round = %+v, %v, %d rating calls", res, err, e.ratings.calls)
		}
	})
}

func TestRoundRatingServiceDown(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, e *env) {
		e.ratings.fail = true
		now := time.Now()
		var tks []store.Ticket
		for i := range 5 {
			// Their real ratings are far apart, but nobody can tell.
			tks = append(tks, e.enqueue(t, queue5, fmt.Sprintf("p%d", i), float64(i)*1000, now))
		}
		m := e.matchmaker()
		res, err := m.Round(context.Background(), queue5)
		if err != nil || res.Formed != 1 || res.More {
			t.Fatalf("round = %+v, %v; want one match at the default rating", res, err)
		}
		// The one left over keeps no stand-in rating: once the rating
		// service is back, the next round asks for its real one.
		var left store.Ticket
		for _, tk := range tks {
			if got, _ := e.store.Ticket(context.Background(), tk.ID); got.State == store.Searching {
				left = got
			}
		}
		if left.ID == "" || left.Rated {
			t.Fatalf("leftover ticket = %+v, want searching and unrated", left)
		}
		e.ratings.fail = false
		if _, err := m.Round(context.Background(), queue5); err != nil {
			t.Fatal(err)
		}
		got, _ := e.store.Ticket(context.Background(), left.ID)
		if want := e.ratings.ratings[left.PlayerID].Value; !got.Rated || got.Rating != want {
			t.Errorf("leftover ticket rating = %v (rated %v), want %v", got.Rating, got.Rated, want)
		}
	})
}

func TestRecoverAfterCrash(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// createdBeforeCrash: the dead instance had already created the
		// match but not marked the tickets.
		createdBeforeCrash bool
		// matchServiceDown: recovery cannot create the match, so the
		// tickets go back to the queue.
		matchServiceDown bool
	}{
		{name: "crash between claim and create"},
		{name: "crash between create and complete", createdBeforeCrash: true},
		{name: "match service down during recovery", matchServiceDown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			forEachRedis(t, func(t *testing.T, e *env) {
				ctx := context.Background()
				now := time.Now().Truncate(time.Millisecond)
				var entries [4]store.Entry
				for i := range entries {
					tk := e.enqueue(t, queue5, fmt.Sprintf("p%d", i), 1500, now.Add(time.Duration(i)*time.Millisecond))
					entries[i] = store.Entry{TicketID: tk.ID, Player: store.Player{ID: tk.PlayerID, DisplayName: tk.PlayerID}, EnqueuedMs: tk.EnqueuedAt.UnixMilli()}
				}
				// The dead instance: claims, maybe creates, then vanishes.
				f := newFormation(queue5.Name(), entries, now)
				if claimed, err := e.store.Claim(ctx, queue5.Name(), []*store.Formation{f}, now); err != nil || !claimed[0] {
					t.Fatalf("Claim = %v, %v", claimed, err)
				}
				var first Match
				if tt.createdBeforeCrash {
					dead := e.matchmaker()
					o, err := dead.create(ctx, queue5, f)
					if err != nil {
						t.Fatal(err)
					}
					first.ID = o.MatchID
				}
				e.matches.fail.Store(tt.matchServiceDown)

				m := e.matchmaker()
				// Before the deadline nothing happens to the formation.
				m.now = func() time.Time { return now.Add(time.Second) }
				if n, err := m.recover(ctx, queue5, m.now()); err != nil || n != 0 {
					t.Fatalf("recovery before the deadline = %d, %v", n, err)
				}
				m.now = func() time.Time { return now.Add(testStoreSettings.FormationTimeout + time.Second) }
				if n, err := m.recover(ctx, queue5, m.now()); err != nil || n != 1 {
					t.Fatalf("recovery after the deadline = %d, %v; want one", n, err)
				}
				for i, en := range entries {
					tk, err := e.store.Ticket(ctx, en.TicketID)
					if err != nil {
						t.Fatal(err)
					}
					if tt.matchServiceDown {
						if tk.State != store.Searching || !tk.EnqueuedAt.Equal(en.EnqueuedAt()) {
							t.Errorf("ticket %d = %+v; want searching since %v", i, tk, en.EnqueuedAt())
						}
						continue
					}
					if tk.State != store.Matched || tk.MatchID == "" || (tt.createdBeforeCrash && tk.MatchID != first.ID) {
						t.Errorf("ticket %d = %+v; want matched (into %q if already created)", i, tk, first.ID)
					}
				}
				if want := map[bool]int{true: 0, false: 1}[tt.matchServiceDown]; e.matches.count() != want {
					t.Errorf("%d matches exist, want %d", e.matches.count(), want)
				}
				if tt.matchServiceDown {
					// Released tickets are matched in a later round once
					// the match service is back, as the same four.
					e.matches.fail.Store(false)
					res, err := m.Round(ctx, queue5)
					if err != nil || res.Formed != 1 || e.matches.count() != 1 {
						t.Errorf("round after the match service is back = %+v, %v, %d matches", res, err, e.matches.count())
					}
				}
			})
		})
	}
}

// TestTwoMatchmakers runs two matchmakers on one queue of thousands of
// tickets arriving over time: every ticket is matched exactly once.
func TestTwoMatchmakers(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 4000
		if testing.Short() {
			n = 800
		}
		rng := rand.New(rand.NewPCG(7, 7))
		var wg sync.WaitGroup
		for range 2 {
			m := e.matchmaker()
			wg.Go(func() { m.Run(ctx, []queues.Queue{queue5}) })
		}
		start := time.Now()
		tickets := make([]store.Ticket, n)
		for i := range tickets {
			// Enqueued "two minutes ago", so every window has its maximum
			// width (400) and takes anyone of this distribution.
			tickets[i] = e.enqueue(t, queue5, fmt.Sprintf("p%d", i), math.Round(1500+rng.NormFloat64()*50), start.Add(-2*time.Minute))
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := e.store.QueueStats(ctx, queue5.Name(), 15*time.Minute, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if st.Formed == int64(n/4) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d matches formed; %d waiting", st.Formed, n/4, st.Waiting)
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		wg.Wait()

		perMatch := map[string]int{}
		for _, tk := range tickets {
			got, err := e.store.Ticket(context.Background(), tk.ID)
			if err != nil || got.State != store.Matched {
				t.Fatalf("ticket %s = %+v, %v; want matched", tk.ID, got, err)
			}
			if want := e.matches.players[tk.PlayerID]; got.MatchID != want {
				t.Fatalf("ticket %s reports match %s, the match service seated the player in %s", tk.ID, got.MatchID, want)
			}
			perMatch[got.MatchID]++
		}
		if len(e.matches.dup) > 0 {
			t.Errorf("players seated twice: %v", e.matches.dup)
		}
		if e.matches.count() != n/4 || len(perMatch) != n/4 {
			t.Errorf("%d matches created, %d reported by tickets; want %d", e.matches.count(), len(perMatch), n/4)
		}
		for id, c := range perMatch {
			if c != 4 {
				t.Errorf("match %s has %d tickets", id, c)
			}
		}
	})
}

func TestBotFill(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		now := time.Now()
		human := e.enqueue(t, queueBF, "human", 1500, now)
		// Bots wait in the queue as a bot pool's clients do, enqueued
		// through the store like any ticket.
		for i := range 3 {
			id := fmt.Sprintf("bot%d", i)
			if _, _, err := e.store.Enqueue(ctx, queueBF.Name(), store.Player{ID: id, DisplayName: id, Bot: true}, now); err != nil {
				t.Fatal(err)
			}
		}
		m := e.matchmaker()
		// Before the fill delay the bots do not take the human's seats.
		if res, err := m.Round(ctx, queueBF); err != nil || res.Formed != 0 {
			t.Fatalf("early round = %+v, %v; want no match", res, err)
		}
		m.now = func() time.Time { return now.Add(queueBF.BotFillAfter + time.Second) }
		res, err := m.Round(ctx, queueBF)
		if err != nil || res.Formed != 1 {
			t.Fatalf("round with bots = %+v, %v; want one match", res, err)
		}
		tk, _ := e.store.Ticket(ctx, human.ID)
		if tk.State != store.Matched {
			t.Fatalf("human ticket %+v, want matched", tk)
		}
		if e.ratings.calls != 1 {
			t.Errorf("%d rating calls; bots are not rated", e.ratings.calls)
		}
		for p, id := range e.matches.players {
			if id != tk.MatchID {
				t.Errorf("player %s in match %s, want %s", p, id, tk.MatchID)
			}
		}
	})
}

func TestSeat(t *testing.T) {
	t.Parallel()
	var four [4]store.Entry
	for i := range four {
		four[i].TicketID = fmt.Sprint(i)
	}
	// The seed decides the seating, reproducibly, and every order occurs.
	orders := map[[4]string]bool{}
	for seed := range uint64(500) {
		a, b := Seat(four, seed), Seat(four, seed)
		if !slices.EqualFunc(a[:], b[:], func(x, y store.Entry) bool { return x.TicketID == y.TicketID }) {
			t.Fatalf("seed %d seats differently twice", seed)
		}
		orders[[4]string{a[0].TicketID, a[1].TicketID, a[2].TicketID, a[3].TicketID}] = true
	}
	if len(orders) != 24 {
		t.Errorf("%d of 24 seatings seen", len(orders))
	}
}

// hangingMatches never answers CreateMatch (until the call's timeout): its
// matchmaker is "killed" while the calls are in flight.
type hangingMatches struct{ calls atomic.Int64 }

func (h *hangingMatches) CreateMatch(ctx context.Context, _ MatchRequest) (Match, error) {
	h.calls.Add(1)
	<-ctx.Done()
	return Match{}, ctx.Err()
}

// TestKillDuringFormation runs a matchmaker whose CreateMatch calls hang and
// kills it (cancels its context; the calls then time out, as if the process
// died) after it claimed its groups: another matchmaker finishes those
// formations after the deadline, and every ticket ends matched exactly once.
func TestKillDuringFormation(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, e *env) {
		now := time.Now()
		var tks []store.Ticket
		for i := range 12 {
			tks = append(tks, e.enqueue(t, queue5, fmt.Sprintf("p%d", i), 1500, now))
		}
		hang := &hangingMatches{}
		cfg := testConfig
		cfg.CreateTimeout = 300 * time.Millisecond // the calls hang until then
		doomed := New(cfg, e.store, e.ratings, hang, noop.Meter{}, discard())
		ctx, kill := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := doomed.Round(ctx, queue5); done <- err }()
		for hang.calls.Load() < 3 { // all three groups claimed, calls in flight
			time.Sleep(5 * time.Millisecond)
		}
		kill()
		<-done
		for _, tk := range tks {
			got, _ := e.store.Ticket(context.Background(), tk.ID)
			if got.State != store.Forming {
				t.Fatalf("after the kill ticket %s is %v, want forming", tk.ID, got.State)
			}
		}

		survivor := e.matchmaker()
		survivor.now = func() time.Time { return now.Add(testStoreSettings.FormationTimeout + time.Second) }
		res, err := survivor.Round(context.Background(), queue5)
		if err != nil || res.Recovered != 3 {
			t.Fatalf("survivor round = %+v, %v; want 3 recovered", res, err)
		}
		perMatch := map[string]int{}
		for _, tk := range tks {
			got, _ := e.store.Ticket(context.Background(), tk.ID)
			if got.State != store.Matched || e.matches.players[tk.PlayerID] != got.MatchID {
				t.Fatalf("ticket %s = %+v, want matched into the match service's match", tk.ID, got)
			}
			perMatch[got.MatchID]++
		}
		if len(perMatch) != 3 || e.matches.count() != 3 || len(e.matches.dup) != 0 {
			t.Errorf("%d matches reported, %d created, duplicates %v; want 3, 3, none", len(perMatch), e.matches.count(), e.matches.dup)
		}
	})
}

func TestApart(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_764_000_000_000)
	ago := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	entry := func(id string, bot bool, co ...store.CoPlayer) store.Entry {
		return store.Entry{Player: store.Player{ID: id, Bot: bot}, CoPlayers: co}
	}
	with := func(id string, d time.Duration) store.CoPlayer {
		return store.CoPlayer{PlayerID: id, FinishedMs: ago(d)}
	}
	tests := []struct {
		name    string
		entries []store.Entry
		want    [][]int
	}{
		{"no co-players", []store.Entry{entry("a", false), entry("b", false)}, [][]int{nil, nil}},
		{"a game that ended within the window", []store.Entry{entry("a", false, with("b", 9*time.Minute)), entry("b", false)}, [][]int{{1}, nil}},
		{"a game that ended longer ago", []store.Entry{entry("a", false, with("b", 10*time.Minute)), entry("b", false)}, [][]int{nil, nil}},
		{"a game reported to end in the future counts", []store.Entry{entry("a", false, with("b", -time.Minute)), entry("b", false)}, [][]int{{1}, nil}},
		{"co-players not waiting are ignored", []store.Entry{entry("a", false, with("x", time.Minute), with("b", time.Minute)), entry("b", false)}, [][]int{{1}, nil}},
		{"two games with the same player count once", []store.Entry{entry("a", false, with("b", time.Minute), with("b", 5*time.Minute)), entry("b", false)}, [][]int{{1}, nil}},
		{"bots are never kept apart", []store.Entry{entry("a", false, with("bot", time.Minute)), entry("bot", true, with("a", time.Minute))}, [][]int{nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Apart(tt.entries, now, 10*time.Minute)
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("Apart = %v, want %v", got, tt.want)
			}
		})
	}
}

// A formation round asks the rating service for twice the queue's number
// of recent games and keeps players who just played together out of one
// group: until the window has passed, unless one of them waited until
// their rating window reached its cap, and not when the rating service is
// down (matchmaking goes on without anti-teaming then).
func TestRoundKeepsRecentCoPlayersApart(t *testing.T) {
	t.Parallel()
	q := queue5 // same name, so the env's store knows it
	q.Apart, q.ApartGames = 10*time.Minute, 3
	tests := []struct {
		name     string
		endedAgo time.Duration // the game a and b just played
		aWaited  time.Duration
		down     bool
		together bool // a and b end up in one match
	}{
		{name: "just played together: kept apart", endedAgo: 5 * time.Minute, aWaited: 20 * time.Second},
		{name: "after the window: grouped again", endedAgo: 11 * time.Minute, aWaited: 20 * time.Second, together: true},
		// testConfig's window reaches its cap (400) after 70 s.
		{name: "waited past the capped window: grouped again", endedAgo: 5 * time.Minute, aWaited: 71 * time.Second, together: true},
		{name: "rating service down: grouped without anti-teaming", endedAgo: 5 * time.Minute, aWaited: 20 * time.Second, down: true, together: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			forEachRedis(t, func(t *testing.T, e *env) {
				ctx := context.Background()
				now := time.Now()
				// a, b, c and d have waited longest; e came last and is
				// left out unless a and b must be kept apart.
				tks := map[string]store.Ticket{"a": e.enqueue(t, q, "a", 1500, now.Add(-tt.aWaited))}
				for _, id := range []string{"b", "c", "d"} {
					tks[id] = e.enqueue(t, q, id, 1500, now.Add(-20*time.Second))
				}
				tks["e"] = e.enqueue(t, q, "e", 1500, now.Add(-time.Second))
				ended := now.Add(-tt.endedAgo)
				e.ratings.ratings["a"] = Rating{Value: 1500, Recent: []Game{{MatchID: "earlier", Ended: ended, CoPlayers: []string{"b", "x"}}}}
				e.ratings.fail = tt.down
				m := e.matchmaker()
				m.now = func() time.Time { return now }
				res, err := m.Round(ctx, q)
				if err != nil || res.Formed != 1 {
					t.Fatalf("round = %+v, %v; want one match", res, err)
				}
				if !tt.down && e.ratings.recentAsked != 6 {
					t.Errorf("the round asked for %d recent games, want 6 (twice the 3 that count)", e.ratings.recentAsked)
				}
				match := map[string]string{}
				for id, tk := range tks {
					got, err := e.store.Ticket(ctx, tk.ID)
					if err != nil {
						t.Fatal(err)
					}
					match[id] = got.MatchID
				}
				if together := match["a"] != "" && match["a"] == match["b"]; together != tt.together {
					t.Errorf("a and b in one match: %v, want %v (matches %v)", together, tt.together, match)
				}
			})
		})
	}
}

func TestLatestCoPlayers(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_764_000_000_000)
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	rated := []Game{
		{MatchID: "r3", Ended: at(time.Minute), CoPlayers: []string{"a", "b", "c"}},
		{MatchID: "r2", Ended: at(20 * time.Minute), CoPlayers: []string{"d", "e", "f"}},
		{MatchID: "r1", Ended: at(40 * time.Minute), CoPlayers: []string{"g", "h", "i"}},
	}
	played := func(id string, co ...string) store.Played {
		return store.Played{MatchID: id, FormedMs: at(30 * time.Minute).UnixMilli(), CoPlayers: co}
	}
	old := store.Played{MatchID: "r0", FormedMs: at(50 * time.Minute).UnixMilli(), CoPlayers: []string{"x"}}
	tests := []struct {
		name   string
		full   bool
		played []store.Played
		n      int
		want   string
	}{
		{"rated only, the latest n", false, nil, 2, "[{a m1} {b m1} {c m1} {d m20} {e m20} {f m20}]"},
		{"a formed match the rating service reports is the rated one", false, []store.Played{played("r2", "d", "e", "f")}, 2, "[{a m1} {b m1} {c m1} {d m20} {e m20} {f m20}]"},
		{"a running match counts as just ended, the newest", false, []store.Played{played("run", "x", "y", "z")}, 2, "[{x m0} {y m0} {z m0} {a m1} {b m1} {c m1}]"},
		{"a formed match older than a full rated list is not taken for a running one", true, []store.Played{old}, 1, "[{a m1} {b m1} {c m1}]"},
		{"a formed match older than a short rated list still runs", false, []store.Played{old}, 1, "[{x m0}]"},
		{"the newest running matches first", false, []store.Played{played("run1", "u"), played("run2", "v")}, 1, "[{v m0}]"},
		{"all games when fewer than n", false, nil, 4, "[{a m1} {b m1} {c m1} {d m20} {e m20} {f m20} {g m40} {h m40} {i m40}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, c := range LatestCoPlayers(rated, tt.full, tt.played, now, tt.n) {
				got = append(got, fmt.Sprintf("{%s m%d}", c.PlayerID, now.Sub(time.UnixMilli(c.FinishedMs))/time.Minute))
			}
			if g := "[" + strings.Join(got, " ") + "]"; g != tt.want {
				t.Errorf("LatestCoPlayers = %s, want %s", g, tt.want)
			}
		})
	}
}

// Players of a match the queue formed and the rating service does not
// report yet (it still runs: they left it early) are kept apart when they
// queue again.
func TestRoundKeepsPlayersOfARunningGameApart(t *testing.T) {
	t.Parallel()
	q := queue5
	q.Apart, q.ApartGames = 10*time.Minute, 3
	forEachRedis(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		now := time.Now()
		m := e.matchmaker()
		m.now = func() time.Time { return now }
		for _, id := range []string{"a", "b", "c", "d"} {
			e.enqueue(t, q, id, 1500, now.Add(-20*time.Second))
		}
		if res, err := m.Round(ctx, q); err != nil || res.Formed != 1 {
			t.Fatalf("first round = %+v, %v; want one match", res, err)
		}
		// a and b left that game early and queue again with three others.
		now = now.Add(3 * time.Minute)
		tks := map[string]store.Ticket{}
		for _, id := range []string{"a", "b", "c2", "d2"} {
			tks[id] = e.enqueue(t, q, id, 1500, now.Add(-20*time.Second))
		}
		tks["e"] = e.enqueue(t, q, "e", 1500, now.Add(-time.Second))
		if res, err := m.Round(ctx, q); err != nil || res.Formed != 1 {
			t.Fatalf("second round = %+v, %v; want one match", res, err)
		}
		match := map[string]string{}
		for id, tk := range tks {
			got, err := e.store.Ticket(ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			match[id] = got.MatchID
		}
		if match["a"] != "" && match["a"] == match["b"] {
			t.Errorf("a and b, still in a running game together, were grouped again: %v", match)
		}
	})
}

// TestRequeuedMatchedFirst: the three players requeued after a first-move
// abort keep their original enqueue time, so the next round seats them
// ahead of two newer tickets (all of one rating): one match, three of its
// players the requeued ones.
func TestRequeuedMatchedFirst(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		now := time.Now()
		var first []store.Ticket
		for i := range 4 {
			first = append(first, e.enqueue(t, queue5, fmt.Sprintf("a%d", i), 1500, now.Add(time.Duration(i)*time.Millisecond)))
		}
		m := e.matchmaker()
		if res, err := m.Round(ctx, queue5); err != nil || res.Formed != 1 {
			t.Fatalf("first round = %+v, %v; want one match", res, err)
		}
		tk, err := e.store.Ticket(ctx, first[0].ID)
		if err != nil || tk.MatchID == "" {
			t.Fatalf("ticket = %+v, %v; want matched", tk, err)
		}
		// a1 misses their first move; the match is abandoned a minute
		// later, after two newer players queued.
		e.enqueue(t, queue5, "n0", 1500, now.Add(30*time.Second))
		e.enqueue(t, queue5, "n1", 1500, now.Add(31*time.Second))
		if got, err := e.store.Requeue(ctx, tk.MatchID, "a1", now.Add(time.Minute), now.Add(time.Minute)); err != nil || len(got) != 3 {
			t.Fatalf("Requeue = %+v, %v", got, err)
		}
		res, err := m.Round(ctx, queue5)
		if err != nil || res.Formed != 1 || res.Waiting != 5 {
			t.Fatalf("round after the requeue = %+v, %v; want one match of 5 waiting", res, err)
		}
		if w, err := e.store.Waiting(ctx, queue5.Name()); err != nil || len(w) != 1 || w[0].Player.ID[0] != 'n' {
			t.Errorf("left waiting: %+v, %v; want one of the newer players", w, err)
		}
		for _, id := range []string{"a0", "a2", "a3"} {
			tk, existing, err := e.store.Enqueue(ctx, queue5.Name(), store.Player{ID: id}, now.Add(time.Minute))
			if err != nil || existing {
				t.Errorf("%s: Enqueue = %+v, %v, %v; want a new ticket (the requeued one was matched)", id, tk, existing, err)
			}
		}
	})
}
