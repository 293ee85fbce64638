package rules

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestGivenZombieMovesReplaySeededGames plays random games with seeded
// zombies (resignations and time losses now and then) and replays each
// step in a game whose zombie moves are given: the player's move with
// PlayText, each zombie move of its effects with PlayZombie, leaves with
// Resign and TimeOut. After every step both games agree on everything a
// client can see, and the effects add up to the same moves and events.
func TestGivenZombieMovesReplaySeededGames(t *testing.T) {
	t.Parallel()
	for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
		t.Run(rs.Name, func(t *testing.T) {
			t.Parallel()
			zombieMoves := 0
			for seed := range uint64(12) {
				zombieMoves += replaySeeded(t, rs, seed)
			}
			if zombieMoves < 100 {
				t.Fatalf("only %d zombie moves replayed: the games do not exercise PlayZombie", zombieMoves)
			}
		})
	}
}

// replaySeeded plays one random seeded game, replays it step by step and
// returns the number of zombie moves replayed.
func replaySeeded(t *testing.T, rs RuleSet, seed uint64) int {
	t.Helper()
	g, err := NewGame(rs, seed, "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewGameGivenZombieMoves(rs, "")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	zombieMoves := 0
	for !g.Over() && g.Ply() < 1500 {
		var want, got Effects
		if rng.IntN(40) == 0 {
			s := Seat(rng.IntN(NumSeats))
			if g.Status(s) != Live {
				continue
			}
			leave := func(g *Game) (Effects, error) { return g.Resign(s) }
			if rng.IntN(2) == 0 {
				leave = func(g *Game) (Effects, error) { return g.TimeOut(s) }
			}
			if want, err = leave(g); err != nil {
				t.Fatal(err)
			}
			if got, err = leave(r); err != nil {
				t.Fatal(err)
			}
		} else {
			s := g.ToMove()
			ms := g.LegalMoves(s)
			if want, err = g.Play(s, ms[rng.IntN(len(ms))]); err != nil {
				t.Fatal(err)
			}
			if _, got, err = r.PlayText(s, want.Moves[0].Text); err != nil {
				t.Fatalf("seed %d ply %d: live move %s: %v", seed, r.Ply(), want.Moves[0].Text, err)
			}
		}
		// The seeded game played the zombie moves at once; the given game
		// stops before each and takes it from the seeded game's effects.
		for _, zm := range want.Moves[len(got.Moves):] {
			if r.Over() || r.ToMove() != zm.Seat || r.Status(zm.Seat) != Zombie {
				t.Fatalf("seed %d ply %d: given game waits for %s (%s, over %v), the seeded game's zombie %s moved",
					seed, r.Ply(), r.ToMove(), r.Status(r.ToMove()), r.Over(), zm.Seat)
			}
			_, eff, err := r.PlayZombie(zm.Seat, zm.Text)
			if err != nil {
				t.Fatalf("seed %d ply %d: zombie move %s: %v", seed, r.Ply(), zm.Text, err)
			}
			got.Moves = append(got.Moves, eff.Moves...)
			got.Events = append(got.Events, eff.Events...)
			got.GameOver = got.GameOver || eff.GameOver
			zombieMoves++
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d ply %d: effects differ\ngiven:  %+v\nseeded: %+v", seed, g.Ply(), got, want)
		}
		sameVisibleGame(t, r, g)
	}
	if !g.Over() {
		return zombieMoves
	}
	if !reflect.DeepEqual(r.Result(), g.Result()) {
		t.Fatalf("seed %d: results differ: given %+v, seeded %+v", seed, r.Result(), g.Result())
	}
	return zombieMoves
}

func sameVisibleGame(t *testing.T, got, want *Game) {
	t.Helper()
	if got.FEN4() != want.FEN4() || got.Ply() != want.Ply() || got.Over() != want.Over() ||
		got.Points() != want.Points() || got.ResultPoints() != want.ResultPoints() {
		t.Fatalf("games differ at ply %d:\ngiven  %s (over %v)\nseeded %s (over %v)", want.Ply(), got.FEN4(), got.Over(), want.FEN4(), want.Over())
	}
}

// TestPlayZombieRefuses: PlayZombie plays only a move the zombie to move
// may make, and a refusal changes nothing.
func TestPlayZombieRefuses(t *testing.T) {
	t.Parallel()
	const armies = "rK:h1 rQ:g1 rR:d1 rP:g2 rP:h2 bK:n8 bQ:n7 bR:n4 bP:m7 bP:m8 " +
		"yK:g14 yQ:h14 yR:k14 yP:g13 yP:h13 gK:a7 gQ:a8 gR:a11 gP:b7 gP:b8"
	for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
		t.Run(rs.Name, func(t *testing.T) {
			t.Parallel()
			g, err := NewGameGivenZombieMoves(rs, fen(t, "R", "", armies, ""))
			if err != nil {
				t.Fatal(err)
			}
			// Yellow resigns out of turn; Red and Blue move; the game then
			// waits for Yellow's zombie move.
			if _, err := g.Resign(Yellow); err != nil {
				t.Fatal(err)
			}
			for _, s := range []Seat{Red, Blue} {
				if _, _, err := g.PlayText(s, g.MoveText(g.LegalMoves(s)[0])); err != nil {
					t.Fatal(err)
				}
			}
			if g.ToMove() != Yellow || g.Status(Yellow) != Zombie || g.Over() {
				t.Fatalf("%s (%s) to move, want Yellow's zombie waiting for its given move", g.ToMove(), g.Status(g.ToMove()))
			}
			var ml MoveList
			g.Position().LegalMoves(Yellow, &ml)
			if ml.N == 0 {
				t.Fatalf("Yellow's zombie cannot move in %s", g.FEN4())
			}
			zombieMove := g.MoveText(ml.Moves[0])
			before := g.FEN4()
			tests := []struct {
				name string
				seat Seat
				text string
				want error
			}{
				{"a live seat", Green, "b7-c7", ErrNotZombie},
				{"a seat out of range", Seat(9), "g13-g12", ErrBadSeat},
				{"not a move of the zombie", Yellow, "g14-g10", ErrIllegalMove},
				{"unreadable", Yellow, "zz", ErrBadMoveText},
			}
			if rs.Zombie == ZombieKingOnly {
				tests = append(tests, struct {
					name string
					seat Seat
					text string
					want error
				}{"a dead queen of a king-only zombie (free to move in its army's frame)", Yellow, "Qh14-i14", ErrIllegalMove})
			}
			for _, tt := range tests {
				if _, _, err := g.PlayZombie(tt.seat, tt.text); !errors.Is(err, tt.want) {
					t.Errorf("%s: PlayZombie(%s, %q) = %v, want %v", tt.name, tt.seat, tt.text, err, tt.want)
				}
				if g.FEN4() != before {
					t.Fatalf("%s: a refused PlayZombie changed the game", tt.name)
				}
			}
			// The live players wait for the zombie.
			if _, _, err := g.PlayText(Red, "h2-h3"); !errors.Is(err, ErrNotYourTurn) {
				t.Errorf("Red before Yellow's zombie move: %v, want ErrNotYourTurn", err)
			}
			_, eff, err := g.PlayZombie(Yellow, zombieMove)
			if err != nil {
				t.Fatalf("PlayZombie(Yellow, %q): %v", zombieMove, err)
			}
			if len(eff.Moves) != 1 || !eff.Moves[0].Zombie || eff.Moves[0].Seat != Yellow || g.Status(g.ToMove()) != Live {
				t.Fatalf("effects %+v, %s to move: want one zombie move of Yellow, then a live player's turn", eff, g.ToMove())
			}
		})
	}
}

// TestPlayZombieNeedsGivenZombieMoves: a seeded game plays its zombies
// itself and refuses a given zombie move.
func TestPlayZombieNeedsGivenZombieMoves(t *testing.T) {
	t.Parallel()
	g, err := NewGame(FourKingdoms(), 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resign(Red); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.PlayZombie(Red, "h2-h3"); !errors.Is(err, ErrNotZombie) {
		t.Fatalf("PlayZombie in a seeded game = %v, want ErrNotZombie", err)
	}
}
