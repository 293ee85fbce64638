package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/servertest"
)

// TestHealthFollowsRedis stops the service's Redis: the service reports
// NOT_SERVING on gRPC health and /readyz while staying live, and SERVING
// again once Redis is back on the same address.
func TestHealthFollowsRedis(t *testing.T) {
	t.Parallel()
	rs := redistest.NewRestartable(t)
	_, keyFile := authtest.KeyFile(t)
	env := map[string]string{
		"REDIS_ADDR": rs.Addr(), "GRPC_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0",
		"AUTH_KEYS_FILE": keyFile, "LOG_LEVEL": "error",
		"HEALTH_CHECK_INTERVAL": "100ms", "HEALTH_CHECK_TIMEOUT": "500ms",
		"MATCH_KEEPER_INTERVAL": "50ms", "MATCH_KEEPER_LEASE_TTL": "500ms",
	}
	srv := startForHealth(t, env)
	servertest.WaitFor(t, srv, "serving", 10*time.Second, servertest.Health.Serving)
	rs.Stop()
	// The Redis check and the keeper, which fails too, both report.
	servertest.WaitFor(t, srv, "out of rotation while Redis is down", 10*time.Second, func(h servertest.Health) bool {
		return h.NotServing() && strings.Contains(h.ReadyBody, "redis: ") && strings.Contains(h.ReadyBody, "keeper")
	})
	rs.Start(t)
	servertest.WaitFor(t, srv, "serving after Redis returned", 20*time.Second, servertest.Health.Serving)
}

// startForHealth runs the service until the test ends and returns its server.
func startForHealth(t *testing.T, env map[string]string) *server.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srvc := make(chan *server.Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, io.Discard, func(s *server.Server) { srvc <- s })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case s := <-srvc:
		return s
	case err := <-done:
		done <- err
		t.Fatalf("run ended before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("service did not listen in time")
	}
	return nil
}
