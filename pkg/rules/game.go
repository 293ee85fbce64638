package rules

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Sentinel errors of the game API; callers test them with errors.Is.
var (
	ErrGameOver     = errors.New("game is over")
	ErrNotYourTurn  = errors.New("not your turn")
	ErrIllegalMove  = errors.New("illegal move")
	ErrBadMoveText  = errors.New("bad move text")
	ErrSeatNotLive  = errors.New("seat is not a live player")
	ErrBadSeat      = errors.New("no such seat")
	ErrBadRecord    = errors.New("bad game record")
	ErrBadEncoding  = errors.New("bad binary game encoding")
	ErrUnknownRules = errors.New("unknown rule set")
)

// Termination says how a game ended.
type Termination uint8

const (
	// NotOver: the game is still running.
	NotOver Termination = iota
	// LastPlayerStanding: exactly one live player remained.
	LastPlayerStanding
	// NoLivePlayers: every player resigned, ran out of time or left.
	NoLivePlayers
	// NoProgress: the ply limit without a capture or pawn move was reached.
	NoProgress
	// Repetition: the same position occurred the set number of times.
	Repetition
	// BareKings: no live player had anything but a bare king.
	BareKings
	// Aborted: an operator aborted the game; it has no result.
	Aborted
)

var terminationNames = [...]string{"not over", "last player standing", "no live players", "no progress", "repetition", "bare kings", "aborted"}

// String returns a short English description.
func (t Termination) String() string {
	if int(t) < len(terminationNames) {
		return terminationNames[t]
	}
	return "unknown"
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventResigned: Seat resigned; its result points are frozen.
	EventResigned EventKind = iota + 1
	// EventTimedOut: Seat ran out of time; treated like a resignation.
	EventTimedOut
	// EventStalemated: Seat had no legal move on its turn and was not in
	// check; Points is what it got (0 for a king-only zombie, whose
	// stalemate pays the live players, see EventDrawPoints).
	EventStalemated
	// EventMatedOnTurn: Seat was in check with no legal move when its turn
	// came (only from a set-up position), or right after it resigned or
	// ran out of time (RuleSet.LeaveMate); nobody scores.
	EventMatedOnTurn
	// EventBonus: Seat got Points at the end of the game or from a
	// zombie-king stalemate (Reason says which).
	EventBonus
	// EventGameOver: the game ended with Reason.
	EventGameOver
)

// Event is something that happened besides a move: a resignation, a
// stalemate, end-of-game points, the end of the game.
type Event struct {
	Kind   EventKind
	Seat   Seat
	Points int
	// Reason is the termination for EventGameOver and for end-of-game
	// bonuses; NotOver for the zombie-king stalemate bonus.
	Reason Termination
	// Ply is the number of moves applied when the event happened.
	Ply int
}

// AppliedMove describes one applied move and all its consequences.
type AppliedMove struct {
	Seat Seat
	Move Move
	// Text is the long algebraic text with check and mate marks, as it is
	// written in PGN4: "+" per king the move checks, "#" per player mated.
	Text string
	// Zombie is set for a random move the server played for a zombie.
	Zombie bool
	// Captured is the captured piece (NoPiece for none), its owner, whether
	// it was a promoted queen, and the points the capture gave.
	Captured         PieceKind
	CapturedSeat     Seat
	CapturedPromoted bool
	CapturePoints    int
	// CapturedDead is set when the captured piece was dead before the move
	// (docs/rules.md sections 6.5 and 13.3.3): its owner was out (every
	// piece, the king included), or it was a king-only zombie's piece
	// other than the king. A zombie's pieces that still move are not dead,
	// even where they score 0 (section 5).
	CapturedDead bool
	// KingCaptured is set when the move captured a king (CapturedSeat is
	// then out of the game).
	KingCaptured bool
	// Checks are the seats whose king the mover's pieces attack after the
	// move; CheckBonus the points for checking several kings at once.
	Checks     []Seat
	CheckBonus int
	// MarkedChecks are the seats the text's "+" marks stand for: Checks,
	// or under RuleSet.SiteMarks the kings this move put in check.
	MarkedChecks []Seat
	// Mated are the seats mated by this move (MatePoints each to the mover).
	Mated []Seat
	// Eliminated are the seats that left the game through this move
	// (mated or king captured).
	Eliminated []Seat
	// Promotion is set when a pawn became a queen.
	Promotion bool
	// Points is everything the mover gained from this move.
	Points int
	// Ply is the number of moves applied before this one.
	Ply int
}

// Effects is what one call of Play, Resign or TimeOut caused: the player's
// move (if any) and then every zombie move the server played at once, in
// order, plus events. GameOver is set when the game has ended.
type Effects struct {
	Moves    []AppliedMove
	Events   []Event
	GameOver bool
}

// Result is the outcome of a finished game.
type Result struct {
	// Points are the result points per seat (docs/rules.md section 9).
	Points [NumSeats]int
	// Ranking lists the seats from first to last.
	Ranking     [NumSeats]Seat
	Termination Termination
}

// ActionKind is the kind of a recorded action.
type ActionKind uint8

const (
	// ActionMove: Seat played Move.
	ActionMove ActionKind = iota + 1
	// ActionResign: Seat resigned.
	ActionResign
	// ActionTimeOut: Seat ran out of time.
	ActionTimeOut
)

// Action is one entry of a game's history: a move (by a player or for a
// zombie), a resignation or a time loss.
type Action struct {
	Kind   ActionKind
	Seat   Seat
	Move   Move
	Zombie bool
	// Text is the move's PGN4 text with check and mate marks.
	Text string
	// KeepTurn marks a resignation or time loss on the seat's own turn
	// after which its zombie moves in that same turn, taken from a record
	// (the largest site writes it "Ke2-f1T"); it happens only in games
	// whose zombie moves come from a record.
	KeepTurn bool
	// Mated marks a resignation or time loss after which the seat's king
	// was in check with no legal move, so that it was out at once
	// (RuleSet.LeaveMate); PGN4 writes it "R#" or "T#".
	Mated bool
	// index is the move's place in the sorted list of legal moves, which
	// is what the binary encoding stores.
	index int
}

// Game is a whole game: rule set, start position, seed, history, points
// and seat statuses. A Game is not safe for concurrent use.
type Game struct {
	rules    RuleSet
	seed     uint64
	startFEN string // canonical; "" for the standard start
	pos      *Position
	pcg      *rand.PCG
	rng      *rand.Rand
	history  []Action
	reps     map[uint64]int
	ply      int
	// quiet counts the moves of live players since the last pawn move or
	// scoring capture (RuleSet.NoProgressLiveMoves).
	quiet int
	// leaver is the seat whose resignation or time loss is being settled
	// (noLeaver otherwise): RuleSet.LeaveInsufficientDraw looks at it.
	leaver Seat
	over   bool
	term   Termination
	// manualZombies: zombie moves are supplied by the caller (record
	// replay) instead of being drawn from the seed.
	manualZombies bool
	// moves is scratch for move generation, on the heap (see
	// Position.hasLegalMove). Whoever fills it is done with it before
	// calling anything that may fill it again (applyMove, settle).
	moves MoveList
}

// NewGame starts a game under rule set rs. startFEN4 "" means the standard
// starting position. seed drives the random moves of zombie armies, so a
// game replays exactly from its seed and history.
func NewGame(rs RuleSet, seed uint64, startFEN4 string) (*Game, error) {
	g := &Game{rules: rs, seed: seed, reps: make(map[uint64]int), leaver: noLeaver}
	g.pcg = rand.NewPCG(seed, 0x4b696e67646f6d73)
	g.rng = rand.New(g.pcg)
	if startFEN4 == "" {
		g.pos = NewPosition(rs)
	} else {
		p, err := ParseFEN4(rs, startFEN4)
		if err != nil {
			return nil, err
		}
		g.pos = p
		g.startFEN = p.FEN4()
	}
	g.pos.kingCaptureKills = true
	g.reps[g.repKey()]++
	var eff Effects
	g.settle(&eff)
	return g, nil
}

// Clone returns an independent copy of the game, random state included:
// both copies play the same zombie moves for the same actions.
func (g *Game) Clone() *Game {
	c := *g
	c.pos = g.pos.Clone()
	pcg := *g.pcg
	c.pcg = &pcg
	c.rng = rand.New(c.pcg)
	c.history = slices.Clone(g.history)
	c.reps = make(map[uint64]int, len(g.reps))
	for k, v := range g.reps {
		c.reps[k] = v
	}
	return &c
}

// Rules returns the game's rule set.
func (g *Game) Rules() RuleSet { return g.rules }

// Seed returns the seed of the zombies' random moves.
func (g *Game) Seed() uint64 { return g.seed }

// StartFEN4 returns the start position, "" for the standard one.
func (g *Game) StartFEN4() string { return g.startFEN }

// ToMove returns the seat whose turn it is.
func (g *Game) ToMove() Seat { return g.pos.toMove }

// Ply returns the number of moves applied so far, zombie moves included.
func (g *Game) Ply() int { return g.ply }

// Over reports whether the game has ended.
func (g *Game) Over() bool { return g.over }

// History returns a copy of the recorded actions.
func (g *Game) History() []Action { return slices.Clone(g.history) }

// Position returns a copy of the current position.
func (g *Game) Position() *Position { return g.pos.Clone() }

// Status returns the status of seat s.
func (g *Game) Status(s Seat) SeatStatus { return g.pos.status[s&3] }

// Points returns the points each seat has collected, as shown on the board
// (a zombie's points keep changing but do not count for its result).
func (g *Game) Points() [NumSeats]int { return g.pos.points }

// ResultPoints returns the points that count for the result: frozen
// points for a player who resigned or ran out of time, otherwise points.
func (g *Game) ResultPoints() [NumSeats]int {
	r := g.pos.points
	for s := range NumSeats {
		if g.pos.resigned[s] {
			r[s] = g.pos.frozen[s]
		}
	}
	return r
}

// Result returns the result points, the ranking (ties: the seat later in
// turn order ranks higher) and the termination. It is meaningful once Over
// reports true; before that it ranks the current result points.
func (g *Game) Result() Result {
	r := Result{Points: g.ResultPoints(), Termination: g.term}
	r.Ranking = [NumSeats]Seat{Red, Blue, Yellow, Green}
	later := g.rules.TieBreakLaterSeatFirst
	slices.SortStableFunc(r.Ranking[:], func(a, b Seat) int {
		if pa, pb := r.Points[a], r.Points[b]; pa != pb {
			return pb - pa
		}
		if later {
			return int(b) - int(a)
		}
		return int(a) - int(b)
	})
	return r
}

// FEN4 returns the current position in FEN4.
func (g *Game) FEN4() string { return g.pos.FEN4() }

// SquareInfo describes one occupied square for structured display.
type SquareInfo struct {
	Square   Square
	Name     string
	Seat     Seat
	Kind     PieceKind
	Promoted bool
	// Dead: the piece belongs to a player out of the game (or is a
	// non-king piece of a king-only zombie); it never moves or attacks.
	Dead bool
	// Zombie: the piece belongs to a zombie and still moves.
	Zombie bool
}

// Squares lists the occupied squares from a1 upwards, row by row.
func (g *Game) Squares() []SquareInfo {
	var out []SquareInfo
	for i := range NumSquares {
		q := dense.fromDense[i]
		pc := g.pos.board[q]
		if pc == empty {
			continue
		}
		s, k := pieceSeat(pc), pieceKind(pc)
		active := g.pos.pieceActive(s, k)
		out = append(out, SquareInfo{
			Square: q, Name: q.String(), Seat: s, Kind: k, Promoted: pc&promotedBit != 0,
			Dead: !active, Zombie: active && g.pos.status[s] == Zombie,
		})
	}
	return out
}

// LegalMoves returns the legal moves of seat s, empty unless the game is
// running, it is s's turn and s is a live player.
func (g *Game) LegalMoves(s Seat) []Move {
	if g.over || s != g.pos.toMove || g.pos.status[s] != Live {
		return nil
	}
	return g.legal(s)
}

func (g *Game) legal(s Seat) []Move {
	g.moves.N = 0
	g.pos.LegalMoves(s, &g.moves)
	out := slices.Clone(g.moves.Moves[:g.moves.N])
	slices.Sort(out)
	return out
}

// MoveText returns the long algebraic text of m under the game's rule set
// (promotion letter), without check marks.
func (g *Game) MoveText(m Move) string { return m.text(g.rules.PromotionLetter) }

// Play applies move m for seat s, then every zombie move that follows at
// once, and returns all effects. It fails with ErrGameOver,
// ErrNotYourTurn, ErrSeatNotLive or ErrIllegalMove and then changes
// nothing.
func (g *Game) Play(s Seat, m Move) (Effects, error) {
	zombie, err := g.mayMove(s)
	if err != nil {
		return Effects{}, err
	}
	lm, idx, ok := g.findLegal(s, m)
	if !ok {
		return Effects{}, fmt.Errorf("%w: %s", ErrIllegalMove, g.MoveText(m))
	}
	var eff Effects
	g.applyMove(s, lm, idx, zombie, &eff)
	g.settle(&eff)
	return eff, nil
}

// PlayText reads text as ParseMove does and plays it for seat s, like
// Play; it returns the move played. It generates the legal moves once
// where ParseMove and Play generate them twice (a server applying moves
// sent as text does this for every move).
func (g *Game) PlayText(s Seat, text string) (Move, Effects, error) {
	zombie, err := g.mayMove(s)
	if err != nil {
		return NoMove, Effects{}, err
	}
	mt, err := parseMoveText(text)
	if err != nil {
		return NoMove, Effects{}, err
	}
	g.moves.N = 0
	g.pos.LegalMoves(s, &g.moves)
	legal := g.moves.Moves[:g.moves.N]
	lm := mt.find(legal)
	if lm == NoMove {
		return NoMove, Effects{}, fmt.Errorf("%w: %q for %s", ErrIllegalMove, text, s)
	}
	idx := 0
	for _, c := range legal {
		if c < lm {
			idx++
		}
	}
	var eff Effects
	g.applyMove(s, lm, idx, zombie, &eff)
	g.settle(&eff)
	return lm, eff, nil
}

// mayMove reports why seat s may not move now, and whether it moves as a
// zombie (record replay with manual zombie moves).
func (g *Game) mayMove(s Seat) (zombie bool, err error) {
	if s >= NumSeats {
		return false, ErrBadSeat
	}
	if g.over {
		return false, ErrGameOver
	}
	if s != g.pos.toMove {
		return false, fmt.Errorf("%w: %s to move", ErrNotYourTurn, g.pos.toMove)
	}
	zombie = g.pos.status[s] == Zombie
	if g.pos.status[s] != Live && !(zombie && g.manualZombies) {
		return false, ErrSeatNotLive
	}
	return zombie, nil
}

// findLegal finds the legal move of s matching m's squares and promotion,
// and its index in the sorted list of legal moves.
func (g *Game) findLegal(s Seat, m Move) (Move, int, bool) {
	g.moves.N = 0
	g.pos.LegalMoves(s, &g.moves)
	found := NoMove
	for _, c := range g.moves.Moves[:g.moves.N] {
		if c.From() == m.From() && c.To() == m.To() && c.Promotion() == m.Promotion() {
			found = c
			break
		}
	}
	if found == NoMove {
		return NoMove, 0, false
	}
	idx := 0
	for _, c := range g.moves.Moves[:g.moves.N] {
		if c < found {
			idx++
		}
	}
	return found, idx, true
}

// Resign makes live seat s resign, at any time: its result points are
// frozen and its army becomes a zombie. Zombie moves follow at once if it
// is now a zombie's turn.
func (g *Game) Resign(s Seat) (Effects, error) { return g.leave(s, ActionResign, false) }

// TimeOut records that seat s ran out of time; it is treated like a
// resignation.
func (g *Game) TimeOut(s Seat) (Effects, error) { return g.leave(s, ActionTimeOut, false) }

// leave makes s resign or run out of time. keepTurn (record replay only,
// s to move) keeps the turn with s, whose zombie move follows from the
// record, even when the rule set passes the turn on resignation.
func (g *Game) leave(s Seat, kind ActionKind, keepTurn bool) (Effects, error) {
	if s >= NumSeats {
		return Effects{}, ErrBadSeat
	}
	if g.over {
		return Effects{}, ErrGameOver
	}
	if g.pos.status[s] != Live {
		return Effects{}, ErrSeatNotLive
	}
	var eff Effects
	p := g.pos
	p.frozen[s], p.resigned[s] = p.points[s], true
	g.setStatus(s, Zombie)
	keepTurn = keepTurn && g.manualZombies && p.toMove == s
	if g.rules.ResignPassesTurn && p.toMove == s && !keepTurn {
		p.setToMove(p.nextSeat(s))
	}
	ek := EventResigned
	if kind == ActionTimeOut {
		ek = EventTimedOut
	}
	eff.Events = append(eff.Events, Event{Kind: ek, Seat: s, Ply: g.ply})
	// The army that stopped moving may leave the king in check with no
	// way out: mated at once, by nobody (RuleSet.LeaveMate, "R#").
	mated := false
	if g.rules.LeaveMate && !keepTurn && p.InCheck(s) && !p.hasLegalMove(s, &g.moves) {
		g.setStatus(s, Out)
		mated = true
		eff.Events = append(eff.Events, Event{Kind: EventMatedOnTurn, Seat: s, Ply: g.ply})
		if p.toMove == s {
			p.setToMove(p.nextSeat(s))
		}
	}
	g.history = append(g.history, Action{Kind: kind, Seat: s, KeepTurn: keepTurn, Mated: mated})
	g.leaver = s
	g.settle(&eff)
	return eff, nil
}

// noLeaver is Game.leaver when no leave is being settled.
const noLeaver Seat = NumSeats

// Abort ends the game without a result (an operator's decision).
func (g *Game) Abort() {
	if !g.over {
		g.over, g.term = true, Aborted
	}
}

func (g *Game) setStatus(s Seat, st SeatStatus) {
	p := g.pos
	p.status[s] = st
	p.refreshAttack()
}

// repKey identifies a position for repetition: placement, seat to move,
// castling rights, en passant squares (all in the position hash), the
// seats' statuses and, under RuleSet.RepetitionCountsPoints, their points.
func (g *Game) repKey() uint64 {
	h := g.pos.hash
	for s := range NumSeats {
		h ^= zobrist.status[s][g.pos.status[s]]
		if g.rules.RepetitionCountsPoints {
			h ^= pointsKey(Seat(s), g.pos.points[s])
		}
	}
	return h
}

// pointsKey is the repetition-key contribution of seat s having pts board
// points (RuleSet.RepetitionCountsPoints): a splitmix64 mix of both, so
// that different points give unrelated keys.
func pointsKey(s Seat, pts int) uint64 {
	v := uint64(s)<<32 ^ uint64(uint32(pts)) ^ 0x5EA7_0000_0000_0000
	v = (v ^ v>>30) * 0xBF58476D1CE4E5B9
	v = (v ^ v>>27) * 0x94D049BB133111EB
	return v ^ v>>31
}

// applyMove plays legal move m for seat s and judges its consequences:
// capture points, king capture, check bonus, immediate mates.
func (g *Game) applyMove(s Seat, m Move, idx int, zombie bool, eff *Effects) {
	p := g.pos
	rs := &g.rules
	am := AppliedMove{Seat: s, Move: m, Zombie: zombie, Promotion: m.Promotion(), Ply: g.ply}
	capSq := m.To()
	if m.EnPassant() {
		capSq = p.epVictimSquare(s, m.To())
	}
	if pc := p.board[capSq]; capSq != NoSquare && pc != empty {
		owner := pieceSeat(pc)
		am.Captured, am.CapturedSeat, am.CapturedPromoted = pieceKind(pc), owner, pc&promotedBit != 0
		am.CapturePoints = rs.captureValue(pc, p.status[owner])
		am.CapturedDead = !p.pieceActive(owner, pieceKind(pc))
		am.KingCaptured = pieceKind(pc) == King
	}
	// Under SiteMarks, remember who was in check, and who was
	// attacked by the mover, before the move.
	var checkedBefore, moverBefore [NumSeats]bool
	if rs.SiteMarks {
		for o := Seat(0); o < NumSeats; o++ {
			if o != s && p.status[o] != Out && p.king[o] != NoSquare {
				checkedBefore[o] = p.InCheck(o)
				moverBefore[o] = p.attackedBy(int(p.king[o]), s)
			}
		}
	}
	p.Make(m)
	g.ply++
	am.Points += am.CapturePoints
	if am.KingCaptured && p.status[am.CapturedSeat] != Out {
		g.setStatus(am.CapturedSeat, Out)
		am.Eliminated = append(am.Eliminated, am.CapturedSeat)
	}
	// Checks and the multi-check bonus, judged on the position after the
	// move, before anyone is eliminated by it.
	for o := Seat(0); o < NumSeats; o++ {
		if o != s && p.status[o] != Out && p.king[o] != NoSquare && p.attackedBy(int(p.king[o]), s) {
			am.Checks = append(am.Checks, o)
		}
	}
	am.MarkedChecks = am.Checks
	if rs.SiteMarks {
		am.MarkedChecks = nil
		for o := Seat(0); o < NumSeats; o++ {
			if o == s || p.status[o] == Out || p.king[o] == NoSquare {
				continue
			}
			if (p.attackedBy(int(p.king[o]), s) && !moverBefore[o]) || (p.InCheck(o) && !checkedBefore[o]) {
				am.MarkedChecks = append(am.MarkedChecks, o)
			}
		}
	}
	// The bonus counts the checked kings of live players only: checking a
	// zombie's king earns nothing on the largest site.
	n := 0
	for _, o := range am.Checks {
		if p.status[o] == Live {
			n++
		}
	}
	if n >= 2 {
		by := 1 // the moved piece (after promotion) decides the rate
		if pieceKind(p.board[m.To()]) == Queen {
			by = 0
		}
		if n == 2 {
			am.CheckBonus = rs.CheckBonus2[by]
		} else {
			am.CheckBonus = rs.CheckBonus3[by]
		}
		am.Points += am.CheckBonus
	}
	// Immediate mates: every other seat still on the board whose king is
	// attacked and who has no legal move, all judged on the same position.
	for o := Seat(0); o < NumSeats; o++ {
		if o == s || p.status[o] == Out || !p.InCheck(o) {
			continue
		}
		if !p.hasLegalMove(o, &g.moves) {
			am.Mated = append(am.Mated, o)
		}
	}
	var stalemated []Seat
	if !rs.StalemateOnTurn {
		// Immediate stalemate (the variant of the decision in docs/rules.md section 6.3).
		for o := Seat(0); o < NumSeats; o++ {
			if o != s && p.status[o] != Out && !p.InCheck(o) && !p.hasLegalMove(o, &g.moves) {
				stalemated = append(stalemated, o)
			}
		}
	}
	if rs.SiteMarks && rs.MateMarkedAsCheck {
		// A mate given with check is marked "+#" even when the king was
		// in check before.
		for _, o := range am.Mated {
			if slices.Contains(am.Checks, o) && !slices.Contains(am.MarkedChecks, o) {
				am.MarkedChecks = append(slices.Clip(am.MarkedChecks), o)
			}
		}
	}
	for _, o := range am.Mated {
		g.setStatus(o, Out)
		am.Eliminated = append(am.Eliminated, o)
		am.Points += rs.MatePoints
	}
	p.points[s] += am.Points
	switch {
	case m.Piece() == Pawn || am.CapturePoints > 0:
		g.quiet = 0
	case !zombie:
		g.quiet++
	}
	for _, o := range stalemated {
		g.stalemate(o, eff)
	}
	if p.status[p.toMove] == Out {
		p.setToMove(p.nextSeat(p.toMove))
	}
	outMarks := len(am.Mated)
	if rs.SiteMarks {
		outMarks = len(am.Eliminated)
	}
	am.Text = g.moveTextWithMarks(m, len(am.MarkedChecks), outMarks)
	g.history = append(g.history, Action{Kind: ActionMove, Seat: s, Move: m, Zombie: zombie, Text: am.Text, index: idx})
	g.reps[g.repKey()]++
	eff.Moves = append(eff.Moves, am)
}

func (g *Game) moveTextWithMarks(m Move, checks, mates int) string {
	if checks == 0 && mates == 0 {
		return g.MoveText(m)
	}
	return g.MoveText(m) + strings.Repeat("+", checks) + strings.Repeat("#", mates)
}

// settle runs what happens between moves: the end-of-game checks, and for
// the seat whose turn comes, stalemate or mate on turn and zombie moves.
func (g *Game) settle(eff *Effects) {
	p := g.pos
	for !g.over {
		if p.status[p.toMove] == Out {
			p.setToMove(p.nextSeat(p.toMove))
		}
		ended := g.checkEnd(eff)
		g.leaver = noLeaver // only the end judged right after a leave is its
		if ended {
			break
		}
		s := p.toMove
		if !p.hasLegalMove(s, &g.moves) {
			if p.InCheck(s) {
				g.setStatus(s, Out)
				eff.Events = append(eff.Events, Event{Kind: EventMatedOnTurn, Seat: s, Ply: g.ply})
			} else {
				g.stalemate(s, eff)
			}
			p.setToMove(p.nextSeat(s))
			continue
		}
		if p.status[s] != Zombie || g.manualZombies {
			break
		}
		g.moves.N = 0
		p.LegalMoves(s, &g.moves)
		ms := g.moves.Moves[:g.moves.N]
		slices.Sort(ms) // the choice must not depend on piece-list order
		i := g.rng.IntN(len(ms))
		g.applyMove(s, ms[i], i, true, eff)
	}
}

// stalemate puts seat s, not in check and without a legal move, out of the
// game and pays the stalemate points: to s itself, or for a king-only
// zombie to the live players when the rule set says so.
func (g *Game) stalemate(s Seat, eff *Effects) {
	p := g.pos
	rs := &g.rules
	if p.status[s] == Zombie && rs.Zombie == ZombieKingOnly && rs.ZombieKingStalemateDrawPoints != 0 {
		g.setStatus(s, Out)
		eff.Events = append(eff.Events, Event{Kind: EventStalemated, Seat: s, Ply: g.ply})
		bonus := rs.ZombieKingStalemateDrawPoints
		if rs.ZombieKingStalemateSplit {
			live := 0
			for o := Seat(0); o < NumSeats; o++ {
				if p.status[o] == Live {
					live++
				}
			}
			if live > 0 {
				bonus = (2*rs.ZombieKingStalemateDrawPoints + live/2) / live
			}
		}
		for o := Seat(0); o < NumSeats; o++ {
			if p.status[o] == Live {
				p.points[o] += bonus
				eff.Events = append(eff.Events, Event{Kind: EventBonus, Seat: o, Points: bonus, Ply: g.ply})
			}
		}
		return
	}
	p.points[s] += rs.StalematePoints
	g.setStatus(s, Out)
	eff.Events = append(eff.Events, Event{Kind: EventStalemated, Seat: s, Points: rs.StalematePoints, Ply: g.ply})
}

// checkEnd ends the game when at most one live player remains or a draw
// condition holds, awarding the end-of-game points.
func (g *Game) checkEnd(eff *Effects) bool {
	p := g.pos
	rs := &g.rules
	live, zombies := 0, 0
	var last Seat
	for s := Seat(0); s < NumSeats; s++ {
		switch p.status[s] {
		case Live:
			live++
			last = s
		case Zombie:
			zombies++
		}
	}
	term := NotOver
	leaveDraw := false
	switch {
	case live == 0:
		term = NoLivePlayers
	case live == 1 && rs.LeaveInsufficientDraw && g.leaver != noLeaver && p.status[g.leaver] == Zombie && p.count[last] == 1:
		// The last live player has a bare king and cannot mate the
		// player who just left: a draw by insufficient material. Both
		// get the draw's points (the leaver's count for its result); the
		// other zombie kings pay the last player as usual.
		term, leaveDraw = BareKings, true
		if rs.DrawPoints != 0 {
			p.points[g.leaver] += rs.DrawPoints
			p.frozen[g.leaver] += rs.DrawPoints
			eff.Events = append(eff.Events, Event{Kind: EventBonus, Seat: g.leaver, Points: rs.DrawPoints, Reason: term, Ply: g.ply})
		}
		if bonus := rs.DrawPoints + rs.LastPlayerBonus*(zombies-1); bonus != 0 {
			p.points[last] += bonus
			eff.Events = append(eff.Events, Event{Kind: EventBonus, Seat: last, Points: bonus, Reason: term, Ply: g.ply})
		}
	case live == 1:
		term = LastPlayerStanding
		// Every king neither captured nor mated is a zombie's king.
		if bonus := rs.LastPlayerBonus * zombies; bonus != 0 {
			p.points[last] += bonus
			eff.Events = append(eff.Events, Event{Kind: EventBonus, Seat: last, Points: bonus, Reason: term, Ply: g.ply})
		}
	case rs.NoProgressPlies > 0 && p.halfmove >= rs.NoProgressPlies:
		term = NoProgress
	case rs.NoProgressLiveMoves > 0 && g.quiet >= rs.NoProgressLiveMoves && p.status[p.toMove] == Live:
		term = NoProgress
	case rs.RepetitionCount > 0 && g.reps[g.repKey()] >= rs.RepetitionCount:
		term = Repetition
	case rs.BareKingsDraw && g.bareKings():
		term = BareKings
	}
	if term == NotOver {
		return false
	}
	if (term == NoProgress || term == Repetition || term == BareKings) && !leaveDraw {
		pts := rs.DrawPoints
		if rs.DrawSharesZombieKings && live > 0 {
			// Each zombie king's LastPlayerBonus, shared and rounded as
			// in ZombieKingStalemateSplit.
			pts += (rs.LastPlayerBonus*zombies + live/2) / live
		}
		for s := Seat(0); s < NumSeats; s++ {
			if p.status[s] == Live && pts != 0 {
				p.points[s] += pts
				eff.Events = append(eff.Events, Event{Kind: EventBonus, Seat: s, Points: pts, Reason: term, Ply: g.ply})
			}
		}
	}
	g.over, g.term = true, term
	eff.GameOver = true
	eff.Events = append(eff.Events, Event{Kind: EventGameOver, Reason: term, Ply: g.ply})
	return true
}

func (g *Game) bareKings() bool {
	p := g.pos
	for s := Seat(0); s < NumSeats; s++ {
		if p.status[s] != Live {
			continue
		}
		for _, q := range p.list[s][:p.count[s]] {
			if pieceKind(p.board[q]) != King {
				return false
			}
		}
	}
	return true
}
