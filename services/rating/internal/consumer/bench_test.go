package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// BenchmarkConsume measures events applied per second end to end: entries
// already in the stream are read by the consumer group, decoded, rated,
// applied by the Lua step and acknowledged. Each iteration publishes a
// fresh chunk (not timed) and times the consumers until the group is
// drained. 1,000,000 players in one pool (a service at 20,000 matches per
// second has far more), so concurrent batches rarely share a player.
//
// Two cases:
//   - players=new: nobody has a rating yet, so almost every update creates
//     the player's history list and standing (the worst case for key
//     creation; nobody is listed on the leaderboard yet).
//   - players=rated: every player already has a rating and a history and
//     is listed on the leaderboard (prepared, untimed, by applying 250,000
//     matches; the policy lists players after one game, standing in for
//     established players), so every update changes existing data and
//     moves leaderboard entries: the steady state of a running service.
func BenchmarkConsume(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for _, rated := range []bool{false, true} {
				name := "players=new"
				if rated {
					name = "players=rated"
				}
				b.Run(name, func(b *testing.B) {
					rdb, _ := redistest.Standalone(b)
					benchConsume(b, rdb, workers, rated)
				})
			}
		})
	}
}

const benchPlayers = 1_000_000

func benchPlayer(i int) string { return fmt.Sprintf("player-%07d", i) }

// seedPlayers gives every benchmark player a rating: 250,000 matches of
// four players each, applied directly through the store.
func seedPlayers(b *testing.B, st *store.Store) {
	const batch = 1024
	matches := benchPlayers / 4
	// Two appliers, each taking the next batch of matches.
	var next atomic.Int64
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for {
				start := int(next.Add(batch)) - batch
				if start >= matches {
					return
				}
				results := make([]ladder.Result, 0, batch)
				for m := start; m < min(start+batch, matches); m++ {
					res, err := FromEvent(event(fmt.Sprintf("seed-%07d", m), pool, benchPlayer(4*m), benchPlayer(4*m+1), benchPlayer(4*m+2), benchPlayer(4*m+3)))
					if err != nil {
						errs[w] = err
						return
					}
					results = append(results, res)
				}
				if _, err := st.Apply(context.Background(), results); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
}

func benchConsume(b *testing.B, rdb redis.UniversalClient, workers int, rated bool) {
	const chunk = 20_000
	prefix := redistest.Prefix(b)
	cfg := DefaultConfig()
	cfg.Stream, cfg.DeadLetter = prefix+"events", prefix+"dead"
	cfg.Workers = workers
	cfg.Block = 20 * time.Millisecond
	policy := ladder.DefaultPolicy()
	if rated {
		policy.ProvisionalGames, policy.ProvisionalSigma = 1, 100
	}
	st := store.New(rdb, policy, store.Config{Prefix: prefix, Retention: store.DefaultRetention()})
	if rated {
		seedPlayers(b, st)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	next := 0
	publish := func() {
		pipe := rdb.Pipeline()
		for range chunk {
			order := make([]string, 0, 4)
			for len(order) < 4 {
				id := benchPlayer(rng.IntN(benchPlayers))
				if !slices.Contains(order, id) {
					order = append(order, id)
				}
			}
			pipe.XAdd(context.Background(), &redis.XAddArgs{Stream: cfg.Stream, Values: entry(event(fmt.Sprintf("match-%08d", next), pool, order...))})
			next++
			if pipe.Len() == 1000 {
				if _, err := pipe.Exec(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := pipe.Exec(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	drained := func(total int) bool {
		groups, err := rdb.XInfoGroups(context.Background(), cfg.Stream).Result()
		if err != nil {
			b.Fatal(err)
		}
		return len(groups) == 1 && groups[0].EntriesRead >= int64(total) && groups[0].Pending == 0 && groups[0].Lag == 0
	}
	c, err := New(rdb, st, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	total := 0
	var goCPU, redisCPU time.Duration // spent while timed
	stats := make(cmdStats)
	for b.Loop() {
		b.StopTimer()
		publish()
		total += chunk
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		g0, r0 := redistest.ProcessCPU(b), redistest.ServerCPU(b, rdb)
		s0 := commandStats(b, rdb)
		b.StartTimer()
		go func() { done <- c.Run(ctx) }()
		for !drained(total) {
			time.Sleep(2 * time.Millisecond)
		}
		b.StopTimer()
		goCPU += redistest.ProcessCPU(b) - g0
		redisCPU += redistest.ServerCPU(b, rdb) - r0
		stats.add(commandStats(b, rdb), s0)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	// Wall-clock throughput depends on everything else the machine runs;
	// the CPU cost per event does much less. On a dedicated machine the
	// throughput is bounded by about 1e6 / max(redis-µs/event, go-µs/event
	// per core).
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(redisCPU.Microseconds())/float64(total), "redis-cpu-µs/event")
	b.ReportMetric(float64(goCPU.Microseconds())/float64(total), "go-cpu-µs/event")
	b.ReportMetric(0, "ns/op")
	mem, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	used, _, _ := strings.Cut(mem[strings.Index(mem, "used_memory:")+len("used_memory:"):], "\r\n")
	b.Logf("Redis per event (%d events, %.1f µs CPU): %s; used_memory %s", total, float64(redisCPU.Microseconds())/float64(total), stats.perEvent(total), used)
}

// cmdStats is INFO commandstats: per command, its calls and the
// microseconds spent executing it (not reading or writing the network).
type cmdStats map[string][2]float64

// commandStats returns the server's commandstats so far.
func commandStats(b *testing.B, rdb redis.UniversalClient) cmdStats {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := make(cmdStats)
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		var v [2]float64
		for _, f := range strings.Split(rest, ",") {
			k, x, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				v[0], _ = strconv.ParseFloat(x, 64)
			case "usec":
				v[1], _ = strconv.ParseFloat(x, 64)
			}
		}
		out[name] = v
	}
	return out
}

// add adds the difference after - before to s.
func (s cmdStats) add(after, before cmdStats) {
	for k, v := range after {
		w := before[k]
		s[k] = [2]float64{s[k][0] + v[0] - w[0], s[k][1] + v[1] - w[1]}
	}
}

// perEvent formats s per event: command µs (calls), biggest first.
func (s cmdStats) perEvent(events int) string {
	names := make([]string, 0, len(s))
	var sum float64
	for k, v := range s {
		if v[0] > 0 {
			names = append(names, k)
			sum += v[1]
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(s[b][1], s[a][1]) })
	var sb strings.Builder
	fmt.Fprintf(&sb, "commands %.1f µs:", sum/float64(events))
	for _, k := range names {
		fmt.Fprintf(&sb, " %s %.2f µs (%.3f calls)", k, s[k][1]/float64(events), s[k][0]/float64(events))
	}
	return sb.String()
}
