package matchmaker

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// TestMain stops the Redis servers the tests started and checks for leaked
// goroutines.
func TestMain(m *testing.M) { redistest.Main(m) }

// redisKind is a Redis deployment the tests run against: every test runs on
// a standalone server and on a 6-node cluster, under its own key prefix.
type redisKind struct {
	name   string
	client func(t testing.TB) (redis.UniversalClient, string)
}

var redisKinds = []redisKind{
	{name: "standalone", client: func(t testing.TB) (redis.UniversalClient, string) {
		c, _ := redistest.Standalone(t)
		return c, redistest.Prefix(t)
	}},
	{name: "cluster", client: func(t testing.TB) (redis.UniversalClient, string) {
		c, _ := redistest.Cluster(t)
		return c, redistest.Prefix(t)
	}},
}
