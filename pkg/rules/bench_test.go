package rules

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkPerft measures move generation and make/unmake: perft(4) from
// the starting position per iteration (152,050 leaves). Run it with
// -cpu 1; it reports nodes/s and must report 0 allocs/op.
func BenchmarkPerft(b *testing.B) {
	p := NewPosition(FourKingdoms())
	b.ReportAllocs()
	var nodes uint64
	for b.Loop() {
		nodes += p.Perft(4)
	}
	b.ReportMetric(float64(nodes)/b.Elapsed().Seconds(), "nodes/s")
}

// BenchmarkPerft5 is the deeper variant for a steadier number.
func BenchmarkPerft5(b *testing.B) {
	p := NewPosition(FourKingdoms())
	b.ReportAllocs()
	var nodes uint64
	for b.Loop() {
		nodes += p.Perft(5)
	}
	b.ReportMetric(float64(nodes)/b.Elapsed().Seconds(), "nodes/s")
}

// BenchmarkPlay measures applying a move with the full game logic (capture
// points, checks, immediate mate tests for the other seats, end checks):
// each iteration replays the same 200-ply random game; ns/move and
// allocs/move are reported.
func BenchmarkPlay(b *testing.B) {
	g, _ := NewGame(FourKingdoms(), 1, "")
	r := rand.New(rand.NewPCG(1, 1))
	var moves []Move
	for g.Ply() < 200 && !g.Over() {
		ms := g.LegalMoves(g.ToMove())
		m := ms[r.IntN(len(ms))]
		moves = append(moves, m)
		if _, err := g.Play(g.ToMove(), m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		g, _ := NewGame(FourKingdoms(), 1, "")
		for _, m := range moves {
			if _, err := g.Play(g.ToMove(), m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(moves)), "ns/move")
}
