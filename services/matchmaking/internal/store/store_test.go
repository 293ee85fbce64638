package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/redis/go-redis/v9"
)

var testSettings = Settings{
	TicketTTL:        10 * time.Minute,
	Retention:        10 * time.Minute,
	FormationTimeout: 30 * time.Second,
	PointerGrace:     5 * time.Second,
	WaitSamples:      1000,
	BotLevels:        []string{"random", "greedy"},
}

const (
	queueA = "fourkingdoms/5+5"
	queueB = "fourkingdoms/1|15 d"
)

// forEachRedis runs f against a standalone Redis and a Redis Cluster, each
// with a fresh store under its own key prefix.
func forEachRedis(t *testing.T, f func(t *testing.T, s *Store, rdb redis.UniversalClient)) {
	t.Helper()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := kind.Client(t)
			f(t, New(rdb, prefix, []string{queueA, queueB}, testSettings), rdb)
		})
	}
}

func player(id string) Player { return Player{ID: id, DisplayName: "name " + id} }

func TestEnqueue(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.UnixMilli(1_700_000_000_000)
		first, existing, err := s.Enqueue(ctx, queueA, player("p1"), now)
		if err != nil || existing {
			t.Fatalf("Enqueue = %+v, %v, %v; want a new ticket", first, existing, err)
		}
		if first.State != Searching || first.PlayerID != "p1" || first.Queue != queueA || !first.EnqueuedAt.Equal(now) {
			t.Errorf("new ticket = %+v", first)
		}
		if q, err := s.QueueOf(first.ID); err != nil || q != queueA {
			t.Errorf("QueueOf(%s) = %q, %v", first.ID, q, err)
		}

		// A second Enqueue, even for another queue, returns the live ticket.
		again, existing, err := s.Enqueue(ctx, queueB, player("p1"), now.Add(time.Second))
		if err != nil || !existing || again.ID != first.ID {
			t.Fatalf("second Enqueue = %+v, %v, %v; want existing %s", again, existing, err, first.ID)
		}

		// After cancelling, the player gets a new ticket.
		if _, err := s.Cancel(ctx, first.ID, "p1"); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		next, existing, err := s.Enqueue(ctx, queueB, player("p1"), now.Add(2*time.Second))
		if err != nil || existing || next.ID == first.ID || next.Queue != queueB {
			t.Fatalf("Enqueue after cancel = %+v, %v, %v; want a new ticket in %s", next, existing, err, queueB)
		}

		if _, _, err := s.Enqueue(ctx, "nope/1+0", player("p2"), now); !errors.Is(err, ErrUnknownQueue) {
			t.Errorf("Enqueue(unknown queue) error = %v, want ErrUnknownQueue", err)
		}
	})
}

func TestEnqueueConcurrentSamePlayer(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		var wg sync.WaitGroup
		ids := make([]string, 16)
		errs := make([]error, len(ids))
		for i := range ids {
			wg.Go(func() {
				tk, _, err := s.Enqueue(ctx, queueA, player("racer"), time.Now())
				ids[i], errs[i] = tk.ID, err
			})
		}
		wg.Wait()
		for i := range ids {
			if errs[i] != nil {
				t.Fatalf("Enqueue %d: %v", i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("concurrent Enqueue calls returned tickets %s and %s", ids[0], ids[i])
			}
		}
		waiting, err := s.Waiting(ctx, queueA)
		if err != nil {
			t.Fatal(err)
		}
		if len(waiting) != 1 {
			t.Errorf("%d tickets waiting, want 1", len(waiting))
		}
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		tk, _, err := s.Enqueue(ctx, queueA, player("owner"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Cancel(ctx, tk.ID, "intruder"); !errors.Is(err, ErrNotOwner) {
			t.Errorf("Cancel by another player: %v, want ErrNotOwner", err)
		}
		for _, id := range []string{"garbage", "abc.00000000", "abc." + queueCode(queueA)} {
			if _, err := s.Cancel(ctx, id, "owner"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Cancel(%q): %v, want ErrNotFound", id, err)
			}
		}
		for range 2 { // cancelling twice is fine
			got, err := s.Cancel(ctx, tk.ID, "owner")
			if err != nil || got.State != Cancelled {
				t.Fatalf("Cancel = %+v, %v; want cancelled", got, err)
			}
		}
		waiting, err := s.Waiting(ctx, queueA)
		if err != nil || len(waiting) != 0 {
			t.Errorf("Waiting = %v, %v; want empty", waiting, err)
		}
	})
}

// enqueueN enqueues n players p0..p(n-1) and returns their entries in order.
func enqueueN(t *testing.T, s *Store, queue string, n int, now time.Time) []Entry {
	t.Helper()
	out := make([]Entry, n)
	for i := range out {
		p := player(fmt.Sprintf("p%d", i))
		tk, _, err := s.Enqueue(context.Background(), queue, p, now.Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = Entry{TicketID: tk.ID, Player: p, EnqueuedMs: tk.EnqueuedAt.UnixMilli()}
	}
	return out
}

func TestClaimCompleteRelease(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		es := enqueueN(t, s, queueA, 7, now)

		f1 := NewFormation(queueA, [4]Entry(es[0:4]), 1, now)
		f2 := NewFormation(queueA, [4]Entry(es[3:7]), 2, now) // shares es[3] with f1
		claimed, err := s.Claim(ctx, queueA, []*Formation{f1, f2}, now)
		if err != nil {
			t.Fatal(err)
		}
		if !claimed[0] || claimed[1] {
			t.Fatalf("claimed = %v, want [true false]", claimed)
		}
		for _, e := range es[:4] {
			tk, err := s.Ticket(ctx, e.TicketID)
			if err != nil || tk.State != Forming {
				t.Errorf("claimed ticket = %+v, %v; want forming", tk, err)
			}
		}
		if _, err := s.Cancel(ctx, es[0].TicketID, es[0].Player.ID); !errors.Is(err, ErrForming) {
			t.Errorf("Cancel of a forming ticket: %v, want ErrForming", err)
		}
		if waiting, _ := s.Waiting(ctx, queueA); len(waiting) != 3 {
			t.Errorf("%d waiting after claim, want 3", len(waiting))
		}

		// Completing marks the tickets matched with their seats; a second
		// completion changes nothing.
		out := Outcome{Formation: f1, MatchID: "match-1", Seats: [4]int{3, 1, 4, 2}}
		for i, want := range []bool{true, false} {
			done, err := s.Complete(ctx, queueA, []Outcome{out}, now.Add(2*time.Second))
			if err != nil || done[0] != want {
				t.Fatalf("Complete #%d = %v, %v; want %v", i+1, done, err, want)
			}
		}
		for i, e := range es[:4] {
			tk, err := s.Ticket(ctx, e.TicketID)
			if err != nil || tk.State != Matched || tk.MatchID != "match-1" || tk.Seat != out.Seats[i] {
				t.Errorf("matched ticket = %+v, %v", tk, err)
			}
		}
		if _, err := s.Cancel(ctx, es[0].TicketID, es[0].Player.ID); !errors.Is(err, ErrMatched) {
			t.Errorf("Cancel of a matched ticket: %v, want ErrMatched", err)
		}
		// The matched player may queue again.
		again, existing, err := s.Enqueue(ctx, queueA, es[0].Player, now.Add(3*time.Second))
		if err != nil || existing {
			t.Fatalf("Enqueue after match = %+v, %v, %v; want a new ticket", again, existing, err)
		}

		st, err := s.QueueStats(ctx, queueA, time.Minute, now.Add(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if st.Formed != 1 || len(st.Waits) != 4 || st.Waiting != 4 {
			t.Errorf("stats = %+v, want 1 formed, 4 waits, 4 waiting", st)
		}

		// The other tickets can now be claimed, and released back: they
		// wait again with their original enqueue times.
		rejoined := Entry{TicketID: again.ID, Player: es[0].Player, EnqueuedMs: again.EnqueuedAt.UnixMilli()}
		f3 := NewFormation(queueA, [4]Entry{es[4], es[5], es[6], rejoined}, 3, now)
		claimed, err = s.Claim(ctx, queueA, []*Formation{f3}, now)
		if err != nil || !claimed[0] {
			t.Fatalf("Claim f3 = %v, %v", claimed, err)
		}
		ok, err := s.Release(ctx, f3)
		if err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		if ok, _ := s.Release(ctx, f3); ok {
			t.Error("second Release reported the formation open")
		}
		waiting, _ := s.Waiting(ctx, queueA)
		byID := map[string]Entry{}
		for _, e := range waiting {
			byID[e.TicketID] = e
		}
		for _, e := range f3.Entries {
			got, ok := byID[e.TicketID]
			if !ok || got.EnqueuedMs != e.EnqueuedMs {
				t.Errorf("released ticket %s: waiting %v, enqueued %d; want original %d", e.TicketID, ok, got.EnqueuedMs, e.EnqueuedMs)
			}
			tk, _ := s.Ticket(ctx, e.TicketID)
			if tk.State != Searching {
				t.Errorf("released ticket state %v, want searching", tk.State)
			}
		}
		// A completion of the released formation (a late instance) is a no-op.
		done, err := s.Complete(ctx, queueA, []Outcome{{Formation: f3, MatchID: "late"}}, now)
		if err != nil || done[0] {
			t.Errorf("Complete after release = %v, %v; want not done", done, err)
		}
	})
}

func TestLeaseOverdue(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		es := enqueueN(t, s, queueA, 4, now)
		f := NewFormation(queueA, [4]Entry(es), 99, now)
		if claimed, err := s.Claim(ctx, queueA, []*Formation{f}, now); err != nil || !claimed[0] {
			t.Fatalf("Claim = %v, %v", claimed, err)
		}
		if got, err := s.LeaseOverdue(ctx, queueA, now.Add(time.Second), 10); err != nil || len(got) != 0 {
			t.Fatalf("LeaseOverdue before the deadline = %v, %v; want none", got, err)
		}
		later := now.Add(testSettings.FormationTimeout + time.Second)
		got, err := s.LeaseOverdue(ctx, queueA, later, 10)
		if err != nil || len(got) != 1 {
			t.Fatalf("LeaseOverdue = %v, %v; want one", got, err)
		}
		if got[0].ID != f.ID || got[0].Seed != 99 || got[0].Entries[2].TicketID != es[2].TicketID || got[0].RequestID() != f.RequestID() {
			t.Errorf("leased formation = %+v, want %+v", got[0], f)
		}
		// Leased: nobody else gets it until the new deadline.
		if again, _ := s.LeaseOverdue(ctx, queueA, later, 10); len(again) != 0 {
			t.Errorf("formation leased twice")
		}
	})
}

func TestExpire(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		es := enqueueN(t, s, queueA, 3, time.Now())
		n, err := s.Expire(ctx, queueA, []string{es[0].TicketID, es[1].TicketID})
		if err != nil || n != 2 {
			t.Fatalf("Expire = %d, %v; want 2", n, err)
		}
		tk, _ := s.Ticket(ctx, es[0].TicketID)
		if tk.State != Expired {
			t.Errorf("state %v, want expired", tk.State)
		}
		if n, _ := s.Expire(ctx, queueA, []string{es[0].TicketID}); n != 0 {
			t.Errorf("expired twice")
		}
		// The expired player gets a new ticket.
		if _, existing, err := s.Enqueue(ctx, queueA, es[0].Player, time.Now()); err != nil || existing {
			t.Errorf("Enqueue after expiry: existing %v, %v", existing, err)
		}
	})
}

func TestSetRatings(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		es := enqueueN(t, s, queueA, 2, time.Now())
		if _, err := s.Cancel(ctx, es[1].TicketID, es[1].Player.ID); err != nil {
			t.Fatal(err)
		}
		es[0].Rating, es[0].Provisional = 1612.5, true
		es[1].Rating = 1400
		if err := s.SetRatings(ctx, queueA, es); err != nil {
			t.Fatal(err)
		}
		waiting, _ := s.Waiting(ctx, queueA)
		if len(waiting) != 1 || !waiting[0].Rated || waiting[0].Rating != 1612.5 || !waiting[0].Provisional {
			t.Errorf("Waiting = %+v, want one rated 1612.5 provisional", waiting)
		}
		tk, _ := s.Ticket(ctx, es[1].TicketID)
		if tk.Rated {
			t.Errorf("a cancelled ticket was rated")
		}
	})
}

// The recent co-players looked up with a rating are kept with it, whatever
// bytes the player ids hold, and a ticket without any reads back none.
func TestSetRatingsKeepsCoPlayers(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		es := enqueueN(t, s, queueA, 2, time.Now())
		co := []CoPlayer{{PlayerID: `g-b|c"\]`, FinishedMs: 1764000000123}, {PlayerID: "x", FinishedMs: 1}}
		es[0].Rating, es[0].CoPlayers = 1500, co
		es[1].Rating, es[1].Provisional = 1700, true
		if err := s.SetRatings(ctx, queueA, es); err != nil {
			t.Fatal(err)
		}
		waiting, err := s.Waiting(ctx, queueA)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]Entry{}
		for _, e := range waiting {
			byID[e.TicketID] = e
		}
		if got := byID[es[0].TicketID]; !got.Rated || got.Rating != 1500 || got.Provisional || !slices.Equal(got.CoPlayers, co) {
			t.Errorf("ticket with co-players reads back %+v, want rating 1500 and %v", got, co)
		}
		if got := byID[es[1].TicketID]; !got.Rated || got.Rating != 1700 || !got.Provisional || got.CoPlayers != nil {
			t.Errorf("ticket without co-players reads back %+v", got)
		}
		if tk, _ := s.Ticket(ctx, es[0].TicketID); !tk.Rated || tk.Rating != 1500 {
			t.Errorf("Ticket = %+v, want rated 1500", tk)
		}
	})
}

// TestClaimRace runs many overlapping claims at once: every ticket ends up
// in at most one claimed formation.
func TestClaimRace(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.Now()
		es := enqueueN(t, s, queueA, 40, now)
		var mu sync.Mutex
		owner := map[string]string{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				// Each worker groups the same tickets with a different offset.
				var fs []*Formation
				for i := w; i+4 <= len(es); i += 4 {
					fs = append(fs, NewFormation(queueA, [4]Entry(es[i:i+4]), uint64(w), now))
				}
				claimed, err := s.Claim(ctx, queueA, fs, now)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for i, ok := range claimed {
					if !ok {
						continue
					}
					for _, id := range fs[i].TicketIDs {
						if prev, dup := owner[id]; dup {
							t.Errorf("ticket %s claimed by %s and %s", id, prev, fs[i].ID)
						}
						owner[id] = fs[i].ID
					}
				}
			})
		}
		wg.Wait()
		waiting, _ := s.Waiting(ctx, queueA)
		if len(waiting)+len(owner) != len(es) {
			t.Errorf("%d waiting + %d claimed != %d tickets", len(waiting), len(owner), len(es))
		}
	})
}

// TestEnqueueStalePointer: a pointer left by an Enqueue that died between
// its two writes (no ticket behind it) is replaced once it is older than
// PointerGrace.
func TestEnqueueStalePointer(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, rdb redis.UniversalClient) {
		ctx := context.Background()
		now := time.Now()
		dead := newTicketID(queueA) + "|" + fmt.Sprint(now.Add(-time.Hour).UnixMilli())
		if err := rdb.Set(ctx, s.pointerKey("ghost"), dead, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		tk, existing, err := s.Enqueue(ctx, queueA, player("ghost"), now)
		if err != nil || existing || tk.State != Searching {
			t.Fatalf("Enqueue = %+v, %v, %v; want a new ticket", tk, existing, err)
		}
		if again, existing, _ := s.Enqueue(ctx, queueA, player("ghost"), now); !existing || again.ID != tk.ID {
			t.Errorf("second Enqueue = %+v, existing %v; want %s", again, existing, tk.ID)
		}
	})
}

// Completing a formation remembers the match for each human player, with
// the other humans, for PlayedFor; a player's second match appends.
func TestPlayed(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		es := enqueueN(t, s, queueA, 4, now)
		es[2].Player.Bot = true
		f1 := NewFormation(queueA, [4]Entry(es), 1, now)
		complete := func(f *Formation, match string, at time.Time) {
			t.Helper()
			if ok, err := s.Claim(ctx, queueA, []*Formation{f}, at); err != nil || !ok[0] {
				t.Fatalf("Claim = %v, %v", ok, err)
			}
			if done, err := s.Complete(ctx, queueA, []Outcome{{Formation: f, MatchID: match, Seats: [4]int{1, 2, 3, 4}}}, at); err != nil || !done[0] {
				t.Fatalf("Complete = %v, %v", done, err)
			}
		}
		complete(f1, "m1", now)
		// p0 and p1 play again at once, with two newcomers.
		more := enqueueN(t, s, queueA, 6, now.Add(time.Second))[4:]
		es2 := []Entry{{TicketID: "", Player: es[0].Player}, {Player: es[1].Player}, more[0], more[1]}
		for i := range 2 {
			tk, _, err := s.Enqueue(ctx, queueA, es2[i].Player, now.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			es2[i].TicketID, es2[i].EnqueuedMs = tk.ID, tk.EnqueuedAt.UnixMilli()
		}
		later := now.Add(time.Minute)
		complete(NewFormation(queueA, [4]Entry(es2), 2, later), "m2", later)

		got, err := s.Played(ctx, queueA, []string{"p0", "p2", "p3", "p4", "nobody"}, later)
		if err != nil {
			t.Fatal(err)
		}
		m1 := func(others ...string) Played {
			return Played{MatchID: "m1", FormedMs: now.UnixMilli(), CoPlayers: others}
		}
		m2 := func(others ...string) Played {
			return Played{MatchID: "m2", FormedMs: later.UnixMilli(), CoPlayers: others}
		}
		want := map[string][]Played{
			"p0": {m1("p1", "p3"), m2("p1", "p4", "p5")},
			"p3": {m1("p0", "p1")},
			"p4": {m2("p0", "p1", "p5")},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Played = %v, want %v (the bot p2 not recorded)", got, want)
		}
		// An hour after m1 only m2 is remembered.
		got, err = s.Played(ctx, queueA, []string{"p0"}, now.Add(PlayedFor))
		if err != nil || fmt.Sprint(got) != fmt.Sprint(map[string][]Played{"p0": {m2("p1", "p4", "p5")}}) {
			t.Errorf("Played an hour later = %v, %v; want m2 only", got, err)
		}
	})
}
