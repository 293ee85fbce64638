package match

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

// Conversions between the engine's types and the wire vocabulary. The
// engine's seat index is the enum value minus one, piece kinds share numbers.

func seatPB(s rules.Seat) gamev1.Seat { return gamev1.Seat(s + 1) }

func seatFromPB(s gamev1.Seat) (rules.Seat, bool) {
	if s < gamev1.Seat_SEAT_RED || s > gamev1.Seat_SEAT_GREEN {
		return 0, false
	}
	return rules.Seat(s - 1), true
}

func kindPB(k rules.PieceKind) gamev1.PieceKind { return gamev1.PieceKind(k) }

func squarePB(q rules.Square) *gamev1.Square {
	return &gamev1.Square{Name: q.String(), File: uint32(q.File() + 1), Rank: uint32(q.Rank() + 1)}
}

func seatStatusPB(s rules.SeatStatus) gamev1.SeatStatus {
	switch s {
	case rules.Live:
		return gamev1.SeatStatus_SEAT_STATUS_LIVE
	case rules.Zombie:
		return gamev1.SeatStatus_SEAT_STATUS_ZOMBIE
	case rules.Out:
		return gamev1.SeatStatus_SEAT_STATUS_OUT
	}
	return gamev1.SeatStatus_SEAT_STATUS_UNSPECIFIED
}

// terminationPB gives the wire termination of the game's end. The engine
// ends a game with one live player left as LastPlayerStanding; the wire
// tells the two cases apart by the other seats' state at the end:
// LAST_PLAYER_STANDING when at least one of them is a zombie (its king pays
// the survivor +20), ALL_OPPONENTS_OUT when all three are out, however
// they got there (a seat that resigned and whose zombie was later mated,
// stalemated or lost its king is out too).
func terminationPB(g *rules.Game) gamev1.Termination {
	switch t := g.Result().Termination; t {
	case rules.LastPlayerStanding:
		for s := range rules.NumSeats {
			if g.Status(rules.Seat(s)) == rules.Zombie {
				return gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING
			}
		}
		return gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT
	case rules.NoLivePlayers:
		return gamev1.Termination_TERMINATION_NO_LIVE_PLAYER
	case rules.NoProgress:
		return gamev1.Termination_TERMINATION_FIFTY_MOVE
	case rules.Repetition:
		return gamev1.Termination_TERMINATION_THREEFOLD_REPETITION
	case rules.BareKings:
		return gamev1.Termination_TERMINATION_INSUFFICIENT_MATERIAL
	case rules.Aborted:
		return gamev1.Termination_TERMINATION_ABORTED
	}
	return gamev1.Termination_TERMINATION_UNSPECIFIED
}

func pointsPB(p [rules.NumSeats]int) []*gamev1.SeatPoints {
	out := make([]*gamev1.SeatPoints, rules.NumSeats)
	for s := range rules.NumSeats {
		out[s] = &gamev1.SeatPoints{Seat: seatPB(rules.Seat(s)), Points: int32(p[s])}
	}
	return out
}

func resultPB(g *rules.Game) *gamev1.Result {
	r := g.Result()
	out := &gamev1.Result{Points: pointsPB(r.Points), Termination: terminationPB(g)}
	if r.Termination != rules.Aborted {
		for _, s := range r.Ranking {
			out.Ranking = append(out.Ranking, seatPB(s))
		}
	}
	return out
}

func seatsPB(ss []rules.Seat) []gamev1.Seat {
	if len(ss) == 0 {
		return nil
	}
	out := make([]gamev1.Seat, len(ss))
	for i, s := range ss {
		out[i] = seatPB(s)
	}
	return out
}

func moveEffectsPB(m *rules.AppliedMove, rs rules.RuleSet) *gamev1.MoveEffects {
	e := &gamev1.MoveEffects{
		Move:             m.Text,
		Seat:             seatPB(m.Seat),
		From:             squarePB(m.Move.From()),
		To:               squarePB(m.Move.To()),
		Piece:            kindPB(m.Move.Piece()),
		PointsGained:     int32(m.Points),
		CheckedSeats:     seatsPB(m.Checks),
		MatedSeats:       seatsPB(m.Mated),
		CheckBonusPoints: int32(m.CheckBonus),
		IsZombieMove:     m.Zombie,
	}
	if m.Captured != rules.NoPiece {
		e.Captured = &gamev1.Capture{Kind: kindPB(m.Captured), Owner: seatPB(m.CapturedSeat),
			Promoted: m.CapturedPromoted, Dead: m.CapturedDead}
	}
	if m.Promotion {
		e.Promotion = gamev1.PieceKind_PIECE_KIND_QUEEN
	}
	switch m.Move.Castle() {
	case 1:
		e.Castling = gamev1.CastlingSide_CASTLING_SIDE_SHORT
	case 2:
		e.Castling = gamev1.CastlingSide_CASTLING_SIDE_LONG
	}
	if m.KingCaptured {
		e.KingCapturedSeat = seatPB(m.CapturedSeat)
	}
	for _, s := range m.Eliminated {
		e.Eliminations = append(e.Eliminations, eliminationPB(m, s, rs))
	}
	return e
}

func eliminationPB(m *rules.AppliedMove, s rules.Seat, rs rules.RuleSet) *gamev1.Elimination {
	el := &gamev1.Elimination{Seat: seatPB(s), Reason: gamev1.ExitReason_EXIT_REASON_KING_CAPTURED,
		AwardedTo: seatPB(m.Seat), AwardedPoints: int32(rs.KingCapturePoints)}
	for _, x := range m.Mated {
		if x == s {
			el.Reason, el.AwardedPoints = gamev1.ExitReason_EXIT_REASON_MATED, int32(rs.MatePoints)
		}
	}
	if m.Zombie {
		// A zombie's points never count for its player.
		el.AwardedTo, el.AwardedPoints = gamev1.Seat_SEAT_UNSPECIFIED, 0
	}
	return el
}

// clocksPB renders the clocks as of now.
func clocksPB(c *Clocks, tc timecontrol.TimeControl, firstMoveLimit time.Duration, now time.Time) []*gamev1.Clock {
	out := make([]*gamev1.Clock, rules.NumSeats)
	for s := range rules.NumSeats {
		cl := &gamev1.Clock{Seat: seatPB(rules.Seat(s)), Remaining: durationpb.New(c.Remaining[s])}
		if c.Running == s {
			cl.Running = true
			d, _ := c.Deadline(tc, firstMoveLimit)
			cl.TurnDeadline = timestamppb.New(d)
			used := max(now.Sub(c.TurnStart)-tc.Delay, 0)
			cl.Remaining = durationpb.New(max(c.Remaining[s]-used, 0))
		}
		out[s] = cl
	}
	return out
}

// parseTimeControl reads a request's time control (package timecontrol
// decides what is valid) and returns it with its wire form, whose mode and
// name are derived from the durations.
func parseTimeControl(in *gamev1.TimeControl) (timecontrol.TimeControl, *gamev1.TimeControl, error) {
	if in == nil {
		return timecontrol.TimeControl{}, nil, rpcerr.Field(ErrInvalid, "time_control", "required")
	}
	tc, err := timecontrol.FromMessage(in)
	if err != nil {
		return timecontrol.TimeControl{}, nil, rpcerr.Field(ErrInvalid, "time_control", err.Error())
	}
	return tc, timeControlPB(tc), nil
}

// storedTimeControl reads the time control of a stored match: its
// durations, as they were accepted when the match was created.
func storedTimeControl(in *gamev1.TimeControl) timecontrol.TimeControl {
	return timecontrol.TimeControl{Initial: in.GetInitial().AsDuration(), Increment: in.GetIncrement().AsDuration(),
		Delay: in.GetDelay().AsDuration()}
}

func timeControlPB(tc timecontrol.TimeControl) *gamev1.TimeControl {
	out := &gamev1.TimeControl{Initial: durationpb.New(tc.Initial), Increment: durationpb.New(tc.Increment),
		Delay: durationpb.New(tc.Delay), Mode: gamev1.TimeControlMode_TIME_CONTROL_MODE_INCREMENT, Name: tc.Name()}
	if tc.IsDelay() {
		out.Mode = gamev1.TimeControlMode_TIME_CONTROL_MODE_DELAY
	}
	return out
}

// eventsOf turns the effects of one engine call into match events, in the
// order they happened: moves interleaved with the events that happened
// between them (an event with Ply q happened after q moves were applied).
// points is the seats' points before the call; the events carry the points
// after each step. Versions are assigned from next onwards.
func eventsOf(id string, g *rules.Game, eff *rules.Effects, before [rules.NumSeats]int,
	next uint64, now time.Time, clocks []*gamev1.Clock, rec *record) []*eventsv1.MatchEvent {
	rs := g.Rules()
	var out []*eventsv1.MatchEvent
	at := timestamppb.New(now)
	pts := before
	add := func(ply int, ev *eventsv1.MatchEvent) {
		ev.MatchId, ev.Version, ev.Ply, ev.OccurredAt = id, next, uint32(ply), at
		next++
		out = append(out, ev)
	}
	// Each MoveApplied names the seat to move right after it: within one
	// call every move but the last is followed by a zombie move, whose
	// seat is the one to move then (seats stalemated or mated on their
	// turn in between were skipped); after the last move it is the game's
	// seat to move now.
	finalToMove := seatPB(g.ToMove())
	if g.Over() {
		finalToMove = gamev1.Seat_SEAT_UNSPECIFIED
	}
	toMoveAfter := func(i int) gamev1.Seat {
		if i+1 < len(eff.Moves) {
			return seatPB(eff.Moves[i+1].Seat)
		}
		return finalToMove
	}
	ei := 0
	emitEvents := func(upTo int) {
		for ; ei < len(eff.Events) && eff.Events[ei].Ply <= upTo; ei++ {
			ev := eff.Events[ei]
			switch ev.Kind {
			case rules.EventResigned:
				rec.Exit[ev.Seat] = uint8(gamev1.ExitReason_EXIT_REASON_RESIGNED)
				add(ev.Ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerResigned{PlayerResigned: &eventsv1.PlayerResigned{
					Seat: seatPB(ev.Seat), FrozenPoints: int32(pts[ev.Seat])}}})
			case rules.EventTimedOut:
				rec.Exit[ev.Seat] = uint8(gamev1.ExitReason_EXIT_REASON_TIMED_OUT)
				add(ev.Ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerTimedOut{PlayerTimedOut: &eventsv1.PlayerTimedOut{
					Seat: seatPB(ev.Seat), FrozenPoints: int32(pts[ev.Seat]), FirstMoveLimit: !rec.Clocks.Moved[ev.Seat]}}})
			case rules.EventStalemated, rules.EventMatedOnTurn:
				reason, awarded := gamev1.ExitReason_EXIT_REASON_STALEMATED, seatPB(ev.Seat)
				if ev.Kind == rules.EventMatedOnTurn {
					reason, awarded = gamev1.ExitReason_EXIT_REASON_MATED, gamev1.Seat_SEAT_UNSPECIFIED
				}
				if rec.Exit[ev.Seat] == 0 {
					rec.Exit[ev.Seat] = uint8(reason)
				}
				pts[ev.Seat] += ev.Points
				if ev.Points == 0 {
					awarded = gamev1.Seat_SEAT_UNSPECIFIED
				}
				add(ev.Ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerEliminated{PlayerEliminated: &eventsv1.PlayerEliminated{
					Elimination:  &gamev1.Elimination{Seat: seatPB(ev.Seat), Reason: reason, AwardedTo: awarded, AwardedPoints: int32(ev.Points)},
					ResultPoints: int32(g.ResultPoints()[ev.Seat]), Points: pointsPB(pts)}}})
			case rules.EventBonus:
				pts[ev.Seat] += ev.Points
			case rules.EventGameOver:
				// Written last, below, with the final result.
			}
		}
	}
	for i := range eff.Moves {
		m := &eff.Moves[i]
		emitEvents(m.Ply)
		pts[m.Seat] += m.Points
		me := moveEffectsPB(m, rs)
		add(m.Ply+1, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{
			Effects: me, ToMove: toMoveAfter(i), Clocks: clocks, Points: pointsPB(pts)}}})
		rec.LastMove = nil
		if b, err := marshal(me); err == nil {
			rec.LastMove = b
		}
		for _, el := range me.Eliminations {
			s, _ := seatFromPB(el.Seat)
			if rec.Exit[s] == 0 || rec.Exit[s] == uint8(gamev1.ExitReason_EXIT_REASON_RESIGNED) || rec.Exit[s] == uint8(gamev1.ExitReason_EXIT_REASON_TIMED_OUT) {
				rec.Exit[s] = uint8(el.Reason)
			}
			add(m.Ply+1, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerEliminated{PlayerEliminated: &eventsv1.PlayerEliminated{
				Elimination: el, ResultPoints: int32(g.ResultPoints()[s]), Points: pointsPB(pts)}}})
		}
	}
	emitEvents(int(^uint(0) >> 1))
	if g.Over() && g.Result().Termination != rules.Aborted {
		add(g.Ply(), &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{Result: resultPB(g)}}})
	}
	return out
}
