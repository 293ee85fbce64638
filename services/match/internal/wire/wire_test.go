package wire

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

func TestSeatRoundTrip(t *testing.T) {
	t.Parallel()
	for s := range rules.NumSeats {
		seat := rules.Seat(s)
		if got, ok := SeatOf(Seat(seat)); !ok || got != seat {
			t.Errorf("SeatOf(Seat(%v)) = %v, %v", seat, got, ok)
		}
	}
	for _, bad := range []gamev1.Seat{gamev1.Seat_SEAT_UNSPECIFIED, gamev1.Seat_SEAT_GREEN + 1, -1} {
		if _, ok := SeatOf(bad); ok {
			t.Errorf("SeatOf(%d) accepted", bad)
		}
	}
}

// end is a game's end as a test states it.
type end struct {
	result rules.Result
	status [rules.NumSeats]rules.SeatStatus
}

func (e end) Result() rules.Result                 { return e.result }
func (e end) Status(s rules.Seat) rules.SeatStatus { return e.status[s] }

func TestResult(t *testing.T) {
	t.Parallel()
	ranking := [rules.NumSeats]rules.Seat{rules.Green, rules.Red, rules.Blue, rules.Yellow}
	wantRanking := []gamev1.Seat{gamev1.Seat_SEAT_GREEN, gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW}
	tests := []struct {
		name        string
		end         end
		termination gamev1.Termination
		ranked      bool
	}{
		{"last standing beside a zombie", end{rules.Result{Termination: rules.LastPlayerStanding, Ranking: ranking},
			[rules.NumSeats]rules.SeatStatus{rules.Out, rules.Zombie, rules.Out, rules.Live}},
			gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING, true},
		{"every opponent out", end{rules.Result{Termination: rules.LastPlayerStanding, Ranking: ranking},
			[rules.NumSeats]rules.SeatStatus{rules.Out, rules.Out, rules.Out, rules.Live}},
			gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT, true},
		{"no live player", end{rules.Result{Termination: rules.NoLivePlayers, Ranking: ranking},
			[rules.NumSeats]rules.SeatStatus{rules.Zombie, rules.Zombie, rules.Out, rules.Zombie}},
			gamev1.Termination_TERMINATION_NO_LIVE_PLAYER, true},
		{"aborted: no ranking", end{rules.Result{Termination: rules.Aborted, Ranking: ranking}, [rules.NumSeats]rules.SeatStatus{}},
			gamev1.Termination_TERMINATION_ABORTED, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Result(tc.end)
			if got.GetTermination() != tc.termination {
				t.Errorf("termination %v, want %v", got.GetTermination(), tc.termination)
			}
			if tc.ranked != (len(got.GetRanking()) > 0) {
				t.Fatalf("ranking %v, want one: %v", got.GetRanking(), tc.ranked)
			}
			for i, s := range got.GetRanking() {
				if s != wantRanking[i] {
					t.Errorf("ranking %v, want %v", got.GetRanking(), wantRanking)
					break
				}
			}
		})
	}
}

func TestClocks(t *testing.T) {
	t.Parallel()
	// Fractions and a negative time (a clock read past its deadline)
	// encode as durationpb.New encodes them.
	remaining := [rules.NumSeats]time.Duration{time.Second, 2*time.Second + 7*time.Millisecond, -1500 * time.Millisecond, 4 * time.Second}
	deadline := time.UnixMilli(1_700_000_000_000)
	for running := -1; running < rules.NumSeats; running++ {
		got := Clocks(&remaining, running, deadline)
		for s, cl := range got {
			if cl.GetSeat() != Seat(rules.Seat(s)) || !proto.Equal(cl.GetRemaining(), durationpb.New(remaining[s])) {
				t.Errorf("running %d: clock %d is %v", running, s, cl)
			}
			if cl.GetRunning() != (s == running) || (cl.GetTurnDeadline() != nil) != (s == running) {
				t.Errorf("running %d: clock %d is %v", running, s, cl)
			}
			if s == running && !cl.GetTurnDeadline().AsTime().Equal(deadline) {
				t.Errorf("running %d: deadline %v, want %v", running, cl.GetTurnDeadline().AsTime(), deadline)
			}
		}
	}
}
