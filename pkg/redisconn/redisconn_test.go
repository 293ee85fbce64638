package redisconn_test

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestNew(t *testing.T) {
	t.Parallel()
	_, standaloneAddr := redistest.Standalone(t)
	_, clusterAddrs := redistest.Cluster(t)
	tests := []struct {
		name        string
		cfg         func(*redisconn.Config)
		wantCluster bool
	}{
		{"standalone", func(c *redisconn.Config) { c.Addr = standaloneAddr }, false},
		{"cluster", func(c *redisconn.Config) { c.ClusterAddrs = clusterAddrs[:2] }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := redisconn.DefaultConfig()
			tt.cfg(&cfg)
			tp := sdktrace.NewTracerProvider()
			mp := sdkmetric.NewMeterProvider()
			t.Cleanup(func() { tp.Shutdown(t.Context()); mp.Shutdown(t.Context()) })
			rdb, err := redisconn.New(t.Context(), cfg, tp, mp)
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			if _, isCluster := rdb.(*redis.ClusterClient); isCluster != tt.wantCluster {
				t.Fatalf("client type %T, want cluster=%v", rdb, tt.wantCluster)
			}
			key := redistest.Prefix(t) + redisconn.Tag("m:1") + ":k"
			if err := rdb.Set(t.Context(), key, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewUnreachable(t *testing.T) {
	t.Parallel()
	cfg := redisconn.DefaultConfig()
	cfg.Addr = "127.0.0.1:1" // nothing listens on port 1
	cfg.MaxRetries = -1
	if _, err := redisconn.New(t.Context(), cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("New with unreachable Redis: err = %v, want an error naming the address", err)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"REDIS_CLUSTER_ADDRS": "a:1, b:2", "REDIS_PASSWORD": "s3cret"}
	cfg := redisconn.DefaultConfig()
	if err := cfg.Bind(flag.NewFlagSet("t", flag.ContinueOnError), func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if !cfg.Cluster() || !slices.Equal(cfg.ClusterAddrs, []string{"a:1", "b:2"}) || cfg.Password != "s3cret" {
		t.Fatalf("bound config = %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.DB = 2
	if err := cfg.Validate(); err == nil {
		t.Error("cluster with DB 2 accepted")
	}
}

func TestTag(t *testing.T) {
	t.Parallel()
	if got := redisconn.Tag("m:123") + ":state"; got != "{m:123}:state" {
		t.Fatalf("Tag = %q", got)
	}
}

// Master reaches the node that owns a key: a write through it is not
// redirected, on a cluster and on a standalone server.
func TestMaster(t *testing.T) {
	t.Parallel()
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := k.Client(t)
			for i := range 8 {
				key := prefix + redisconn.Tag(fmt.Sprintf("m:%d", i)) + ":k"
				node, err := redisconn.Master(t.Context(), rdb, key)
				if err != nil {
					t.Fatal(err)
				}
				if err := node.Set(t.Context(), key, "v", 0).Err(); err != nil {
					t.Errorf("SET %s on %s: %v", key, node.Options().Addr, err)
				}
			}
		})
	}
}
