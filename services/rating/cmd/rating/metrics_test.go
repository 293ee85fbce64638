package main

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/servertest"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// TestOperationsMetrics drives what the rating alerts read
// (deploy/components/monitoring, docs/operations.md "Alerts"): an entry
// that cannot be applied is counted as a dead letter, and the group's
// backlog shows as rating_consumer_lag and rating_consumer_pending. Then
// every panel of the rating dashboard must query metrics this /metrics has.
func TestOperationsMetrics(t *testing.T) {
	t.Parallel()
	rdb, addr := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	_, keyFile := authtest.PublicKeyFile(t)
	env := map[string]string{
		"REDIS_ADDR": addr, "GRPC_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0",
		"AUTH_KEYS_FILE": keyFile, "INTERNAL_PLAINTEXT": "true", "LOG_LEVEL": "error",
		"RATING_STREAM": prefix + "events", "RATING_DEAD_LETTER_STREAM": prefix + "dead", "RATING_KEY_PREFIX": prefix,
		"RATING_BLOCK": "100ms", "RATING_CLAIM_INTERVAL": "100ms",
	}
	srv := servertest.Start(t, run, env)
	servertest.WaitFor(t, srv, "serving", 10*time.Second, servertest.Health.Serving)
	if err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: prefix + "events", Values: []string{"not", "an event"}}).Err(); err != nil {
		t.Fatal(err)
	}
	servertest.WaitMetric(t, srv, "rating_consumer_events_total", "1", `outcome="dead_letter"`)
	servertest.WaitMetric(t, srv, "rating_consumer_lag", "0")
	servertest.WaitMetric(t, srv, "rating_consumer_pending", "0")
	if v, _ := servertest.Value(servertest.Scrape(t, srv), "rating_consumer_events_total", `outcome="applied"`); v != "0" {
		t.Errorf(`rating_consumer_events_total{outcome="applied"} = %q, want 0 (present before any event is applied)`, v)
	}
	// Any call, even one refused for want of a token, makes the call metrics.
	conn, err := grpc.NewClient(srv.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := ratingv1.NewRatingServiceClient(conn).GetLeaderboard(t.Context(), &ratingv1.GetLeaderboardRequest{RuleSet: "fourkingdoms"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("GetLeaderboard without a token: %v, want Unauthenticated", err)
	}
	servertest.CheckDashboard(t, "../../../../deploy/dashboards/rating.json", servertest.Scrape(t, srv))
}
