package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

// BenchmarkApply measures the store alone: batches of 256 matches among
// `players` players applied by one caller. It reports matches/s and the CPU
// time Redis and this process spend per match.
func BenchmarkApply(b *testing.B) {
	for _, players := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("players=%d", players), func(b *testing.B) {
			rdb, _ := redistest.Standalone(b)
			s := New(rdb, ladder.DefaultPolicy(), Config{Prefix: redistest.Prefix(b), Retention: DefaultRetention()})
			rng := rand.New(rand.NewPCG(1, 2))
			const batch = 256
			n := 0
			b.ReportAllocs()
			var goCPU, redisCPU time.Duration
			for b.Loop() {
				b.StopTimer()
				results := make([]ladder.Result, batch)
				for i := range results {
					order := make([]string, 0, 4)
					for len(order) < 4 {
						id := fmt.Sprintf("player-%07d", rng.IntN(players))
						if !slices.Contains(order, id) {
							order = append(order, id)
						}
					}
					results[i] = result(b, fmt.Sprintf("match-%09d", n), pool, order...)
					n++
				}
				g0, r0 := redistest.ProcessCPU(b), redistest.ServerCPU(b, rdb)
				b.StartTimer()
				if _, err := s.Apply(context.Background(), results); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				goCPU += redistest.ProcessCPU(b) - g0
				redisCPU += redistest.ServerCPU(b, rdb) - r0
				b.StartTimer()
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "matches/s")
			b.ReportMetric(float64(redisCPU.Microseconds())/float64(n), "redis-cpu-µs/match")
			b.ReportMetric(float64(goCPU.Microseconds())/float64(n), "go-cpu-µs/match")
			b.ReportMetric(0, "ns/op")
		})
	}
}
