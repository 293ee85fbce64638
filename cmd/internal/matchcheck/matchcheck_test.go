package matchcheck

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

const (
	R, B, Y, G = gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN
	// Yellow and Green out, Red to move mates Blue with Qc4-b5.
	fenRedMatesBlue = "R-0,0,1,1-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/14/14/13,gK/14/1,bP,12/bK,13/1,rR,rQ,11/14/14/7,rK,6"
)

func pts(r, b, y, g int32) []*gamev1.SeatPoints {
	return []*gamev1.SeatPoints{{Seat: R, Points: r}, {Seat: B, Points: b}, {Seat: Y, Points: y}, {Seat: G, Points: g}}
}

func created(fen4 string) *eventsv1.MatchEvent {
	return &eventsv1.MatchEvent{Version: 1, Event: &eventsv1.MatchEvent_MatchCreated{MatchCreated: &eventsv1.MatchCreated{
		RuleSet: "fourkingdoms", Fen4: fen4, ToMove: R}}}
}

func moved(v uint64, ply uint32, e *gamev1.MoveEffects, next gamev1.Seat, p []*gamev1.SeatPoints) *eventsv1.MatchEvent {
	return &eventsv1.MatchEvent{Version: v, Ply: ply, Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{
		Effects: e, ToMove: next, Points: p}}}
}

// opening is a valid stream from the start position: Red moves, Blue
// resigns, Blue's zombie and Yellow move, Yellow takes a zombie pawn (worth
// 0, not dead), then the match is aborted.
func opening() []*eventsv1.MatchEvent {
	return []*eventsv1.MatchEvent{
		created(""),
		moved(2, 1, &gamev1.MoveEffects{Move: "h2-h3", Seat: R}, B, pts(0, 0, 0, 0)),
		{Version: 3, Ply: 1, Event: &eventsv1.MatchEvent_PlayerResigned{PlayerResigned: &eventsv1.PlayerResigned{Seat: B}}},
		moved(4, 2, &gamev1.MoveEffects{Move: "m7-l7", Seat: B, IsZombieMove: true}, Y, pts(0, 0, 0, 0)),
		moved(5, 3, &gamev1.MoveEffects{Move: "Qg14xPl7", Seat: Y, Captured: &gamev1.Capture{Kind: gamev1.PieceKind_PIECE_KIND_PAWN, Owner: B}}, G, pts(0, 0, 0, 0)),
		{Version: 6, Ply: 3, Event: &eventsv1.MatchEvent_MatchAborted{MatchAborted: &eventsv1.MatchAborted{Reason: "test"}}},
	}
}

// mate is a valid stream: Red mates Blue, the last opponent in play.
func mate() []*eventsv1.MatchEvent {
	el := &gamev1.Elimination{Seat: B, Reason: gamev1.ExitReason_EXIT_REASON_MATED, AwardedTo: R, AwardedPoints: 20}
	return []*eventsv1.MatchEvent{
		created(fenRedMatesBlue),
		moved(2, 1, &gamev1.MoveEffects{Move: "Qc4-b5#", Seat: R, PointsGained: 20, MatedSeats: []gamev1.Seat{B},
			Eliminations: []*gamev1.Elimination{el}}, gamev1.Seat_SEAT_UNSPECIFIED, pts(20, 0, 0, 0)),
		{Version: 3, Ply: 1, Event: &eventsv1.MatchEvent_PlayerEliminated{PlayerEliminated: &eventsv1.PlayerEliminated{
			Elimination: proto.Clone(el).(*gamev1.Elimination), Points: pts(20, 0, 0, 0)}}},
		{Version: 4, Ply: 1, Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{Result: &gamev1.Result{
			Points: pts(20, 0, 0, 0), Ranking: []gamev1.Seat{R, G, Y, B}, Termination: gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT}}}},
	}
}

// resigned is a valid stream: Blue, the last opponent in play, resigns
// and Red gets the bonus for Blue's king.
func resigned() []*eventsv1.MatchEvent {
	return []*eventsv1.MatchEvent{
		created(fenRedMatesBlue),
		{Version: 2, Event: &eventsv1.MatchEvent_PlayerResigned{PlayerResigned: &eventsv1.PlayerResigned{Seat: B}}},
		{Version: 3, Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{Result: &gamev1.Result{
			Points: pts(20, 0, 0, 0), Ranking: []gamev1.Seat{R, G, Y, B}, Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING}}}},
	}
}

// insufficient is a valid chesscom-ffa stream: Blue, with a queen, resigns
// against Red's bare king, the last opponent in play: a draw by
// insufficient material, 10 each (docs/rules.md section 13.3.14).
func insufficient() []*eventsv1.MatchEvent {
	return []*eventsv1.MatchEvent{
		{Version: 1, Event: &eventsv1.MatchEvent_MatchCreated{MatchCreated: &eventsv1.MatchCreated{
			RuleSet: "chesscom-ffa", Fen4: fenBlueQueenRedBareKing, ToMove: R}}},
		{Version: 2, Event: &eventsv1.MatchEvent_PlayerResigned{PlayerResigned: &eventsv1.PlayerResigned{Seat: B}}},
		{Version: 3, Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{Result: &gamev1.Result{
			Points: pts(10, 10, 0, 0), Ranking: []gamev1.Seat{B, R, G, Y}, Termination: gamev1.Termination_TERMINATION_INSUFFICIENT_MATERIAL}}}},
	}
}

// Yellow and Green out; Red has a bare king, Blue a queen.
const fenBlueQueenRedBareKing = "R-0,0,1,1-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/14/14/13,gK/14/1,bQ,12/bK,13/14/14/14/7,rK,6"

func check(evs []*eventsv1.MatchEvent) error {
	var c Checker
	for _, ev := range evs {
		if err := c.Event(ev); err != nil {
			return err
		}
	}
	return nil
}

func TestValidStreams(t *testing.T) {
	t.Parallel()
	for name, evs := range map[string][]*eventsv1.MatchEvent{"opening": opening(), "mate": mate(), "resigned": resigned(), "insufficient": insufficient()} {
		if err := check(evs); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		base    func() []*eventsv1.MatchEvent
		version uint64 // the version the error must name
		mutate  func(evs []*eventsv1.MatchEvent) []*eventsv1.MatchEvent
	}{
		{"no MatchCreated first", opening, 2, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent { return e[1:] }},
		{"version gap", opening, 5, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent { e[3].Version = 5; return e }},
		{"repeated version", opening, 2, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent { e[2].Version = 2; return e }},
		{"ply not +1", opening, 4, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent { e[3].Ply = 3; return e }},
		{"ply moves without a move", opening, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent { e[2].Ply = 2; return e }},
		{"wrong mover", opening, 4, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[3].GetMoveApplied().Effects.Seat = Y
			return e
		}},
		{"first mover not MatchCreated's", opening, 2, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[1].GetMoveApplied().Effects.Seat = B
			return e
		}},
		{"zombie move not flagged", opening, 4, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[3].GetMoveApplied().Effects.IsZombieMove = false
			return e
		}},
		{"points do not add up", opening, 2, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[1].GetMoveApplied().Points = pts(1, 0, 0, 0)
			return e
		}},
		{"points gained not reported", opening, 5, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[4].GetMoveApplied().Effects.PointsGained = 1
			return e
		}},
		{"frozen points differ", opening, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[2].GetPlayerResigned().FrozenPoints = 5
			return e
		}},
		{"zombie's piece dead under fourkingdoms", opening, 5, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[4].GetMoveApplied().Effects.Captured.Dead = true
			return e
		}},
		{"event after the end", opening, 7, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			return append(e, &eventsv1.MatchEvent{Version: 7, Ply: 3, Event: &eventsv1.MatchEvent_MatchAborted{MatchAborted: &eventsv1.MatchAborted{}}})
		}},
		{"announced elimination missing", mate, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[3].Version = 3
			return append(e[:2], e[3])
		}},
		{"elimination differs from the move's", mate, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[2].GetPlayerEliminated().Elimination.AwardedPoints = 0
			return e
		}},
		{"mated seat without elimination", mate, 2, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[1].GetMoveApplied().Effects.MatedSeats = []gamev1.Seat{G}
			return e
		}},
		{"unannounced king capture", mate, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[1].GetMoveApplied().Effects.Eliminations = nil
			e[1].GetMoveApplied().Effects.MatedSeats = nil
			e[2].GetPlayerEliminated().Elimination.Reason = gamev1.ExitReason_EXIT_REASON_KING_CAPTURED
			return e
		}},
		{"result points of eliminated seat", mate, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[2].GetPlayerEliminated().ResultPoints = 3
			return e
		}},
		{"all out is not last player standing", mate, 4, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[3].GetGameOver().Result.Termination = gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING
			return e
		}},
		{"a zombie left is not all opponents out", resigned, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[2].GetGameOver().Result.Termination = gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT
			return e
		}},
		{"insufficient material under fourkingdoms", insufficient, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[0].GetMatchCreated().RuleSet = "fourkingdoms"
			return e
		}},
		{"insufficient material without the leaver's draw points", insufficient, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[2].GetGameOver().Result.Points = pts(10, 0, 0, 0)
			e[2].GetGameOver().Result.Ranking = []gamev1.Seat{R, G, Y, B}
			return e
		}},
		{"missing last-player bonus", resigned, 3, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[2].GetGameOver().Result.Points = pts(0, 0, 0, 0)
			return e
		}},
		{"result points do not add up", mate, 4, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[3].GetGameOver().Result.Points = pts(20, 1, 0, 0)
			return e
		}},
		{"tie broken the wrong way", mate, 4, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[3].GetGameOver().Result.Ranking = []gamev1.Seat{R, B, Y, G}
			return e
		}},
		{"move by a seat that is out", mate, 4, func(e []*eventsv1.MatchEvent) []*eventsv1.MatchEvent {
			e[1].GetMoveApplied().ToMove = B
			e[3] = moved(4, 2, &gamev1.MoveEffects{Move: "a5-a6", Seat: B}, R, pts(20, 0, 0, 0))
			return e
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := check(tt.mutate(tt.base()))
			if !errors.Is(err, ErrViolation) {
				t.Fatalf("got %v, want a violation", err)
			}
			var c Checker
			for _, ev := range tt.mutate(tt.base()) {
				if c.Event(ev) != nil {
					if ev.GetVersion() != tt.version {
						t.Fatalf("%v reported at version %d, want %d", err, ev.GetVersion(), tt.version)
					}
					break
				}
			}
		})
	}
}

// TestSnapshotThenEvents starts from a snapshot, as Follow does.
func TestSnapshotThenEvents(t *testing.T) {
	t.Parallel()
	evs := opening()
	snap := &matchv1.Match{RuleSet: "fourkingdoms", Status: matchv1.MatchStatus_MATCH_STATUS_ACTIVE, Version: 3, Ply: 1, ToMove: B}
	for s := R; s <= G; s++ {
		st := gamev1.SeatStatus_SEAT_STATUS_LIVE
		if s == B {
			st = gamev1.SeatStatus_SEAT_STATUS_ZOMBIE
		}
		snap.Seats = append(snap.Seats, &matchv1.SeatState{Seat: s, Status: st})
	}
	var c Checker
	if err := c.Snapshot(snap); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs[3:] {
		if err := c.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	c = Checker{}
	if err := c.Snapshot(snap); err != nil {
		t.Fatal(err)
	}
	if err := c.Event(evs[4]); !errors.Is(err, ErrViolation) {
		t.Fatalf("gap after a snapshot: got %v", err)
	}
}
