package rules

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Mismatch is one disagreement between a game record and the engine.
type Mismatch struct {
	// Ply is the number of moves the engine had applied before the token.
	Ply int
	// Token is the record's token ("Qg1xQh14+", "R", ...), empty for a
	// difference found at the end of the game (points, termination).
	Token string
	// Index is the token's place in the move text, counted from 1 (0 at
	// the end of the game).
	Index int
	// Seat is the seat to move when the token was read.
	Seat Seat
	// What says what differs.
	What string
	// Position is the FEN4 of the position before the token (empty at the
	// end of the game), so that a difference can be studied on the board
	// without replaying the record.
	Position string
}

func (m Mismatch) String() string {
	if m.Token == "" {
		return fmt.Sprintf("end of game (ply %d): %s", m.Ply, m.What)
	}
	return fmt.Sprintf("ply %d, token %d %q (%s to move): %s", m.Ply, m.Index, m.Token, m.Seat, m.What)
}

// Report is the outcome of replaying a game record with Replay.
type Report struct {
	// Record holds the tags and the game as far as it replayed.
	Record *Record
	// Points are the engine's result points per seat at the end.
	Points [NumSeats]int
	// Termination is how the engine's game ended (NotOver when the record
	// stops before the engine sees an end).
	Termination Termination
	// RecordedPoints are the points of the record's Result tag, when
	// HasRecordedPoints.
	RecordedPoints    [NumSeats]int
	HasRecordedPoints bool
	// RecordedTermination is the record's Termination tag.
	RecordedTermination string
	// TagEnding is not empty when the record's moves stop before its
	// ending and Replay applied what the Termination tag says happened
	// (a leave or a mating move the site leaves out); it says what. The
	// rest of the game, the points and the ending were then still the
	// engine's, but the record alone did not show them.
	TagEnding string
	// Mismatches lists every disagreement, in order. A move the engine
	// finds illegal ends the replay and is the last entry.
	Mismatches []Mismatch
}

// OK reports whether the record and the engine agree on everything.
func (r *Report) OK() bool { return len(r.Mismatches) == 0 }

// Replay reads a PGN4 record and replays it move by move, checking every
// move and what the record says about it: the move must be legal, its
// check and mate marks ("+" and "#", as the rule set writes them, see
// RuleSet.SiteMarks), its piece letter and its captured piece must be
// what the engine finds, a leave marked "#" ("R#") must be one that mates
// at once (RuleSet.LeaveMate), a lone "S"
// (the site's stalemate note) must be a seat the engine stalemated, and
// resignations and time losses ("R", "T") must come from live players. At
// the end the engine's result points must equal the Result tag and its
// ending must agree with the Termination tag (see docs/rules-engine.md for
// how the site's endings are read).
//
// rs selects the rule set as in ParsePGN4 (nil: from the tags). Replay
// returns an error only for a record it cannot read at all (bad tags,
// unknown rule set or start position); every disagreement is a Mismatch.
func Replay(text string, rs *RuleSet) (*Report, error) {
	rec, toks, err := readPGN4(text, rs)
	if err != nil {
		return nil, err
	}
	rep := &Report{Record: rec}
	rep.RecordedPoints, rep.HasRecordedPoints = recordedPoints(rec)
	rep.RecordedTermination, _ = rec.Tag("Termination")
	end := parseSiteEnd(rep.RecordedTermination)
	g := rec.Game
	var lastEff Effects
	var events []Event
	stopped := false
	for i, tok := range toks {
		seat, ply, before := g.ToMove(), g.Ply(), g.FEN4()
		add := func(what string) {
			rep.Mismatches = append(rep.Mismatches, Mismatch{Ply: ply, Token: tok, Index: i + 1, Seat: seat, What: what, Position: before})
		}
		eff, err := replayToken(g, tok, lastEff)
		events = append(events, eff.Events...)
		if err != nil {
			add(err.Error())
			stopped = true
			break
		}
		for _, what := range eff.differences {
			add(what)
		}
		if eff.marksRecord != eff.marksEngine {
			// The site may leave out the "#" of the mate that ends the
			// game (one record does).
			lastMate := i == len(toks)-1 && end.kind == siteEndCheckmate && g.Over() &&
				strings.HasPrefix(eff.marksEngine, eff.marksRecord) &&
				strings.Trim(eff.marksEngine[len(eff.marksRecord):], "#") == ""
			if !lastMate {
				add(fmt.Sprintf("marks %q, engine %q (%s)", eff.marksRecord, eff.marksEngine, eff.marksWhy))
			}
		}
		lastEff = eff.Effects
	}
	endMis := func(format string, args ...any) {
		rep.Mismatches = append(rep.Mismatches, Mismatch{Ply: g.Ply(), Seat: g.ToMove(), What: fmt.Sprintf(format, args...)})
	}
	if !g.Over() && !stopped {
		var evs []Event
		evs, rep.TagEnding = siteEnding(g, end, endMis)
		events = append(events, evs...)
	}
	rep.Points = g.ResultPoints()
	if g.Over() {
		rep.Termination = g.Result().Termination
	}
	if stopped {
		// The end of a game that could not be replayed says nothing more.
		return rep, nil
	}
	if what := endDiffers(g, end, events); what != "" {
		endMis("%s", what)
	}
	if !rep.HasRecordedPoints {
		endMis("no readable Result tag")
	} else if rep.Points != rep.RecordedPoints {
		endMis("points %v, record %v", rep.Points, rep.RecordedPoints)
	}
	return rep, nil
}

// siteEnding applies the end of a game that the site's record does not
// contain as moves, from its Termination tag (see docs/rules-engine.md),
// and says what it applied (how, in the returned text):
//   - "(Red +40)": the other live players left (the record omits the last
//     resignation or time loss);
//   - "Checkmate": the seat to move mates (the record omits the move);
//   - "(insuff. material; Red +10, Green +10)": the seat to move left (the
//     record omits the resignation), leaving a bare king, which the engine
//     ends as a draw by insufficient material (RuleSet.LeaveInsufficientDraw).
//
// The engine's rules then end the game and pay the points; endDiffers and
// the Result tag check that they are what the record says.
func siteEnding(g *Game, end siteEnd, mis func(string, ...any)) ([]Event, string) {
	var events []Event
	switch end.kind {
	case siteEndWinner:
		if g.Status(end.winner) != Live {
			mis("the record's winner %s is not a live player", end.winner)
			return nil, ""
		}
		// Two live players and a lead the rule set lets the winner claim:
		// the site's claimed win (section 13.4), which writes no token.
		if g.CanClaimWin(end.winner) == nil {
			eff, err := g.ClaimWin(end.winner)
			if err != nil {
				mis("%s cannot claim: %v", end.winner, err)
				return nil, ""
			}
			return eff.Events, fmt.Sprintf("%s claimed the win (not in the moves)", end.winner)
		}
		var left []string
		for s := Seat(0); s < NumSeats && !g.Over(); s++ {
			if s != end.winner && g.Status(s) == Live {
				eff, err := g.Resign(s)
				if err != nil {
					mis("%s cannot leave: %v", s, err)
					return events, ""
				}
				events = append(events, eff.Events...)
				left = append(left, s.String())
			}
		}
		return events, fmt.Sprintf("%s left (not in the moves)", strings.Join(left, " and "))
	case siteEndCheckmate:
		s := g.ToMove()
		m, ok := mateEndingGame(g)
		if !ok {
			mis("the record ends in checkmate, but %s has no mating move that ends the game", s)
			return nil, ""
		}
		text := g.MoveText(m)
		eff, err := g.Play(s, m)
		if err != nil {
			mis("%v", err)
			return nil, ""
		}
		events = append(events, eff.Events...)
		return events, fmt.Sprintf("%s mated with %s (not in the moves)", s, text)
	case siteEndInsufficient:
		if !end.hasList {
			return nil, ""
		}
		s := g.ToMove()
		if g.Status(s) != Live {
			mis("the record ends by insufficient material, but %s, to move, is not a live player", s)
			return nil, ""
		}
		eff, err := g.Resign(s)
		if err != nil {
			mis("%s cannot leave: %v", s, err)
			return nil, ""
		}
		events = append(events, eff.Events...)
		return events, fmt.Sprintf("%s left (not in the moves)", s)
	}
	return nil, ""
}

// mateEndingGame finds a legal move of the seat to move after which the
// game is over by mate, preferring one that captures nothing (the record
// does not say which move it was; the points then say whether it fits).
func mateEndingGame(g *Game) (Move, bool) {
	s := g.ToMove()
	if g.Status(s) != Live {
		return NoMove, false
	}
	best, found := NoMove, false
	for _, m := range g.legal(s) {
		c := g.Clone()
		eff, err := c.Play(s, m)
		if err != nil || !c.Over() || len(eff.Moves) == 0 || len(eff.Moves[0].Mated) == 0 {
			continue
		}
		if m.Captured() == NoPiece {
			return m, true
		}
		if !found {
			best, found = m, true
		}
	}
	return best, found
}

// endDiffers compares how the engine's game ended with the record's
// Termination tag; events are all events of the replay.
func endDiffers(g *Game, end siteEnd, events []Event) string {
	term := NotOver
	if g.Over() {
		term = g.Result().Termination
	}
	var bonus [NumSeats]int
	for _, e := range events {
		if e.Kind == EventBonus && e.Reason != NotOver {
			bonus[e.Seat] += e.Points
		}
	}
	switch end.kind {
	case siteEndCheckmate:
		if term != LastPlayerStanding {
			return fmt.Sprintf("the record ends in checkmate, the engine: %s", term)
		}
	case siteEndWinner:
		var want [NumSeats]int
		want[end.winner] = end.bonus
		if (term != LastPlayerStanding && term != ClaimedWin) || bonus != want {
			return fmt.Sprintf("the record ends with %s +%d, the engine: %s, end bonus %v", end.winner, end.bonus, term, bonus)
		}
	case siteEndInsufficient:
		if term != BareKings || (end.hasList && bonus != end.bonuses) {
			return fmt.Sprintf("the record ends by insufficient material, the engine: %s, end bonus %v", term, bonus)
		}
	case siteEndStalemate:
		if term != LastPlayerStanding && term != NoLivePlayers {
			return fmt.Sprintf("the record ends by stalemate, the engine: %s", term)
		}
	case siteEndNoProgress:
		if term != NoProgress {
			return fmt.Sprintf("the record ends by the 50-move rule, the engine: %s", term)
		}
	case siteEndRepetition:
		if term != Repetition {
			return fmt.Sprintf("the record ends by repetition, the engine: %s", term)
		}
	case siteEndEngine:
		if term != end.term {
			return fmt.Sprintf("the record ends by %s, the engine: %s", end.term, term)
		}
	case siteEndUnknown:
		return "unknown Termination tag"
	case siteEndNone:
	}
	return ""
}

// tokenEffects is what one token did, and how it differs from the record.
type tokenEffects struct {
	Effects
	differences []string
	// marksRecord and marksEngine are the check and mate marks of a
	// move in the record and as the engine writes them; marksWhy explains
	// the engine's.
	marksRecord, marksEngine, marksWhy string
}

// replayToken plays one token of the move text and compares the record's
// marks with what the engine found. prev are the effects of the token
// before (a lone "S" refers to them).
func replayToken(g *Game, tok string, prev Effects) (tokenEffects, error) {
	var te tokenEffects
	diff := func(format string, args ...any) {
		te.differences = append(te.differences, fmt.Sprintf(format, args...))
	}
	collect := func(eff Effects) {
		te.Moves = append(te.Moves, eff.Moves...)
		te.Events = append(te.Events, eff.Events...)
		te.GameOver = te.GameOver || eff.GameOver
	}
	leave := func(s Seat, c byte) error {
		var eff Effects
		var err error
		if c == 'T' {
			eff, err = g.TimeOut(s)
		} else {
			eff, err = g.Resign(s)
		}
		collect(eff)
		return err
	}
	if tok == "S" {
		// The site notes a stalemate in the slot of the stalemated seat,
		// which the engine judged when that seat's turn came.
		if !hasEvent(prev, EventStalemated) {
			diff("the record notes a stalemate, the engine has none")
		}
		return te, nil
	}
	if s, ok := claimToken(g, tok); ok {
		eff, err := g.ClaimWin(s)
		collect(eff)
		return te, err
	}
	if s, kind, mated, ok := leaveToken(g, tok); ok {
		err := leave(s, kind)
		if err == nil {
			// "R#": the record says the leave mated the seat at once.
			if out := hasEventFor(te.Effects, EventMatedOnTurn, s); out != mated {
				if mated {
					diff("the record's leave mates %s, the engine's does not", s)
				} else {
					diff("the engine's leave mates %s (written \"%c#\"), the record's does not", s, kind)
				}
			}
		}
		return te, err
	}
	if g.Over() {
		return te, ErrGameOver
	}
	// A trailing "S" is the site's stalemate note; the one record with it
	// after a move notes nothing the engine can find (see
	// docs/rules-engine.md), so it is read and not compared.
	core := strings.TrimSuffix(tok, "S")
	s := g.ToMove()
	var eff Effects
	var err error
	if mv, kind, ok := leaveMark(core); ok {
		// The seat left on its turn and its walking king made the move.
		if g.Status(s) != Live {
			return te, fmt.Errorf("%w: %s leaves, but is not a live player", ErrSeatNotLive, s)
		}
		core = mv
		eff, err = g.leaveThenMove(kind, core)
	} else {
		var m Move
		if m, err = g.ParseMove(core); err == nil {
			eff, err = g.Play(s, m)
		}
	}
	if err != nil {
		return te, err
	}
	collect(eff)
	am := eff.Moves[len(eff.Moves)-1]
	for _, a := range eff.Moves {
		if a.Seat == s {
			am = a
			break
		}
	}
	te.marksRecord, te.marksEngine = marksOf(core), marksOf(am.Text)
	te.marksWhy = fmt.Sprintf("checks %v, newly %v, out %v", am.Checks, am.MarkedChecks, am.Eliminated)
	if te.marksRecord != te.marksEngine {
		te.marksWhy += "; " + kingsAttacked(g.pos, s)
	}
	// The move is looked up by its squares; the piece letter must then
	// name the piece the engine moves, or the boards have parted.
	if k := movedInText(core); k != NoPiece && am.Move.Castle() == 0 && k != am.Move.Piece() {
		diff("the record moves a %s, the engine a %s", k, am.Move.Piece())
	}
	if kind, ok := capturedInText(core); ok != (am.Captured != NoPiece) {
		if ok {
			diff("the record captures, the engine's move captures nothing")
		} else {
			diff("the engine's move captures a %s %s, the record does not say so", am.CapturedSeat, am.Captured)
		}
	} else if ok && kind != am.Captured {
		diff("the record captures a %s, the engine a %s %s", kind, am.CapturedSeat, am.Captured)
	}
	return te, nil
}

// kingsAttacked describes, for a marks difference, every king on the board
// but the mover's after the move: its square, its seat's status and the
// pieces attacking it, dead ones included and named so (which the engine
// does not count, and a site might): "kings after the move: Red g3 zombie
// by yBk7 gRd3(dead); Green n8 live by none".
func kingsAttacked(p *Position, mover Seat) string {
	var b strings.Builder
	b.WriteString("kings after the move:")
	sep := " "
	for o := Seat(0); o < NumSeats; o++ {
		k := p.king[o]
		if o == mover || k == NoSquare {
			continue
		}
		fmt.Fprintf(&b, "%s%s %s %s by", sep, o, k, p.status[o])
		sep = "; "
		as := p.attackersOf(k, o)
		if len(as) == 0 {
			b.WriteString(" none")
		}
		for _, a := range as {
			pc := p.board[a]
			fmt.Fprintf(&b, " %c%c%s", pieceSeat(pc).Letter(), pieceKind(pc).Letter(), a)
			if !p.pieceActive(pieceSeat(pc), pieceKind(pc)) {
				b.WriteString("(dead)")
			}
		}
	}
	return b.String()
}

func hasEventFor(eff Effects, k EventKind, s Seat) bool {
	for _, e := range eff.Events {
		if e.Kind == k && e.Seat == s {
			return true
		}
	}
	return false
}

func hasEvent(eff Effects, k EventKind) bool {
	for _, e := range eff.Events {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// marksOf returns the trailing check and mate marks of a move text.
func marksOf(text string) string {
	i := len(text)
	for i > 0 && (text[i-1] == '+' || text[i-1] == '#') {
		i--
	}
	return text[i:]
}

// movedInText reads the moving piece of a long algebraic move text:
// "Qg1xRh14" a queen, "h2-h3" a pawn; NoPiece for castling or text it
// cannot read.
func movedInText(text string) PieceKind {
	switch {
	case text == "" || strings.HasPrefix(text, "O-O") || strings.HasPrefix(text, "0-0"):
		return NoPiece
	case text[0] >= 'a' && text[0] <= 'n':
		return Pawn
	}
	return kindFromLetter(text[0])
}

// capturedInText reads the captured piece of a long algebraic move text:
// "Qg1xRh14" a rook, "Qg1xh14" a pawn; ok is false without a capture.
func capturedInText(text string) (PieceKind, bool) {
	i := strings.IndexByte(text, 'x')
	if i < 0 || i+1 >= len(text) {
		return NoPiece, false
	}
	if k := kindFromLetter(text[i+1]); k != NoPiece && text[i+1] >= 'A' && text[i+1] <= 'Z' {
		return k, true
	}
	return Pawn, true
}

var resultRe = regexp.MustCompile(`([^:\s][^:]*?):\s*(-?\d+)`)

// recordedPoints reads the Result tag, "name: 54 - name: 28 - ...", and
// maps the points to seats through the Red/Blue/Yellow/Green name tags
// (the site's form), or reads "Red: 54 - Blue: 28 - ..." (the engine's).
func recordedPoints(rec *Record) ([NumSeats]int, bool) {
	var pts [NumSeats]int
	v, _ := rec.Tag("Result")
	m := resultRe.FindAllStringSubmatch(v, -1)
	if len(m) != NumSeats {
		return pts, false
	}
	var found [NumSeats]bool
	for _, e := range m {
		name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(e[1]), "-"))
		n, err := strconv.Atoi(e[2])
		if err != nil {
			return pts, false
		}
		s, ok := seatNamed(rec, name, found)
		if !ok {
			return pts, false
		}
		pts[s], found[s] = n, true
	}
	return pts, found == [NumSeats]bool{true, true, true, true}
}

// seatNamed finds the seat a Result entry names: the seat whose player tag
// (Red, Blue, ...) is name, else the seat whose colour is name.
func seatNamed(rec *Record, name string, taken [NumSeats]bool) (Seat, bool) {
	for s := Seat(0); s < NumSeats; s++ {
		if tag, _ := rec.Tag(s.String()); !taken[s] && tag == name {
			return s, true
		}
	}
	for s := Seat(0); s < NumSeats; s++ {
		if !taken[s] && s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// siteEndKind classifies the Termination tag of the largest site.
type siteEndKind uint8

const (
	siteEndUnknown siteEndKind = iota
	// siteEndCheckmate: "Checkmate", the last opponent was mated.
	siteEndCheckmate
	// siteEndWinner: "(Red +40)", the last live player and its bonus for
	// the zombie kings on the board.
	siteEndWinner
	// siteEndInsufficient: "Insufficient material", or "(insuff.
	// material; Red +10, Green +10)" with the bonus of each live player.
	siteEndInsufficient
	siteEndStalemate
	siteEndNoProgress
	siteEndRepetition
	// siteEndEngine: the engine's own Termination text (its PGN4 export).
	siteEndEngine
	// siteEndNone: no Termination tag (an unfinished game): nothing to
	// compare.
	siteEndNone
)

// siteEnd is a parsed Termination tag.
type siteEnd struct {
	kind siteEndKind
	// winner and bonus for siteEndWinner.
	winner Seat
	bonus  int
	// term for siteEndEngine.
	term Termination
	// bonuses per seat for siteEndInsufficient when listed (hasList).
	bonuses [NumSeats]int
	listed  [NumSeats]bool
	hasList bool
}

var seatBonusRe = regexp.MustCompile(`(Red|Blue|Yellow|Green) \+(\d+)`)

func parseSiteEnd(tag string) siteEnd {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(tag), "Game over."))
	t = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(t), "("), ")")
	lower := strings.ToLower(t)
	var e siteEnd
	if strings.TrimSpace(tag) == "" {
		e.kind = siteEndNone
		return e
	}
	for i, name := range terminationNames {
		if tag == name && Termination(i) != NotOver {
			e.kind, e.term = siteEndEngine, Termination(i)
			return e
		}
	}
	switch {
	case lower == "checkmate":
		e.kind = siteEndCheckmate
	case lower == "stalemate":
		e.kind = siteEndStalemate
	case strings.HasPrefix(lower, "50-move"):
		e.kind = siteEndNoProgress
	case strings.HasPrefix(lower, "3-fold"):
		e.kind = siteEndRepetition
	case strings.HasPrefix(lower, "insuff"):
		e.kind = siteEndInsufficient
		for _, m := range seatBonusRe.FindAllStringSubmatch(t, -1) {
			s := seatByName(m[1])
			n, _ := strconv.Atoi(m[2])
			e.bonuses[s] += n
			e.listed[s] = true
			e.hasList = true
		}
	default:
		if m := seatBonusRe.FindStringSubmatch(t); m != nil && m[0] == t {
			e.kind = siteEndWinner
			e.winner = seatByName(m[1])
			e.bonus, _ = strconv.Atoi(m[2])
		}
	}
	return e
}

func seatByName(name string) Seat {
	for s := Seat(0); s < NumSeats; s++ {
		if s.String() == name {
			return s
		}
	}
	return Red
}
