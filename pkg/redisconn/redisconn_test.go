package redisconn_test

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestByMaster: the groups hold every key once, in key order, and each
// group's keys are served by one master (a write to each through that
// master's own client succeeds), with one group per master.
func TestByMaster(t *testing.T) {
	t.Parallel()
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := k.Client(t)
			keys := make([]string, 64)
			for i := range keys {
				keys[i] = prefix + redisconn.Tag(fmt.Sprintf("p:%d", i)) + ":k"
			}
			groups := redisconn.ByMaster(t.Context(), rdb, keys)
			seen := map[int]bool{}
			masters := map[string]bool{}
			for _, g := range groups {
				if !slices.IsSorted(g) {
					t.Errorf("group %v is not in key order", g)
				}
				node, err := redisconn.Master(t.Context(), rdb, keys[g[0]])
				if err != nil {
					t.Fatal(err)
				}
				if masters[node.Options().Addr] {
					t.Errorf("two groups for master %s", node.Options().Addr)
				}
				masters[node.Options().Addr] = true
				for _, i := range g {
					if seen[i] {
						t.Errorf("key %d in two groups", i)
					}
					seen[i] = true
					if err := node.Set(t.Context(), keys[i], "v", time.Minute).Err(); err != nil {
						t.Errorf("SET %s on %s: %v", keys[i], node.Options().Addr, err)
					}
				}
			}
			if len(seen) != len(keys) {
				t.Errorf("%d of %d keys in the groups", len(seen), len(keys))
			}
			if want := map[string]int{"standalone": 1, "cluster": 3}[k.Name]; want != 0 && len(groups) != want {
				t.Errorf("%d groups, want %d", len(groups), want)
			}
		})
	}
}
