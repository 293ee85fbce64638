package main

import (
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/servertest"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// TestDashboardMetricsExist: after a guest login, an enqueued ticket and a
// formation round, every
// panel of the matchmaking dashboard queries
// metrics this service's /metrics has (deploy/dashboards, docs/operations.md "Dashboards").
func TestDashboardMetricsExist(t *testing.T) {
	t.Parallel()
	_, addr := redistest.Standalone(t)
	_, keyFile := authtest.KeyFile(t)
	env := map[string]string{
		"REDIS_ADDR": addr, "GRPC_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0",
		"AUTH_KEYS_FILE": keyFile, "INTERNAL_PLAINTEXT": "true", "LOG_LEVEL": "error", "MM_REDIS_KEY_PREFIX": redistest.Prefix(t),
		"MATCH_ADDR": "127.0.0.1:1", "RATING_ADDR": "127.0.0.1:1", "MM_ROUND_INTERVAL": "50ms",
		"MM_QUEUES": "fourkingdoms 5+5 bots=10ms",
	}
	srv, conn := serveAndDial(t, env)
	login, err := authv1.NewAuthServiceClient(conn).GuestLogin(t.Context(), &authv1.GuestLoginRequest{DisplayName: "dashboard"})
	if err != nil {
		t.Fatal(err)
	}
	// A human waiting in a bot-filled queue with no bot around: a round
	// counts them waiting and the bots missing to seat them.
	creds := grpc.PerRPCCredentials(auth.BearerToken(login.GetToken(), true))
	if _, err := matchmakingv1.NewMatchmakingServiceClient(conn).Enqueue(t.Context(),
		&matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, creds); err != nil {
		t.Fatal(err)
	}
	servertest.WaitMetric(t, srv, "matchmaking_tickets_waiting", "1")
	servertest.WaitMetric(t, srv, "matchmaking_bots_short", "3")
	servertest.CheckDashboard(t, "../../../../deploy/dashboards/matchmaking.json", servertest.Scrape(t, srv))
}

// serveAndDial runs the service in this process until the test ends, waits
// until it serves, and returns it with a client connection to it (closed
// when the test ends).
func serveAndDial(t *testing.T, env map[string]string) (*server.Server, *grpc.ClientConn) {
	t.Helper()
	srv := servertest.Start(t, run, env)
	servertest.WaitFor(t, srv, "serving", 10*time.Second, servertest.Health.Serving)
	conn, err := grpc.NewClient(srv.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return srv, conn
}
