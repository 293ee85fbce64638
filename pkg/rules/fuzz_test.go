package rules

import (
	"math/rand/v2"
	"testing"
)

func FuzzFEN4(f *testing.F) {
	for _, c := range perftCases {
		f.Add(c.fen)
	}
	f.Add(StartFEN4 + "-{zombie:0,1,0,0;frozen:,3,,;promoted:;ep:,,,}")
	f.Add("R-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-x,x,x,yK,10/14/14/14/14/14/14/14/14/14/14/14/14/3,rK,10")
	// The site's own block, before the board (TestSiteFEN4).
	f.Add("G-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-{'enPassant':('j3:j4','','',''),'resigned':(false,true,false,false),'uniquify':1}-" +
		"6,yK,7/14/14/14/14/14/bK,12,gK/14/14/14/9,rP,gP,3/14/14/7,rK,6")
	f.Fuzz(func(t *testing.T, text string) {
		for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
			p, err := ParseFEN4(rs, text)
			if err != nil {
				continue
			}
			checkFENRoundTrip(t, rs, p)
		}
	})
}

// FuzzPGN4 checks that any record that imports exports to a record that
// imports to the same game and exports identically. Executions are slow
// enough that minimization dominates: run with -fuzzminimizetime 1x.
func FuzzPGN4(f *testing.F) {
	g := playRandomNoT(FourKingdoms(), 3, 120)
	f.Add(g.PGN4(nil))
	g = playRandomNoT(ChesscomFFA(), 4, 120)
	f.Add(g.PGN4([]Tag{{"Event", "x"}}))
	f.Add("[RuleVariants \"DeadKingWalking EnPassant PromoteTo=D\"]\n\n1. f2-f3 .. b4-d4 .. g13-g12 .. m8-l8\n2. k2-k4R .. R .. T")
	// A leave that mates at once (TestReplayLeaveMate).
	f.Add("[RuleVariants \"DeadKingWalking\"]\n[StartFen4 \"B-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-10,yK,3/14/14/rR,rR,12/14/14/13,gK/2,bB,11/14/14/bK,13/14/14/7,rK,6\"]\n\n1. R# .. Kk14-j14")
	f.Fuzz(func(t *testing.T, text string) {
		rec, err := ParsePGN4(text, nil)
		if err != nil {
			return
		}
		out := rec.Game.PGN4(nil)
		again, err := ParsePGN4(out, nil)
		if err != nil {
			t.Fatalf("re-import of export failed: %v\n%s", err, out)
		}
		assertSameGame(t, rec.Game, again.Game)
		if again.Game.PGN4(nil) != out {
			t.Fatal("export not stable")
		}
	})
}

// playRandomNoT is playRandom for seed corpora (no testing.TB needed).
func playRandomNoT(rs RuleSet, seed uint64, plies int) *Game {
	g, _ := NewGame(rs, seed, "")
	r := rand.New(rand.NewPCG(seed, 1))
	for !g.Over() && g.Ply() < plies {
		if r.IntN(50) == 0 {
			_, _ = g.Resign(Seat(r.IntN(4)))
			continue
		}
		ms := g.LegalMoves(g.ToMove())
		_, _ = g.Play(g.ToMove(), ms[r.IntN(len(ms))])
	}
	return g
}

// FuzzMakeUnmake walks random move sequences and checks that Unmake
// restores the position exactly and that the incremental hash matches one
// computed from scratch.
func FuzzMakeUnmake(f *testing.F) {
	f.Add(uint64(1), uint16(200), false)
	f.Add(uint64(2), uint16(400), true)
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16, chesscom bool) {
		rs := FourKingdoms()
		if chesscom {
			rs = ChesscomFFA()
		}
		p := NewPosition(rs)
		r := rand.New(rand.NewPCG(seed, 2))
		var l MoveList
		for range int(steps % 600) {
			l.N = 0
			p.LegalMoves(p.ToMove(), &l)
			if l.N == 0 {
				return
			}
			for _, m := range l.Moves[:l.N] {
				before := *p
				u := p.Make(m)
				if p.hash != p.computeHash() {
					t.Fatalf("incremental hash wrong after %s", m)
				}
				p.Unmake(m, u)
				assertSamePosition(t, &before, p, m)
			}
			p.Make(l.Moves[r.IntN(l.N)])
		}
	})
}

func assertSamePosition(t *testing.T, want, got *Position, m Move) {
	t.Helper()
	if want.board != got.board || want.king != got.king || want.castle != got.castle || want.ep != got.ep ||
		want.epPawn != got.epPawn || want.toMove != got.toMove || want.hash != got.hash || want.halfmove != got.halfmove ||
		want.count != got.count {
		t.Fatalf("unmake of %s did not restore the position:\n%s\n%s", m, want.FEN4(), got.FEN4())
	}
	for s := range NumSeats {
		for i, q := range got.list[s][:got.count[s]] {
			if got.idx[q] != uint8(i) || pieceSeat(got.board[q]) != Seat(s) || got.board[q] == empty {
				t.Fatalf("piece list of %s broken after unmake of %s", Seat(s), m)
			}
		}
	}
}

// FuzzRandomGame applies random legal sequences with resignations and time
// losses: nothing panics and the bookkeeping stays consistent.
func FuzzRandomGame(f *testing.F) {
	f.Add(uint64(1), false)
	f.Add(uint64(9), true)
	f.Fuzz(func(t *testing.T, seed uint64, chesscom bool) {
		rs := FourKingdoms()
		if chesscom {
			rs = ChesscomFFA()
		}
		g, err := NewGame(rs, seed, "")
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 5))
		for !g.Over() && g.Ply() < 1500 {
			switch r.IntN(40) {
			case 0:
				_, _ = g.Resign(Seat(r.IntN(4)))
				continue
			case 1:
				_, _ = g.TimeOut(Seat(r.IntN(4)))
				continue
			}
			ms := g.LegalMoves(g.ToMove())
			if len(ms) == 0 {
				t.Fatalf("no legal moves for live %s in a running game", g.ToMove())
			}
			if _, err := g.Play(g.ToMove(), ms[r.IntN(len(ms))]); err != nil {
				t.Fatal(err)
			}
		}
		if g.pos.hash != g.pos.computeHash() {
			t.Fatal("hash drifted")
		}
		_ = g.Result()
	})
}

// FuzzUnmarshalBinary: no input panics, and whatever decodes re-encodes to
// a game that decodes the same.
func FuzzUnmarshalBinary(f *testing.F) {
	for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
		g := playRandomNoT(rs, 5, 80)
		data, _ := g.MarshalBinary()
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var g Game
		if err := g.UnmarshalBinary(data); err != nil {
			return
		}
		again, err := g.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var h Game
		if err := h.UnmarshalBinary(again); err != nil {
			t.Fatal(err)
		}
		assertSameGame(t, &g, &h)
	})
}
