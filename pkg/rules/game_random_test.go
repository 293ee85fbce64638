package rules

import (
	"math/rand/v2"
	"testing"
)

// playRandom plays a random game: live players pick uniform random legal
// moves, and now and then a live player resigns or runs out of time.
func playRandom(t testing.TB, rs RuleSet, seed uint64, maxPly int) *Game {
	t.Helper()
	g, err := NewGame(rs, seed, "")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	for !g.Over() && g.Ply() < maxPly {
		if r.IntN(60) == 0 {
			s := Seat(r.IntN(NumSeats))
			if g.Status(s) == Live {
				if _, err := g.Resign(s); err != nil {
					t.Fatalf("resign %s: %v", s, err)
				}
				continue
			}
		}
		s := g.ToMove()
		ms := g.LegalMoves(s)
		if len(ms) == 0 {
			t.Fatalf("ply %d: live seat %s to move has no legal moves in a running game\n%s", g.Ply(), s, g.FEN4())
		}
		if _, err := g.Play(s, ms[r.IntN(len(ms))]); err != nil {
			t.Fatalf("play: %v", err)
		}
	}
	return g
}

func TestRandomGames(t *testing.T) {
	t.Parallel()
	for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
		t.Run(rs.Name, func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(40) {
				g := playRandom(t, rs, seed, 2000)
				_ = g.Result()
			}
		})
	}
}
