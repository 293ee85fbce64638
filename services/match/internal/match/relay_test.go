package match_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestKeeperRelaysOnlyReplicatedResults: with MATCH_WAIT_REPLICAS=1 a
// match finishes on a master whose replica is missing (the commit is
// ErrNotReplicated: a failover could take the end back). The keeper's
// scans leave its MatchFinished in the outbox, count the held-back
// partition and go on reporting themselves healthy (the keeper works; a
// replica is missing). Once a replica joins and holds the entry, the next
// scan relays it, once.
func TestKeeperRelaysOnlyReplicatedResults(t *testing.T) {
	t.Parallel()
	rdb, addr := redistest.NewStandalone(t)
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(t)
	cfg.WaitReplicas = 1
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := fanout.New(st, log, 8)
	defer hub.Close()
	svc, err := match.New(st, hub, match.DefaultConfig(), log, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	id := store.NewIDFor(cfg.Prefix)
	if _, _, err := st.Create(ctx, id, store.NewMatch{RequestID: cfg.Prefix, Game: []byte("g"), Event: []byte("e1")}); err != nil {
		t.Fatal(err)
	}
	created, err := st.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Commit(ctx, id, store.Change{Expected: 1, ExpectedStamp: created.Stamp, Game: []byte("end"), Events: [][]byte{[]byte("over")},
		Finished: true, FinishedData: []byte(id)})
	if res.Outcome != store.Applied || !errors.Is(err, store.ErrNotReplicated) {
		t.Fatalf("finishing Commit without a replica = %+v, %v; want applied, ErrNotReplicated", res, err)
	}

	// The keeper, its scans counted with their errors, its metrics read.
	var scans, failed atomic.Int64
	report := func(_ string, err error) {
		if err != nil {
			failed.Add(1)
		}
		scans.Add(1)
	}
	mr := metric.NewManualReader()
	k, err := match.NewKeeper(svc, match.DefaultKeeperConfig("t"), log, report, metric.NewMeterProvider(metric.WithReader(mr)))
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = k.Run(kctx) })
	t.Cleanup(func() {
		stop()
		wg.Wait()
	})
	waitScans := func(n int64) {
		t.Helper()
		for end := scans.Load() + n; scans.Load() < end; time.Sleep(10 * time.Millisecond) {
			if ctx.Err() != nil {
				t.Fatal(ctx.Err())
			}
		}
	}
	relayed := func() int64 {
		t.Helper()
		n, err := rdb.XLen(ctx, cfg.Prefix+cfg.FinishedStream).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	waitScans(5)
	if n := relayed(); n != 0 {
		t.Fatalf("%d MatchFinished relayed while no replica holds it, want 0", n)
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("%d keeper scans reported failed while a replica is missing, want 0", n)
	}
	if n := heldBack(t, mr); n == 0 {
		t.Error("match_keeper_relay_unconfirmed_total is 0 after scans that held the partition back")
	}

	// A replica joins and copies the master's data, the outbox with it.
	if err := rdb.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err) // no 5 s wait for more replicas before the sync
	}
	replica, _ := redistest.NewStandalone(t)
	host, port, _ := net.SplitHostPort(addr)
	if err := replica.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); relayed() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the MatchFinished was not relayed after a replica joined")
		}
	}
	waitScans(5)
	if n := relayed(); n != 1 {
		t.Errorf("%d MatchFinished relayed, want 1", n)
	}
	p, _ := store.PartitionOf(id)
	if due, err := st.Scan(ctx, []int{p}, time.Now(), 10); err != nil || len(due) != 0 {
		t.Errorf("partition %d after the relay: %+v, %v; want nothing left to do", p, due, err)
	}
}

// heldBack reads match_keeper_relay_unconfirmed_total.
func heldBack(t *testing.T, mr *metric.ManualReader) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := mr.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "match.keeper.relay.unconfirmed" {
				var n int64
				for _, p := range s.DataPoints {
					n += p.Value
				}
				return n
			}
		}
	}
	return 0
}
