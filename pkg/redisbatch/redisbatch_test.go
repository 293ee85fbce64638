package redisbatch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisbatch"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestConcurrentCallersGetTheirOwnReplies: many callers INCR shared
// counters (on different cluster nodes) and hit errors at random; every
// reply belongs to its own command, so each counter hands out every value
// exactly once and each failing command fails alone.
func TestConcurrentCallersGetTheirOwnReplies(t *testing.T) {
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := k.Client(t)
			b := redisbatch.New(rdb, redisbatch.Config{Senders: 2, MaxBatch: 16})
			defer b.Close()
			ctx := t.Context()
			counters := []string{prefix + "{a}n", prefix + "{b}n", prefix + "{c}n"}
			notInt := prefix + "{a}text"
			if err := rdb.Set(ctx, notInt, "not a number", 0).Err(); err != nil {
				t.Fatal(err)
			}
			const callers, each = 40, 30
			var mu sync.Mutex
			got := make(map[string][]int64)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					for j := range each {
						if (i+j)%7 == 0 {
							err := b.Process(ctx, redis.NewIntCmd(ctx, "incr", notInt))
							if err == nil || !redis.HasErrorPrefix(err, "value is not an integer") {
								t.Errorf("INCR of a string: got %v, want its own error", err)
							}
							continue
						}
						key := counters[(i*each+j)%len(counters)]
						cmd := redis.NewIntCmd(ctx, "incr", key)
						if err := b.Process(ctx, cmd); err != nil {
							t.Errorf("INCR %s: %v", key, err)
							continue
						}
						mu.Lock()
						got[key] = append(got[key], cmd.Val())
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			for _, key := range counters {
				vals := got[key]
				slices.Sort(vals)
				for i, v := range vals {
					if v != int64(i+1) {
						t.Fatalf("%s: replies %v..., want 1..%d each once", key, vals[:min(len(vals), i+3)], len(vals))
					}
				}
				if n, err := rdb.Get(ctx, key).Int64(); err != nil || n != int64(len(vals)) {
					t.Errorf("%s = %d (%v), want %d", key, n, err, len(vals))
				}
			}
		})
	}
}

// pipelineCounter counts the round trips of INCR commands: single commands
// and pipelines.
type pipelineCounter struct {
	trips, cmds atomic.Int64
}

func (p *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "incr" { // not the connection's handshake
			p.trips.Add(1)
			p.cmds.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (p *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := 0
		for _, c := range cmds {
			if c.Name() == "incr" {
				n++
			}
		}
		if n > 0 {
			p.trips.Add(1)
			p.cmds.Add(int64(n))
		}
		return next(ctx, cmds)
	}
}

// TestQueuedCommandsShareRoundTrips: with one sender and many callers,
// commands that queue while a round trip is in flight leave together.
func TestQueuedCommandsShareRoundTrips(t *testing.T) {
	rdb, _ := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	client := rdb.(*redis.Client)
	// A client of its own, so the hook sees only this test's commands.
	own := redis.NewClient(&redis.Options{Addr: client.Options().Addr})
	defer own.Close()
	var count pipelineCounter
	own.AddHook(&count)
	b := redisbatch.New(own, redisbatch.Config{Senders: 1, MaxBatch: 64})
	defer b.Close()
	const callers, each = 100, 20
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for range each {
				if err := b.Process(t.Context(), redis.NewIntCmd(t.Context(), "incr", fmt.Sprintf("%sn%d", prefix, i))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	trips, cmds := count.trips.Load(), count.cmds.Load()
	if cmds != callers*each {
		t.Fatalf("%d commands reached Redis, want %d", cmds, callers*each)
	}
	if trips*4 > cmds {
		t.Errorf("%d round trips for %d commands from %d callers: queued commands were not batched", trips, cmds, callers)
	}
	t.Logf("%d commands in %d round trips", cmds, trips)
}

func TestDoEndsWithContextOrClose(t *testing.T) {
	rdb, _ := redistest.Standalone(t)
	b := redisbatch.New(rdb, redisbatch.DefaultConfig())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Process(ctx, redis.NewStatusCmd(ctx, "ping")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v, want context.Canceled", err)
	}
	cmd := redis.NewStatusCmd(t.Context(), "ping")
	if err := b.Process(t.Context(), cmd); err != nil || cmd.Val() != "PONG" {
		t.Errorf("PING: %q, %v", cmd.Val(), err)
	}
	b.Close()
	b.Close() // a second Close is harmless
	if err := b.Process(t.Context(), redis.NewStatusCmd(t.Context(), "ping")); !errors.Is(err, redisbatch.ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
}

// BenchmarkIncr compares one round trip per command with shared pipelines,
// from 64 concurrent callers per core.
func BenchmarkIncr(b *testing.B) {
	rdb, _ := redistest.Standalone(b)
	key := redistest.Prefix(b) + "n"
	b.Run("direct", func(b *testing.B) {
		b.SetParallelism(64)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := rdb.Incr(context.Background(), key).Err(); err != nil {
					b.Error(err)
				}
			}
		})
	})
	b.Run("batched", func(b *testing.B) {
		bt := redisbatch.New(rdb, redisbatch.DefaultConfig())
		defer bt.Close()
		b.SetParallelism(64)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := bt.Process(context.Background(), redis.NewIntCmd(context.Background(), "incr", key)); err != nil {
					b.Error(err)
				}
			}
		})
	})
}

// TestCloseWhileBusy: Close lets every accepted command finish; the rest
// fail with ErrClosed; nothing hangs and no accepted command is lost.
func TestCloseWhileBusy(t *testing.T) {
	rdb, _ := redistest.Standalone(t)
	key := redistest.Prefix(t) + "n"
	b := redisbatch.New(rdb, redisbatch.Config{Senders: 2, MaxBatch: 8})
	var ok, closed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 40 {
				err := b.Process(t.Context(), redis.NewIntCmd(t.Context(), "incr", key))
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, redisbatch.ErrClosed):
					closed.Add(1)
				default:
					t.Error(err)
				}
			}
		})
	}
	for ok.Load() < 200 {
		time.Sleep(time.Millisecond)
	}
	b.Close()
	wg.Wait()
	n, err := rdb.Get(t.Context(), key).Int64()
	if err != nil || n != ok.Load() {
		t.Fatalf("counter = %d (%v), %d commands acknowledged", n, err, ok.Load())
	}
	if closed.Load() == 0 {
		t.Error("no command was refused after Close")
	}
}
