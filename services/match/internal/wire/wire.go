// Package wire converts between the rules engine's types and the wire and
// event protos (fourkingdoms.game.v1, used by the match and event
// messages). The domain (package match) uses it to build the events it
// stores, the transport (package api) to build snapshots; both get the same
// vocabulary from here.
//
// The engine's seat index is the enum value minus one; piece kinds share
// their numbers.
package wire

import (
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

// Seat is the wire form of an engine seat.
func Seat(s rules.Seat) gamev1.Seat { return gamev1.Seat(s + 1) }

// SeatOf is the engine seat of a wire seat; false for none or an unknown
// value.
func SeatOf(s gamev1.Seat) (rules.Seat, bool) {
	if s < gamev1.Seat_SEAT_RED || s > gamev1.Seat_SEAT_GREEN {
		return 0, false
	}
	return rules.Seat(s - 1), true
}

// Kind is the wire form of a piece kind.
func Kind(k rules.PieceKind) gamev1.PieceKind { return gamev1.PieceKind(k) }

// Square is the wire form of a square: its name and one-based file and rank.
func Square(q rules.Square) *gamev1.Square {
	return &gamev1.Square{Name: q.String(), File: uint32(q.File() + 1), Rank: uint32(q.Rank() + 1)}
}

// SeatStatus is the wire form of a seat's status.
func SeatStatus(s rules.SeatStatus) gamev1.SeatStatus {
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

// Ended is what the wire form of a game's end is read from: a *rules.Game,
// or a copy of its result and seat statuses taken under the match's lock.
type Ended interface {
	Result() rules.Result
	Status(rules.Seat) rules.SeatStatus
}

// Termination gives the wire termination of the game's end. The engine
// ends a game with one live player left as LastPlayerStanding; the wire
// tells the two cases apart by the other seats' state at the end:
// LAST_PLAYER_STANDING when at least one of them is a zombie (its king pays
// the survivor +20), ALL_OPPONENTS_OUT when all three are out, however
// they got there (a seat that resigned and whose zombie was later mated,
// stalemated or lost its king is out too).
func Termination(g Ended) gamev1.Termination {
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
	case rules.ClaimedWin:
		return gamev1.Termination_TERMINATION_CLAIMED_WIN
	}
	return gamev1.Termination_TERMINATION_UNSPECIFIED
}

// Points is the wire form of the four seats' points, in seat order. The
// four messages are allocated together (one allocation, not four: every
// event of every move carries them).
func Points(p [rules.NumSeats]int) []*gamev1.SeatPoints {
	out := make([]*gamev1.SeatPoints, rules.NumSeats)
	msgs := make([]gamev1.SeatPoints, rules.NumSeats)
	for s := range rules.NumSeats {
		m := &msgs[s]
		m.Seat, m.Points = Seat(rules.Seat(s)), int32(p[s])
		out[s] = m
	}
	return out
}

// Result is the wire form of the game's result (no ranking when aborted).
func Result(g Ended) *gamev1.Result {
	r := g.Result()
	out := &gamev1.Result{Points: Points(r.Points), Termination: Termination(g)}
	if r.Termination != rules.Aborted {
		for _, s := range r.Ranking {
			out.Ranking = append(out.Ranking, Seat(s))
		}
	}
	return out
}

// Seats is the wire form of a list of seats (nil when empty).
func Seats(ss []rules.Seat) []gamev1.Seat {
	if len(ss) == 0 {
		return nil
	}
	out := make([]gamev1.Seat, len(ss))
	for i, s := range ss {
		out[i] = Seat(s)
	}
	return out
}

// MoveEffects is the wire form of an applied move under rule set rs.
func MoveEffects(m *rules.AppliedMove, rs rules.RuleSet) *gamev1.MoveEffects {
	e := &gamev1.MoveEffects{
		Move:             m.Text,
		Seat:             Seat(m.Seat),
		From:             Square(m.Move.From()),
		To:               Square(m.Move.To()),
		Piece:            Kind(m.Move.Piece()),
		PointsGained:     int32(m.Points),
		CheckedSeats:     Seats(checkedNotMated(m)),
		MatedSeats:       Seats(m.Mated),
		CheckBonusPoints: int32(m.CheckBonus),
		IsZombieMove:     m.Zombie,
	}
	if m.Captured != rules.NoPiece {
		e.Captured = &gamev1.Capture{Kind: Kind(m.Captured), Owner: Seat(m.CapturedSeat),
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
		e.KingCapturedSeat = Seat(m.CapturedSeat)
	}
	for _, s := range m.Eliminated {
		e.Eliminations = append(e.Eliminations, elimination(m, s, rs))
	}
	return e
}

// checkedNotMated lists the seats the move checks and does not mate: the
// engine judges checks before mates, so its Checks include the mated seats,
// which the wire lists in mated_seats only.
func checkedNotMated(m *rules.AppliedMove) []rules.Seat {
	var out []rules.Seat
	for _, s := range m.Checks {
		if !slices.Contains(m.Mated, s) {
			out = append(out, s)
		}
	}
	return out
}

func elimination(m *rules.AppliedMove, s rules.Seat, rs rules.RuleSet) *gamev1.Elimination {
	el := &gamev1.Elimination{Seat: Seat(s), Reason: gamev1.ExitReason_EXIT_REASON_KING_CAPTURED,
		AwardedTo: Seat(m.Seat), AwardedPoints: int32(rs.KingCapturePoints)}
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

// Clocks is the wire form of the four clocks read at one moment: each
// seat's remaining time, the running seat (-1 for none) and its deadline.
//
// The messages of the four clocks and of their durations are allocated
// together (three allocations, not nine: every move event carries them).
func Clocks(remaining *[rules.NumSeats]time.Duration, running int, deadline time.Time) []*gamev1.Clock {
	out := make([]*gamev1.Clock, rules.NumSeats)
	clocks := make([]gamev1.Clock, rules.NumSeats)
	durations := make([]durationpb.Duration, rules.NumSeats)
	for s := range rules.NumSeats {
		// As durationpb.New.
		d := &durations[s]
		d.Seconds, d.Nanos = int64(remaining[s]/time.Second), int32(remaining[s]%time.Second)
		cl := &clocks[s]
		cl.Seat, cl.Remaining = Seat(rules.Seat(s)), d
		if running == s {
			cl.Running = true
			cl.TurnDeadline = timestamppb.New(deadline)
		}
		out[s] = cl
	}
	return out
}

// TimeControl is the wire form of a time control, its mode and name
// derived from the durations.
func TimeControl(tc timecontrol.TimeControl) *gamev1.TimeControl {
	out := &gamev1.TimeControl{Initial: durationpb.New(tc.Initial), Increment: durationpb.New(tc.Increment),
		Delay: durationpb.New(tc.Delay), Mode: gamev1.TimeControlMode_TIME_CONTROL_MODE_INCREMENT, Name: tc.Name()}
	if tc.IsDelay() {
		out.Mode = gamev1.TimeControlMode_TIME_CONTROL_MODE_DELAY
	}
	return out
}
