package store_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// backends returns clients of the shared standalone server and cluster.
func backends(t *testing.T) map[string]redis.UniversalClient {
	s, _ := redistest.Standalone(t)
	c, _ := redistest.Cluster(t)
	return map[string]redis.UniversalClient{"standalone": s, "cluster": c}
}

func testPrefix(t *testing.T) string { return redistest.Prefix(t) }
