package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// formMatch enqueues four players named prefix0..3 in queue a second
// apart from start, and forms match from them (seats 1-4 in order).
func formMatch(t *testing.T, s *Store, queue, prefix, match string, start time.Time) [4]Entry {
	t.Helper()
	ctx := context.Background()
	var es [4]Entry
	for i := range es {
		p := Player{ID: fmt.Sprintf("%s%d", prefix, i), DisplayName: fmt.Sprintf("Name %s%d", prefix, i), Bot: i == 3}
		tk, existing, err := s.Enqueue(ctx, queue, p, start.Add(time.Duration(i)*time.Second))
		if err != nil || existing {
			t.Fatalf("Enqueue(%s) = %+v, %v, %v", p.ID, tk, existing, err)
		}
		es[i] = Entry{TicketID: tk.ID, Player: p, EnqueuedMs: tk.EnqueuedAt.UnixMilli()}
	}
	f := NewFormation(queue, es, 1, start)
	if ok, err := s.Claim(ctx, queue, []*Formation{f}, start.Add(5*time.Second)); err != nil || !ok[0] {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	if done, err := s.Complete(ctx, queue, []Outcome{{Formation: f, MatchID: match, Seats: [4]int{1, 2, 3, 4}}}, start.Add(6*time.Second)); err != nil || !done[0] {
		t.Fatalf("Complete = %v, %v", done, err)
	}
	return es
}

// Requeue puts the three players who did not miss their move back in the
// queue with their original enqueue time, a fresh expiry and their
// live-ticket pointer (Enqueue returns that ticket), ahead of a newer
// ticket; a redelivery requeues nobody twice; an unknown match (a table's)
// is a no-op.
func TestRequeue(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, rdb redis.UniversalClient) {
		ctx := context.Background()
		start := time.Now().Truncate(time.Millisecond)
		es := formMatch(t, s, queueA, "a", "m1", start)
		if ttl, err := rdb.PTTL(ctx, s.matchKey(queueA, "m1")).Result(); err != nil || ttl <= 0 || ttl > MatchRecordTTL {
			t.Errorf("match record TTL = %v, %v; want at most %v", ttl, err, MatchRecordTTL)
		}
		abortAt := start.Add(time.Minute)
		newer, _, err := s.Enqueue(ctx, queueA, player("newcomer"), abortAt.Add(-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Requeue(ctx, "m1", "a1", abortAt, abortAt)
		if err != nil || len(got) != 3 {
			t.Fatalf("Requeue = %+v, %v; want three players", got, err)
		}
		for i, want := range []Entry{es[0], es[2], es[3]} {
			r := got[i]
			if r.Player != want.Player || r.Outcome != Requeued || !r.EnqueuedAt.Equal(want.EnqueuedAt()) {
				t.Errorf("requeue %d = %+v; want %v requeued at %v", i, r, want.Player, want.EnqueuedAt())
			}
			tk, err := s.Ticket(ctx, r.TicketID)
			if err != nil || tk.State != Searching || tk.Queue != queueA || tk.PlayerID != want.Player.ID ||
				!tk.EnqueuedAt.Equal(want.EnqueuedAt()) || !tk.ExpiresAt.Equal(abortAt.Add(testSettings.TicketTTL)) {
				t.Errorf("requeued ticket %d = %+v, %v; want searching since %v, expiring %v", i, tk, err,
					want.EnqueuedAt(), abortAt.Add(testSettings.TicketTTL))
			}
			// The player's client enqueues again: it gets this ticket.
			again, existing, err := s.Enqueue(ctx, queueA, want.Player, abortAt.Add(time.Second))
			if err != nil || !existing || again.ID != r.TicketID || !again.EnqueuedAt.Equal(want.EnqueuedAt()) {
				t.Errorf("Enqueue after the requeue = %+v, %v, %v; want ticket %s (existing) since %v", again, existing, err, r.TicketID, want.EnqueuedAt())
			}
		}
		waiting, err := s.Waiting(ctx, queueA)
		if err != nil || len(waiting) != 4 {
			t.Fatalf("Waiting = %+v, %v; want the three requeued and the newcomer", waiting, err)
		}
		for _, e := range waiting {
			if e.TicketID != newer.ID && (e.EnqueuedMs >= newer.EnqueuedAt.UnixMilli() || e.Player.DisplayName == "") {
				t.Errorf("requeued entry %+v does not sort ahead of the newcomer (%v) or lost its name", e, newer.EnqueuedAt)
			}
		}

		// A redelivered event changes nothing.
		again, err := s.Requeue(ctx, "m1", "a1", abortAt, abortAt.Add(time.Minute))
		if err != nil || len(again) != 3 {
			t.Fatalf("second Requeue = %+v, %v", again, err)
		}
		for i, r := range again {
			if r.Outcome != Done || r.TicketID != got[i].TicketID {
				t.Errorf("second Requeue %d = %+v; want done with ticket %s", i, r, got[i].TicketID)
			}
		}
		if w, _ := s.Waiting(ctx, queueA); len(w) != 4 {
			t.Errorf("after a redelivery %d waiting, want 4", len(w))
		}

		// A table's match, or any unknown one: nothing to do.
		if got, err := s.Requeue(ctx, "table-match", "x", abortAt, abortAt); err != nil || len(got) != 0 {
			t.Errorf("Requeue(unknown match) = %+v, %v; want nothing", got, err)
		}
	})
}

// A player whose client enqueued again before the requeue keeps that
// ticket: given the original enqueue time when it searches in the same
// queue, left alone in another queue.
func TestRequeueAfterClientEnqueued(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		start := time.Now().Truncate(time.Millisecond)
		es := formMatch(t, s, queueA, "b", "m2", start)
		abortAt := start.Add(time.Minute)
		same, _, err := s.Enqueue(ctx, queueA, es[0].Player, abortAt)
		if err != nil {
			t.Fatal(err)
		}
		other, _, err := s.Enqueue(ctx, queueB, es[2].Player, abortAt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Requeue(ctx, "m2", "b1", abortAt, abortAt.Add(time.Second))
		if err != nil || len(got) != 3 {
			t.Fatalf("Requeue = %+v, %v", got, err)
		}
		want := []struct {
			ticket  string
			outcome RequeueOutcome
			since   time.Time
		}{
			{same.ID, Adopted, es[0].EnqueuedAt()},
			{other.ID, Kept, abortAt},
			{"", Requeued, es[3].EnqueuedAt()},
		}
		for i, w := range want {
			if w.ticket != "" && got[i].TicketID != w.ticket || got[i].Outcome != w.outcome || !got[i].EnqueuedAt.Equal(w.since) {
				t.Errorf("requeue %d = %+v; want %v of ticket %q since %v", i, got[i], w.outcome, w.ticket, w.since)
			}
			tk, err := s.Ticket(ctx, got[i].TicketID)
			if err != nil || tk.State != Searching || !tk.EnqueuedAt.Equal(w.since) {
				t.Errorf("ticket %d = %+v, %v; want searching since %v", i, tk, err, w.since)
			}
		}
		if tk, _ := s.Ticket(ctx, same.ID); !tk.ExpiresAt.Equal(abortAt.Add(testSettings.TicketTTL)) {
			t.Errorf("adopted ticket expires %v, want its own expiry %v", tk.ExpiresAt, abortAt.Add(testSettings.TicketTTL))
		}
		w, err := s.Waiting(ctx, queueA)
		if err != nil || len(w) != 2 {
			t.Fatalf("Waiting = %+v, %v; want two tickets", w, err)
		}
		for _, e := range w {
			if e.TicketID == same.ID && e.EnqueuedMs != es[0].EnqueuedMs {
				t.Errorf("adopted waiting entry %+v, want enqueued at %d", e, es[0].EnqueuedMs)
			}
		}
	})
}

// matchTicket forms match from the player's searching ticket tk and three
// new players named prefix0..2, enqueued at tk's time.
func matchTicket(t *testing.T, s *Store, tk Ticket, p Player, prefix, match string) {
	t.Helper()
	ctx := context.Background()
	es := [4]Entry{{TicketID: tk.ID, Player: p, EnqueuedMs: tk.EnqueuedAt.UnixMilli()}}
	for i := 1; i < 4; i++ {
		o := player(fmt.Sprintf("%s%d", prefix, i-1))
		ot, _, err := s.Enqueue(ctx, tk.Queue, o, tk.EnqueuedAt)
		if err != nil {
			t.Fatal(err)
		}
		es[i] = Entry{TicketID: ot.ID, Player: o, EnqueuedMs: ot.EnqueuedAt.UnixMilli()}
	}
	f := NewFormation(tk.Queue, es, 1, tk.EnqueuedAt)
	if ok, err := s.Claim(ctx, tk.Queue, []*Formation{f}, tk.EnqueuedAt.Add(time.Second)); err != nil || !ok[0] {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	if done, err := s.Complete(ctx, tk.Queue, []Outcome{{Formation: f, MatchID: match, Seats: [4]int{1, 2, 3, 4}}}, tk.EnqueuedAt.Add(2*time.Second)); err != nil || !done[0] {
		t.Fatalf("Complete = %v, %v", done, err)
	}
}

// A requeue that runs after the player enqueued again since the abort
// (told by the live-ticket pointer's creation time against the event's
// occurred_at) creates no ticket when that ticket has ended (MovedOn): the
// player was served, and a ticket its client never asked for would be
// matched into a match nobody joins. A player still searching, or who has
// not enqueued since, is handled as before. A redelivery does nothing.
func TestRequeueEnqueuedSinceTheAbort(t *testing.T) {
	t.Parallel()
	// since does what the first player (seat 1) did after the abort at
	// abortAt and returns the ticket it holds ("" if none).
	type since func(t *testing.T, s *Store, p Player, abortAt time.Time) string
	enqueueAt := func(d time.Duration, then func(t *testing.T, s *Store, tk Ticket, p Player)) since {
		return func(t *testing.T, s *Store, p Player, abortAt time.Time) string {
			tk, existing, err := s.Enqueue(context.Background(), queueA, p, abortAt.Add(d))
			if err != nil || existing {
				t.Fatalf("Enqueue after the abort = %+v, %v, %v; want a new ticket", tk, existing, err)
			}
			if then != nil {
				then(t, s, tk, p)
			}
			return tk.ID
		}
	}
	matched := func(t *testing.T, s *Store, tk Ticket, p Player) {
		matchTicket(t, s, tk, p, p.ID+"-other", p.ID+"-next")
	}
	cancelled := func(t *testing.T, s *Store, tk Ticket, p Player) {
		if _, err := s.Cancel(context.Background(), tk.ID, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		since   since // nil: the player did nothing
		unknown bool  // the event carries no occurred_at
		// early: the abort's time (another clock) is before even the
		// tickets that formed the match.
		early bool
		want  RequeueOutcome
		// searching: the player waits in the queue afterwards (with the
		// original enqueue time when Requeued or Adopted).
		searching bool
	}{
		{name: "the player enqueued after the abort and was matched before the requeue ran: no new ticket, outcome MovedOn, redelivery does nothing",
			since: enqueueAt(time.Second, matched), want: MovedOn},
		{name: "the player enqueued in the abort's millisecond and was matched: moved on",
			since: enqueueAt(0, matched), want: MovedOn},
		{name: "the player enqueued after the abort and cancelled: moved on",
			since: enqueueAt(time.Second, cancelled), want: MovedOn},
		{name: "the player enqueued after the abort and still searches: adopted",
			since: enqueueAt(time.Second, nil), want: Adopted, searching: true},
		{name: "the player did nothing since the abort: requeued",
			want: Requeued, searching: true},
		{name: "the abort's clock is behind: the ticket that formed the match is still older, requeued",
			early: true, want: Requeued, searching: true},
		{name: "the abort's time is unknown: requeued over an ended ticket, as before",
			since: enqueueAt(time.Second, matched), unknown: true, want: Requeued, searching: true},
	}
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		start := time.Now().Truncate(time.Millisecond)
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				match, prefix := fmt.Sprintf("since-m%d", i), fmt.Sprintf("since%d-", i)
				es := formMatch(t, s, queueA, prefix, match, start)
				p, abortAt := es[0].Player, start.Add(time.Minute)
				var own string
				if c.since != nil {
					own = c.since(t, s, p, abortAt)
				}
				abortedAt := abortAt
				switch {
				case c.unknown:
					abortedAt = time.Time{}
				case c.early:
					abortedAt = start.Add(-time.Minute)
				}
				got, err := s.Requeue(ctx, match, es[1].Player.ID, abortedAt, abortAt.Add(2*time.Minute))
				if err != nil || len(got) != 3 {
					t.Fatalf("Requeue = %+v, %v; want three players", got, err)
				}
				r, derived := got[0], requeueTicketID(queueA, match, p.ID)
				wantTicket := own
				if c.want == Requeued {
					wantTicket = derived
				}
				if r.Player != p || r.Outcome != c.want || r.TicketID != wantTicket {
					t.Errorf("Requeue of %s = %+v; want %v with ticket %q", p.ID, r, c.want, wantTicket)
				}
				check := func(when string) {
					t.Helper()
					if _, err := s.Ticket(ctx, derived); c.want != Requeued && !errors.Is(err, ErrNotFound) {
						t.Errorf("%s: requeue ticket %s: err %v, want ErrNotFound (none created)", when, derived, err)
					}
					waiting, err := s.Waiting(ctx, queueA)
					if err != nil {
						t.Fatal(err)
					}
					var mine []Entry
					for _, e := range waiting {
						if e.Player.ID == p.ID {
							mine = append(mine, e)
						}
					}
					switch {
					case !c.searching && len(mine) != 0:
						t.Errorf("%s: %s waits in the queue with %+v; want not at all", when, p.ID, mine)
					case c.searching && (len(mine) != 1 || mine[0].EnqueuedMs != es[0].EnqueuedMs):
						t.Errorf("%s: %s waits with %+v; want one ticket enqueued at %d", when, p.ID, mine, es[0].EnqueuedMs)
					}
				}
				check("after the requeue")

				again, err := s.Requeue(ctx, match, es[1].Player.ID, abortedAt, abortAt.Add(3*time.Minute))
				if err != nil || len(again) != 3 || again[0].Outcome != Done || again[0].TicketID != wantTicket {
					t.Fatalf("redelivered Requeue = %+v, %v; want %s done with ticket %q", again, err, p.ID, wantTicket)
				}
				check("after a redelivery")
			})
		}
	})
}
