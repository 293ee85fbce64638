package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// TestOutageCredit: the only instance is SIGKILLed while Blue is to move,
// and a new one starts 5 s later. Blue could not move in between: the new
// instance's keeper, taking the unserved ranges, gives Blue that time back
// (ClockCredited), so Blue loses at most 1 s of clock to the outage.
func TestOutageCredit(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		addr, proc := e.startProcess(nil)
		id := e.create(addr, nil).GetMatchId()
		resp, err := e.client(addr, e.token(players[0], auth.RolePlayer)).MakeMove(t.Context(),
			&matchv1.MakeMoveRequest{MatchId: id, Move: rounds[0][0]})
		if err != nil {
			t.Fatal(err)
		}
		version := resp.GetEvents()[len(resp.GetEvents())-1].GetVersion()
		before := blueDeadline(t, e, addr, id)
		if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = proc.Wait()
		killed := time.Now()
		time.Sleep(5 * time.Second)
		inst := e.start(nil)
		up := time.Now()

		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		stream, err := e.client(inst.addr, e.token("observer", auth.RoleService)).WatchMatch(ctx,
			&matchv1.WatchMatchRequest{MatchId: id, FromVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		for {
			it, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for the credit: %v", err)
			}
			if it.GetEvent().GetPlayerTimedOut() != nil {
				t.Fatalf("a seat timed out: %v", it.GetEvent())
			}
			if cc := it.GetEvent().GetClockCredited(); cc != nil {
				outage := up.Sub(killed)
				t.Logf("outage %v (no instance), credited %v", outage, cc.GetCredited().AsDuration())
				if cc.GetSeat() != gamev1.Seat_SEAT_BLUE {
					t.Errorf("credited %v, want Blue", cc.GetSeat())
				}
				if lost := outage - cc.GetCredited().AsDuration(); lost > time.Second {
					t.Errorf("Blue lost %v of clock to the outage, want at most 1 s", lost)
				}
				break
			}
		}
		after := blueDeadline(t, e, inst.addr, id)
		if got := after.Sub(before); got < 4*time.Second {
			t.Errorf("Blue's deadline moved by %v, want about the outage (5 s)", got)
		}
	})
}

// blueDeadline reads Blue's running clock's deadline.
func blueDeadline(t *testing.T, e *env, addr, id string) time.Time {
	t.Helper()
	m, err := e.client(addr, e.token("observer", auth.RoleService)).GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.GetMatch().GetClocks() {
		if c.GetSeat() == gamev1.Seat_SEAT_BLUE && c.GetRunning() {
			return c.GetTurnDeadline().AsTime()
		}
	}
	t.Fatalf("Blue's clock does not run: %v", m.GetMatch().GetClocks())
	return time.Time{}
}
