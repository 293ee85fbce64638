package server

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// registerHealthMetrics exports the server's health on /metrics, so alerts
// can say which dependency failed (docs/operations.md "Alerts"):
//
//   - server_ready: 1 while /readyz answers 200, else 0.
//   - server_component_failing{component}: 1 while the component (e.g.
//     "redis", "keeper") reports a failure, 0 once it recovers. A
//     component appears with its first report, so "redis" is there from
//     the first readiness check on.
//
// Both are read at collection time from the state Report keeps: nothing is
// recorded on the hot path.
func (s *Server) registerHealthMetrics(m metric.Meter) error {
	ready, err := m.Int64ObservableGauge("server.ready",
		metric.WithDescription("1 while the server is ready to serve (/readyz answers 200), else 0."))
	if err != nil {
		return fmt.Errorf("server.ready metric: %w", err)
	}
	failing, err := m.Int64ObservableGauge("server.component.failing",
		metric.WithDescription("1 while the component (redis, a background worker) reports a failure, else 0."))
	if err != nil {
		return fmt.Errorf("server.component.failing metric: %w", err)
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		v := int64(0)
		if s.Ready() {
			v = 1
		}
		o.ObserveInt64(ready, v)
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.reported {
			v := int64(0)
			if _, ok := s.failing[c]; ok {
				v = 1
			}
			o.ObserveInt64(failing, v, metric.WithAttributes(attribute.String("component", c)))
		}
		return nil
	}, ready, failing)
	if err != nil {
		return fmt.Errorf("health metrics: %w", err)
	}
	return nil
}
