package match

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// The conversions between the engine and the wire vocabulary are in package
// wire (the transport builds snapshots with them too); what is here needs
// the domain's own types or errors.

// clocksPB renders the clocks as of now.
func clocksPB(c *Clocks, tc timecontrol.TimeControl, firstMoveLimit time.Duration, now time.Time) []*gamev1.Clock {
	r := c.read(tc, firstMoveLimit, now)
	return wire.Clocks(&r.Remaining, r.Running, r.Deadline)
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
	return tc, wire.TimeControl(tc), nil
}

// storedTimeControl reads the time control of a stored match: its
// durations, as they were accepted when the match was created.
func storedTimeControl(in *gamev1.TimeControl) timecontrol.TimeControl {
	return timecontrol.TimeControl{Initial: in.GetInitial().AsDuration(), Increment: in.GetIncrement().AsDuration(),
		Delay: in.GetDelay().AsDuration()}
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
	finalToMove := wire.Seat(g.ToMove())
	if g.Over() {
		finalToMove = gamev1.Seat_SEAT_UNSPECIFIED
	}
	toMoveAfter := func(i int) gamev1.Seat {
		if i+1 < len(eff.Moves) {
			return wire.Seat(eff.Moves[i+1].Seat)
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
					Seat: wire.Seat(ev.Seat), FrozenPoints: int32(pts[ev.Seat])}}})
			case rules.EventTimedOut:
				rec.Exit[ev.Seat] = uint8(gamev1.ExitReason_EXIT_REASON_TIMED_OUT)
				add(ev.Ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerTimedOut{PlayerTimedOut: &eventsv1.PlayerTimedOut{
					Seat: wire.Seat(ev.Seat), FrozenPoints: int32(pts[ev.Seat]), FirstMoveLimit: !rec.Clocks.Moved[ev.Seat]}}})
			case rules.EventStalemated, rules.EventMatedOnTurn:
				reason, awarded := gamev1.ExitReason_EXIT_REASON_STALEMATED, wire.Seat(ev.Seat)
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
				// A zombie king's stalemate pays the live seats
				// (chesscom-ffa): the engine reports those payments as
				// bonuses right after it, which the elimination carries.
				var bonus []*gamev1.SeatPoints
				for ei+1 < len(eff.Events) && eff.Events[ei+1].Kind == rules.EventBonus && eff.Events[ei+1].Reason == rules.NotOver {
					ei++
					b := eff.Events[ei]
					pts[b.Seat] += b.Points
					bonus = append(bonus, &gamev1.SeatPoints{Seat: wire.Seat(b.Seat), Points: int32(b.Points)})
				}
				add(ev.Ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerEliminated{PlayerEliminated: &eventsv1.PlayerEliminated{
					Elimination:  &gamev1.Elimination{Seat: wire.Seat(ev.Seat), Reason: reason, AwardedTo: awarded, AwardedPoints: int32(ev.Points)},
					ResultPoints: int32(g.ResultPoints()[ev.Seat]), Points: wire.Points(pts), BonusPoints: bonus}}})
			case rules.EventBonus:
				// End-of-game bonuses are in GameOver's result.
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
		me := wire.MoveEffects(m, rs)
		add(m.Ply+1, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{
			Effects: me, ToMove: toMoveAfter(i), Clocks: clocks, Points: wire.Points(pts)}}})
		rec.LastMove = nil
		if b, err := marshal(me); err == nil {
			rec.LastMove = b
		}
		for _, el := range me.Eliminations {
			s, _ := wire.SeatOf(el.Seat)
			if rec.Exit[s] == 0 || rec.Exit[s] == uint8(gamev1.ExitReason_EXIT_REASON_RESIGNED) || rec.Exit[s] == uint8(gamev1.ExitReason_EXIT_REASON_TIMED_OUT) {
				rec.Exit[s] = uint8(el.Reason)
			}
			add(m.Ply+1, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerEliminated{PlayerEliminated: &eventsv1.PlayerEliminated{
				Elimination: el, ResultPoints: int32(g.ResultPoints()[s]), Points: wire.Points(pts)}}})
		}
	}
	emitEvents(int(^uint(0) >> 1))
	if g.Over() && g.Result().Termination != rules.Aborted {
		add(g.Ply(), &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{Result: wire.Result(g)}}})
	}
	return out
}
