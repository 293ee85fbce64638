package eventstream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// readerFixture is a stream and a reader configuration of one test.
type readerFixture struct {
	rdb redis.UniversalClient
	cfg eventstream.ReaderConfig
}

func forEachKind(t *testing.T, f func(t *testing.T, fx *readerFixture)) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := kind.Client(t)
			cfg := eventstream.DefaultReaderConfig(prefix+"events", "group", "c")
			cfg.Block, cfg.ClaimMinIdle, cfg.ClaimInterval = 50*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond
			cfg.Retry = backoff.Policy{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond}
			cfg.Metrics = "test.reader"
			f(t, &readerFixture{rdb: rdb, cfg: cfg})
		})
	}
}

// publish adds entries with a field "n" each and returns their ids.
func (fx *readerFixture) publish(t *testing.T, ns ...string) []string {
	t.Helper()
	ids := make([]string, len(ns))
	for i, n := range ns {
		id, err := fx.rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: fx.cfg.Stream, Values: []any{"n", n}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

func (fx *readerFixture) reader(t *testing.T, cfg eventstream.ReaderConfig, h eventstream.Handler, mp *sdkmetric.MeterProvider) *eventstream.Reader {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var meter = sdkmetric.NewMeterProvider().Meter("test")
	if mp != nil {
		meter = mp.Meter("test")
	}
	r, err := eventstream.NewReader(fx.rdb, cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)), meter, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs r until the test ends.
func run(t *testing.T, r *eventstream.Reader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
}

// waitDrained waits until the group has read n entries and none is pending.
func (fx *readerFixture) waitDrained(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		groups, err := fx.rdb.XInfoGroups(t.Context(), fx.cfg.Stream).Result()
		if err == nil && len(groups) == 1 && groups[0].EntriesRead >= n && groups[0].Pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not drained: groups %+v, err %v", groups, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder is a handler that counts the deliveries of each entry, by its
// field "n", and fails as fail says.
type recorder struct {
	mu   sync.Mutex
	seen map[string]int
	fail func(n string, seen int) error
}

func (rec *recorder) handle(_ context.Context, msgs []redis.XMessage) []eventstream.Result {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.seen == nil {
		rec.seen = map[string]int{}
	}
	out := make([]eventstream.Result, len(msgs))
	for i, m := range msgs {
		n, _ := m.Values["n"].(string)
		rec.seen[n]++
		if rec.fail != nil {
			out[i].Err = rec.fail(n, rec.seen[n])
		}
	}
	return out
}

func (rec *recorder) count(n string) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.seen[n]
}

// sums returns the sum of the events counter by outcome and the last
// values of the lag and pending gauges.
func sums(t *testing.T, mr *sdkmetric.ManualReader) (events map[string]int64, gauges map[string]int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := mr.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	events, gauges = map[string]int64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					o, _ := p.Attributes.Value(attribute.Key("outcome"))
					events[o.AsString()] += p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					gauges[m.Name] = p.Value
				}
			}
		}
	}
	return events, gauges
}

// Entries the handler handled are acknowledged, each handled once, counted
// as handled; the group's backlog gauges read zero after.
func TestReaderAcksAfterSuccess(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, fx *readerFixture) {
		ns := []string{"a", "b", "c", "d", "e"}
		fx.publish(t, ns...)
		mr := sdkmetric.NewManualReader()
		var rec recorder
		fx.cfg.Workers = 2
		run(t, fx.reader(t, fx.cfg, rec.handle, sdkmetric.NewMeterProvider(sdkmetric.WithReader(mr))))
		fx.waitDrained(t, int64(len(ns)))
		for _, n := range ns {
			if c := rec.count(n); c != 1 {
				t.Errorf("entry %s handled %d times, want 1", n, c)
			}
		}
		events, gauges := sums(t, mr)
		want := map[string]int64{eventstream.OutcomeHandled: int64(len(ns)), eventstream.OutcomeDeadLetter: 0, eventstream.OutcomeFailed: 0}
		for o, n := range want {
			if events[o] != n {
				t.Errorf("events{outcome=%s} = %d, want %d (all: %v)", o, events[o], n, events)
			}
		}
		if gauges["test.reader.lag"] != 0 || gauges["test.reader.pending"] != 0 || len(gauges) != 2 {
			t.Errorf("gauges = %v, want lag and pending 0", gauges)
		}
	})
}

// An entry whose handling failed stays pending and is delivered again
// (taken over after ClaimMinIdle) until it succeeds; nothing is
// dead-lettered.
func TestReaderRedeliversAfterHandlerError(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, fx *readerFixture) {
		fx.publish(t, "ok", "flaky", "ok2")
		rec := recorder{fail: func(n string, seen int) error {
			if n == "flaky" && seen < 3 {
				return errors.New("redis: connection refused")
			}
			return nil
		}}
		run(t, fx.reader(t, fx.cfg, rec.handle, nil))
		fx.waitDrained(t, 3)
		if rec.count("flaky") != 3 || rec.count("ok") != 1 || rec.count("ok2") != 1 {
			t.Errorf("handled %v, want flaky 3 times, the others once", rec.seen)
		}
		if n, err := fx.rdb.XLen(t.Context(), fx.cfg.DeadLetter).Result(); err != nil || n != 0 {
			t.Errorf("dead letters = %d, %v; want 0", n, err)
		}
	})
}

// Entries a consumer read and never acknowledged (it died) are taken over
// by another consumer after ClaimMinIdle.
func TestReaderClaimsStale(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, fx *readerFixture) {
		ctx := t.Context()
		fx.publish(t, "x", "y")
		var rec recorder
		r := fx.reader(t, fx.cfg, rec.handle, nil)
		if err := r.EnsureGroup(ctx); err != nil {
			t.Fatal(err)
		}
		if msgs, err := r.Read(ctx, "doomed"); err != nil || len(msgs) != 2 {
			t.Fatalf("Read = %d entries, %v; want 2", len(msgs), err)
		}
		heir := fx.cfg
		heir.Consumer = "heir"
		run(t, fx.reader(t, heir, rec.handle, nil))
		fx.waitDrained(t, 2)
		if rec.count("x") != 1 || rec.count("y") != 1 {
			t.Errorf("handled %v, want each once", rec.seen)
		}
		consumers, err := fx.rdb.XInfoConsumers(ctx, fx.cfg.Stream, fx.cfg.Group).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range consumers {
			if c.Pending != 0 {
				t.Errorf("consumer %s holds %d entries, want none", c.Name, c.Pending)
			}
		}
	})
}

// Poison entries go to the dead-letter stream with their fields and the
// reason, and are acknowledged: a malformed one and one the handler calls
// permanent at once, one that always fails after MaxDeliveries deliveries.
// The good entries between them are handled.
func TestReaderDeadLettersPoison(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, fx *readerFixture) {
		ids := fx.publish(t, "good", "malformed", "permanent", "failing", "good2")
		rec := recorder{fail: func(n string, _ int) error {
			switch n {
			case "malformed":
				_, err := eventstream.MatchFinished().Decode(map[string]any{"type": "nonsense"})
				return err
			case "permanent":
				return eventstream.Permanent(errors.New("no such player"))
			case "failing":
				return errors.New("always fails")
			}
			return nil
		}}
		fx.cfg.MaxDeliveries = 2
		mr := sdkmetric.NewManualReader()
		run(t, fx.reader(t, fx.cfg, rec.handle, sdkmetric.NewMeterProvider(sdkmetric.WithReader(mr))))
		fx.waitDrained(t, int64(len(ids)))

		dead, err := fx.rdb.XRange(t.Context(), fx.cfg.DeadLetter, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{ids[1]: "malformed stream entry", ids[2]: "no such player", ids[3]: "after 2 deliveries"}
		if len(dead) != len(want) {
			t.Fatalf("dead letters = %+v, want %d", dead, len(want))
		}
		var got []string
		for _, d := range dead {
			src, _ := d.Values["dead_id"].(string)
			got = append(got, src)
			reason, _ := d.Values["dead_reason"].(string)
			if !strings.Contains(reason, want[src]) || d.Values["dead_stream"] != fx.cfg.Stream || d.Values["n"] == nil {
				t.Errorf("dead letter of %s: %+v, want reason with %q, the stream and the original fields", src, d.Values, want[src])
			}
		}
		if slices.Sort(got); !slices.Equal(got, ids[1:4]) {
			t.Errorf("dead-lettered %v, want %v", got, ids[1:4])
		}
		if rec.count("failing") != fx.cfg.MaxDeliveries || rec.count("malformed") != 1 || rec.count("good") != 1 || rec.count("good2") != 1 {
			t.Errorf("handled %v, want failing %d times, the others once", rec.seen, fx.cfg.MaxDeliveries)
		}
		if events, _ := sums(t, mr); events[eventstream.OutcomeDeadLetter] != 3 || events[eventstream.OutcomeHandled] != 2 {
			t.Errorf("events = %v, want 3 dead letters and 2 handled", events)
		}
	})
}

// Consumers silent for ForgetAfter that hold nothing are removed from the
// group; one holding entries stays.
func TestReaderForgetsDeparted(t *testing.T) {
	t.Parallel()
	forEachKind(t, func(t *testing.T, fx *readerFixture) {
		ctx := t.Context()
		var rec recorder
		r := fx.reader(t, fx.cfg, rec.handle, nil)
		if err := r.EnsureGroup(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(ctx, "idle-empty"); err != nil {
			t.Fatal(err)
		}
		fx.publish(t, "held")
		if msgs, err := r.Read(ctx, "idle-holding"); err != nil || len(msgs) != 1 {
			t.Fatalf("Read = %d, %v", len(msgs), err)
		}
		time.Sleep(150 * time.Millisecond) // the consumers' idle time must pass
		if err := r.Forget(ctx, "me", 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		consumers, err := fx.rdb.XInfoConsumers(ctx, fx.cfg.Stream, fx.cfg.Group).Result()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range consumers {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, []string{"idle-holding"}) {
			t.Errorf("consumers after Forget = %v, want [idle-holding]", names)
		}
	})
}

// Run returns nil once its context is canceled, leaving no goroutine
// behind; a batch being handled then is finished and acknowledged. Not
// parallel: goleak looks at every goroutine of the process.
func TestReaderStopsOnCancel(t *testing.T) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			rdb, prefix := kind.Client(t)
			cfg := eventstream.DefaultReaderConfig(prefix+"events", "group", "c")
			cfg.Block = 50 * time.Millisecond
			fx := &readerFixture{rdb: rdb, cfg: cfg}
			fx.publish(t, "slow")
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

			started, release := make(chan struct{}), make(chan struct{})
			h := func(ctx context.Context, msgs []redis.XMessage) []eventstream.Result {
				close(started)
				<-release
				return make([]eventstream.Result, len(msgs))
			}
			r := fx.reader(t, cfg, h, nil)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			<-started
			cancel()
			close(release)
			if err := <-done; err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
			fx.waitDrained(t, 1)
		})
	}
}

func ExampleReader() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	cfg := eventstream.DefaultReaderConfig(eventstream.MatchAbandoned().Key(), "matchmaking", "instance-1")
	handle := func(ctx context.Context, msgs []redis.XMessage) []eventstream.Result {
		out := make([]eventstream.Result, len(msgs))
		for i, m := range msgs {
			ev, err := eventstream.MatchAbandoned().Decode(m.Values)
			if err != nil {
				out[i].Err = err // malformed: dead-lettered
				continue
			}
			fmt.Println(ev.GetMatchId()) // the work, made durable before returning
		}
		return out
	}
	r, err := eventstream.NewReader(rdb, cfg, handle, slog.Default(), nil, nil)
	if err != nil {
		return // a configuration that cannot work
	}
	_ = r.Run // r.Run(ctx) until shutdown
}
