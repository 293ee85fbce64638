package main

import (
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
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
		"AUTH_KEYS_FILE": keyFile, "INTERNAL_PLAINTEXT": "true", "LOG_LEVEL": "error",
		"HEALTH_CHECK_INTERVAL": "100ms", "HEALTH_CHECK_TIMEOUT": "500ms",
		"MATCH_ADDR": "127.0.0.1:1", "RATING_ADDR": "127.0.0.1:1", "MM_ROUND_INTERVAL": "100ms",
	}
	srv := servertest.Start(t, run, env)
	servertest.WaitFor(t, srv, "serving", 10*time.Second, servertest.Health.Serving)
	rs.Stop()
	servertest.WaitFor(t, srv, "out of rotation while Redis is down", 10*time.Second, servertest.Health.NotServing)
	rs.Start(t)
	servertest.WaitFor(t, srv, "serving after Redis returned", 20*time.Second, servertest.Health.Serving)
}
