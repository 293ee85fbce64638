package rules

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// This file holds a deliberately simple reference move generator: a 14x14
// array, bounds checks everywhere, copy-make, and an attack test that asks
// every opponent piece whether it hits the king. It shares nothing with
// the engine's generator but the position it reads.

type refCell struct {
	seat int // -1 empty
	kind PieceKind
}

type refBoard [14][14]refCell

type refPos struct {
	b       refBoard
	edges   [4][2]int // forward direction (df, dr) per seat
	active  func(seat int, k PieceKind) bool
	castle  uint8
	ep      [4][2]int // skipped square per seat, (-1,-1) for none
	epPawn  [4][2]int
	enPass  bool
	ownDead bool
	// kingCaptureKills mirrors the game rule: capturing a king kills its
	// army before the mover's own king is judged.
	kingCaptureKills bool
	seatEdge         [4]edge
}

func refOnBoard(f, r int) bool {
	if f < 0 || f > 13 || r < 0 || r > 13 {
		return false
	}
	return !((f < 3 || f > 10) && (r < 3 || r > 10))
}

func newRefPos(p *Position, rs RuleSet) *refPos {
	rp := &refPos{castle: p.castle, enPass: rs.EnPassant, ownDead: rs.CaptureOwnDeadPieces, kingCaptureKills: p.kingCaptureKills}
	edges := [4]edge{edgeSouth, edgeEast, edgeNorth, edgeWest}
	if rs.Seating == SeatingClockwise {
		edges = [4]edge{edgeSouth, edgeWest, edgeNorth, edgeEast}
	}
	rp.seatEdge = edges
	for s, e := range edges {
		rp.edges[s] = map[edge][2]int{edgeSouth: {0, 1}, edgeEast: {-1, 0}, edgeNorth: {0, -1}, edgeWest: {1, 0}}[e]
	}
	status := p.status
	rp.active = func(seat int, k PieceKind) bool {
		switch status[seat] {
		case Out:
			return false
		case Zombie:
			return rs.Zombie == ZombieWholeArmy || k == King
		}
		return true
	}
	for f := range 14 {
		for r := range 14 {
			rp.b[f][r].seat = -1
			if q := SquareAt(f, r); q != NoSquare {
				if s, k, _, ok := p.PieceAt(q); ok {
					rp.b[f][r] = refCell{int(s), k}
				}
			}
		}
	}
	for s := range 4 {
		rp.ep[s], rp.epPawn[s] = [2]int{-1, -1}, [2]int{-1, -1}
		if p.ep[s] != NoSquare {
			rp.ep[s] = [2]int{p.ep[s].File(), p.ep[s].Rank()}
			rp.epPawn[s] = [2]int{p.epPawn[s].File(), p.epPawn[s].Rank()}
		}
	}
	return rp
}

// attacks reports whether the piece on (f, r) attacks (tf, tr) on board b.
func (rp *refPos) attacks(b *refBoard, f, r, tf, tr int) bool {
	c := b[f][r]
	df, dr := tf-f, tr-r
	abs := func(x int) int { return max(x, -x) }
	clearLine := func(sf, sr int) bool {
		x, y := f+sf, r+sr
		for x != tf || y != tr {
			if !refOnBoard(x, y) || b[x][y].seat >= 0 {
				return false
			}
			x, y = x+sf, y+sr
		}
		return true
	}
	sign := func(x int) int {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	}
	switch c.kind {
	case Pawn:
		fw := rp.edges[c.seat]
		// forward step plus one sideways step
		if fw[0] == 0 {
			return dr == fw[1] && abs(df) == 1
		}
		return df == fw[0] && abs(dr) == 1
	case Knight:
		return (abs(df) == 1 && abs(dr) == 2) || (abs(df) == 2 && abs(dr) == 1)
	case King:
		return max(abs(df), abs(dr)) == 1
	case Bishop, Rook, Queen:
		diag := abs(df) == abs(dr) && df != 0
		orth := (df == 0) != (dr == 0)
		if (c.kind == Bishop && !diag) || (c.kind == Rook && !orth) || (c.kind == Queen && !diag && !orth) {
			return false
		}
		return clearLine(sign(df), sign(dr))
	}
	return false
}

func (rp *refPos) attacked(b *refBoard, tf, tr, victim int) bool {
	return rp.attackedExcept(b, tf, tr, victim, -1)
}

func (rp *refPos) attackedExcept(b *refBoard, tf, tr, victim, dead int) bool {
	for f := range 14 {
		for r := range 14 {
			c := b[f][r]
			if c.seat < 0 || c.seat == victim || c.seat == dead || !rp.active(c.seat, c.kind) {
				continue
			}
			if rp.attacks(b, f, r, tf, tr) {
				return true
			}
		}
	}
	return false
}

func refSq(f, r int) string { return fmt.Sprintf("%c%d", 'a'+f, r+1) }

// legalMoves returns the legal moves of seat s as "from-to" strings with
// "=Q" for promotions.
func (rp *refPos) legalMoves(s int) []string {
	var out []string
	fw := rp.edges[s]
	tryMove := func(f, r, tf, tr int, promo bool, epVictim [2]int) {
		nb := rp.b
		victim := -1
		if t := nb[tf][tr]; t.seat >= 0 && t.kind == King && rp.kingCaptureKills {
			victim = t.seat // out of the game at once: its pieces are dead
		}
		nb[tf][tr] = nb[f][r]
		nb[f][r] = refCell{seat: -1}
		if epVictim[0] >= 0 {
			nb[epVictim[0]][epVictim[1]] = refCell{seat: -1}
		}
		// find own king
		for kf := range 14 {
			for kr := range 14 {
				if nb[kf][kr].seat == s && nb[kf][kr].kind == King && rp.attackedExcept(&nb, kf, kr, s, victim) {
					return
				}
			}
		}
		m := refSq(f, r) + "-" + refSq(tf, tr)
		if promo {
			m += "=Q"
		}
		out = append(out, m)
	}
	canTake := func(c refCell) bool {
		return c.seat != s || (rp.ownDead && !rp.active(c.seat, c.kind))
	}
	isPromo := func(tf, tr int) bool {
		switch rp.seatEdge[s] {
		case edgeSouth:
			return tr == 7
		case edgeNorth:
			return tr == 6
		case edgeEast:
			return tf == 6
		}
		return tf == 7
	}
	isStart := func(f, r int) bool {
		switch rp.seatEdge[s] {
		case edgeSouth:
			return r == 1
		case edgeNorth:
			return r == 12
		case edgeEast:
			return f == 12
		}
		return f == 1
	}
	none := [2]int{-1, -1}
	for f := range 14 {
		for r := range 14 {
			c := rp.b[f][r]
			if c.seat != s || !rp.active(s, c.kind) {
				continue
			}
			switch c.kind {
			case Pawn:
				tf, tr := f+fw[0], r+fw[1]
				if refOnBoard(tf, tr) && rp.b[tf][tr].seat < 0 {
					tryMove(f, r, tf, tr, isPromo(tf, tr), none)
					if isStart(f, r) && refOnBoard(tf+fw[0], tr+fw[1]) && rp.b[tf+fw[0]][tr+fw[1]].seat < 0 {
						tryMove(f, r, tf+fw[0], tr+fw[1], false, none)
					}
				}
				side := [2]int{fw[1], fw[0]}
				for _, sg := range []int{1, -1} {
					cf, cr := tf+sg*side[0], tr+sg*side[1]
					if !refOnBoard(cf, cr) {
						continue
					}
					t := rp.b[cf][cr]
					if t.seat >= 0 {
						if canTake(t) {
							tryMove(f, r, cf, cr, isPromo(cf, cr), none)
						}
						continue
					}
					if !rp.enPass {
						continue
					}
					for o := range 4 {
						if o == s || rp.ep[o] != [2]int{cf, cr} {
							continue
						}
						v := rp.epPawn[o]
						if pc := rp.b[v[0]][v[1]]; pc.seat == o && pc.kind == Pawn {
							tryMove(f, r, cf, cr, isPromo(cf, cr), v)
							break
						}
					}
				}
			case Knight, King:
				for df := -2; df <= 2; df++ {
					for dr := -2; dr <= 2; dr++ {
						ok := (c.kind == Knight && df*df+dr*dr == 5) || (c.kind == King && max(df*df, dr*dr) == 1)
						tf, tr := f+df, r+dr
						if ok && refOnBoard(tf, tr) && (rp.b[tf][tr].seat < 0 || canTake(rp.b[tf][tr])) {
							tryMove(f, r, tf, tr, false, none)
						}
					}
				}
			default:
				for df := -1; df <= 1; df++ {
					for dr := -1; dr <= 1; dr++ {
						if df == 0 && dr == 0 || (c.kind == Bishop && df*dr == 0) || (c.kind == Rook && df*dr != 0) {
							continue
						}
						for tf, tr := f+df, r+dr; refOnBoard(tf, tr); tf, tr = tf+df, tr+dr {
							if rp.b[tf][tr].seat >= 0 {
								if canTake(rp.b[tf][tr]) {
									tryMove(f, r, tf, tr, false, none)
								}
								break
							}
							tryMove(f, r, tf, tr, false, none)
						}
					}
				}
			}
		}
	}
	out = append(out, rp.castles(s)...)
	slices.Sort(out)
	return out
}

// refCastles lists, per edge, short then long castling as king from, king
// to, rook from, rook to (docs/rules.md section 4.4).
var refCastles = map[edge][2][4]string{
	edgeSouth: {{"h1", "j1", "k1", "i1"}, {"h1", "f1", "d1", "g1"}},
	edgeEast:  {{"n8", "n10", "n11", "n9"}, {"n8", "n6", "n4", "n7"}},
	edgeNorth: {{"g14", "e14", "d14", "f14"}, {"g14", "i14", "k14", "h14"}},
	edgeWest:  {{"a7", "a5", "a4", "a6"}, {"a7", "a9", "a11", "a8"}},
}

func (rp *refPos) castles(s int) []string {
	var out []string
	at := func(name string) (int, int) {
		q, _ := ParseSquare(name)
		return q.File(), q.Rank()
	}
	for side, sq := range refCastles[rp.seatEdge[s]] {
		if rp.castle&castleBit(Seat(s), side == 1) == 0 {
			continue
		}
		kf, kr := at(sq[0])
		tf, tr := at(sq[1])
		rf, rr := at(sq[2])
		pf, pr := at(sq[3])
		if k := rp.b[kf][kr]; k.seat != s || k.kind != King {
			continue
		}
		if rk := rp.b[rf][rr]; rk.seat != s || rk.kind != Rook {
			continue
		}
		sf, sr := (rf-kf)/max(1, abs(rf-kf)), (rr-kr)/max(1, abs(rr-kr))
		ok := true
		for x, y := kf+sf, kr+sr; x != rf || y != rr; x, y = x+sf, y+sr {
			if rp.b[x][y].seat >= 0 {
				ok = false
			}
		}
		if !ok || rp.attacked(&rp.b, kf, kr, s) || rp.attacked(&rp.b, pf, pr, s) || rp.attacked(&rp.b, tf, tr, s) {
			continue
		}
		out = append(out, sq[0]+"-"+sq[1])
	}
	return out
}

func abs(x int) int { return max(x, -x) }

func engineMoves(p *Position, s Seat) []string {
	var l MoveList
	p.LegalMoves(s, &l)
	out := make([]string, 0, l.N)
	for _, m := range l.Moves[:l.N] {
		t := m.From().String() + "-" + m.To().String()
		if m.Promotion() {
			t += "=Q"
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// TestDifferentialAgainstReference compares the legal moves of every seat
// still on the board with the reference generator, over positions reached
// by random play (with resignations, so zombie and dead armies appear).
func TestDifferentialAgainstReference(t *testing.T) {
	t.Parallel()
	games := 6
	if testing.Short() {
		games = 2
	}
	if os.Getenv("RULES_PERFT_DEEP") == "1" {
		games = 60
	}
	for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
		t.Run(rs.Name, func(t *testing.T) {
			t.Parallel()
			positions := 0
			for seed := range uint64(games) {
				g, _ := NewGame(rs, seed, "")
				r := rand.New(rand.NewPCG(seed, 99))
				for !g.Over() && g.Ply() < 300 {
					p := g.pos
					for s := Seat(0); s < NumSeats; s++ {
						if p.status[s] == Out {
							continue
						}
						want := newRefPos(p, rs).legalMoves(int(s))
						got := engineMoves(p, s)
						if !slices.Equal(got, want) {
							t.Fatalf("seed %d ply %d seat %s:\nFEN4 %s\nengine    %v\nreference %v", seed, g.Ply(), s, p.FEN4(), got, want)
						}
					}
					positions++
					if r.IntN(80) == 0 {
						if s := Seat(r.IntN(4)); g.Status(s) == Live {
							_, _ = g.Resign(s)
							continue
						}
					}
					ms := g.LegalMoves(g.ToMove())
					// Prefer captures and pawn moves now and then to reach
					// promotions and en passant sooner.
					m := ms[r.IntN(len(ms))]
					if _, err := g.Play(g.ToMove(), m); err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Logf("%d positions compared", positions)
		})
	}
}

// TestDifferentialOnPerftTrees compares every seat's legal moves with the
// reference at every node of shallow trees from the positions of docs/perft.md,
// which exercise castling (all eight, blocked, through attacked squares),
// promotions and checks from seats that did not move last; under both
// seatings' rules, and with en passant.
func TestDifferentialOnPerftTrees(t *testing.T) {
	t.Parallel()
	depth := 1
	if os.Getenv("RULES_PERFT_DEEP") == "1" {
		depth = 2
	}
	for _, tc := range perftCases {
		for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
			t.Run(tc.name+"/"+rs.Name, func(t *testing.T) {
				t.Parallel()
				p, err := ParseFEN4(rs, tc.fen)
				if err != nil {
					t.Fatal(err)
				}
				var walk func(d int)
				walk = func(d int) {
					for s := Seat(0); s < NumSeats; s++ {
						if p.status[s] == Out {
							continue
						}
						want := newRefPos(p, rs).legalMoves(int(s))
						if got := engineMoves(p, s); !slices.Equal(got, want) {
							t.Fatalf("seat %s in %s:\nengine    %v\nreference %v", s, p.FEN4(), got, want)
						}
					}
					if d == 0 {
						return
					}
					var l MoveList
					p.LegalMoves(p.ToMove(), &l)
					for _, m := range l.Moves[:l.N] {
						u := p.Make(m)
						walk(d - 1)
						p.Unmake(m, u)
					}
				}
				walk(depth)
			})
		}
	}
}
