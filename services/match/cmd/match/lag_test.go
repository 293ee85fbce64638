package main

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// TestLagCompensation: on 10+5 (a 3 s first quota), a move whose client
// claims it thought for 0 s gets its whole turn back, one claiming 0.1 s
// is charged exactly 0.1 s, one claiming more than the server measured is
// charged it all, as is one without a claim; a premove is charged the
// fixed 0.1 s with no compensation. MoveApplied, the clocks it carries
// and GetMatch agree, on the watch stream too.
func TestLagCompensation(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		id := e.create(inst.addr, nil).GetMatchId()
		cs := e.seatClients(inst.addr)
		w := watchAll(t, cs[0], id, 0)
		const turn = 300 * time.Millisecond // each player "thinks" this long
		full := 10*time.Minute + 5*time.Second

		// Yellow queues its move: it fires as a premove after Blue's.
		setPremoves(t, cs[2], id, rounds[0][2])
		tests := []struct {
			name  string
			seat  int
			think *durationpb.Duration
			// wantCharged gives the time charged for the measured turn.
			wantCharged func(elapsed time.Duration) time.Duration
		}{
			{"think time 0: the whole turn is lag", 0, durationpb.New(0), func(time.Duration) time.Duration { return 0 }},
			{"think time 0.1 s", 1, durationpb.New(100 * time.Millisecond), func(time.Duration) time.Duration { return 100 * time.Millisecond }},
			{"think time above the server's measure", 3, durationpb.New(time.Hour), func(el time.Duration) time.Duration { return el }},
		}
		var applied []*eventsv1.MoveApplied
		for _, tt := range tests {
			time.Sleep(turn)
			resp, err := cs[tt.seat].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: rounds[0][tt.seat], ClientThinkTime: tt.think})
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			ma := resp.GetEvents()[0].GetMoveApplied()
			charged, comp := ma.GetTimeCharged().AsDuration(), ma.GetLagCompensation().AsDuration()
			elapsed := charged + comp
			if elapsed < turn || elapsed > time.Minute {
				t.Fatalf("%s: charged %v + compensation %v = %v, not the turn of at least %v", tt.name, charged, comp, elapsed, turn)
			}
			if want := tt.wantCharged(elapsed); charged != want {
				t.Errorf("%s: charged %v, compensation %v; want charged %v", tt.name, charged, comp, want)
			}
			// The mover's clock: initial - charged + increment.
			if got, want := clockOf(ma.GetClocks(), gamev1.Seat(tt.seat+1)), full-charged; got != want {
				t.Errorf("%s: clock %v after the move, want %v", tt.name, got, want)
			}
			applied = append(applied, resp.GetEvents()[0].GetMoveApplied())
			if tt.seat == 1 {
				// Yellow's premove followed in the same step.
				pm := resp.GetEvents()[1].GetMoveApplied()
				if pm.GetTimeCharged().AsDuration() != 100*time.Millisecond || pm.GetLagCompensation() != nil {
					t.Errorf("premove: charged %v, compensation %v; want 0.1 s and none", pm.GetTimeCharged().AsDuration(), pm.GetLagCompensation())
				}
			}
		}
		// Red's next move without a claim: charged the whole turn.
		time.Sleep(turn)
		resp, err := cs[0].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: rounds[1][0]})
		if err != nil {
			t.Fatal(err)
		}
		ma := resp.GetEvents()[0].GetMoveApplied()
		if ma.GetLagCompensation() != nil || ma.GetTimeCharged().AsDuration() < turn {
			t.Errorf("no claim: charged %v, compensation %v; want the whole turn, none", ma.GetTimeCharged().AsDuration(), ma.GetLagCompensation())
		}

		// The clocks of stopped seats: Red's after both its moves,
		// Yellow's after its premove, also as GetMatch shows them.
		red := full + 5*time.Second - ma.GetTimeCharged().AsDuration()
		if got := clockOf(ma.GetClocks(), gamev1.Seat_SEAT_RED); got != red {
			t.Errorf("Red's clock %v, want %v", got, red)
		}
		m, err := cs[1].GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		if got := clockOf(m.GetMatch().GetClocks(), gamev1.Seat_SEAT_RED); got != red {
			t.Errorf("GetMatch: Red's clock %v, want %v", got, red)
		}
		if got, want := clockOf(m.GetMatch().GetClocks(), gamev1.Seat_SEAT_YELLOW), full-100*time.Millisecond; got != want {
			t.Errorf("GetMatch: Yellow's clock %v, want %v", got, want)
		}
		// The stream carries the same MoveApplied as the answers.
		items := w.until(t, eventAt(resp.GetVersion()))
		var fromStream []*eventsv1.MoveApplied
		for _, it := range items {
			if m := it.GetEvent().GetMoveApplied(); m != nil && m.GetLagCompensation() != nil {
				fromStream = append(fromStream, m)
			}
		}
		if len(fromStream) != 2 || fromStream[0].GetLagCompensation().AsDuration() != applied[0].GetLagCompensation().AsDuration() ||
			fromStream[1].GetLagCompensation().AsDuration() != applied[1].GetLagCompensation().AsDuration() {
			t.Errorf("stream's compensated moves %v, want those of the answers %v", fromStream, applied[:2])
		}
	})
}

func clockOf(clocks []*gamev1.Clock, seat gamev1.Seat) time.Duration {
	for _, c := range clocks {
		if c.GetSeat() == seat {
			return c.GetRemaining().AsDuration()
		}
	}
	return -1
}
