package redistest

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { Main(m) }

// script touches two keys; it is legal in a cluster only if they share a slot.
var script = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1])
return redis.call('INCRBY', KEYS[2], ARGV[1])`)

func TestScriptOnHashTaggedKeys(t *testing.T) {
	t.Parallel()
	if _, addrs := Cluster(t); len(addrs) != 6 {
		t.Fatalf("cluster has %d nodes, want 6", len(addrs))
	}
	for _, k := range Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			c, p := k.Client(t)
			keys := []string{p + "{m:1}:last", p + "{m:1}:sum"}
			for i, want := range []int64{5, 10} {
				got, err := script.Run(t.Context(), c, keys, 5).Int64()
				if err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				if got != want {
					t.Fatalf("run %d = %d, want %d", i, got, want)
				}
			}
		})
	}
}

func TestClusterRefusesCrossSlotScript(t *testing.T) {
	t.Parallel()
	c, _ := Cluster(t)
	p := Prefix(t)
	// Distinct hash tags: different slots.
	err := script.Run(t.Context(), c, []string{p + "{a}", p + "{b}"}, 1).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("cross-slot script: err = %v, want CROSSSLOT", err)
	}
}

func TestPrefixesAreDistinct(t *testing.T) {
	t.Parallel()
	if a, b := Prefix(t), Prefix(t); a == b || strings.ContainsAny(a, "{}") {
		t.Fatalf("prefixes %q, %q: want distinct and without braces", a, b)
	}
}

func TestFailoverAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("failover takes a few seconds")
	}
	t.Parallel()
	cl := NewCluster(t)
	c := cl.Client(t)
	ctx := t.Context()
	key := Prefix(t) + "{game}:state"
	if err := c.Set(ctx, key, "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// WAIT on the key's master makes sure the replica has the write
	// before the master dies.
	master, err := c.(*redis.ClusterClient).MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := master.Do(ctx, "WAIT", 1, 2000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT = %d, %v; want 1 replica", n, err)
	}
	start := time.Now()
	killed := cl.KillMasterOf(t, key)
	t.Logf("replica promoted %v after kill", time.Since(start))
	// go-redis does not reload its slot map on connection errors (it takes
	// about a minute to notice by itself): reload it, as services should.
	var got string
	for range 100 {
		if got, err = c.Get(ctx, key).Result(); err == nil || err == redis.Nil {
			break
		}
		c.(*redis.ClusterClient).ReloadState(ctx)
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || got != "before" {
		t.Fatalf("read after failover = %q, %v; want the replicated value", got, err)
	}
	if err := c.Set(ctx, key, "after", 0).Err(); err != nil {
		t.Fatalf("write after failover: %v", err)
	}
	t.Logf("client followed the failover %v after kill", time.Since(start))
	cl.Restart(t, killed)
	got, err = c.Get(ctx, key).Result()
	if err != nil || got != "after" {
		t.Fatalf("read after restart = %q, %v", got, err)
	}
}

func TestRestartableStopAndStart(t *testing.T) {
	t.Parallel()
	p := NewRestartable(t)
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("ping a started server: %v", err)
	}
	p.Stop()
	if err := c.Ping(t.Context()).Err(); err == nil {
		t.Fatal("ping a stopped server succeeded")
	}
	p.Start(t)
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("ping after Start on %s: %v", p.Addr(), err)
	}
}
