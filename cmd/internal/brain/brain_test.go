package brain

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
)

// playGame plays a whole game locally with one brain per seat and returns
// the result. Every chosen move must be legal.
func playGame(t testing.TB, seed uint64, brains [rules.NumSeats]*Brain) rules.Result {
	t.Helper()
	g, err := rules.NewGame(rules.FourKingdoms(), seed, "")
	if err != nil {
		t.Fatal(err)
	}
	for !g.Over() && g.Ply() < 2000 {
		s := g.ToMove()
		var legal []string
		for _, m := range g.LegalMoves(s) {
			legal = append(legal, g.MoveText(m))
		}
		text, err := brains[s].Choose(Turn{FEN4: g.FEN4(), Seat: s, Legal: legal, Game: "local"})
		if err != nil {
			t.Fatalf("ply %d: %v", g.Ply(), err)
		}
		if !slices.Contains(legal, text) {
			t.Fatalf("ply %d: %s chose %q, not a legal move %v", g.Ply(), s, text, legal)
		}
		m, err := g.ParseMove(text)
		if err != nil {
			t.Fatalf("ply %d: parse %q: %v", g.Ply(), text, err)
		}
		if _, err := g.Play(s, m); err != nil {
			t.Fatalf("ply %d: play %q: %v", g.Ply(), text, err)
		}
	}
	if !g.Over() {
		t.Fatalf("game not over after %d plies", g.Ply())
	}
	return g.Result()
}

func TestEveryLevelPlaysLegalGamesToTheEnd(t *testing.T) {
	t.Parallel()
	for _, level := range Levels() {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			var brains [rules.NumSeats]*Brain
			for i := range brains {
				brains[i] = New(level, rand.New(rand.NewPCG(uint64(i), 7)))
			}
			res := playGame(t, 1, brains)
			t.Logf("points %v, ranking %v, %v", res.Points, res.Ranking, res.Termination)
			if res.Termination == rules.NotOver || res.Termination == rules.Aborted {
				t.Fatalf("termination %v", res.Termination)
			}
		})
	}
}

// The greedy level must beat random players clearly: over several games
// it finishes first far more often than chance (one in four).
func TestGreedyBeatsRandom(t *testing.T) {
	t.Parallel()
	games := 6
	if testing.Short() {
		games = 4
	}
	wins := 0
	for i := range games {
		greedySeat := rules.Seat(i % rules.NumSeats)
		var brains [rules.NumSeats]*Brain
		for s := range brains {
			level := Random
			if rules.Seat(s) == greedySeat {
				level = Greedy
			}
			brains[s] = New(level, rand.New(rand.NewPCG(uint64(i), uint64(s))))
		}
		res := playGame(t, uint64(i), brains)
		if res.Ranking[0] == greedySeat {
			wins++
		}
		t.Logf("game %d: greedy %s, points %v, ranking %v, %v", i, greedySeat, res.Points, res.Ranking, res.Termination)
	}
	if wins*2 < games {
		t.Fatalf("greedy won %d of %d games against random players, want at least half", wins, games)
	}
}

// Whenever greedy (Red, against random players) can capture a king, worth
// 20 points and a player out of the game, it does.
func TestGreedyTakesAnAvailableKing(t *testing.T) {
	t.Parallel()
	g, err := rules.NewGame(rules.FourKingdoms(), 1, "")
	if err != nil {
		t.Fatal(err)
	}
	b := New(Greedy, rand.New(rand.NewPCG(1, 1)))
	r := New(Random, rand.New(rand.NewPCG(2, 2)))
	checked := 0
	for !g.Over() && g.Ply() < 600 {
		s := g.ToMove()
		moves := g.LegalMoves(s)
		var legal []string
		bestCapture := 0
		pos := g.Position()
		for _, m := range moves {
			legal = append(legal, g.MoveText(m))
			if owner, kind, _, ok := pos.PieceAt(m.To()); ok && kind == rules.King && pos.Status(owner) != rules.Out {
				bestCapture = 20
			}
		}
		brain := r
		if s == rules.Red {
			brain = b
		}
		text, err := brain.Choose(Turn{FEN4: g.FEN4(), Seat: s, Legal: legal})
		if err != nil {
			t.Fatal(err)
		}
		m, err := g.ParseMove(text)
		if err != nil {
			t.Fatal(err)
		}
		if s == rules.Red && bestCapture == 20 {
			checked++
			if _, kind, _, _ := pos.PieceAt(m.To()); kind != rules.King {
				t.Fatalf("ply %d: a king capture was available, greedy played %s", g.Ply(), text)
			}
		}
		if _, err := g.Play(s, m); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("king captures available to greedy: %d", checked)
}

func TestChooseFallsBackToTheServersMoves(t *testing.T) {
	t.Parallel()
	for _, level := range Levels() {
		b := New(level, rand.New(rand.NewPCG(3, 3)))
		got, err := b.Choose(Turn{FEN4: "not a position", Seat: rules.Red, Legal: []string{"h2-h3"}})
		if err != nil || got != "h2-h3" {
			t.Errorf("%s: Choose = %q, %v; want the only server move", level, got, err)
		}
		if _, err := b.Choose(Turn{FEN4: "not a position", Seat: rules.Red}); err == nil {
			t.Errorf("%s: Choose without position or moves succeeded", level)
		}
	}
}

func BenchmarkGreedyChoose(b *testing.B) {
	g, err := rules.NewGame(rules.FourKingdoms(), 1, "")
	if err != nil {
		b.Fatal(err)
	}
	// A middlegame position: 40 random plies from the start.
	rng := rand.New(rand.NewPCG(9, 9))
	for g.Ply() < 40 && !g.Over() {
		ms := g.LegalMoves(g.ToMove())
		if _, err := g.Play(g.ToMove(), ms[rng.IntN(len(ms))]); err != nil {
			b.Fatal(err)
		}
	}
	turn := Turn{FEN4: g.FEN4(), Seat: g.ToMove()}
	br := New(Greedy, rand.New(rand.NewPCG(1, 1)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.Choose(turn); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "choices/s")
}
