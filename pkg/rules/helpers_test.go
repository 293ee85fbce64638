package rules

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fen builds a FEN4 string: toMove is "R", "B", "Y" or "G"; header holds
// the fields after it (out, short, long, points, ply clock) or "" for
// none out, no castling, no points, clock 0; pieces lists "rK:h1"-style
// placements separated by spaces; ext is the optional {...} block body.
func fen(t testing.TB, toMove, header, pieces, ext string) string {
	t.Helper()
	if header == "" {
		header = "0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0"
	}
	var grid [14][14]string
	for _, pl := range strings.Fields(pieces) {
		pc, sq, ok := strings.Cut(pl, ":")
		if !ok {
			t.Fatalf("bad placement %q", pl)
		}
		q, err := ParseSquare(sq)
		if err != nil {
			t.Fatal(err)
		}
		grid[q.Rank()][q.File()] = pc
	}
	var rows []string
	for r := 13; r >= 0; r-- {
		var toks []string
		run := 0
		for f := range 14 {
			if grid[r][f] == "" {
				run++
				continue
			}
			if run > 0 {
				toks = append(toks, strconv.Itoa(run))
				run = 0
			}
			toks = append(toks, grid[r][f])
		}
		if run > 0 {
			toks = append(toks, strconv.Itoa(run))
		}
		rows = append(rows, strings.Join(toks, ","))
	}
	s := toMove + "-" + header + "-" + strings.Join(rows, "/")
	if ext != "" {
		s += "-{" + ext + "}"
	}
	return s
}

func mustGame(t testing.TB, rs RuleSet, fen4 string) *Game {
	t.Helper()
	g, err := NewGame(rs, 1, fen4)
	if err != nil {
		t.Fatalf("NewGame(%s): %v", fen4, err)
	}
	return g
}

// play parses and plays text for the seat to move.
func play(t testing.TB, g *Game, text string) Effects {
	t.Helper()
	m, err := g.ParseMove(text)
	if err != nil {
		t.Fatalf("parse %q (%s to move): %v\n%s", text, g.ToMove(), err, g.FEN4())
	}
	eff, err := g.Play(g.ToMove(), m)
	if err != nil {
		t.Fatalf("play %q: %v", text, err)
	}
	return eff
}

func moveTexts(g *Game, s Seat) []string {
	var out []string
	for _, m := range g.LegalMoves(s) {
		out = append(out, m.String())
	}
	return out
}

func hasMove(g *Game, s Seat, text string) bool { return slices.Contains(moveTexts(g, s), text) }

// redFrame maps a square named in Red's frame to the square of the army on
// seat s's edge under rule set rs.
func redFrame(t testing.TB, rs RuleSet, s Seat, name string) string {
	t.Helper()
	q, err := ParseSquare(name)
	if err != nil {
		t.Fatal(err)
	}
	e := rs.Seating.geometry().edge[s]
	f, r := e.transform(q.File(), q.Rank())
	return SquareAt(f, r).String()
}
