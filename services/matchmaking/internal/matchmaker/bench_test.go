package matchmaker

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/queues"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// BenchmarkFormAll queues 100,000 tickets (display ratings normal around
// 1500 with σ 350, a fifth provisional, enqueued uniformly over the last
// 60 s) and measures the formation rounds that match them: claim scripts,
// concurrent CreateMatch calls to an in-process idempotent fake, and
// completion scripts, all against real Redis. Enqueueing is not timed.
//
//	go test -run '^$' -bench BenchmarkFormAll -benchtime 3x ./internal/matchmaker
func BenchmarkFormAll(b *testing.B) {
	for _, kind := range redistest.Kinds() {
		b.Run(kind.Name, func(b *testing.B) { benchFormAll(b, kind, 100_000) })
	}
}

func benchFormAll(b *testing.B, kind redistest.Kind, n int) {
	rdb, basePrefix := kind.Client(b)
	q := queues.Queue{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}}
	cfg := testConfig
	cfg.RatingBatch = n // the in-process fake has no batch limit
	cfg.Concurrency = 128
	var formTime time.Duration
	var formed, left int
	var waits []time.Duration
	var spreads []float64
	run := 0
	b.ReportAllocs()
	for b.Loop() {
		run++
		st := store.New(rdb, fmt.Sprintf("%sr%d:", basePrefix, run), []string{q.Name()}, testStoreSettings)
		ratings := &fakeRatings{ratings: make(map[string]Rating, n)}
		matches := newFakeMatches()
		rng := rand.New(rand.NewPCG(uint64(run), 99))
		now := time.Now()
		type tk struct {
			p   store.Player
			at  time.Time
			rat Rating
		}
		all := make([]tk, n)
		for i := range all {
			all[i] = tk{
				p:   store.Player{ID: fmt.Sprintf("r%dp%d", run, i), DisplayName: "p"},
				at:  now.Add(-time.Duration(rng.IntN(60_000)) * time.Millisecond),
				rat: Rating{Value: math.Round(1500 + rng.NormFloat64()*350), Provisional: rng.IntN(5) == 0},
			}
			ratings.ratings[all[i].p.ID] = all[i].rat
		}
		var wg sync.WaitGroup
		work := make(chan tk)
		for range 64 {
			wg.Go(func() {
				for t := range work {
					if _, _, err := st.Enqueue(context.Background(), q.Name(), t.p, t.at); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for _, t := range all {
			work <- t
		}
		close(work)
		wg.Wait()

		m := New(cfg, st, ratings, matches, noop.Meter{}, discard())
		// The matchmaker's clock starts at the moment the queue was
		// sampled, so waits do not include the untimed enqueueing.
		start := time.Now()
		m.now = func() time.Time { return now.Add(time.Since(start)) }
		matches.now = m.now
		formed = 0
		for {
			res, err := m.Round(context.Background(), q)
			if err != nil {
				b.Fatal(err)
			}
			formed += res.Formed
			if res.Formed == 0 {
				break
			}
		}
		formTime += time.Since(start)
		left = n - 4*formed

		// Distributions of the last run: waits at match time, and group
		// rating spreads.
		waits, spreads = waits[:0], spreads[:0]
		groups := map[string][]float64{}
		for _, t := range all {
			mid, ok := matches.players[t.p.ID]
			if !ok {
				continue
			}
			groups[mid] = append(groups[mid], t.rat.Value)
			waits = append(waits, matches.created[mid].Sub(t.at))
		}
		for _, rs := range groups {
			spreads = append(spreads, slices.Max(rs)-slices.Min(rs))
		}
	}
	b.ReportMetric(float64(formed)*float64(b.N)/formTime.Seconds(), "matches/s")
	b.ReportMetric(formTime.Seconds()/float64(b.N), "s/100k-queue")
	b.ReportMetric(float64(left), "unmatched")
	slices.Sort(waits)
	slices.Sort(spreads)
	pct := func(p float64, n int) int { return min(int(math.Ceil(p*float64(n)))-1, n-1) }
	if len(spreads) > 0 {
		b.ReportMetric(spreads[pct(0.5, len(spreads))], "spread-p50")
		b.ReportMetric(spreads[pct(0.9, len(spreads))], "spread-p90")
		b.ReportMetric(spreads[pct(0.99, len(spreads))], "spread-p99")
		b.ReportMetric(spreads[len(spreads)-1], "spread-max")
	}
	if len(waits) > 0 {
		b.ReportMetric(waits[pct(0.5, len(waits))].Seconds(), "wait-p50-s")
		b.ReportMetric(waits[pct(0.9, len(waits))].Seconds(), "wait-p90-s")
		b.ReportMetric(waits[pct(0.99, len(waits))].Seconds(), "wait-p99-s")
	}
}
