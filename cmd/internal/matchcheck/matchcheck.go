// Package matchcheck checks a match's event stream against the contract a
// client relies on (proto/fourkingdoms/events/v1/events.proto).
//
// A Checker consumes the events of one match in the order WatchMatch
// delivers them, optionally starting from a snapshot, and reports the first
// violation as an error naming the event's version. It checks only what the
// events themselves determine: versions and plies, the seat to move, seat
// states, capture deadness, eliminations, running and frozen points, and the
// final result. It does not replay moves with the rules engine (zombie moves
// depend on a seed the server never publishes).
package matchcheck

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// ErrViolation is wrapped by every error a Checker reports.
var ErrViolation = errors.New("event contract violated")

const numSeats = 4

const (
	live   = gamev1.SeatStatus_SEAT_STATUS_LIVE
	zombie = gamev1.SeatStatus_SEAT_STATUS_ZOMBIE
	out    = gamev1.SeatStatus_SEAT_STATUS_OUT
	none   = gamev1.Seat_SEAT_UNSPECIFIED
)

// Checker follows one match. The zero value is not usable: start it with
// Event on the MatchCreated event or with Snapshot. After the first
// violation it keeps returning that error.
type Checker struct {
	started bool
	ended   bool
	rs      rules.RuleSet
	version uint64
	ply     uint32
	// toMove is the seat that must make the next move; none when unknown
	// (after an elimination of the seat to move).
	toMove gamev1.Seat
	status [numSeats]gamev1.SeatStatus
	points [numSeats]int32
	result [numSeats]int32 // frozen or final result points of non-live seats
	// pending are the eliminations the last MoveApplied announced whose
	// PlayerEliminated events have not arrived yet.
	pending []*gamev1.Elimination
	// partial is set after a snapshot until the next move: eliminations
	// announced before the snapshot may still arrive.
	partial bool
	// unexplained is set after a zombie king's stalemate under a rule set
	// that pays the live seats for it: the engine adds that bonus without an
	// event, so the next reported points may exceed the tracked ones.
	unexplained bool
	// left is 1 + the index of the seat whose resignation or time loss
	// was the last event, 0 after any other: a draw by insufficient
	// material after a leave (RuleSet.LeaveInsufficientDraw) pays it too.
	left int
	err  error
}

// Snapshot (re)starts the checker from a match state, as WatchMatch sends
// it first or after trimming, or as GetMatch returns it. Events after it
// must continue from m.Version.
func (c *Checker) Snapshot(m *matchv1.Match) error {
	if c.err != nil {
		return c.err
	}
	rs, ok := rules.RuleSetByName(m.GetRuleSet())
	if !ok {
		return c.fail(m.GetVersion(), "unknown rule set %q", m.GetRuleSet())
	}
	*c = Checker{started: true, rs: rs, version: m.GetVersion(), ply: m.GetPly(), toMove: m.GetToMove(), partial: true}
	for _, st := range m.GetSeats() {
		i, ok := index(st.GetSeat())
		if !ok {
			return c.fail(m.GetVersion(), "snapshot seat %v", st.GetSeat())
		}
		c.status[i], c.points[i], c.result[i] = st.GetStatus(), st.GetPoints(), st.GetResultPoints()
	}
	switch m.GetStatus() {
	case matchv1.MatchStatus_MATCH_STATUS_FINISHED, matchv1.MatchStatus_MATCH_STATUS_ABORTED:
		c.ended = true
	}
	return nil
}

// Event checks the next event of the stream.
func (c *Checker) Event(ev *eventsv1.MatchEvent) error {
	if c.err != nil {
		return c.err
	}
	v := ev.GetVersion()
	if mc := ev.GetMatchCreated(); mc != nil {
		if c.started || v != 1 {
			return c.fail(v, "MatchCreated at version %d after %d", v, c.version)
		}
		return c.created(mc, ev)
	}
	switch {
	case !c.started:
		return c.fail(v, "stream starts with %T, not MatchCreated", ev.GetEvent())
	case c.ended:
		return c.fail(v, "event after the match ended at version %d", c.version)
	case v != c.version+1:
		return c.fail(v, "version %d follows %d", v, c.version)
	}
	c.version = v
	if len(c.pending) > 0 && ev.GetPlayerEliminated() == nil {
		return c.fail(v, "%T while PlayerEliminated for %v announced by the last move is missing", ev.GetEvent(), c.pending[0].GetSeat())
	}
	wantPly := c.ply
	if ev.GetMoveApplied() != nil {
		wantPly++
	}
	if ev.GetPly() != wantPly {
		return c.fail(v, "ply %d, want %d", ev.GetPly(), wantPly)
	}
	c.ply = wantPly
	left := c.left
	c.left = 0
	switch x := ev.GetEvent().(type) {
	case *eventsv1.MatchEvent_MoveApplied:
		return c.move(v, x.MoveApplied)
	case *eventsv1.MatchEvent_PlayerResigned:
		return c.leave(v, x.PlayerResigned.GetSeat(), x.PlayerResigned.GetFrozenPoints())
	case *eventsv1.MatchEvent_PlayerTimedOut:
		return c.leave(v, x.PlayerTimedOut.GetSeat(), x.PlayerTimedOut.GetFrozenPoints())
	case *eventsv1.MatchEvent_PlayerEliminated:
		return c.eliminated(v, x.PlayerEliminated)
	case *eventsv1.MatchEvent_GameOver:
		c.ended = true
		return c.gameOver(v, x.GameOver.GetResult(), left)
	case *eventsv1.MatchEvent_MatchAborted:
		c.ended = true
	}
	// Unknown kinds are skipped, as clients must do.
	return nil
}

// Err returns the first violation found, or nil.
func (c *Checker) Err() error { return c.err }

func (c *Checker) created(mc *eventsv1.MatchCreated, ev *eventsv1.MatchEvent) error {
	rs, ok := rules.RuleSetByName(mc.GetRuleSet())
	if !ok {
		return c.fail(1, "unknown rule set %q", mc.GetRuleSet())
	}
	g, err := rules.NewGame(rs, 0, mc.GetFen4())
	if err != nil {
		return c.fail(1, "fen4 %q: %v", mc.GetFen4(), err)
	}
	if ev.GetPly() != 0 {
		return c.fail(1, "MatchCreated ply %d", ev.GetPly())
	}
	*c = Checker{started: true, rs: rs, version: 1, toMove: mc.GetToMove()}
	pts := g.Points()
	for i := range c.status {
		c.status[i] = gamev1.SeatStatus(g.Status(rules.Seat(i)) + 1)
		c.points[i] = int32(pts[i])
		c.result[i] = c.points[i]
	}
	if got, want := mc.GetToMove(), gamev1.Seat(g.ToMove()+1); got != want {
		return c.fail(1, "to_move %v, fen4 says %v", got, want)
	}
	return nil
}

func (c *Checker) move(v uint64, m *eventsv1.MoveApplied) error {
	e := m.GetEffects()
	s := e.GetSeat()
	i, ok := index(s)
	if !ok {
		return c.fail(v, "move %q by seat %v", e.GetMove(), s)
	}
	if c.toMove != none && s != c.toMove {
		return c.fail(v, "%v moved %q, %v was named to move", s, e.GetMove(), c.toMove)
	}
	if c.status[i] == out {
		return c.fail(v, "%v moved %q but is out", s, e.GetMove())
	}
	if e.GetIsZombieMove() != (c.status[i] == zombie) {
		return c.fail(v, "%v (%v) moved with is_zombie_move=%v", s, c.status[i], e.GetIsZombieMove())
	}
	if cp := e.GetCaptured(); cp != nil {
		o, ok := index(cp.GetOwner())
		if !ok {
			return c.fail(v, "capture of seat %v", cp.GetOwner())
		}
		st := c.status[o]
		dead := st == out || (c.rs.Zombie == rules.ZombieKingOnly && st == zombie && cp.GetKind() != gamev1.PieceKind_PIECE_KIND_KING)
		if cp.GetDead() != dead {
			return c.fail(v, "%q captured %v of %v (%v): dead=%v, want %v", e.GetMove(), cp.GetKind(), cp.GetOwner(), st, cp.GetDead(), dead)
		}
	}
	for _, el := range e.GetEliminations() {
		j, ok := index(el.GetSeat())
		if !ok || c.status[j] == out {
			return c.fail(v, "%q eliminates %v, which is not in play", e.GetMove(), el.GetSeat())
		}
	}
	for _, ms := range e.GetMatedSeats() {
		if !slices.ContainsFunc(e.GetEliminations(), func(el *gamev1.Elimination) bool { return el.GetSeat() == ms }) {
			return c.fail(v, "%q mates %v without an elimination", e.GetMove(), ms)
		}
	}
	c.pending = slices.Clone(e.GetEliminations())
	c.partial = false
	c.points[i] += e.GetPointsGained()
	if err := c.checkPoints(v, m.GetPoints()); err != nil {
		return err
	}
	c.toMove = m.GetToMove()
	return nil
}

func (c *Checker) leave(v uint64, s gamev1.Seat, frozen int32) error {
	i, ok := index(s)
	if !ok || c.status[i] != live {
		return c.fail(v, "%v left but is not live", s)
	}
	if frozen != c.points[i] {
		return c.fail(v, "%v left with frozen points %d, running points %d", s, frozen, c.points[i])
	}
	c.status[i], c.result[i] = zombie, frozen
	c.left = i + 1
	// The seat to move stays the same: if it was the leaver, the server's
	// zombie move for it follows at once.
	return nil
}

func (c *Checker) eliminated(v uint64, pe *eventsv1.PlayerEliminated) error {
	el := pe.GetElimination()
	s := el.GetSeat()
	i, ok := index(s)
	if !ok || c.status[i] == out {
		return c.fail(v, "%v eliminated but not in play", s)
	}
	announced := len(c.pending) > 0
	if announced {
		if !proto.Equal(el, c.pending[0]) {
			return c.fail(v, "PlayerEliminated %v, the last move announced %v", el, c.pending[0])
		}
		c.pending = c.pending[1:]
	} else {
		if el.GetReason() == gamev1.ExitReason_EXIT_REASON_KING_CAPTURED && !c.partial {
			return c.fail(v, "king capture of %v not announced by a move", s)
		}
		if a := el.GetAwardedTo(); a != none {
			j, ok := index(a)
			if !ok {
				return c.fail(v, "points awarded to %v", a)
			}
			c.points[j] += el.GetAwardedPoints()
		}
	}
	wasZombie := c.status[i] == zombie
	if err := c.checkPoints(v, pe.GetPoints()); err != nil {
		return err
	}
	want := c.points[i]
	if wasZombie {
		want = c.result[i]
	}
	if pe.GetResultPoints() != want {
		return c.fail(v, "%v (%v) eliminated with result points %d, want %d", s, c.status[i], pe.GetResultPoints(), want)
	}
	c.status[i], c.result[i] = out, want
	if wasZombie && el.GetReason() == gamev1.ExitReason_EXIT_REASON_STALEMATED && c.rs.ZombieKingStalemateDrawPoints != 0 {
		c.unexplained = true
	}
	if s == c.toMove {
		// Passed over on its turn; which seat moves next is named by no
		// event, so the next mover is not checked.
		c.toMove = none
	}
	return nil
}

// checkPoints compares the reported running points with the tracked ones.
func (c *Checker) checkPoints(v uint64, ps []*gamev1.SeatPoints) error {
	if len(ps) == 0 {
		return nil
	}
	got, err := seatPoints(ps)
	if err != nil {
		return c.fail(v, "points: %v", err)
	}
	if c.unexplained {
		// Accept a bonus to live seats, nothing for the others.
		for i := range got {
			d := got[i] - c.points[i]
			if c.status[i] != live && d != 0 || c.status[i] == live && d < 0 {
				return c.fail(v, "points %v after a zombie king's stalemate, tracked %v", got, c.points)
			}
		}
		c.points, c.unexplained = got, false
		return nil
	}
	if got != c.points {
		return c.fail(v, "points %v, the moves add up to %v", got, c.points)
	}
	return nil
}

// gameOver checks the result; left is Checker.left before this event.
func (c *Checker) gameOver(v uint64, r *gamev1.Result, left int) error {
	if len(c.pending) > 0 {
		return c.fail(v, "game over before PlayerEliminated for %v", c.pending[0].GetSeat())
	}
	var nLive, nZombie int32
	last := -1
	for i, st := range c.status {
		switch st {
		case live:
			nLive++
			last = i
		case zombie:
			nZombie++
		}
	}
	term := r.GetTermination()
	var bonus [numSeats]int32
	switch {
	case nLive == 0:
		if term != gamev1.Termination_TERMINATION_NO_LIVE_PLAYER {
			return c.fail(v, "termination %v with no live seat", term)
		}
	case nLive == 1 && nZombie == 0:
		if term != gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT {
			return c.fail(v, "termination %v with one live seat and the others out", term)
		}
	case nLive == 1 && term == gamev1.Termination_TERMINATION_INSUFFICIENT_MATERIAL &&
		c.rs.LeaveInsufficientDraw && left > 0 && c.status[left-1] == zombie:
		// A leave against a last player with a bare king (docs/rules.md
		// 13.3.14): the draw's points to both, the other zombie kings to
		// the last player. The checker does not see the board, so it
		// takes the bare king on trust.
		bonus[last] = int32(c.rs.DrawPoints) + int32(c.rs.LastPlayerBonus)*(nZombie-1)
		c.result[left-1] += int32(c.rs.DrawPoints)
	case nLive == 1:
		if term != gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING {
			return c.fail(v, "termination %v with one live seat and %d zombies", term, nZombie)
		}
		bonus[last] = int32(c.rs.LastPlayerBonus) * nZombie
	default:
		switch term {
		case gamev1.Termination_TERMINATION_FIFTY_MOVE, gamev1.Termination_TERMINATION_THREEFOLD_REPETITION,
			gamev1.Termination_TERMINATION_INSUFFICIENT_MATERIAL:
		default:
			return c.fail(v, "termination %v with %d live seats", term, nLive)
		}
		pts := int32(c.rs.DrawPoints)
		if c.rs.DrawSharesZombieKings {
			pts += (int32(c.rs.LastPlayerBonus)*nZombie + nLive/2) / nLive
		}
		for i, st := range c.status {
			if st == live {
				bonus[i] = pts
			}
		}
	}
	got, err := seatPoints(r.GetPoints())
	if err != nil {
		return c.fail(v, "result points: %v", err)
	}
	for i, st := range c.status {
		want := c.result[i]
		if st == live {
			want = c.points[i] + bonus[i]
		}
		// A zombie king's stalemate pays live seats without an event: their
		// final points are then known only from the result.
		if got[i] != want && !(c.unexplained && st == live && got[i] > want) {
			return c.fail(v, "%v (%v) result points %d, want %d (%v)", gamev1.Seat(i+1), st, got[i], want, term)
		}
	}
	want := []gamev1.Seat{1, 2, 3, 4}
	slices.SortStableFunc(want, func(a, b gamev1.Seat) int {
		if d := got[b-1] - got[a-1]; d != 0 {
			return int(d)
		}
		return int(b) - int(a) // ties favour the seat that moves later
	})
	if !slices.Equal(r.GetRanking(), want) {
		return c.fail(v, "ranking %v for result points %v, want %v", r.GetRanking(), got, want)
	}
	return nil
}

func (c *Checker) fail(v uint64, format string, args ...any) error {
	c.err = fmt.Errorf("version %d: %s: %w", v, fmt.Sprintf(format, args...), ErrViolation)
	return c.err
}

func index(s gamev1.Seat) (int, bool) {
	return int(s) - 1, s >= gamev1.Seat_SEAT_RED && s <= gamev1.Seat_SEAT_GREEN
}

// seatPoints reads one entry per seat.
func seatPoints(ps []*gamev1.SeatPoints) ([numSeats]int32, error) {
	var out [numSeats]int32
	var seen [numSeats]bool
	for _, p := range ps {
		i, ok := index(p.GetSeat())
		if !ok || seen[i] {
			return out, fmt.Errorf("seat %v invalid or repeated", p.GetSeat())
		}
		out[i], seen[i] = p.GetPoints(), true
	}
	if len(ps) != numSeats {
		return out, fmt.Errorf("%d entries, want %d", len(ps), numSeats)
	}
	return out, nil
}
