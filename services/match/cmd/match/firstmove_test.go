package main

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// TestFirstMoveAbort: with a 3 s first-move limit, Red moves and Blue does
// not: the keeper aborts the match (MatchAborted naming Blue), with no
// MatchFinished record (no result, no rating change). In a second match
// every seat moves once; then Red's 3 s clock runs out: a time loss as
// before. A third match created with first_move_abort off loses Blue on
// time instead. The first-move abort, and only it (not an operator's
// abort), reaches the abandoned stream once.
func TestFirstMoveAbort(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(map[string]string{"MATCH_FIRST_MOVE_LIMIT": "3s", "MATCH_DISCONNECT_GRACE": "0"})
		cs := e.seatClients(inst.addr)
		observe := func(id string) *watchItems {
			return watchAll(t, e.client(inst.addr, e.token("observer", auth.RoleService)), id, 0)
		}
		move := func(id string, seat int) {
			t.Helper()
			if _, err := cs[seat].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: rounds[0][seat]}); err != nil {
				t.Fatal(err)
			}
		}

		aborted := e.create(inst.addr, nil).GetMatchId()
		move(aborted, 0)
		w := observe(aborted)
		got := w.until(t, func(r *matchv1.WatchMatchResponse) bool {
			if to := r.GetEvent().GetPlayerTimedOut(); to != nil {
				t.Fatalf("Blue timed out instead of the match being aborted: %v", to)
			}
			return r.GetEvent().GetMatchAborted() != nil
		})
		if ab := got[len(got)-1].GetEvent().GetMatchAborted(); ab.GetFirstMoveMissed() != gamev1.Seat_SEAT_BLUE || ab.GetAbortedBy() != "" {
			t.Errorf("aborted: %v, want Blue's first move missed, by the server", ab)
		}

		played := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) {
			r.TimeControl = &gamev1.TimeControl{Name: "0.05+0"} // 3 s
		}).GetMatchId()
		for seat := range 4 {
			move(played, seat)
		}
		w = observe(played)
		got = w.until(t, func(r *matchv1.WatchMatchResponse) bool {
			if r.GetEvent().GetMatchAborted() != nil {
				t.Fatal("match aborted after every seat had moved")
			}
			return r.GetEvent().GetPlayerTimedOut() != nil
		})
		if to := got[len(got)-1].GetEvent().GetPlayerTimedOut(); to.GetSeat() != gamev1.Seat_SEAT_RED || to.GetFirstMoveLimit() {
			t.Errorf("timed out: %v, want Red on its clock", to)
		}

		off := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) { r.FirstMoveAbort = proto.Bool(false) }).GetMatchId()
		move(off, 0)
		w = observe(off)
		got = w.until(t, func(r *matchv1.WatchMatchResponse) bool {
			if r.GetEvent().GetMatchAborted() != nil {
				t.Fatal("match aborted although first_move_abort is off")
			}
			return r.GetEvent().GetPlayerTimedOut() != nil
		})
		if to := got[len(got)-1].GetEvent().GetPlayerTimedOut(); to.GetSeat() != gamev1.Seat_SEAT_BLUE || !to.GetFirstMoveLimit() {
			t.Errorf("timed out: %v, want Blue at the first-move limit", to)
		}

		// An operator's abort is not a first-move abort: nobody is
		// requeued for it.
		byOperator := e.create(inst.addr, nil).GetMatchId()
		op := e.client(inst.addr, e.token("op", auth.RoleOperator))
		if _, err := op.AbortMatch(t.Context(), &matchv1.AbortMatchRequest{MatchId: byOperator, Reason: "test"}); err != nil {
			t.Fatal(err)
		}

		// Only the played match may reach the finished stream, and it has
		// not finished: the aborted one never does. The first-move abort
		// reaches the abandoned stream (the matchmaker's), once.
		ab := eventstream.MatchAbandoned()
		var records []*eventsv1.MatchAbandoned
		for deadline := time.Now().Add(10 * time.Second); len(records) == 0 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
			msgs, err := e.rdb().XRange(t.Context(), e.prefix+ab.Key(), "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				r, err := ab.Decode(m.Values)
				if err != nil {
					t.Fatalf("abandoned stream entry %s: %v", m.ID, err)
				}
				records = append(records, r)
			}
		}
		time.Sleep(time.Second) // a few keeper rounds: another relay would have happened
		if n := finishedRecords(t, e.rdb(), e.prefix)[aborted]; n != 0 {
			t.Errorf("%d MatchFinished records for the aborted match, want none", n)
		}
		if n, err := e.rdb().XLen(t.Context(), e.prefix+ab.Key()).Result(); err != nil || n != 1 || len(records) != 1 {
			t.Fatalf("abandoned stream holds %d entries (%v), read %v; want the first-move abort's only", n, err, records)
		}
		if r := records[0]; r.GetMatchId() != aborted || r.GetMissedSeat() != gamev1.Seat_SEAT_BLUE || len(r.GetPlayers()) != 4 ||
			r.GetRuleSet() == "" || r.GetOccurredAt() == nil {
			t.Errorf("abandoned record %v, want match %s, Blue missed, its four players, rule set and time", r, aborted)
		}
	})
}
