// Package servertest checks a running service's health from outside, as a
// load balancer and Kubernetes do: gRPC health, /readyz and /healthz; it
// scrapes its metrics and plays a client that stops reading a stream
// (Stalled). Import it only from tests.
package servertest

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fourkingdoms/fourkingdoms/pkg/server"
)

// Health is what a probe sees of a server at one moment.
type Health struct {
	// GRPC is the overall gRPC health status (service "").
	GRPC healthpb.HealthCheckResponse_ServingStatus
	// Ready and Live are the status codes of /readyz and /healthz.
	Ready, Live int
	// ReadyBody is the body of /readyz (it names failing components).
	ReadyBody string
}

// Serving reports whether every probe says the server takes traffic.
func (h Health) Serving() bool {
	return h.GRPC == healthpb.HealthCheckResponse_SERVING && h.Ready == http.StatusOK && h.Live == http.StatusOK
}

// NotServing reports whether the server is out of rotation but alive:
// gRPC NOT_SERVING, /readyz 503, /healthz still 200.
func (h Health) NotServing() bool {
	return h.GRPC == healthpb.HealthCheckResponse_NOT_SERVING && h.Ready == http.StatusServiceUnavailable && h.Live == http.StatusOK
}

// Probe reads the health of srv, which must be listening.
func Probe(t testing.TB, srv *server.Server) Health {
	t.Helper()
	conn, err := grpc.NewClient(srv.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var h Health
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("gRPC health check: %v", err)
	}
	h.GRPC = resp.GetStatus()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	base := "http://" + srv.AdminAddr().String()
	var body []byte
	h.Ready, body = get(t, c, base+"/readyz")
	h.ReadyBody = string(body)
	h.Live, _ = get(t, c, base+"/healthz")
	return h
}

func get(t testing.TB, c *http.Client, url string) (int, []byte) {
	t.Helper()
	r, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	return r.StatusCode, body
}

// WaitFor probes srv until cond holds, and fails t if it does not within
// timeout. It returns the last health seen.
func WaitFor(t testing.TB, srv *server.Server, what string, timeout time.Duration, cond func(Health) bool) Health {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h := Probe(t, srv)
		if cond(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s after %v: %+v", what, timeout, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Run is a service's run function, as every cmd/<name> declares it.
type Run func(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, listening func(*server.Server)) error

// Start runs a service with the environment env until the test ends and
// returns its server once it listens. The test fails if run returns an
// error, at start or at the end.
func Start(t *testing.T, run Run, env map[string]string) *server.Server {
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
