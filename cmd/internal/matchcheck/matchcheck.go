// Package matchcheck checks a match's event stream against the contract a
// client relies on (proto/fourkingdoms/events/v1/events.proto).
//
// A Checker consumes the events of one match in the order WatchMatch
// delivers them, optionally starting from a snapshot, and reports the first
// violation as an error naming the event's version. It checks two layers:
//
//   - what the events themselves determine: versions and plies, the seat to
//     move, seat states, capture values and deadness, eliminations, running
//     and frozen points, and the final result;
//   - when it has the match from version 1, a replay through pkg/rules (a
//     game whose zombie moves are the ones the events name, since the
//     server never publishes its zombie seed): every move is legal in the
//     replayed position and its effects, the seat to move, eliminations,
//     points, statuses and the result are the engine's. The replay also
//     checks the legal moves offered (LegalMoves), later snapshots and the
//     PGN4 export (Export).
//
// With the time control known (from MatchCreated or a snapshot) it also
// checks the clocks of moves (clocks.go): lag compensation within the
// quota bound, and the mover's clock charged exactly time_charged (less
// any delay, plus the increment).
package matchcheck

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
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
	// left is 1 + the index of the seat whose resignation or time loss
	// was the last event, 0 after any other: a draw by insufficient
	// material after a leave (RuleSet.LeaveInsufficientDraw) pays it too.
	left int
	// claimer is 1 + the index of the seat a WinClaimed event named, 0
	// before one.
	claimer int
	// g is the replayed game (see replay.go), nil when the checker did not
	// see the match from version 1; owed are the events the engine's last
	// action still owes the stream.
	g    *rules.Game
	owed []owed
	// Clocks (see clocks.go): the time control when known, an upper
	// bound of each seat's lag quota, and each seat's stopped clock when
	// known.
	tc         timecontrol.TimeControl
	tcKnown    bool
	quota      [numSeats]time.Duration
	clock      [numSeats]time.Duration
	clockKnown [numSeats]bool
	err        error
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
	if c.g != nil && m.GetVersion() == c.version {
		// The same version again (a reconnection or a reload): it must be
		// the replayed state.
		return c.agreeSnapshot(m)
	}
	*c = Checker{started: true, rs: rs, version: m.GetVersion(), ply: m.GetPly(), toMove: m.GetToMove(), partial: true}
	for _, st := range m.GetSeats() {
		i, ok := index(st.GetSeat())
		if !ok {
			return c.fail(m.GetVersion(), "snapshot seat %v", st.GetSeat())
		}
		c.status[i], c.points[i], c.result[i] = st.GetStatus(), st.GetPoints(), st.GetResultPoints()
	}
	// The quotas are not in a snapshot: the checker assumes the largest.
	c.startClocks(m.GetTimeControl(), timecontrol.LagQuotaMax)
	c.readClocks(m.GetClocks())
	switch m.GetStatus() {
	case matchv1.MatchStatus_MATCH_STATUS_FINISHED, matchv1.MatchStatus_MATCH_STATUS_ABORTED:
		c.ended = true
	}
	if m.GetVersion() == 1 && !c.ended {
		// The match's start: the replay can begin here.
		c.partial = false
		return c.startReplay(m.GetFen4())
	}
	return nil
}

// Start begins the check at version 1 of a match under ruleSet from the
// position fen4 ("" for the standard start), as if the MatchCreated event
// had been seen: for a client that joined later and fetches the history
// from version 1 (WatchMatch from_version 1) to replay it.
func (c *Checker) Start(ruleSet, fen4 string) error {
	if c.err != nil {
		return c.err
	}
	rs, ok := rules.RuleSetByName(ruleSet)
	if !ok {
		return c.fail(1, "unknown rule set %q", ruleSet)
	}
	g, err := rules.NewGame(rs, 0, fen4)
	if err != nil {
		return c.fail(1, "fen4 %q: %v", fen4, err)
	}
	return c.created(&eventsv1.MatchCreated{RuleSet: rs.Name, Fen4: g.FEN4(), ToMove: gamev1.Seat(g.ToMove() + 1)},
		&eventsv1.MatchEvent{Version: 1})
}

// Version returns the version of the last event or snapshot checked.
func (c *Checker) Version() uint64 { return c.version }

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
	var err error
	left := c.left
	c.left = 0
	switch x := ev.GetEvent().(type) {
	case *eventsv1.MatchEvent_MoveApplied:
		err = c.move(v, x.MoveApplied)
	case *eventsv1.MatchEvent_PlayerResigned:
		err = c.leave(v, x.PlayerResigned.GetSeat(), x.PlayerResigned.GetFrozenPoints(), false)
	case *eventsv1.MatchEvent_PlayerTimedOut:
		err = c.leave(v, x.PlayerTimedOut.GetSeat(), x.PlayerTimedOut.GetFrozenPoints(), true)
	case *eventsv1.MatchEvent_PlayerEliminated:
		err = c.eliminated(v, x.PlayerEliminated)
	case *eventsv1.MatchEvent_WinClaimed:
		err = c.claimed(v, x.WinClaimed)
	case *eventsv1.MatchEvent_GameOver:
		err = c.gameOver(v, x.GameOver.GetResult(), left)
		if err == nil && c.g != nil {
			err = c.replayGameOver(v, x.GameOver.GetResult())
		}
		c.ended = true
	case *eventsv1.MatchEvent_MatchAborted:
		if c.g != nil && len(c.owed) > 0 {
			err = c.fail(v, "MatchAborted while the replay expects %s", c.owedString())
		}
		if c.g != nil {
			c.g.Abort()
		}
		c.ended = true
	}
	if ev.GetMoveApplied() == nil {
		// A turn may have ended without a move (a resignation, a time
		// loss): the stopped clocks are known again from the next move.
		c.clockKnown = [numSeats]bool{}
	}
	// Unknown kinds are skipped, as clients must do.
	if err != nil {
		return err
	}
	return c.agree(v)
}

// Err returns the first violation found, or nil.
func (c *Checker) Err() error { return c.err }

func (c *Checker) created(mc *eventsv1.MatchCreated, ev *eventsv1.MatchEvent) error {
	rs, ok := rules.RuleSetByName(mc.GetRuleSet())
	if !ok {
		return c.fail(1, "unknown rule set %q", mc.GetRuleSet())
	}
	// The match's options of the rule set (docs/rules.md 8.3); unset: the
	// rule set's defaults.
	if mc.ClaimWin != nil {
		rs.ClaimWin = mc.GetClaimWin()
	}
	if mc.AutoClaimWin != nil {
		rs.AutoClaimWin = mc.GetAutoClaimWin()
	}
	g, err := rules.NewGame(rs, 0, mc.GetFen4())
	if err != nil {
		return c.fail(1, "fen4 %q: %v", mc.GetFen4(), err)
	}
	if ev.GetPly() != 0 {
		return c.fail(1, "MatchCreated ply %d", ev.GetPly())
	}
	*c = Checker{started: true, rs: rs, version: 1, toMove: mc.GetToMove()}
	pts, res := g.Points(), g.ResultPoints()
	for i := range c.status {
		c.status[i] = seatStatus(g.Status(rules.Seat(i)))
		c.points[i] = int32(pts[i])
		c.result[i] = int32(res[i])
	}
	if got, want := mc.GetToMove(), gamev1.Seat(g.ToMove()+1); got != want {
		return c.fail(1, "to_move %v, fen4 says %v", got, want)
	}
	if c.startClocks(mc.GetTimeControl(), timecontrol.LagQuotaStart) {
		for i := range c.clock {
			c.clock[i], c.clockKnown[i] = c.tc.Initial, true
		}
	}
	return c.startReplay(mc.GetFen4())
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
	// Every point of a move is accounted for: the capture's value, the
	// check bonus and the points for each king mated (a zombie scores them
	// too; they never count for its result).
	capture := captureValue(c.rs, e.GetCaptured(), c.status)
	if want := capture + e.GetCheckBonusPoints() + int32(c.rs.MatePoints*len(e.GetMatedSeats())); e.GetPointsGained() != want {
		return c.fail(v, "%q gained %d points: capture %d + check bonus %d + %d mates make %d",
			e.GetMove(), e.GetPointsGained(), capture, e.GetCheckBonusPoints(), len(e.GetMatedSeats()), want)
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
	if err := c.charged(v, i, m); err != nil {
		return err
	}
	c.pending = slices.Clone(e.GetEliminations())
	c.partial = false
	c.points[i] += e.GetPointsGained()
	if err := c.checkPoints(v, m.GetPoints()); err != nil {
		return err
	}
	c.toMove = m.GetToMove()
	if c.g != nil {
		return c.replayMove(v, m)
	}
	return nil
}

// captureValue is what capturing cp is worth by the rule book
// (docs/rules.md section 5 and 13.3.3), given the owners' states before
// the move: nothing for a dead piece or a zombie's piece other than its
// king, the king's points for a king, one point for a promoted queen,
// otherwise the piece's value.
func captureValue(rs rules.RuleSet, cp *gamev1.Capture, status [numSeats]gamev1.SeatStatus) int32 {
	if cp == nil || cp.GetDead() {
		return 0
	}
	o, ok := index(cp.GetOwner())
	if !ok || status[o] == out {
		return 0
	}
	k := cp.GetKind()
	switch {
	case k == gamev1.PieceKind_PIECE_KIND_KING:
		return int32(rs.KingCapturePoints)
	case status[o] == zombie && !rs.ZombiePiecesScore:
		return 0
	case k == gamev1.PieceKind_PIECE_KIND_QUEEN && cp.GetPromoted():
		return int32(rs.PromotedQueen)
	case k < gamev1.PieceKind_PIECE_KIND_PAWN || k > gamev1.PieceKind_PIECE_KIND_KING:
		return 0
	}
	return int32(rs.PieceValues[k])
}

func (c *Checker) leave(v uint64, s gamev1.Seat, frozen int32, timeOut bool) error {
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
	// zombie move for it follows at once. Where the rule set passes the
	// turn on (chesscom-ffa), no event names the next seat: the replay
	// knows it.
	if c.rs.ResignPassesTurn && s == c.toMove {
		c.toMove = none
	}
	if c.g != nil {
		return c.replayLeave(v, s, timeOut)
	}
	return nil
}

// claimed checks a WinClaimed event (docs/rules.md 8.3): the rule set
// allows it, exactly two live seats, and a player's claim leads by more
// than a king's worth. GameOver must follow.
func (c *Checker) claimed(v uint64, wc *eventsv1.WinClaimed) error {
	i, ok := index(wc.GetSeat())
	if !ok || c.status[i] != live {
		return c.fail(v, "%v claimed the win but is not live", wc.GetSeat())
	}
	other, n := -1, 0
	for j, st := range c.status {
		if st == live {
			n++
			if j != i {
				other = j
			}
		}
	}
	switch {
	case n != 2:
		return c.fail(v, "win claimed with %d live seats", n)
	case wc.GetAutomatic() && !c.rs.AutoClaimWin, !wc.GetAutomatic() && !c.rs.ClaimWin:
		return c.fail(v, "win claimed (automatic %v) under rule set %s, which does not allow it", wc.GetAutomatic(), c.rs.Name)
	case !wc.GetAutomatic() && c.points[i]-c.points[other] <= int32(c.rs.KingCapturePoints):
		return c.fail(v, "%v claimed the win leading by %d, not more than %d", wc.GetSeat(), c.points[i]-c.points[other], c.rs.KingCapturePoints)
	}
	c.claimer = i + 1
	if c.g == nil {
		return nil
	}
	if wc.GetAutomatic() {
		if c.g.Result().Termination != rules.ClaimedWin {
			return c.fail(v, "replay: automatic claim, the engine's game: %s", c.g.Result().Termination)
		}
		return nil
	}
	if len(c.owed) > 0 {
		return c.fail(v, "%v claimed while the replay expects %s", wc.GetSeat(), c.owed[0])
	}
	eff, err := c.g.ClaimWin(rules.Seat(i))
	if err != nil {
		return c.fail(v, "replay: %v cannot claim: %v", wc.GetSeat(), err)
	}
	c.owed = owedOf(eff)
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
		if len(pe.GetBonusPoints()) > 0 {
			return c.fail(v, "%v's elimination by a move pays bonus points %v", s, pe.GetBonusPoints())
		}
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
		bonus, err := bonusPoints(pe.GetBonusPoints())
		if err != nil {
			return c.fail(v, "bonus_points: %v", err)
		}
		for j, b := range bonus {
			if b != 0 && c.status[j] != live {
				return c.fail(v, "%v's elimination paid %d bonus points to %v (%v)", s, b, gamev1.Seat(j+1), c.status[j])
			}
			c.points[j] += b
		}
		if c.g != nil {
			if err := c.replayEliminated(v, pe); err != nil {
				return err
			}
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
	case term == gamev1.Termination_TERMINATION_CLAIMED_WIN:
		// docs/rules.md 8.3: the claimer gets the last player's bonus for
		// every zombie king and the other live player's king.
		if c.claimer == 0 || nLive != 2 {
			return c.fail(v, "claimed win without a WinClaimed event or with %d live seats", nLive)
		}
		bonus[c.claimer-1] = int32(c.rs.LastPlayerBonus) * (nZombie + 1)
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
		if got[i] != want {
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
	out, err := bonusPoints(ps)
	if err == nil && len(ps) != numSeats {
		err = fmt.Errorf("%d entries, want %d", len(ps), numSeats)
	}
	return out, err
}
