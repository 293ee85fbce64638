package consumer

import (
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
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ratingtest"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// TestMain stops the Redis servers and checks for leaked goroutines.
func TestMain(m *testing.M) { redistest.Main(m) }

const pool = "fourkingdoms"

type backend struct {
	name   string
	client func(t testing.TB) redis.UniversalClient
}

// backends are the Redis deployments every consumer test runs against.
func backends() []backend {
	return []backend{
		{"standalone", func(t testing.TB) redis.UniversalClient { c, _ := redistest.Standalone(t); return c }},
		{"cluster", func(t testing.TB) redis.UniversalClient { c, _ := redistest.Cluster(t); return c }},
	}
}

// fixture is a stream, a store and a consumer configuration of one test.
type fixture struct {
	prefix string
	rdb    redis.UniversalClient
	store  *store.Store
	cfg    Config
	policy ladder.Policy
}

func forEachBackend(t *testing.T, f func(t *testing.T, fx *fixture)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			rdb := b.client(t)
			prefix := redistest.Prefix(t)
			cfg := DefaultConfig()
			cfg.Stream = prefix + "events"
			cfg.DeadLetter = prefix + "dead"
			cfg.LinkStream, cfg.LinkDeadLetter = prefix+"links", prefix+"links:dead"
			cfg.Block = 50 * time.Millisecond
			cfg.ClaimMinIdle = 200 * time.Millisecond
			cfg.ClaimInterval = 50 * time.Millisecond
			cfg.Retry = backoff.Policy{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond}
			policy := ladder.DefaultPolicy()
			f(t, &fixture{prefix: prefix, rdb: rdb, store: store.New(rdb, policy, store.Config{Prefix: prefix, Retention: store.DefaultRetention()}), cfg: cfg, policy: policy})
		})
	}
}

func (fx *fixture) publish(t testing.TB, values ...map[string]any) []string {
	t.Helper()
	pipe := fx.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(values))
	for i, v := range values {
		cmds[i] = pipe.XAdd(t.Context(), &redis.XAddArgs{Stream: fx.cfg.Stream, Values: v})
	}
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(cmds))
	for i, c := range cmds {
		ids[i] = c.Val()
	}
	return ids
}

// start runs a consumer until the test ends.
func (fx *fixture) start(t *testing.T, name string, workers int) {
	t.Helper()
	cfg := fx.cfg
	cfg.Name, cfg.Workers = name, workers
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := New(fx.rdb, fx.store, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("consumer %s: %v", name, err)
		}
	})
}

// waitDrained waits until the group has read every entry and nothing is
// pending.
func (fx *fixture) waitDrained(t *testing.T, total int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		groups, err := fx.rdb.XInfoGroups(t.Context(), fx.cfg.Stream).Result()
		if err == nil && len(groups) == 1 && groups[0].EntriesRead >= int64(total) && groups[0].Pending == 0 && groups[0].Lag == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not drained: groups %+v, err %v", groups, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func results(t testing.TB, evs []*eventsv1.MatchFinished) []ladder.Result {
	t.Helper()
	out := make([]ladder.Result, len(evs))
	for i, ev := range evs {
		r, err := FromEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = r
	}
	return out
}

// checkReplay checks that the stored standings equal a sequential
// replay of the matches in the order the store applied them.
func (fx *fixture) checkReplay(t *testing.T, matches []ladder.Result) {
	t.Helper()
	ratingtest.CheckReplay(t, fx.store, fx.policy, matches)
}

func TestConsumerAppliesAndDeadLetters(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fx *fixture) {
		good := []*eventsv1.MatchFinished{
			event("m1", pool, "a", "b", "c", "d"),
			event("m2", pool, "d", "c", "b", "a"),
		}
		badRanking := event("m3", pool, "a", "b", "c", "d")
		badRanking.Result.Ranking[0], badRanking.Result.Ranking[1] = badRanking.Result.Ranking[1], badRanking.Result.Ranking[0]
		ids := fx.publish(t,
			entry(good[0]),
			map[string]any{contract.TypeField(): "fourkingdoms.events.v1.Unknown", contract.DataField(): "x"},
			entry(good[1]),
			map[string]any{contract.TypeField(): contract.Type(), contract.DataField(): "\xff\x01"},
			entry(badRanking),
			entry(good[0]), // redelivered by the publisher
			entry(event("m4", "checkers", "a", "b", "c", "d")),
		)
		fx.start(t, "c", 1)
		fx.waitDrained(t, len(ids))
		fx.checkReplay(t, results(t, good))

		dead, err := fx.rdb.XRange(t.Context(), fx.cfg.DeadLetter, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{ids[1]: "type", ids[3]: "decode", ids[4]: "contradicts", ids[6]: "unknown rule set"}
		if len(dead) != len(want) {
			t.Fatalf("dead letters = %+v, want %d", dead, len(want))
		}
		for _, d := range dead {
			src, _ := d.Values["dead_id"].(string)
			reason, _ := d.Values["dead_reason"].(string)
			if !strings.Contains(reason, want[src]) || d.Values[contract.TypeField()] == nil {
				t.Errorf("dead letter of %s: %+v, want reason with %q and the original fields", src, d.Values, want[src])
			}
		}
		if _, ok, _ := fx.store.Applied(t.Context(), pool, "m3"); ok {
			t.Error("match with a bad ranking was applied")
		}
	})
}

// A consumer dies after the store applied its events but before it
// acknowledged them; another consumer takes them over, changes nothing and
// acknowledges.
func TestConsumerCrashBeforeAck(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fx *fixture) {
		ctx := t.Context()
		evs := []*eventsv1.MatchFinished{event("m1", pool, "a", "b", "c", "d"), event("m2", pool, "b", "a", "d", "c")}
		fx.publish(t, entry(evs[0]), entry(evs[1]))

		// The dying consumer: read, apply, and never acknowledge.
		c, err := New(fx.rdb, fx.store, fx.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ensureGroup(ctx); err != nil {
			t.Fatal(err)
		}
		msgs, err := c.read(ctx, "doomed")
		if err != nil || len(msgs) != 2 {
			t.Fatalf("read %d messages, err %v", len(msgs), err)
		}
		res := make([]ladder.Result, len(msgs))
		for i, m := range msgs {
			if res[i], err = Decode(m.Values); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := fx.store.Apply(ctx, res); err != nil {
			t.Fatal(err)
		}
		pending, err := fx.rdb.XPending(ctx, fx.cfg.Stream, fx.cfg.Group).Result()
		if err != nil || pending.Count != 2 || pending.Consumers["doomed"] != 2 {
			t.Fatalf("pending before takeover = %+v, err %v", pending, err)
		}

		fx.start(t, "heir", 1)
		fx.waitDrained(t, 2)
		fx.checkReplay(t, results(t, evs))
		h, _, err := fx.store.History(ctx, pool, "a", "", 10)
		if err != nil || len(h) != 2 {
			t.Errorf("history of a = %+v, err %v; want 2 entries", h, err)
		}
	})
}

// Two consumer processes (two workers each) share a stream of thousands of
// events, duplicates included: every match is applied exactly once, and the
// ratings equal a sequential replay in the store's order.
func TestConsumersShareStream(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fx *fixture) {
		n := 3000
		if testing.Short() {
			n = 500
		}
		rng := rand.New(rand.NewPCG(5, 6))
		const players = 40
		evs := make([]*eventsv1.MatchFinished, n)
		values := make([]map[string]any, 0, n+n/10)
		for i := range evs {
			pick := rng.Perm(players)[:4]
			order := make([]string, 4)
			for j, k := range pick {
				order[j] = fmt.Sprintf("p%02d", k)
			}
			evs[i] = event(fmt.Sprintf("m%05d", i), pool, order...)
			values = append(values, entry(evs[i]))
			if i%10 == 0 {
				values = append(values, entry(evs[rng.IntN(i+1)])) // a redelivery
			}
		}
		fx.cfg.Batch = 64
		var wg sync.WaitGroup
		wg.Go(func() {
			for chunk := range slices.Chunk(values, 500) {
				fx.publish(t, chunk...)
			}
		})
		fx.start(t, "one", 2)
		fx.start(t, "two", 2)
		wg.Wait()
		fx.waitDrained(t, len(values))
		fx.checkReplay(t, results(t, evs))
	})
}

// A match that cannot be applied (a player's stored rating is corrupt) does
// not hold back the others, and goes to the dead-letter stream after
// MaxDeliveries deliveries.
func TestConsumerRetiresUndeliverable(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fx *fixture) {
		ctx := t.Context()
		// The key layout is documented in docs/rating.md.
		if err := fx.rdb.HSet(ctx, fx.prefix+"{rt:"+pool+"}:s", "broken", "garbage").Err(); err != nil {
			t.Fatal(err)
		}
		good := event("good", pool, "a", "b", "c", "d")
		ids := fx.publish(t, entry(event("poison", pool, "a", "broken", "c", "d")), entry(good))
		fx.cfg.MaxDeliveries = 2
		fx.start(t, "c", 1)
		fx.waitDrained(t, len(ids))
		fx.checkReplay(t, results(t, []*eventsv1.MatchFinished{good}))
		dead, err := fx.rdb.XRange(ctx, fx.cfg.DeadLetter, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) != 1 || dead[0].Values["dead_id"] != ids[0] || !strings.Contains(dead[0].Values["dead_reason"].(string), "deliveries") {
			t.Errorf("dead letters = %+v, want the poison entry %s", dead, ids[0])
		}
	})
}

// Consumers that left the group long ago and hold nothing are removed;
// those with pending entries stay until their entries are taken over.
func TestConsumerForgetsDeparted(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fx *fixture) {
		ctx := t.Context()
		c, err := New(fx.rdb, fx.store, fx.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.forgetAfter = 100 * time.Millisecond
		if err := c.ensureGroup(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.read(ctx, "idle-empty"); err != nil {
			t.Fatal(err)
		}
		fx.publish(t, entry(event("m1", pool, "a", "b", "c", "d")))
		if msgs, err := c.read(ctx, "idle-holding"); err != nil || len(msgs) != 1 {
			t.Fatalf("read %d, %v", len(msgs), err)
		}
		time.Sleep(200 * time.Millisecond)
		if err := c.forget(ctx, "me"); err != nil {
			t.Fatal(err)
		}
		consumers, err := fx.rdb.XInfoConsumers(ctx, fx.cfg.Stream, fx.cfg.Group).Result()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range consumers {
			names = append(names, g.Name)
		}
		if !slices.Equal(names, []string{"idle-holding"}) {
			t.Errorf("consumers after forget = %v, want [idle-holding]", names)
		}
	})
}

// Events outside the exactly-once window go to the dead-letter stream:
// one that finished more than the marker retention before the newest
// applied match of its pool, and one from too far in the future (it would
// move the window past everything else).
func TestConsumerDeadLettersOutsideWindow(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fx *fixture) {
		good := event("m1", pool, "a", "b", "c", "d")
		stale := event("stale", pool, "a", "b", "c", "d")
		stale.FinishedAt = timestamppb.New(finishedAt.Add(-fx.store.MarkerRetention() - time.Minute))
		future := event("future", pool, "a", "b", "c", "d")
		future.FinishedAt = timestamppb.New(time.Now().Add(maxFuture + time.Hour))
		ids := fx.publish(t, entry(good), entry(stale), entry(future))
		fx.start(t, "c", 1)
		fx.waitDrained(t, len(ids))
		fx.checkReplay(t, results(t, []*eventsv1.MatchFinished{good}))

		dead, err := fx.rdb.XRange(t.Context(), fx.cfg.DeadLetter, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{ids[1]: "exactly-once window", ids[2]: "in the future"}
		if len(dead) != len(want) {
			t.Fatalf("dead letters = %+v, want %d", dead, len(want))
		}
		for _, d := range dead {
			src, _ := d.Values["dead_id"].(string)
			reason, _ := d.Values["dead_reason"].(string)
			if !strings.Contains(reason, want[src]) {
				t.Errorf("dead letter of %s: reason %q, want it to mention %q", src, reason, want[src])
			}
		}
	})
}

// With RATING_WAIT_REPLICAS, a batch is acknowledged only once the replicas
// confirmed its writes: on the cluster (a replica per master) at once; on
// the standalone server (no replica) never, and the batch is not retried
// match by match (one WAIT for the batch).
func TestConsumerWaitsForReplicas(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fx *fixture) {
		ctx := t.Context()
		cfg := store.DefaultConfig()
		cfg.Prefix, cfg.WaitReplicas, cfg.WaitTimeout = fx.prefix, 1, 2*time.Second
		_, standalone := fx.rdb.(*redis.Client)
		if standalone {
			cfg.WaitTimeout = 100 * time.Millisecond
		}
		st := store.New(fx.rdb, fx.policy, cfg)
		c, err := New(fx.rdb, st, fx.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ensureGroup(ctx); err != nil {
			t.Fatal(err)
		}
		evs := []*eventsv1.MatchFinished{event("m1", pool, "a", "b", "c", "d"), event("m2", pool, "e", "f", "g", "h"), event("m3", pool, "b", "a", "d", "c")}
		fx.publish(t, entry(evs[0]), entry(evs[1]), entry(evs[2]))
		msgs, err := c.read(ctx, "w")
		if err != nil || len(msgs) != 3 {
			t.Fatalf("read %d messages, err %v", len(msgs), err)
		}
		waits := func() int64 {
			if !standalone {
				return 0
			}
			info, err := fx.rdb.Info(ctx, "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			var calls int64
			for line := range strings.Lines(info) {
				if rest, ok := strings.CutPrefix(line, "cmdstat_wait:calls="); ok {
					calls, _ = strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				}
			}
			return calls
		}
		if standalone {
			// Caches the script on the server first: a WAIT also follows
			// the pipeline that finds the script missing.
			if _, err := st.Apply(ctx, results(t, []*eventsv1.MatchFinished{event("m0", pool, "w", "x", "y", "z")})); !errors.Is(err, store.ErrNotReplicated) {
				t.Fatalf("warm-up without a replica: %v, want ErrNotReplicated", err)
			}
		}
		before := waits()
		err = c.Handle(ctx, msgs)
		pending, perr := fx.rdb.XPending(ctx, fx.cfg.Stream, fx.cfg.Group).Result()
		if perr != nil {
			t.Fatal(perr)
		}
		if !standalone {
			if err != nil || pending.Count != 0 {
				t.Fatalf("with a replica: Handle = %v, %d pending; want nil, 0", err, pending.Count)
			}
			fx.checkReplay(t, results(t, evs))
			return
		}
		if !errors.Is(err, store.ErrNotReplicated) || pending.Count != 3 {
			t.Errorf("without a replica: Handle = %v, %d pending; want ErrNotReplicated, 3", err, pending.Count)
		}
		if n := waits() - before; n != 1 {
			t.Errorf("%d WAIT calls for the batch, want 1", n)
		}
	})
}
