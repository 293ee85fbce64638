package main

import (
	"context"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// presenceSettings are short disconnect settings for tests: a player is
// shown disconnected half a second after their last stream closed, and
// gets an 8 s grace in a long time control once they have moved.
var presenceSettings = map[string]string{"MATCH_DISCONNECT_AFTER": "500ms", "MATCH_DISCONNECT_GRACE": "8s"}

// holdStream opens a watch stream and reads it in the background until
// the returned function closes it.
func holdStream(t *testing.T, c matchv1.MatchServiceClient, id string) (closeStream func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	st, err := c.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil { // the snapshot: the stream is open on the server
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := st.Recv(); err != nil {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// TestDisconnectGrace: Red watches, moves, then closes every stream: the
// others see Red disconnected with the grace end (8 s after, the full
// grace in 10+5). Red reconnects 5 s before it ends, on another instance:
// the disconnection is cancelled and Red plays on. Red disconnects again,
// and every instance stops (a restart): a new instance, started 2 s before
// the grace ends, times Red out within 1 s of it, although Red was not to
// move and no instance served the match in between.
func TestDisconnectGrace(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		a, b := e.start(presenceSettings), e.start(presenceSettings)
		id := e.create(a.addr, nil).GetMatchId()
		red := e.client(a.addr, e.token(players[0], auth.RolePlayer))
		observer := func(addr string, from uint64) *watchItems {
			return watchAll(t, e.client(addr, e.token("observer", auth.RoleService)), id, from)
		}
		obs := observer(a.addr, 0)

		closeRed := holdStream(t, red, id)
		if _, err := red.MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: rounds[0][0]}); err != nil {
			t.Fatal(err)
		}
		closeRed()
		closed := time.Now()
		disc := waitDisconnected(t, obs, gamev1.Seat_SEAT_RED)
		shown := time.Since(closed)
		graceEnd := disc.GetPlayerDisconnected().GetGraceEndsAt().AsTime()
		t.Logf("Red shown disconnected %v after closing its stream; grace %v", shown, graceEnd.Sub(disc.GetOccurredAt().AsTime()))
		if shown > 2*time.Second {
			t.Errorf("Red shown disconnected %v after closing its stream; want within the delay (500ms) plus a keeper round", shown)
		}
		if g := graceEnd.Sub(closed); g < 8*time.Second || g > 9*time.Second {
			t.Errorf("grace ends %v after the stream closed, want 8 s after the 500 ms delay", g)
		}

		// A snapshot shows it too (a client that connects now).
		if got := redGrace(t, e, b.addr, id); !got.Equal(graceEnd) {
			t.Errorf("snapshot: Red's grace ends at %v, want %v", got, graceEnd)
		}

		// Back 5 s before the grace ends, on the other instance.
		time.Sleep(time.Until(graceEnd.Add(-5 * time.Second)))
		closeRed = holdStream(t, e.client(b.addr, e.token(players[0], auth.RolePlayer)), id)
		obs.until(t, func(r *matchv1.WatchMatchResponse) bool {
			if ev := r.GetEvent(); ev.GetPlayerTimedOut() != nil {
				t.Fatalf("Red timed out although back before the grace ended: %v", ev)
			}
			return r.GetEvent().GetPlayerReconnected().GetSeat() == gamev1.Seat_SEAT_RED
		})
		if got := redGrace(t, e, a.addr, id); !got.IsZero() {
			t.Errorf("snapshot after the reconnection: Red's grace ends at %v, want none", got)
		}
		time.Sleep(time.Until(graceEnd.Add(time.Second)))
		if _, err := e.client(b.addr, e.token(players[1], auth.RolePlayer)).MakeMove(t.Context(),
			&matchv1.MakeMoveRequest{MatchId: id, Move: rounds[0][1]}); err != nil {
			t.Fatal(err)
		}
		obs.until(t, func(r *matchv1.WatchMatchResponse) bool {
			if ev := r.GetEvent(); ev.GetPlayerTimedOut() != nil {
				t.Fatalf("Red timed out although back before the grace ended: %v", ev)
			}
			return r.GetEvent().GetMoveApplied() != nil
		})

		// Gone again; then every instance stops.
		closeRed()
		disc = waitDisconnected(t, obs, gamev1.Seat_SEAT_RED)
		graceEnd = disc.GetPlayerDisconnected().GetGraceEndsAt().AsTime()
		version := disc.GetVersion()
		a.stop()
		b.stop()
		time.Sleep(time.Until(graceEnd.Add(-2 * time.Second)))
		c := e.start(presenceSettings)
		obs = observer(c.addr, version)
		to := obs.until(t, func(r *matchv1.WatchMatchResponse) bool { return r.GetEvent().GetPlayerTimedOut() != nil })
		ev := to[len(to)-1].GetEvent()
		late := ev.GetOccurredAt().AsTime().Sub(graceEnd)
		t.Logf("Red timed out %v after the grace ended", late)
		if pt := ev.GetPlayerTimedOut(); pt.GetSeat() != gamev1.Seat_SEAT_RED || !pt.GetDisconnected() || pt.GetFirstMoveLimit() {
			t.Errorf("timed out: %v, want Red, disconnected", pt)
		}
		if late < 0 || late > time.Second {
			t.Errorf("Red timed out %v after the grace ended, want within 1 s", late)
		}
	})
}

// waitDisconnected waits for a seat's PlayerDisconnected event.
func waitDisconnected(t *testing.T, w *watchItems, seat gamev1.Seat) *eventsv1.MatchEvent {
	t.Helper()
	got := w.until(t, func(r *matchv1.WatchMatchResponse) bool {
		return r.GetEvent().GetPlayerDisconnected().GetSeat() == seat
	})
	return got[len(got)-1].GetEvent()
}

// redGrace returns Red's disconnect grace end in a GetMatch snapshot (zero
// for none).
func redGrace(t *testing.T, e *env, addr, id string) time.Time {
	t.Helper()
	resp, err := e.client(addr, e.token("observer", auth.RoleService)).GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.GetMatch().GetSeats()[0].GetDisconnectGraceEndsAt(); g != nil {
		return g.AsTime()
	}
	return time.Time{}
}
