package redisconn

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Host is what [NewForServer] needs of the serving process (a
// *server.Server): its telemetry, and readiness checks.
type Host interface {
	TracerProvider() trace.TracerProvider
	MeterProvider() metric.MeterProvider
	Check(name string, check func(ctx context.Context) error)
}

// NewForServer is how a service opens its Redis: [New] instrumented with
// the host's telemetry, plus a readiness check named "redis" that pings it,
// so the service reports NOT_SERVING while Redis is unreachable. The caller
// closes the client.
func NewForServer(ctx context.Context, cfg Config, host Host) (redis.UniversalClient, error) {
	rdb, err := New(ctx, cfg, host.TracerProvider(), host.MeterProvider())
	if err != nil {
		return nil, err
	}
	host.Check("redis", func(ctx context.Context) error { return Ping(ctx, rdb) })
	return rdb, nil
}
