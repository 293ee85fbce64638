package redisconn_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// host records the readiness checks a service registers.
type host struct {
	checks map[string]func(context.Context) error
}

func (h *host) TracerProvider() trace.TracerProvider { return tracenoop.NewTracerProvider() }
func (h *host) MeterProvider() metric.MeterProvider  { return metricnoop.NewMeterProvider() }
func (h *host) Check(name string, check func(context.Context) error) {
	h.checks[name] = check
}

func TestNewForServerChecksRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.NewRestartable(t)
	cfg := redisconn.DefaultConfig()
	cfg.Addr, cfg.MaxRetries = srv.Addr(), -1
	h := &host{checks: map[string]func(context.Context) error{}}
	rdb, err := redisconn.NewForServer(t.Context(), cfg, h)
	if err != nil {
		t.Fatalf("NewForServer: %v", err)
	}
	defer rdb.Close()
	check, ok := h.checks["redis"]
	if !ok {
		t.Fatalf("NewForServer registered checks %v, want one named redis", h.checks)
	}
	if err := check(t.Context()); err != nil {
		t.Fatalf("check with Redis up: %v", err)
	}
	srv.Stop()
	if err := check(t.Context()); err == nil {
		t.Fatal("check with Redis stopped reported no error")
	}
	srv.Start(t)
	if err := check(t.Context()); err != nil {
		t.Fatalf("check after Redis came back: %v", err)
	}
}

func TestNewForServerUnreachable(t *testing.T) {
	t.Parallel()
	srv := redistest.NewRestartable(t)
	srv.Stop()
	cfg := redisconn.DefaultConfig()
	cfg.Addr, cfg.MaxRetries = srv.Addr(), -1
	h := &host{checks: map[string]func(context.Context) error{}}
	if rdb, err := redisconn.NewForServer(t.Context(), cfg, h); err == nil {
		rdb.Close()
		t.Fatal("NewForServer with Redis down succeeded")
	}
	if len(h.checks) != 0 {
		t.Errorf("NewForServer with Redis down registered checks %v", h.checks)
	}
}
