package store

import (
	"context"
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
		got, err := s.Requeue(ctx, "m1", "a1", abortAt)
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
		again, err := s.Requeue(ctx, "m1", "a1", abortAt.Add(time.Minute))
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
		if got, err := s.Requeue(ctx, "table-match", "x", abortAt); err != nil || len(got) != 0 {
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
		got, err := s.Requeue(ctx, "m2", "b1", abortAt.Add(time.Second))
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
