package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Tag is one PGN4 tag pair.
type Tag struct {
	Name, Value string
}

// Record is a parsed PGN4 game record and the game replayed from it.
type Record struct {
	// Tags in the order of the record.
	Tags []Tag
	// Game is the replayed game. Zombie moves came from the record, so the
	// game keeps taking zombie moves from its caller (Play accepts them)
	// rather than drawing them from the seed.
	Game *Game
}

// Tag returns the value of the named tag and whether it is present.
func (r *Record) Tag(name string) (string, bool) {
	for _, t := range r.Tags {
		if t.Name == name {
			return t.Value, true
		}
	}
	return "", false
}

// standardStartTag is the StartFen4 value of the standard start position.
const standardStartTag = "4PC"

// namedStart returns the FEN4 of a start layout that records name instead
// of giving a FEN4 ("" for the standard start).
func namedStart(tag string) (string, bool) {
	switch tag {
	case standardStartTag:
		return "", true
	case "4PCo":
		// The largest site's older layout: its standard start with the
		// kings and queens of Blue (west) and Green (east) swapped, so
		// that they castle in the mirrored way (seating clockwise).
		return "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-" +
			"3,yR,yN,yB,yK,yQ,yB,yN,yR,3/3,yP,yP,yP,yP,yP,yP,yP,yP,3/14/" +
			"bR,bP,10,gP,gR/bN,bP,10,gP,gN/bB,bP,10,gP,gB/bK,bP,10,gP,gQ/" +
			"bQ,bP,10,gP,gK/bB,bP,10,gP,gB/bN,bP,10,gP,gN/bR,bP,10,gP,gR/" +
			"14/3,rP,rP,rP,rP,rP,rP,rP,rP,3/3,rR,rN,rB,rQ,rK,rB,rN,rR,3", true
	}
	return "", false
}

// PGN4 writes the game as a PGN4 record: the given tags first (in order;
// tags the engine writes itself are skipped), then Variant, RuleSet,
// RuleOptions (only when the options differ from the named rule set's: the
// options that are on, by OptionNames, separated by spaces), StartFen4, Seed, Result and Termination, then the moves in numbered
// rounds of up to four moves in seat order, separated by "..".
//
// Resignations and time losses: a lone "R" or "T" is the seat to move
// resigning or running out of time; "R" or "T" right after a move means its
// mover did so on that turn, before the move, which is the move of its
// zombie in the same turn (the largest site's "Ke2-f1T", see
// Action.KeepTurn); any other one is written "R" or "T" followed by the
// seat letter ("Rb": Blue resigned now). ParsePGN4 reads all three.
// A claimed win (Game.ClaimWin) is written the same way with "C": a lone
// "C" by the seat to move, "Cy" by Yellow when another seat is to move.
// The largest site writes no token for a claim (docs/rules.md 13.4).
func (g *Game) PGN4(tags []Tag) string {
	var b strings.Builder
	own := map[string]bool{"Variant": true, "RuleSet": true, "RuleOptions": true, "StartFen4": true, "Seed": true, "Result": true, "Termination": true}
	for _, t := range tags {
		if own[t.Name] {
			continue
		}
		writeTag(&b, t.Name, t.Value)
	}
	writeTag(&b, "Variant", "FFA")
	writeTag(&b, "RuleSet", g.rules.Name)
	if std, _ := storable(g.rules); optionBits(g.rules) != std {
		var on []string
		for i, name := range ruleOptions {
			if optionBits(g.rules)&(1<<i) != 0 {
				on = append(on, name)
			}
		}
		writeTag(&b, "RuleOptions", strings.Join(on, " "))
	}
	start := g.startFEN
	if start == "" {
		start = standardStartTag
	}
	writeTag(&b, "StartFen4", start)
	writeTag(&b, "Seed", strconv.FormatUint(g.seed, 10))
	res := g.Result()
	var parts [NumSeats]string
	for s := Seat(0); s < NumSeats; s++ {
		parts[s] = fmt.Sprintf("%s: %d", s, res.Points[s])
	}
	writeTag(&b, "Result", strings.Join(parts[:], " - "))
	if g.over {
		writeTag(&b, "Termination", res.Termination.String())
	}
	b.WriteByte('\n')

	// Replay the turn order to know whose turn each action came on.
	round := 0
	var line []string
	flush := func() {
		if len(line) > 0 {
			fmt.Fprintf(&b, "%d. %s\n", round, strings.Join(line, " .. "))
			line = line[:0]
		}
	}
	prevSeat, prevWasMove := Seat(0), false
	newSlot := func(s Seat) {
		if round == 0 || s < prevSeat || (s == prevSeat && prevWasMove) {
			flush()
			round++
		}
		prevSeat = s
	}
	turns := g.turnsOfHistory()
	for i, a := range g.history {
		letter := "R"
		switch a.Kind {
		case ActionTimeOut:
			letter = "T"
		case ActionClaim:
			letter = "C"
		}
		mate := ""
		if a.Mated {
			mate = "#"
		}
		// A leave that keeps the turn is written after the zombie move
		// that follows it.
		keep := a.KeepTurn && i+1 < len(g.history) && g.history[i+1].Kind == ActionMove && g.history[i+1].Seat == a.Seat
		switch {
		case keep:
		case a.Kind == ActionMove:
			newSlot(a.Seat)
			text := a.Text
			if i > 0 && g.history[i-1].KeepTurn && g.history[i-1].Seat == a.Seat {
				text += "R"
				if g.history[i-1].Kind == ActionTimeOut {
					text = text[:len(text)-1] + "T"
				}
			}
			line = append(line, text)
			prevWasMove = true
		case turns[i] == a.Seat:
			newSlot(a.Seat)
			line = append(line, letter+mate)
			prevWasMove = false
		default:
			newSlot(prevSeat)
			prevWasMove = true
			line = append(line, letter+string(a.Seat.Letter())+mate)
		}
	}
	flush()
	return b.String()
}

func writeTag(b *strings.Builder, name, value string) {
	fmt.Fprintf(b, "[%s %s]\n", name, strconv.Quote(value))
}

// turnsOfHistory returns, for each action of the history, the seat that
// was to move when it happened, by replaying the game.
func (g *Game) turnsOfHistory() []Seat {
	out := make([]Seat, len(g.history))
	if _, err := g.replayPrefix(len(g.history), func(i int, gg *Game) { out[i] = gg.pos.toMove }); err != nil {
		// The history came from this game, so a replay cannot fail; fall
		// back to the action's own seat.
		for i, a := range g.history {
			out[i] = a.Seat
		}
	}
	return out
}

// replayPrefix replays the first n actions of g's history into a new game,
// calling visit before each one.
func (g *Game) replayPrefix(n int, visit func(i int, gg *Game)) (*Game, error) {
	gg, err := NewGame(g.rules, g.seed, g.startFEN)
	if err != nil {
		return nil, err
	}
	gg.manualZombies = true
	for i, a := range g.history[:n] {
		if visit != nil {
			visit(i, gg)
		}
		if err := gg.replayAction(a); err != nil {
			return nil, fmt.Errorf("action %d: %w", i, err)
		}
	}
	return gg, nil
}

func (g *Game) replayAction(a Action) error {
	var err error
	switch a.Kind {
	case ActionMove:
		_, err = g.Play(a.Seat, a.Move)
	case ActionResign, ActionTimeOut:
		_, err = g.leave(a.Seat, a.Kind, a.KeepTurn)
	case ActionClaim:
		_, err = g.ClaimWin(a.Seat)
	default:
		err = fmt.Errorf("%w: unknown action kind %d", ErrBadRecord, a.Kind)
	}
	return err
}

// ParsePGN4 reads a PGN4 record and replays it. rs selects the rule set;
// nil means: the RuleSet tag, else "chesscom-ffa" when the RuleVariants tag
// names DeadKingWalking (records of the largest site), else the default.
// StartFen4 "4PC" (or none) is the standard start, "4PCo" the largest
// site's old layout; otherwise a FEN4. Zombie moves are taken from the
// record. ParsePGN4 stops at the first move it cannot play; Replay also
// compares the record's marks, points and ending with the engine's.
func ParsePGN4(text string, rs *RuleSet) (*Record, error) {
	rec, toks, err := readPGN4(text, rs)
	if err != nil {
		return nil, err
	}
	for i, tok := range toks {
		if err := applyToken(rec.Game, tok); err != nil {
			return nil, fmt.Errorf("%w: token %d %q: %w", ErrBadRecord, i+1, tok, err)
		}
	}
	return rec, nil
}

// readPGN4 reads the tags of a PGN4 record, sets up its game (rule set,
// seed, start position) and splits the move text into tokens, without
// playing them.
func readPGN4(text string, rs *RuleSet) (*Record, []string, error) {
	rec := &Record{}
	var body strings.Builder
	for line := range strings.SplitSeq(text, "\n") {
		l := strings.TrimSpace(line)
		// Some records lose the '[' of a tag line; keep reading them.
		if strings.HasPrefix(l, "[") || (strings.HasSuffix(l, `"]`) && strings.Contains(l, ` "`)) {
			t, err := parseTag(l)
			if err != nil {
				return nil, nil, err
			}
			rec.Tags = append(rec.Tags, t)
			continue
		}
		body.WriteString(l)
		body.WriteByte(' ')
	}
	var rules RuleSet
	switch {
	case rs != nil:
		rules = *rs
	default:
		name, ok := rec.Tag("RuleSet")
		if !ok {
			if v, _ := rec.Tag("RuleVariants"); strings.Contains(v, "DeadKingWalking") {
				name = "chesscom-ffa"
			}
		}
		r, known := RuleSetByName(name)
		if !known {
			return nil, nil, fmt.Errorf("%w: %w %q", ErrBadRecord, ErrUnknownRules, name)
		}
		rules = r
		if v, ok := rec.Tag("RuleOptions"); ok {
			var bits byte
			for _, name := range strings.Fields(v) {
				i := slices.Index(OptionNames(), name)
				if i < 0 {
					return nil, nil, fmt.Errorf("%w: RuleOptions %q: %q is not one of %v", ErrBadRecord, v, name, OptionNames())
				}
				bits |= 1 << i
			}
			rules = withOptionBits(rules, bits)
		}
	}
	var seed uint64
	if v, ok := rec.Tag("Seed"); ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: bad Seed %q", ErrBadRecord, v)
		}
		seed = n
	}
	start, _ := rec.Tag("StartFen4")
	if fen, ok := namedStart(start); ok {
		start = fen
	}
	g, err := NewGame(rules, seed, start)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: start position: %w", ErrBadRecord, err)
	}
	g.manualZombies = true
	rec.Game = g
	return rec, tokenizeMoves(body.String()), nil
}

func parseTag(l string) (Tag, error) {
	l = strings.TrimSuffix(strings.TrimPrefix(l, "["), "]")
	name, val, ok := strings.Cut(l, " ")
	if !ok || name == "" {
		return Tag{}, fmt.Errorf("%w: bad tag %q", ErrBadRecord, l)
	}
	val = strings.TrimSpace(val)
	if uq, err := strconv.Unquote(val); err == nil {
		val = uq
	} else {
		val = strings.Trim(val, `"`)
	}
	return Tag{Name: name, Value: val}, nil
}

// tokenizeMoves splits the move text into move and resignation tokens,
// dropping round numbers, ".." separators, comments and result markers.
func tokenizeMoves(body string) []string {
	var toks []string
	depth := 0
	var cur strings.Builder
	emit := func() {
		t := cur.String()
		cur.Reset()
		// Drop a leading round number such as "12." or "12.".
		if i := strings.IndexByte(t, '.'); i > 0 {
			if _, err := strconv.Atoi(t[:i]); err == nil {
				t = strings.TrimLeft(t[i:], ".")
			}
		}
		t = strings.Trim(t, ".")
		switch t {
		case "", "*", "1-0", "0-1", "1/2-1/2":
			return
		}
		toks = append(toks, t)
	}
	for _, r := range body {
		switch {
		case r == '{':
			depth++
		case r == '}':
			if depth > 0 {
				depth--
			}
		case depth > 0:
		case r == ' ' || r == '\t' || r == '\r' || r == '\n':
			emit()
		default:
			cur.WriteRune(r)
		}
	}
	emit()
	return toks
}

func applyToken(g *Game, tok string) error {
	leave := func(s Seat, c byte) error {
		var err error
		if c == 'T' {
			_, err = g.TimeOut(s)
		} else {
			_, err = g.Resign(s)
		}
		return err
	}
	tok = strings.TrimSuffix(tok, "S") // the site marks stalemates, which the engine judges itself
	if tok == "" {
		return nil
	}
	if s, ok := claimToken(g, tok); ok {
		_, err := g.ClaimWin(s)
		return err
	}
	if s, kind, _, ok := leaveToken(g, tok); ok {
		// A "#" after the leave ("R#") is the engine's to judge
		// (RuleSet.LeaveMate); Replay compares it.
		return leave(s, kind)
	}
	if g.Over() {
		return ErrGameOver
	}
	if core, kind, ok := leaveMark(tok); ok && g.Status(g.ToMove()) == Live {
		_, err := g.leaveThenMove(kind, core)
		return err
	}
	s := g.ToMove()
	m, err := g.ParseMove(strings.TrimRight(tok, "RT"))
	if err != nil {
		return err
	}
	_, err = g.Play(s, m)
	return err
}

// leaveToken reads a resignation or time-loss token: "R" or "T" (the seat
// to move), "Rb" or "Tg" (the seat named by its letter), each optionally
// followed by "#" when the leave mated the seat at once ("R#",
// RuleSet.LeaveMate). kind is 'R' or 'T'.
func leaveToken(g *Game, tok string) (s Seat, kind byte, mated bool, ok bool) {
	core, mated := strings.CutSuffix(tok, "#")
	switch {
	case core == "R" || core == "T":
		return g.ToMove(), core[0], mated, true
	case len(core) == 2 && (core[0] == 'R' || core[0] == 'T') && strings.IndexByte("rbyg", core[1]) >= 0:
		return Seat(strings.IndexByte("rbyg", core[1])), core[0], mated, true
	}
	return 0, 0, false, false
}

// claimToken reads a claimed-win token: "C" (the seat to move) or "Cr",
// "Cb", "Cy", "Cg" (the seat named by its letter).
func claimToken(g *Game, tok string) (Seat, bool) {
	switch {
	case tok == "C":
		return g.ToMove(), true
	case len(tok) == 2 && tok[0] == 'C' && strings.IndexByte("rbyg", tok[1]) >= 0:
		return Seat(strings.IndexByte("rbyg", tok[1])), true
	}
	return 0, false
}

// leaveMark splits a move token "Ke2-f1T" into the move and the kind of
// leave written after it.
func leaveMark(tok string) (string, ActionKind, bool) {
	n := len(tok)
	if n <= 2 {
		return tok, 0, false
	}
	switch tok[n-1] {
	case 'R':
		return tok[:n-1], ActionResign, true
	case 'T':
		return tok[:n-1], ActionTimeOut, true
	}
	return tok, 0, false
}

// leaveThenMove applies a record's "Ke2-f1T": the live seat to move
// resigns or runs out of time on its turn and its zombie plays the move in
// that same turn (Action.KeepTurn). Both or neither happen: on an error g
// is unchanged.
func (g *Game) leaveThenMove(kind ActionKind, text string) (Effects, error) {
	c := g.Clone()
	s := c.ToMove()
	eff, err := c.leave(s, kind, true)
	if err != nil {
		return Effects{}, err
	}
	m, err := c.ParseMove(text)
	if err != nil {
		return Effects{}, err
	}
	meff, err := c.Play(s, m)
	if err != nil {
		return Effects{}, err
	}
	*g = *c
	eff.Moves = append(eff.Moves, meff.Moves...)
	eff.Events = append(eff.Events, meff.Events...)
	eff.GameOver = eff.GameOver || meff.GameOver
	return eff, nil
}
