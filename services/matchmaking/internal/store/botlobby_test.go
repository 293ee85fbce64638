package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func botPlayer(id string) Player { return Player{ID: id, DisplayName: "Bot " + id, Bot: true} }

// enqueueBots puts n bots into the lobby of level and returns their tickets.
func enqueueBots(t *testing.T, s *Store, level string, n int, now time.Time) []Ticket {
	t.Helper()
	var out []Ticket
	for i := range n {
		tk, _, err := s.Enqueue(t.Context(), LobbyQueue(level), botPlayer(fmt.Sprintf("%s-%d", level, i)), now)
		if err != nil {
			t.Fatalf("Enqueue bot: %v", err)
		}
		out = append(out, tk)
	}
	return out
}

func TestReserveBots(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.UnixMilli(1_700_000_000_000)
		bots := enqueueBots(t, s, "greedy", 3, now)

		got, err := s.ReserveBots(ctx, "greedy", "start-1", 2)
		if err != nil || len(got) != 2 {
			t.Fatalf("ReserveBots = %v, %v; want 2 bots", got, err)
		}
		again, err := s.ReserveBots(ctx, "greedy", "start-1", 2)
		if err != nil || !slices.EqualFunc(got, again, func(a, b Entry) bool { return a.TicketID == b.TicketID }) {
			t.Fatalf("ReserveBots again = %v, %v; want the same bots %v", again, err, got)
		}
		for _, e := range got {
			if !e.Player.Bot || e.Player.ID == "" {
				t.Errorf("reserved entry %+v: want a bot player", e)
			}
			if tk, _ := s.Ticket(ctx, e.TicketID); tk.State != Forming {
				t.Errorf("reserved ticket %s state %v, want forming", e.TicketID, tk.State)
			}
		}
		// One bot is left: a holder asking for two gets none, and the
		// lobby keeps its bot.
		if _, err := s.ReserveBots(ctx, "greedy", "start-2", 2); !errors.Is(err, ErrNoBots) {
			t.Fatalf("ReserveBots(2 of 1 left) error = %v, want ErrNoBots", err)
		}
		if w, _ := s.Waiting(ctx, LobbyQueue("greedy")); len(w) != 1 {
			t.Fatalf("lobby after a refused reservation holds %d, want 1", len(w))
		}
		if _, err := s.ReserveBots(ctx, "nolevel", "start-3", 1); !errors.Is(err, ErrUnknownQueue) {
			t.Errorf("ReserveBots(unknown level) error = %v, want ErrUnknownQueue", err)
		}

		seats := map[string]int{got[0].TicketID: 2, got[1].TicketID: 4}
		if err := s.CompleteBots(ctx, "greedy", "start-1", "m1", seats); err != nil {
			t.Fatalf("CompleteBots: %v", err)
		}
		if err := s.CompleteBots(ctx, "greedy", "start-1", "m1", seats); err != nil {
			t.Fatalf("CompleteBots again: %v", err)
		}
		for id, seat := range seats {
			tk, err := s.Ticket(ctx, id)
			if err != nil || tk.State != Matched || tk.MatchID != "m1" || tk.Seat != seat {
				t.Errorf("completed bot ticket = %+v, %v; want matched to m1 at seat %d", tk, err, seat)
			}
		}
		if err := s.CompleteBots(ctx, "greedy", "start-1", "m2", seats); err == nil {
			t.Error("CompleteBots with another match succeeded")
		}
		_ = bots
	})
}

func TestReleaseBots(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		now := time.UnixMilli(1_700_000_000_000)
		enqueueBots(t, s, "random", 2, now)
		got, err := s.ReserveBots(ctx, "random", "h", 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseBots(ctx, "random", "h"); err != nil {
			t.Fatalf("ReleaseBots: %v", err)
		}
		w, _ := s.Waiting(ctx, LobbyQueue("random"))
		if len(w) != 2 {
			t.Fatalf("lobby after release holds %d, want 2", len(w))
		}
		for _, e := range got {
			if tk, _ := s.Ticket(ctx, e.TicketID); tk.State != Searching {
				t.Errorf("released ticket state %v, want searching", tk.State)
			}
		}
		// Released bots keep their enqueue time: they expire on time.
		if n, err := s.ExpireLobbies(ctx, now.Add(testSettings.TicketTTL)); err != nil || n != 2 {
			t.Errorf("ExpireLobbies = %d, %v; want 2", n, err)
		}
	})
}

// Concurrent holders never share a bot: each reservation is all or none.
func TestReserveBotsConcurrent(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := context.Background()
		enqueueBots(t, s, "greedy", 6, time.UnixMilli(1_700_000_000_000))
		var mu sync.Mutex
		seen := map[string]string{}
		var wg sync.WaitGroup
		for h := range 5 {
			wg.Go(func() {
				holder := fmt.Sprintf("h%d", h)
				got, err := s.ReserveBots(ctx, "greedy", holder, 2)
				if errors.Is(err, ErrNoBots) {
					return
				}
				if err != nil {
					t.Errorf("ReserveBots(%s): %v", holder, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, e := range got {
					if other, ok := seen[e.TicketID]; ok {
						t.Errorf("bot %s reserved by %s and %s", e.TicketID, other, holder)
					}
					seen[e.TicketID] = holder
				}
			})
		}
		wg.Wait()
		if len(seen) != 6 {
			t.Errorf("%d bots reserved, want all 6 (three holders of two)", len(seen))
		}
	})
}
