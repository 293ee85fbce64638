package main

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// backend is a Redis deployment the tests run against.
type backend struct {
	name string
	// env configures the service for it.
	env map[string]string
	// client returns a client (closed when the test ends).
	client func(t testing.TB) redis.UniversalClient
}

func standalone(t testing.TB) backend {
	_, addr := redistest.Standalone(t)
	return backend{name: "standalone", env: map[string]string{"REDIS_ADDR": addr},
		client: func(t testing.TB) redis.UniversalClient { c, _ := redistest.Standalone(t); return c }}
}

func cluster(t testing.TB) backend {
	_, addrs := redistest.Cluster(t)
	return backend{name: "cluster", env: map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(addrs, ",")},
		client: func(t testing.TB) redis.UniversalClient { c, _ := redistest.Cluster(t); return c }}
}

// forEachBackend runs f as a parallel subtest on standalone Redis and on
// the shared Redis Cluster.
func forEachBackend(t *testing.T, f func(t *testing.T, e *env)) {
	for _, mk := range []func(testing.TB) backend{standalone, cluster} {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, newEnv(t, b))
		})
	}
}
