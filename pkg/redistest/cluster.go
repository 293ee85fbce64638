package redistest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// LocalCluster is a running 6-node Redis Cluster: 3 masters, each with one
// replica, cluster-node-timeout 2 s (5 s for the shared cluster) so failovers take a few seconds.
type LocalCluster struct {
	nodes []*node
}

func startCluster(ctx context.Context, name string, nodeTimeout time.Duration) (*LocalCluster, error) {
	c := &LocalCluster{}
	for i := range 6 {
		n, err := startNode(ctx, path.Join(name, fmt.Sprintf("node%d", i)), nodeTimeout)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		c.stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.waitHealthy(ctx, nil); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *LocalCluster) stop() {
	for _, n := range c.nodes {
		n.kill()
	}
}

// Addrs returns the node addresses (host:port), masters and replicas.
func (c *LocalCluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.addr()
	}
	return addrs
}

// Client returns a cluster client, closed when t ends.
func (c *LocalCluster) Client(t testing.TB) redis.UniversalClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master    string
	isMaster, connected bool
	failed, suspect     bool // marked failed by a majority / by this node only
}

func clusterNodes(ctx context.Context, addr string) ([]clusterNode, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	out, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	var nodes []clusterNode
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := clusterNode{id: f[0], addr: strings.Split(f[1], "@")[0], master: f[3], connected: f[7] == "connected"}
		flags := strings.Split(f[2], ",")
		for _, fl := range flags {
			switch fl {
			case "master":
				n.isMaster = true
			case "fail":
				n.failed = true
			case "fail?":
				n.suspect = true
			}
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// waitHealthy waits until every live node (all but skip) reports
// cluster_state:ok, and every live node's view has 3 healthy masters each
// with a connected replica among the live nodes.
func (c *LocalCluster) waitHealthy(ctx context.Context, skip *node) error {
	var last string
	for {
		ok, why := c.healthy(ctx, skip)
		if ok {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not healthy: %s", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *LocalCluster) healthy(ctx context.Context, skip *node) (bool, string) {
	live := 0
	for _, n := range c.nodes {
		if n == skip {
			continue
		}
		live++
		cl := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1})
		info, err := cl.ClusterInfo(ctx).Result()
		repl, rerr := cl.Info(ctx, "replication").Result()
		cl.Close()
		if err = errors.Join(err, rerr); err != nil {
			return false, fmt.Sprintf("%s: %v", n.addr(), err)
		}
		if skip == nil && strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return false, n.addr() + " replica not in sync"
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return false, n.addr() + " cluster_state not ok"
		}
	}
	nodes, err := clusterNodes(ctx, c.firstLive(skip).addr())
	if err != nil {
		return false, err.Error()
	}
	masters := map[string]bool{}
	for _, n := range nodes {
		if n.isMaster && !n.failed && !n.suspect {
			masters[n.id] = false
		}
	}
	if len(masters) != 3 {
		return false, fmt.Sprintf("%d healthy masters", len(masters))
	}
	if skip == nil {
		for _, n := range nodes {
			if !n.isMaster && !n.failed && n.connected {
				if _, ok := masters[n.master]; ok {
					masters[n.master] = true
				}
			}
		}
		for id, hasReplica := range masters {
			if !hasReplica {
				return false, "master " + id + " has no replica yet"
			}
		}
	}
	return true, ""
}

func (c *LocalCluster) firstLive(skip *node) *node {
	for _, n := range c.nodes {
		if n != skip {
			return n
		}
	}
	return nil
}

func (c *LocalCluster) nodeByAddr(addr string) *node {
	for _, n := range c.nodes {
		if n.addr() == addr {
			return n
		}
	}
	return nil
}

// KillMasterOf kills the master serving key's slot, waits until its
// replica has been promoted and the cluster is ok again, and returns the
// killed node's address (for [LocalCluster.Restart]).
func (c *LocalCluster) KillMasterOf(t testing.TB, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	master, err := cc.MasterForKey(ctx, key)
	var victim *node
	if err == nil {
		victim = c.nodeByAddr(master.Options().Addr)
	}
	cc.Close()
	if victim == nil {
		t.Fatalf("no master found for key %q: %v", key, err)
	}
	vc := redis.NewClient(&redis.Options{Addr: victim.addr()})
	victimID, err := vc.Do(ctx, "CLUSTER", "MYID").Text()
	vc.Close()
	if err != nil {
		t.Fatalf("cluster myid: %v", err)
	}
	victim.kill()
	if err := c.waitPromoted(ctx, victim, victimID); err != nil {
		t.Fatalf("failover after killing %s: %v", victim.addr(), err)
	}
	if err := c.waitHealthy(ctx, victim); err != nil {
		t.Fatalf("failover after killing %s: %v", victim.addr(), err)
	}
	return victim.addr()
}

// waitPromoted waits until every live node sees the victim as failed (not
// just suspected); waitHealthy then checks that 3 live masters serve.
func (c *LocalCluster) waitPromoted(ctx context.Context, victim *node, victimID string) error {
	for {
		done := true
		for _, n := range c.nodes {
			if n == victim {
				continue
			}
			nodes, err := clusterNodes(ctx, n.addr())
			if err != nil {
				done = false
				break
			}
			for _, cn := range nodes {
				if cn.id == victimID && !cn.failed {
					done = false
				}
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica of %s not promoted", victim.addr())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Restart starts a killed node again with its old port and data; it
// rejoins as a replica. Restart waits until the cluster is fully healthy.
func (c *LocalCluster) Restart(t testing.TB, addr string) {
	t.Helper()
	n := c.nodeByAddr(addr)
	if n == nil {
		t.Fatalf("restart: no node %s", addr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	if err := n.start(ctx); err != nil {
		t.Fatalf("restart %s: %v", addr, err)
	}
	if err := c.waitHealthy(ctx, nil); err != nil {
		t.Fatalf("cluster after restarting %s: %v", addr, err)
	}
}

// StallReplicaOf stops (SIGSTOP) the replica of the master serving key's
// slot: it stays connected but applies and acknowledges nothing, so a WAIT
// on that master times out, as when a replica stalls or its link is
// congested, while the other masters replicate as usual. The returned
// function lets it go on (SIGCONT), and it catches up from the master's
// backlog; it also runs when t ends. A replica stalled longer than the
// node timeout is marked failed by the others, which fails nothing over.
func (c *LocalCluster) StallReplicaOf(t testing.TB, key string) (resume func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	// Each node's own view of its role: a cluster's views of who
	// replicates whom may lag behind the replication links.
	masterAddr := c.masterAddrOf(ctx, t, key)
	_, masterPort, _ := strings.Cut(masterAddr, ":")
	var replica *node
	for _, n := range c.nodes {
		nc := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1})
		info, err := nc.Info(ctx, "replication").Result()
		nc.Close()
		if err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_port:"+masterPort+"\r\n") {
			replica = n
		}
	}
	if replica == nil {
		t.Fatalf("master %s has no replica", masterAddr)
	}
	return stall(t, replica)
}

// StallMasterOf stops (SIGSTOP) the master serving key's slot: its
// connections stay open but nothing is answered, as when a master hangs
// or its host is cut off, while the other masters serve as usual. The
// returned function lets it go on (SIGCONT); it also runs when t ends.
// Stalled longer than the node timeout (2 s in a private cluster), it is
// failed over.
func (c *LocalCluster) StallMasterOf(t testing.TB, key string) (resume func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	addr := c.masterAddrOf(ctx, t, key)
	n := c.nodeByAddr(addr)
	if n == nil {
		t.Fatalf("master %s of key %q is no node of this cluster", addr, key)
	}
	return stall(t, n)
}

// masterAddrOf returns the address of the master serving key's slot.
func (c *LocalCluster) masterAddrOf(ctx context.Context, t testing.TB, key string) string {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer cc.Close()
	master, err := cc.MasterForKey(ctx, key)
	if err != nil {
		t.Fatalf("no master found for key %q: %v", key, err)
	}
	return master.Options().Addr
}

// stall sends n SIGSTOP and returns the function that sends SIGCONT,
// which also runs when t ends.
func stall(t testing.TB, n *node) (resume func()) {
	t.Helper()
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil {
		t.Fatalf("node %s is not running", n.addr())
	}
	proc := cmd.Process
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("stall node %s: %v", n.addr(), err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = proc.Signal(syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}
