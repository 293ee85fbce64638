package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/servertest"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestOperationsMetrics drives what the alerts and the autoscaler read
// (deploy/components/monitoring, docs/operations.md "Alerts"): an open
// watch stream shows in match_watch_streams and leaves it when it ends;
// the keeper's ranges show as held (all of them, the only instance), and
// a range lease as lost once another instance owns it. Then every panel of the match dashboard must query metrics this
// /metrics has.
func TestOperationsMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, standalone(t))
	srv := servertest.Start(t, run, e.baseEnv())
	servertest.WaitFor(t, srv, "serving", 10*time.Second, servertest.Health.Serving)
	addr := srv.GRPCAddr().String()

	m := e.create(addr, nil)
	ctx, cancel := context.WithCancel(t.Context())
	stream, err := e.client(addr, e.token(players[0], auth.RolePlayer)).WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: m.GetMatchId()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil { // the snapshot: the stream is open on the server
		t.Fatal(err)
	}
	servertest.WaitMetric(t, srv, "match_watch_streams", "1")
	servertest.WaitMetric(t, srv, "match_keeper_ranges_held", strconv.Itoa(store.KeeperRanges))

	// Another owner takes a range lease (as after this instance paused for
	// longer than the lease TTL).
	lease := e.prefix + "{fk:keeper}:range:0"
	if err := e.rdb().Set(t.Context(), lease, "1:another-instance", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	servertest.WaitMetric(t, srv, "match_keeper_lease_lost_total", "1", `reason="taken"`)
	servertest.WaitMetric(t, srv, "match_keeper_ranges_held", strconv.Itoa(store.KeeperRanges-1))

	cancel()
	servertest.WaitMetric(t, srv, "match_watch_streams", "0")
	if v, ok := servertest.Value(servertest.Scrape(t, srv), "match_watch_dropped_total", `reason="slow_consumer"`); !ok || v != "0" {
		t.Errorf(`match_watch_dropped_total{reason="slow_consumer"} = %q (present %v), want 0: a client leaving is no drop`, v, ok)
	}
	servertest.CheckDashboard(t, "../../../../deploy/dashboards/match.json", servertest.Scrape(t, srv))
}
