package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// TestFirstMoveAbortRequeuesTheOthers: real processes on standalone and
// cluster Redis, no bots. Four players are matched; one never moves, so
// the match is aborted at the 3 s first-move limit. The other three get
// their original tickets back (Enqueue: existing, the original
// created_at), the one who did not move does not, and the three are
// matched again with a player who queued while the aborted match ran.
func TestFirstMoveAbortRequeuesTheOthers(t *testing.T) {
	t.Setenv("MATCH_FIRST_MOVE_LIMIT", "3s") // the launcher's services inherit it
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) { testFirstMoveAbortRequeue(t, kind) })
	}
}

func testFirstMoveAbortRequeue(t *testing.T, kind redistest.Kind) {
	rdb, _ := kind.Client(t)
	name, value := kind.Env(t)
	// The services use their default key names: start from an empty store.
	flush := func(ctx context.Context, c *redis.Client) error { return c.FlushAll(ctx).Err() }
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(t.Context(), flush)
	} else {
		err = flush(t.Context(), rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatalf("flush the store: %v", err)
	}
	l := launch(t, func(k string) string {
		if k == name {
			return value
		}
		return ""
	}, "-bots", "0", "-queues", "fourkingdoms 1+0")
	const queue = "fourkingdoms/1+0"
	keys, err := auth.LoadFile(l.cl.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	player := func(name string) *client.Client {
		c, err := client.Dial(l.cl.Endpoints)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		tok, _, err := keys.Sign(auth.Identity{Subject: "g-requeue-" + name, Role: auth.RolePlayer, DisplayName: name}, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c.SetToken(tok)
		return c
	}
	ctx := l.ctx
	names := []string{"idle", "a", "b", "c"}
	clients := make([]*client.Client, len(names))
	created := make([]time.Time, len(names))
	for i, n := range names {
		clients[i] = player(n)
		tk, err := clients[i].Requeue(ctx, queue) // an Enqueue: the ticket and its created_at
		if err != nil {
			t.Fatal(err)
		}
		created[i] = tk.GetCreatedAt().AsTime()
	}
	found := make([]client.Found, len(names))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			f, err := c.FindMatch(ctx, queue, nil)
			if err != nil {
				t.Errorf("%s: %v", names[i], err)
			}
			found[i] = f
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	first := found[0].MatchID
	for i, f := range found {
		if f.MatchID != first {
			t.Fatalf("%s in match %s, want all four in %s", names[i], f.MatchID, first)
		}
	}
	// A newer player queues while the match runs.
	late := player("late")
	lateFound := make(chan client.Found, 1)
	go func() {
		f, err := late.FindMatch(ctx, queue, nil)
		if err != nil {
			t.Errorf("late: %v", err)
		}
		lateFound <- f
	}()

	anyMove := func(_ context.Context, m *matchv1.Match) (string, error) { return m.GetLegalMoves()[0], nil }
	for i := 1; i < len(clients); i++ {
		wg.Go(func() {
			final, err := clients[i].PlayAuto(ctx, first, found[i].Seat, anyMove, nil)
			if err != nil {
				t.Errorf("%s: %v", names[i], err)
				return
			}
			missed, err := clients[i].FirstMoveMissed(ctx, final)
			if err != nil || missed != found[0].Seat {
				t.Errorf("%s: match ended %v, first move missed by %v (%v); want aborted for %v", names[i], final.GetStatus(), missed, err, found[0].Seat)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Each of the three is back in the queue with the original ticket
	// (the matchmaker's consumer may run after a client's Enqueue: the
	// ticket then gets the original time a moment later).
	for i := 1; i < len(clients); i++ {
		var tk *matchmakingv1.Ticket
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if tk, err = clients[i].Requeue(ctx, queue); err != nil {
				t.Fatal(err)
			}
			if tk.GetCreatedAt().AsTime().Equal(created[i]) || time.Now().After(deadline) {
				break
			}
		}
		if !tk.GetCreatedAt().AsTime().Equal(created[i]) || tk.GetState() != matchmakingv1.TicketState_TICKET_STATE_SEARCHING {
			t.Errorf("%s back in the queue with %v, want a searching ticket created at %v", names[i], tk, created[i])
		}
	}
	second := make([]client.Found, len(clients))
	for i := 1; i < len(clients); i++ {
		wg.Go(func() {
			f, err := clients[i].FindMatch(ctx, queue, nil)
			if err != nil {
				t.Errorf("%s: %v", names[i], err)
			}
			second[i] = f
		})
	}
	wg.Wait()
	lf := <-lateFound
	for i := 1; i < len(clients); i++ {
		if second[i].MatchID == "" || second[i].MatchID == first || second[i].MatchID != lf.MatchID {
			t.Errorf("%s matched again in %q, want the late player's new match %q", names[i], second[i].MatchID, lf.MatchID)
		}
	}
	// The player who did not move is not requeued: a new ticket.
	resp, err := clients[0].Matchmaking.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: queue}})
	if err != nil || resp.GetExisting() || resp.GetTicket().GetCreatedAt().AsTime().Equal(created[0]) {
		t.Errorf("the idle player's Enqueue = %v, %v; want a new ticket", resp, err)
	}
}
