package api

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
)

func TestSnapshot(t *testing.T) {
	t.Parallel()
	created := time.UnixMilli(1_700_000_000_000)
	deadline, finished := created.Add(90*time.Second), created.Add(10*time.Minute)
	lastMove, err := proto.Marshal(&gamev1.MoveEffects{Move: "h2-h3", Seat: gamev1.Seat_SEAT_RED, PointsGained: 1})
	if err != nil {
		t.Fatal(err)
	}
	players := [rules.NumSeats]match.Player{{ID: "r", DisplayName: "Rosa"}, {ID: "b"}, {ID: "y", IsBot: true}, {ID: "g", DisplayName: "Gus"}}
	seats := func(status [rules.NumSeats]rules.SeatStatus, exit [rules.NumSeats]match.ExitReason, points, result [rules.NumSeats]int) [rules.NumSeats]match.SeatView {
		var out [rules.NumSeats]match.SeatView
		for s := range out {
			out[s] = match.SeatView{Player: players[s], Status: status[s], Exit: exit[s], Points: points[s], ResultPoints: result[s]}
		}
		return out
	}
	pieces := []rules.SquareInfo{
		{Name: "h1", Seat: rules.Red, Kind: rules.King},
		{Name: "a7", Seat: rules.Blue, Kind: rules.Queen, Promoted: true, Zombie: true},
		{Name: "g14", Seat: rules.Yellow, Kind: rules.Pawn, Dead: true},
	}
	wirePieces := []*matchv1.PlacedPiece{
		{Square: "h1", Seat: gamev1.Seat_SEAT_RED, Kind: gamev1.PieceKind_PIECE_KIND_KING},
		{Square: "a7", Seat: gamev1.Seat_SEAT_BLUE, Kind: gamev1.PieceKind_PIECE_KIND_QUEEN, Promoted: true, Zombie: true},
		{Square: "g14", Seat: gamev1.Seat_SEAT_YELLOW, Kind: gamev1.PieceKind_PIECE_KIND_PAWN, Dead: true},
	}
	wirePlayers := []*gamev1.Player{{PlayerId: "r", DisplayName: "Rosa"}, {PlayerId: "b"}, {PlayerId: "y", IsBot: true},
		{PlayerId: "g", DisplayName: "Gus"}}
	tc := timecontrol.TimeControl{Initial: time.Minute, Increment: 2 * time.Second}
	wireTC := &gamev1.TimeControl{Initial: durationpb.New(time.Minute), Increment: durationpb.New(2 * time.Second),
		Delay: durationpb.New(0), Mode: gamev1.TimeControlMode_TIME_CONTROL_MODE_INCREMENT, Name: "1+2"}
	clock := func(seat gamev1.Seat, remaining time.Duration, dl *timestamppb.Timestamp) *gamev1.Clock {
		return &gamev1.Clock{Seat: seat, Remaining: durationpb.New(remaining), Running: dl != nil, TurnDeadline: dl}
	}
	wireSeat := func(seat gamev1.Seat, status gamev1.SeatStatus, exit gamev1.ExitReason, points, result int32) *matchv1.SeatState {
		return &matchv1.SeatState{Seat: seat, Player: wirePlayers[seat-1], Status: status, ExitReason: exit, Points: points,
			ResultPoints: result}
	}
	const (
		red, blue, yellow, green = gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN
		live, zombie, out        = gamev1.SeatStatus_SEAT_STATUS_LIVE, gamev1.SeatStatus_SEAT_STATUS_ZOMBIE, gamev1.SeatStatus_SEAT_STATUS_OUT
		none                     = gamev1.ExitReason_EXIT_REASON_UNSPECIFIED
	)
	tests := []struct {
		name string
		view *match.View
		want *matchv1.Match
	}{
		{
			name: "active with legal moves",
			view: &match.View{
				ID: "m1", Status: match.StatusActive, RuleSet: "fourkingdoms", TimeControl: tc, FEN4: "fen", Ply: 3, Version: 4,
				Clocks: match.ClockReading{Remaining: [rules.NumSeats]time.Duration{50 * time.Second, 61 * time.Second,
					time.Minute, time.Minute}, Running: 1, Deadline: deadline},
				CreatedAt: created, Pieces: pieces, ToMove: rules.Blue, LegalMoves: []string{"b7-c7", "b7-b8"}, LastMove: lastMove,
				Seats: seats([rules.NumSeats]rules.SeatStatus{}, [rules.NumSeats]match.ExitReason{}, [rules.NumSeats]int{1, 0, 0, 0},
					[rules.NumSeats]int{1, 0, 0, 0}),
			},
			want: &matchv1.Match{
				MatchId: "m1", Status: matchv1.MatchStatus_MATCH_STATUS_ACTIVE, RuleSet: "fourkingdoms", TimeControl: wireTC,
				Fen4: "fen", Ply: 3, Version: 4, CreatedAt: timestamppb.New(created),
				Clocks: []*gamev1.Clock{clock(red, 50*time.Second, nil), clock(blue, 61*time.Second, timestamppb.New(deadline)),
					clock(yellow, time.Minute, nil), clock(green, time.Minute, nil)},
				Seats: []*matchv1.SeatState{wireSeat(red, live, none, 1, 1), wireSeat(blue, live, none, 0, 0),
					wireSeat(yellow, live, none, 0, 0), wireSeat(green, live, none, 0, 0)},
				Pieces: wirePieces, ToMove: blue, LegalMoves: []string{"b7-c7", "b7-b8"},
				LastMove: &gamev1.MoveEffects{Move: "h2-h3", Seat: red, PointsGained: 1},
			},
		},
		{
			name: "finished with result",
			view: &match.View{
				ID: "m2", Status: match.StatusFinished, RuleSet: "fourkingdoms", TimeControl: tc, FEN4: "fen2", Ply: 80, Version: 90,
				Clocks: match.ClockReading{Remaining: [rules.NumSeats]time.Duration{time.Second, 0, 2 * time.Second,
					3 * time.Second}, Running: -1},
				CreatedAt: created, FinishedAt: finished, Pieces: pieces, LastMove: lastMove,
				Seats: seats([rules.NumSeats]rules.SeatStatus{rules.Live, rules.Zombie, rules.Out, rules.Out},
					[rules.NumSeats]match.ExitReason{match.ExitNone, match.ExitResigned, match.ExitMated, match.ExitKingCaptured},
					[rules.NumSeats]int{60, 12, 5, 3}, [rules.NumSeats]int{60, 10, 5, 3}),
				Result: &rules.Result{Points: [rules.NumSeats]int{60, 10, 5, 3},
					Ranking: [rules.NumSeats]rules.Seat{rules.Red, rules.Blue, rules.Yellow, rules.Green}, Termination: rules.LastPlayerStanding},
			},
			want: &matchv1.Match{
				MatchId: "m2", Status: matchv1.MatchStatus_MATCH_STATUS_FINISHED, RuleSet: "fourkingdoms", TimeControl: wireTC,
				Fen4: "fen2", Ply: 80, Version: 90, CreatedAt: timestamppb.New(created), FinishedAt: timestamppb.New(finished),
				Clocks: []*gamev1.Clock{clock(red, time.Second, nil), clock(blue, 0, nil), clock(yellow, 2*time.Second, nil),
					clock(green, 3*time.Second, nil)},
				Seats: []*matchv1.SeatState{wireSeat(red, live, none, 60, 60),
					wireSeat(blue, zombie, gamev1.ExitReason_EXIT_REASON_RESIGNED, 12, 10),
					wireSeat(yellow, out, gamev1.ExitReason_EXIT_REASON_MATED, 5, 5),
					wireSeat(green, out, gamev1.ExitReason_EXIT_REASON_KING_CAPTURED, 3, 3)},
				Pieces: wirePieces,
				Result: &gamev1.Result{Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING,
					Ranking: []gamev1.Seat{red, blue, yellow, green},
					Points: []*gamev1.SeatPoints{{Seat: red, Points: 60}, {Seat: blue, Points: 10}, {Seat: yellow, Points: 5},
						{Seat: green, Points: 3}}},
				LastMove: &gamev1.MoveEffects{Move: "h2-h3", Seat: red, PointsGained: 1},
			},
		},
		{
			name: "aborted",
			view: &match.View{
				ID: "m3", Status: match.StatusAborted, RuleSet: "teams", TimeControl: tc, FEN4: "fen3", Version: 2,
				Clocks:    match.ClockReading{Remaining: [rules.NumSeats]time.Duration{time.Minute, time.Minute, time.Minute, time.Minute}, Running: -1},
				CreatedAt: created, FinishedAt: finished, Pieces: nil,
				Seats: seats([rules.NumSeats]rules.SeatStatus{}, [rules.NumSeats]match.ExitReason{}, [rules.NumSeats]int{},
					[rules.NumSeats]int{}),
			},
			want: &matchv1.Match{
				MatchId: "m3", Status: matchv1.MatchStatus_MATCH_STATUS_ABORTED, RuleSet: "teams", TimeControl: wireTC,
				Fen4: "fen3", Version: 2, CreatedAt: timestamppb.New(created), FinishedAt: timestamppb.New(finished),
				Clocks: []*gamev1.Clock{clock(red, time.Minute, nil), clock(blue, time.Minute, nil), clock(yellow, time.Minute, nil),
					clock(green, time.Minute, nil)},
				Seats: []*matchv1.SeatState{wireSeat(red, live, none, 0, 0), wireSeat(blue, live, none, 0, 0),
					wireSeat(yellow, live, none, 0, 0), wireSeat(green, live, none, 0, 0)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, snapshot(tc.view), protocmp.Transform()); diff != "" {
				t.Errorf("snapshot (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDomainEnumValues checks that the domain's status and exit reason
// values are the wire enums' numbers, which snapshot converts by value.
func TestDomainEnumValues(t *testing.T) {
	t.Parallel()
	statuses := map[match.Status]matchv1.MatchStatus{
		match.StatusActive:   matchv1.MatchStatus_MATCH_STATUS_ACTIVE,
		match.StatusFinished: matchv1.MatchStatus_MATCH_STATUS_FINISHED,
		match.StatusAborted:  matchv1.MatchStatus_MATCH_STATUS_ABORTED,
	}
	for d, w := range statuses {
		if int32(d) != int32(w) {
			t.Errorf("match status %d: wire %v is %d", d, w, w)
		}
	}
	exits := map[match.ExitReason]gamev1.ExitReason{
		match.ExitNone:         gamev1.ExitReason_EXIT_REASON_UNSPECIFIED,
		match.ExitResigned:     gamev1.ExitReason_EXIT_REASON_RESIGNED,
		match.ExitTimedOut:     gamev1.ExitReason_EXIT_REASON_TIMED_OUT,
		match.ExitMated:        gamev1.ExitReason_EXIT_REASON_MATED,
		match.ExitStalemated:   gamev1.ExitReason_EXIT_REASON_STALEMATED,
		match.ExitKingCaptured: gamev1.ExitReason_EXIT_REASON_KING_CAPTURED,
	}
	if len(exits) != len(gamev1.ExitReason_name) {
		t.Errorf("%d domain exit reasons, %d on the wire", len(exits), len(gamev1.ExitReason_name))
	}
	for d, w := range exits {
		if int32(d) != int32(w) {
			t.Errorf("exit reason %d: wire %v is %d", d, w, w)
		}
	}
	changes := map[match.PremoveChange]matchv1.PremoveChange{
		match.PremoveNone:      matchv1.PremoveChange_PREMOVE_CHANGE_UNSPECIFIED,
		match.PremoveSet:       matchv1.PremoveChange_PREMOVE_CHANGE_SET,
		match.PremoveCleared:   matchv1.PremoveChange_PREMOVE_CHANGE_CLEARED,
		match.PremovePlayed:    matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED,
		match.PremoveIllegal:   matchv1.PremoveChange_PREMOVE_CHANGE_ILLEGAL,
		match.PremoveSeatLeft:  matchv1.PremoveChange_PREMOVE_CHANGE_SEAT_LEFT,
		match.PremoveMatchOver: matchv1.PremoveChange_PREMOVE_CHANGE_MATCH_OVER,
		match.PremoveNoTime:    matchv1.PremoveChange_PREMOVE_CHANGE_NO_TIME,
	}
	if len(changes) != len(matchv1.PremoveChange_name) {
		t.Errorf("%d domain premove changes, %d on the wire", len(changes), len(matchv1.PremoveChange_name))
	}
	for d, w := range changes {
		if int32(d) != int32(w) {
			t.Errorf("premove change %d: wire %v is %d", d, w, w)
		}
	}
}
