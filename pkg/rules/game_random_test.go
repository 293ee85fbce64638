package rules

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
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

// TestPlayTextMatchesParseMoveThenPlay plays the same random games twice,
// once with ParseMove and Play and once with PlayText: every move, effect,
// error and the final games are the same.
func TestPlayTextMatchesParseMoveThenPlay(t *testing.T) {
	for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
		for seed := uint64(1); seed <= 12; seed++ {
			a, err := NewGame(rs, seed, "")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := NewGame(rs, seed, "")
			r := rand.New(rand.NewPCG(seed, 77))
			for !a.Over() && a.Ply() < 600 {
				s := a.ToMove()
				if r.IntN(60) == 0 {
					quitter := Seat(r.IntN(4))
					ea, erra := a.Resign(quitter)
					eb, errb := b.Resign(quitter)
					if !reflect.DeepEqual(ea, eb) || (erra == nil) != (errb == nil) {
						t.Fatalf("%s seed %d: resignations differ", rs.Name, seed)
					}
					continue
				}
				var text string
				if r.IntN(5) == 0 {
					// Often not a legal move at all.
					text = fmt.Sprintf("%c%d-%c%d", 'a'+r.IntN(14), 1+r.IntN(14), 'a'+r.IntN(14), 1+r.IntN(14))
				} else {
					ms := a.LegalMoves(s)
					text = a.MoveText(ms[r.IntN(len(ms))])
				}
				var ea Effects
				ma, erra := a.ParseMove(text)
				if erra == nil {
					ea, erra = a.Play(s, ma)
				}
				mb, eb, errb := b.PlayText(s, text)
				if fmt.Sprint(erra) != fmt.Sprint(errb) || !reflect.DeepEqual(ea, eb) || (erra == nil && ma != mb) {
					t.Fatalf("%s seed %d ply %d %q: ParseMove+Play = %v, %+v, %v; PlayText = %v, %+v, %v",
						rs.Name, seed, a.Ply(), text, ma, ea, erra, mb, eb, errb)
				}
			}
			da, _ := a.MarshalBinary()
			db, _ := b.MarshalBinary()
			if !bytes.Equal(da, db) || a.FEN4() != b.FEN4() {
				t.Fatalf("%s seed %d: games differ at the end", rs.Name, seed)
			}
		}
	}
}
