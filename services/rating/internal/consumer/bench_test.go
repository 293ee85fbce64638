package consumer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
// drained. 1,000,000 players in one pool (a service at 20,000 matches per second
// has far more), so concurrent batches rarely share a player.
func BenchmarkConsume(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			rdb, _ := redistest.Standalone(b)
			benchConsume(b, rdb, workers)
		})
	}
}

func benchConsume(b *testing.B, rdb redis.UniversalClient, workers int) {
	const chunk = 20_000
	const players = 1_000_000
	prefix := redistest.Prefix(b)
	cfg := DefaultConfig()
	cfg.Stream, cfg.DeadLetter = prefix+"events", prefix+"dead"
	cfg.Workers = workers
	cfg.Block = 20 * time.Millisecond
	st := store.New(rdb, ladder.DefaultPolicy(), prefix)
	rng := rand.New(rand.NewPCG(1, 1))
	next := 0
	publish := func() {
		pipe := rdb.Pipeline()
		for range chunk {
			order := make([]string, 0, 4)
			for len(order) < 4 {
				id := fmt.Sprintf("player-%07d", rng.IntN(players))
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
	c, err := New(rdb, st, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	total := 0
	var goCPU, redisCPU time.Duration // spent while timed
	for b.Loop() {
		b.StopTimer()
		publish()
		total += chunk
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		g0, r0 := processCPU(b), redisCPUTime(b, rdb)
		b.StartTimer()
		go func() { done <- c.Run(ctx) }()
		for !drained(total) {
			time.Sleep(2 * time.Millisecond)
		}
		b.StopTimer()
		goCPU += processCPU(b) - g0
		redisCPU += redisCPUTime(b, rdb) - r0
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
}

// processCPU returns the CPU time (user + system) of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPUTime returns the CPU time of the Redis server so far (INFO cpu).
func redisCPUTime(b *testing.B, rdb redis.UniversalClient) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += x
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}
