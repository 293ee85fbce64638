package matchcheck

import (
	"fmt"
	"slices"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// The replay: a Checker that has the match from its start rebuilds it with
// pkg/rules (a game whose zombie moves are the ones the events name) and
// holds every event against that independent reconstruction.

// owed is an event the engine's last action still owes the stream: a
// PlayerEliminated for a seat stalemated or mated on its turn (with the
// points the elimination paid other seats), or the GameOver.
type owed struct {
	elim  *gamev1.Elimination // nil for GameOver
	bonus [numSeats]int32
}

// startReplay starts the replay from the position of version 1.
func (c *Checker) startReplay(fen4 string) error {
	g, err := rules.NewGameGivenZombieMoves(c.rs, fen4)
	if err != nil {
		return c.fail(c.version, "replay: start position %q: %v", fen4, err)
	}
	c.g, c.owed = g, nil
	return c.agree(c.version)
}

// Replaying reports whether the checker rebuilds the match with the rules
// engine: it saw the match from version 1 (MatchCreated, a snapshot at
// version 1, or Start) and no later snapshot skipped events.
func (c *Checker) Replaying() bool { return c.g != nil }

// replayMove plays the move of m in the replayed game and compares what
// the engine says it did with what the event says.
func (c *Checker) replayMove(v uint64, m *eventsv1.MoveApplied) error {
	if len(c.owed) > 0 {
		return c.fail(v, "MoveApplied while the replay expects %s", c.owed[0])
	}
	e := m.GetEffects()
	s := rules.Seat(e.GetSeat() - 1)
	var eff rules.Effects
	var err error
	if c.g.Status(s) == rules.Zombie {
		_, eff, err = c.g.PlayZombie(s, e.GetMove())
	} else {
		_, eff, err = c.g.PlayText(s, e.GetMove())
	}
	if err != nil {
		return c.fail(v, "replay: %v's move %q is not legal in the replayed position (%s): %v", e.GetSeat(), e.GetMove(), c.g.FEN4(), err)
	}
	// proto.Equal first: cmp.Diff is the costly part of a follower's
	// work per move, and only worth it for the message.
	if want := moveEffects(&eff.Moves[0], c.rs); !proto.Equal(want, e) {
		return c.fail(v, "replay: effects of %q differ from the engine's (-engine +event):\n%s", e.GetMove(), cmp.Diff(want, e, protocmp.Transform()))
	}
	next := gamev1.Seat_SEAT_UNSPECIFIED
	if !c.g.Over() {
		next = gamev1.Seat(c.g.ToMove() + 1)
	}
	if m.GetToMove() != next {
		return c.fail(v, "replay: to_move %v after %q, the engine has %v to move", m.GetToMove(), e.GetMove(), next)
	}
	c.owed = owedOf(eff)
	return nil
}

// replayLeave applies a resignation or time loss to the replayed game.
func (c *Checker) replayLeave(v uint64, s gamev1.Seat, timeOut bool) error {
	if len(c.owed) > 0 {
		return c.fail(v, "%v left while the replay expects %s", s, c.owed[0])
	}
	leave := c.g.Resign
	if timeOut {
		leave = c.g.TimeOut
	}
	eff, err := leave(rules.Seat(s - 1))
	if err != nil {
		return c.fail(v, "replay: %v cannot leave: %v", s, err)
	}
	c.owed = owedOf(eff)
	return nil
}

// replayEliminated checks an elimination no move announced against the
// next one the engine owes.
func (c *Checker) replayEliminated(v uint64, pe *eventsv1.PlayerEliminated) error {
	if len(c.owed) == 0 || c.owed[0].elim == nil {
		return c.fail(v, "replay: %v eliminated (%v), the engine expects %s", pe.GetElimination().GetSeat(), pe.GetElimination().GetReason(), c.owedString())
	}
	o := c.owed[0]
	if !proto.Equal(o.elim, pe.GetElimination()) {
		return c.fail(v, "replay: elimination %v, the engine's is %v", pe.GetElimination(), o.elim)
	}
	got, err := bonusPoints(pe.GetBonusPoints())
	if err != nil {
		return c.fail(v, "bonus_points: %v", err)
	}
	if got != o.bonus {
		return c.fail(v, "replay: %v's elimination paid bonus points %v, the engine pays %v", pe.GetElimination().GetSeat(), got, o.bonus)
	}
	c.owed = c.owed[1:]
	return nil
}

// replayGameOver compares the result with the engine's.
func (c *Checker) replayGameOver(v uint64, r *gamev1.Result) error {
	if len(c.owed) == 0 || c.owed[0].elim != nil {
		return c.fail(v, "replay: GameOver, the engine expects %s", c.owedString())
	}
	c.owed = c.owed[1:]
	if want := result(c.g); !proto.Equal(want, r) {
		return c.fail(v, "replay: result differs from the engine's (-engine +event):\n%s", cmp.Diff(want, r, protocmp.Transform()))
	}
	return nil
}

// agree compares the tracked state with the replayed game once the engine
// owes no event and no announced elimination is pending: statuses, points
// and result points, the ply and the seat to move.
func (c *Checker) agree(v uint64) error {
	if c.g == nil || len(c.owed) > 0 || len(c.pending) > 0 || c.ended {
		return nil
	}
	pts, res := c.g.Points(), c.g.ResultPoints()
	for i := range numSeats {
		st := seatStatus(c.g.Status(rules.Seat(i)))
		if c.status[i] != st {
			return c.fail(v, "replay: %v is %v, the engine has %v", gamev1.Seat(i+1), c.status[i], st)
		}
		if c.points[i] != int32(pts[i]) {
			return c.fail(v, "replay: points %v, the engine has %v", c.points, pts)
		}
		if st != live && c.result[i] != int32(res[i]) {
			return c.fail(v, "replay: %v's result points %d, the engine has %d", gamev1.Seat(i+1), c.result[i], res[i])
		}
	}
	if int(c.ply) != c.g.Ply() {
		return c.fail(v, "replay: ply %d, the engine has played %d", c.ply, c.g.Ply())
	}
	next := gamev1.Seat(c.g.ToMove() + 1)
	if c.toMove != none && c.toMove != next {
		return c.fail(v, "replay: %v named to move, the engine has %v", c.toMove, next)
	}
	// The engine knows the seat to move after an elimination, which no
	// event names.
	c.toMove = next
	return nil
}

// agreeSnapshot compares a snapshot at the checker's version with the
// replayed game: position, ply, seat to move, statuses and points.
func (c *Checker) agreeSnapshot(m *matchv1.Match) error {
	v := m.GetVersion()
	if got, want := m.GetFen4(), c.g.FEN4(); got != want {
		return c.fail(v, "replay: snapshot fen4 %q, the engine has %q", got, want)
	}
	if int(m.GetPly()) != c.g.Ply() {
		return c.fail(v, "replay: snapshot ply %d, the engine has played %d", m.GetPly(), c.g.Ply())
	}
	next := gamev1.Seat_SEAT_UNSPECIFIED
	if !c.g.Over() {
		next = gamev1.Seat(c.g.ToMove() + 1)
	}
	if m.GetToMove() != next {
		return c.fail(v, "replay: snapshot names %v to move, the engine has %v", m.GetToMove(), next)
	}
	pts, res := c.g.Points(), c.g.ResultPoints()
	if c.g.Over() {
		res = c.g.Result().Points
	}
	for _, st := range m.GetSeats() {
		i, ok := index(st.GetSeat())
		if !ok {
			return c.fail(v, "snapshot seat %v", st.GetSeat())
		}
		if want := seatStatus(c.g.Status(rules.Seat(i))); st.GetStatus() != want {
			return c.fail(v, "replay: snapshot has %v %v, the engine has %v", st.GetSeat(), st.GetStatus(), want)
		}
		if st.GetPoints() != int32(pts[i]) && !c.g.Over() {
			return c.fail(v, "replay: snapshot gives %v %d points, the engine %d", st.GetSeat(), st.GetPoints(), pts[i])
		}
		if st.GetResultPoints() != int32(res[i]) {
			return c.fail(v, "replay: snapshot gives %v %d result points, the engine %d", st.GetSeat(), st.GetResultPoints(), res[i])
		}
	}
	return nil
}

// LegalMoves checks the legal moves the server offered with the item at
// the checker's current version to a caller holding seat (UNSPECIFIED when
// the caller's seat is unknown or it is a spectator): moves are offered
// only when a live seat is to move, only to the caller holding it, and
// (when replaying) they are exactly that seat's legal moves in the
// engine's long algebraic form. An empty list is always accepted: the
// server leaves it out when the match has moved on since the item.
func (c *Checker) LegalMoves(seat gamev1.Seat, moves []string) error {
	if c.err != nil || len(moves) == 0 {
		return c.err
	}
	v := c.version
	switch {
	case c.ended:
		return c.fail(v, "legal moves offered after the match ended")
	case len(c.owed) > 0 || len(c.pending) > 0:
		return c.fail(v, "legal moves offered in the middle of a step (the replay expects %s)", c.owedString())
	case c.toMove == none:
		return nil // unknown without the replay
	}
	i, _ := index(c.toMove)
	if c.status[i] != live {
		return c.fail(v, "legal moves offered while %v (%v) is to move", c.toMove, c.status[i])
	}
	if seat != none && seat != c.toMove {
		return c.fail(v, "legal moves offered to %v while %v is to move", seat, c.toMove)
	}
	if c.g == nil {
		return nil
	}
	var want []string
	for _, m := range c.g.LegalMoves(rules.Seat(i)) {
		want = append(want, c.g.MoveText(m))
	}
	got := slices.Clone(moves)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return c.fail(v, "legal moves of %v %v, the engine's are %v", c.toMove, got, want)
	}
	return nil
}

// Export checks a PGN4 export of the match (ExportGame) taken after the
// match ended: it re-imports with pkg/rules to the same game as the
// replay: rule set, start, every action (moves with their marks, zombie
// moves, resignations, time losses), final position and result.
func (c *Checker) Export(pgn4 string) error {
	if c.err != nil {
		return c.err
	}
	v := c.version
	if c.g == nil || !c.ended {
		return c.fail(v, "Export needs the replay of a finished match")
	}
	rec, err := rules.ParsePGN4(pgn4, nil)
	if err != nil {
		return c.fail(v, "export does not re-import: %v", err)
	}
	g := rec.Game
	if g.Rules().Name != c.rs.Name || startFEN4(g) != startFEN4(c.g) {
		return c.fail(v, "export re-imports as %s from %q, the match is %s from %q", g.Rules().Name, startFEN4(g), c.rs.Name, startFEN4(c.g))
	}
	got, want := g.History(), c.g.History()
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || got[i].Kind != want[i].Kind || got[i].Seat != want[i].Seat ||
			got[i].Move != want[i].Move || got[i].Zombie != want[i].Zombie || got[i].Text != want[i].Text || got[i].Mated != want[i].Mated {
			return c.fail(v, "export: action %d of %d is %s, the match's (of %d) is %s", i+1, len(got), action(got, i), len(want), action(want, i))
		}
	}
	if g.FEN4() != c.g.FEN4() {
		return c.fail(v, "export ends in %q, the match in %q", g.FEN4(), c.g.FEN4())
	}
	if c.g.Result().Termination != rules.Aborted {
		if d := cmp.Diff(result(c.g), result(g), protocmp.Transform()); d != "" {
			return c.fail(v, "export's result differs (-match +export):\n%s", d)
		}
	}
	return nil
}

// startFEN4 is g's start position in FEN4, the standard one spelled out.
func startFEN4(g *rules.Game) string {
	if s := g.StartFEN4(); s != "" {
		return s
	}
	return rules.NewPosition(g.Rules()).FEN4()
}

func action(as []rules.Action, i int) string {
	if i >= len(as) {
		return "none"
	}
	a := as[i]
	return fmt.Sprintf("{%d %s %q zombie=%v}", a.Kind, a.Seat, a.Text, a.Zombie)
}

func (c *Checker) owedString() string {
	if len(c.owed) == 0 {
		return "a move"
	}
	return c.owed[0].String()
}

func (o owed) String() string {
	if o.elim == nil {
		return "GameOver"
	}
	return fmt.Sprintf("PlayerEliminated of %v (%v)", o.elim.GetSeat(), o.elim.GetReason())
}

// owedOf lists the events the stream owes after one engine action besides
// the action's own event and the eliminations its move announced.
func owedOf(eff rules.Effects) []owed {
	var out []owed
	for _, ev := range eff.Events {
		switch ev.Kind {
		case rules.EventStalemated:
			el := &gamev1.Elimination{Seat: gamev1.Seat(ev.Seat + 1), Reason: gamev1.ExitReason_EXIT_REASON_STALEMATED}
			if ev.Points != 0 {
				el.AwardedTo, el.AwardedPoints = el.Seat, int32(ev.Points)
			}
			out = append(out, owed{elim: el})
		case rules.EventMatedOnTurn:
			out = append(out, owed{elim: &gamev1.Elimination{Seat: gamev1.Seat(ev.Seat + 1), Reason: gamev1.ExitReason_EXIT_REASON_MATED}})
		case rules.EventBonus:
			// A bonus outside the end of the game is paid by the stalemate
			// of a zombie king just before it.
			if ev.Reason == rules.NotOver && len(out) > 0 && out[len(out)-1].elim != nil {
				out[len(out)-1].bonus[ev.Seat] += int32(ev.Points)
			}
		case rules.EventGameOver:
			if ev.Reason != rules.Aborted {
				out = append(out, owed{})
			}
		}
	}
	return out
}

// moveEffects is what MoveEffects must say about an applied move, written
// from the proto's comments (not from the server's code).
func moveEffects(m *rules.AppliedMove, rs rules.RuleSet) *gamev1.MoveEffects {
	e := &gamev1.MoveEffects{
		Move:             m.Text,
		Seat:             gamev1.Seat(m.Seat + 1),
		From:             square(m.Move.From()),
		To:               square(m.Move.To()),
		Piece:            gamev1.PieceKind(m.Move.Piece()),
		PointsGained:     int32(m.Points),
		CheckBonusPoints: int32(m.CheckBonus),
		IsZombieMove:     m.Zombie,
	}
	for _, s := range m.Checks {
		if !slices.Contains(m.Mated, s) {
			e.CheckedSeats = append(e.CheckedSeats, gamev1.Seat(s+1))
		}
	}
	for _, s := range m.Mated {
		e.MatedSeats = append(e.MatedSeats, gamev1.Seat(s+1))
	}
	if m.Captured != rules.NoPiece {
		e.Captured = &gamev1.Capture{Kind: gamev1.PieceKind(m.Captured), Owner: gamev1.Seat(m.CapturedSeat + 1),
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
		e.KingCapturedSeat = gamev1.Seat(m.CapturedSeat + 1)
	}
	for _, s := range m.Eliminated {
		el := &gamev1.Elimination{Seat: gamev1.Seat(s + 1), Reason: gamev1.ExitReason_EXIT_REASON_KING_CAPTURED,
			AwardedTo: gamev1.Seat(m.Seat + 1), AwardedPoints: int32(rs.KingCapturePoints)}
		if slices.Contains(m.Mated, s) {
			el.Reason, el.AwardedPoints = gamev1.ExitReason_EXIT_REASON_MATED, int32(rs.MatePoints)
		}
		if m.Zombie {
			el.AwardedTo, el.AwardedPoints = none, 0
		}
		e.Eliminations = append(e.Eliminations, el)
	}
	return e
}

func square(q rules.Square) *gamev1.Square {
	return &gamev1.Square{Name: q.String(), File: uint32(q.File() + 1), Rank: uint32(q.Rank() + 1)}
}

// result is the wire result the engine's finished game must have: LAST_PLAYER_STANDING
// when a zombie is left beside the winner, ALL_OPPONENTS_OUT when the other
// three are out (proto comments of Termination).
func result(g *rules.Game) *gamev1.Result {
	r := g.Result()
	out := &gamev1.Result{}
	for s, p := range r.Points {
		out.Points = append(out.Points, &gamev1.SeatPoints{Seat: gamev1.Seat(s + 1), Points: int32(p)})
	}
	zombies := false
	for s := range rules.NumSeats {
		zombies = zombies || g.Status(rules.Seat(s)) == rules.Zombie
	}
	switch r.Termination {
	case rules.LastPlayerStanding:
		out.Termination = gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT
		if zombies {
			out.Termination = gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING
		}
	case rules.NoLivePlayers:
		out.Termination = gamev1.Termination_TERMINATION_NO_LIVE_PLAYER
	case rules.NoProgress:
		out.Termination = gamev1.Termination_TERMINATION_FIFTY_MOVE
	case rules.Repetition:
		out.Termination = gamev1.Termination_TERMINATION_THREEFOLD_REPETITION
	case rules.BareKings:
		out.Termination = gamev1.Termination_TERMINATION_INSUFFICIENT_MATERIAL
	case rules.ClaimedWin:
		out.Termination = gamev1.Termination_TERMINATION_CLAIMED_WIN
	}
	for _, s := range r.Ranking {
		out.Ranking = append(out.Ranking, gamev1.Seat(s+1))
	}
	return out
}

func seatStatus(s rules.SeatStatus) gamev1.SeatStatus {
	switch s {
	case rules.Live:
		return live
	case rules.Zombie:
		return zombie
	}
	return out
}

// bonusPoints reads PlayerEliminated.bonus_points: at most one entry per
// seat (seatPoints adds that every seat has one).
func bonusPoints(ps []*gamev1.SeatPoints) ([numSeats]int32, error) {
	var out [numSeats]int32
	var seen [numSeats]bool
	for _, p := range ps {
		i, ok := index(p.GetSeat())
		if !ok || seen[i] {
			return out, fmt.Errorf("seat %v invalid or repeated", p.GetSeat())
		}
		out[i], seen[i] = p.GetPoints(), true
	}
	return out, nil
}
