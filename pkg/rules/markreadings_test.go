package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// markReading is one way the largest site might count the check marks of
// a move, tried against every move of its public records: the open
// question of docs/rules-engine.md ("Open", a "+" on a walking dead king).
type markReading struct {
	name string
	// blocks reports whether the piece on t stops a line to seat k's king.
	blocks func(p *Position, t int, k Seat) bool
	// attacks reports whether piece pc, not a live piece of seat k, attacks
	// seat k's king.
	attacks func(p *Position, pc uint8, k Seat) bool
	// remarkWalking marks a walking king in check after the move even when
	// it was in check before.
	remarkWalking bool
	// newAttacker marks a king that a seat attacks after the move and did
	// not before, even when another seat had it in check already; with
	// newAttackerWalking only a walking king.
	newAttacker, newAttackerWalking bool
	// open: no public record contradicts the reading (it is listed as
	// open, not refuted).
	open bool
}

func deadPiece(p *Position, pc uint8) bool { return !p.pieceActive(pieceSeat(pc), pieceKind(pc)) }

// readingAttacked reports whether seat k's king is attacked under reading
// r, by seat by or, with by < 0, by anyone.
func readingAttacked(p *Position, k Seat, by int, r markReading) bool {
	q := int(p.king[k])
	if p.king[k] == NoSquare {
		return false
	}
	b := &p.board
	counts := func(t int, kinds ...PieceKind) bool {
		pc := b[t]
		if pc == empty || pc == offCell {
			return false
		}
		s := pieceSeat(pc)
		if (s == k && !deadPiece(p, pc)) || (by >= 0 && s != Seat(by)) {
			return false
		}
		for _, kk := range kinds {
			if pieceKind(pc) == kk {
				return r.attacks(p, pc, k)
			}
		}
		return false
	}
	for _, o := range knightOffsets {
		if counts(q+o, Knight) {
			return true
		}
	}
	for _, o := range kingOffsets {
		if counts(q+o, King) {
			return true
		}
	}
	for s := Seat(0); s < NumSeats; s++ {
		for _, c := range p.geo.pawnCap[s] {
			if t := q - c; b[t] == makePiece(s, Pawn) && counts(t, Pawn) {
				return true
			}
		}
	}
	slide := func(dirs [4]int, k2 PieceKind) bool {
		for _, d := range dirs {
			for t := q + d; b[t] != offCell; t += d {
				if b[t] == empty {
					continue
				}
				if counts(t, k2, Queen) {
					return true
				}
				if r.blocks(p, t, k) {
					break
				}
			}
		}
		return false
	}
	return slide(diagDirs, Bishop) || slide(orthoDirs, Rook)
}

// TestCorpusCheckMarkReadings replays the public records and counts, for
// each reading of the site's check marks, the moves where it and the
// engine's rule (SiteMarks) differ and the moves whose record contradicts
// it. The engine's rule must have no contradiction (a check of the
// harness); every refuted reading at least one; the open readings none. It
// logs the counts docs/rules-engine.md quotes.
func TestCorpusCheckMarkReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every public record once per reading")
	}
	t.Parallel()
	all := func(*Position, int, Seat) bool { return true }
	live := func(p *Position, pc uint8, k Seat) bool { return !deadPiece(p, pc) }
	readings := []markReading{
		{name: "engine (SiteMarks)", blocks: all, attacks: live, open: true},
		{name: "a persisting check on a walking king is marked again", blocks: all, attacks: live, remarkWalking: true},
		{name: "a walking king's own dead pieces do not block lines to it", blocks: func(p *Position, t int, k Seat) bool {
			pc := p.board[t]
			return !(p.status[k] == Zombie && pieceSeat(pc) == k && deadPiece(p, pc))
		}, attacks: live},
		{name: "dead pieces do not block lines to walking kings", blocks: func(p *Position, t int, k Seat) bool {
			return !(p.status[k] == Zombie && deadPiece(p, p.board[t]))
		}, attacks: live},
		{name: "dead pieces do not block lines to live kings", blocks: func(p *Position, t int, k Seat) bool {
			return !(p.status[k] == Live && deadPiece(p, p.board[t]))
		}, attacks: live},
		{name: "dead pieces do not block", blocks: func(p *Position, t int, k Seat) bool { return !deadPiece(p, p.board[t]) }, attacks: live},
		{name: "walking kings do not block", blocks: func(p *Position, t int, k Seat) bool {
			pc := p.board[t]
			return !(pieceKind(pc) == King && p.status[pieceSeat(pc)] == Zombie)
		}, attacks: live},
		{name: "kings of players who are out do not block", blocks: func(p *Position, t int, k Seat) bool {
			pc := p.board[t]
			return !(pieceKind(pc) == King && p.status[pieceSeat(pc)] == Out)
		}, attacks: live},
		{name: "a walking king's own dead pieces attack it", blocks: all, attacks: func(p *Position, pc uint8, k Seat) bool {
			return !deadPiece(p, pc) || pieceSeat(pc) == k
		}},
		{name: "dead pieces attack every king", blocks: all, attacks: func(*Position, uint8, Seat) bool { return true }},
		{name: "dead pieces of walking kings attack", blocks: all, attacks: func(p *Position, pc uint8, k Seat) bool {
			return !deadPiece(p, pc) || p.status[pieceSeat(pc)] == Zombie
		}},
		{name: "a seat newly attacking a king already in check marks it", blocks: all, attacks: live, newAttacker: true, open: true},
		{name: "a seat newly attacking a walking king already in check marks it", blocks: all, attacks: live, newAttackerWalking: true, open: true},
		{name: "dead pieces of other seats attack walking kings", blocks: all, attacks: func(p *Position, pc uint8, k Seat) bool {
			return !deadPiece(p, pc) || (p.status[k] == Zombie && pieceSeat(pc) != k)
		}, open: true},
	}
	differ := make([]int, len(readings))
	contra := make([]int, len(readings))
	example := make([]string, len(readings))
	// The open reading as a rule of play: would a walking king avoid the
	// squares other seats' dead pieces attack?
	otherDead := readings[len(readings)-1]
	var walks, intoDead, intoDeadAvoidable, earlyWalkers int
	moves := 0
	for _, f := range corpusFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rec, toks, err := readPGN4(string(data), nil)
		if err != nil {
			t.Fatal(err)
		}
		g := rec.Game
		var last Effects
		early := false
		for i, tok := range toks {
			before, s := g.pos.Clone(), g.ToMove()
			if !early && g.Ply() == i && g.Ply() <= 66 && slices.Contains(before.status[:], Zombie) {
				// A king walks though every token so far was a move: a
				// leave written as a suffix ("Kg14-g13T").
				early = true
				earlyWalkers++
			}
			// hits: the walking king's moves onto squares other seats' dead
			// pieces attack (and nothing live does).
			var hits map[Move]bool
			free := 0
			if before.status[s] == Zombie {
				hits = map[Move]bool{}
				var l MoveList
				before.LegalMoves(s, &l)
				for _, m := range l.Moves[:l.N] {
					c := before.Clone()
					c.Make(m)
					hits[m] = readingAttacked(c, s, -1, otherDead) && !c.InCheck(s)
					if !hits[m] {
						free++
					}
				}
			}
			te, err := replayToken(g, tok, last)
			if err != nil {
				t.Fatalf("%s: token %q: %v", filepath.Base(f), tok, err)
			}
			last = te.Effects
			for _, am := range te.Moves {
				if hits != nil && am.Seat == s {
					walks++
					if hits[am.Move] {
						intoDead++
						if free > 0 {
							intoDeadAvoidable++
						}
					}
				}
			}
			// The "+#" of a mate is a rule of its own (MateMarkedAsCheck).
			if len(te.Moves) == 0 || strings.Contains(te.marksRecord+te.marksEngine, "#") {
				continue
			}
			moves++
			after := g.pos
			want := strings.Count(te.marksRecord, "+")
			engine := 0
			for i, r := range readings {
				n := 0
				for o := Seat(0); o < NumSeats; o++ {
					if o == s || before.status[o] == Out {
						continue
					}
					movB, movA := readingAttacked(before, o, int(s), r), readingAttacked(after, o, int(s), r)
					chkB, chkA := readingAttacked(before, o, -1, r), readingAttacked(after, o, -1, r)
					marked := (movA && !movB) || (chkA && (!chkB || (r.remarkWalking && after.status[o] == Zombie)))
					if !marked && chkB && (r.newAttacker || r.newAttackerWalking && after.status[o] == Zombie) {
						for a := Seat(0); a < NumSeats; a++ {
							if a != o && readingAttacked(after, o, int(a), r) && !readingAttacked(before, o, int(a), r) {
								marked = true
								break
							}
						}
					}
					if marked {
						n++
					}
				}
				if i == 0 {
					engine = n
				}
				if n != engine {
					differ[i]++
				}
				if n != want {
					contra[i]++
					if example[i] == "" {
						example[i] = fmt.Sprintf("%s %q: record %d, reading %d", filepath.Base(f), tok, want, n)
					}
				}
			}
		}
	}
	t.Logf("%d moves (without mates); %d records with a walking king by ply 66 and no token but moves before", moves, earlyWalkers)
	t.Logf("walking kings: %d moves, %d onto a square other seats' dead pieces attack (%d of them with a square free of that)", walks, intoDead, intoDeadAvoidable)
	if intoDeadAvoidable == 0 {
		t.Errorf("no walking king steps onto a square other seats' dead pieces attack when it could avoid one: the open reading may be a rule of play")
	}
	for i, r := range readings {
		t.Logf("%-60s differs %3d, contradicted %3d  %s", r.name, differ[i], contra[i], example[i])
		if r.open != (contra[i] == 0) {
			t.Errorf("%s: %d contradictions, but the reading is listed as open %v", r.name, contra[i], r.open)
		}
	}
}
