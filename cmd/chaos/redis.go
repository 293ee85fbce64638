package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisNode is one redis-server of the chaos cluster, started the way
// pkg/redistest starts its cluster nodes (no persistence, its own process
// group, killed with the harness), but on the host address of the run: the
// services in a network namespace reach Redis through a veth, so the nodes
// bind and announce that address rather than loopback.
type redisNode struct {
	host      string
	port, bus int
	dir       string
	cmd       *exec.Cmd
	exited    chan struct{}
}

func (n *redisNode) addr() string { return net.JoinHostPort(n.host, strconv.Itoa(n.port)) }

func (n *redisNode) args(nodeTimeout time.Duration) []string {
	return []string{
		"--port", strconv.Itoa(n.port), "--bind", n.host, "--protected-mode", "no",
		"--dir", n.dir, "--logfile", "redis.log", "--save", "", "--appendonly", "no",
		"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(n.bus),
		"--cluster-config-file", "nodes.conf", "--cluster-announce-ip", n.host,
		"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
		// A replica takes over however long its master was gone, and
		// syncs at once.
		"--cluster-replica-validity-factor", "0", "--repl-diskless-sync-delay", "0",
	}
}

// start runs the node (again, after a kill: same port, same nodes.conf,
// so it rejoins the cluster) and waits until it answers PING.
func (n *redisNode) start(ctx context.Context, nodeTimeout time.Duration) error {
	cmd := exec.Command("redis-server", n.args(nodeTimeout)...)
	cmd.Dir = n.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	exited := n.exited
	go func() { cmd.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for c.Ping(ctx).Err() != nil {
		select {
		case <-exited:
			return fmt.Errorf("redis-server %s exited: %s", n.addr(), tail(filepath.Join(n.dir, "redis.log"), 5))
		case <-ctx.Done():
			n.kill()
			return fmt.Errorf("redis-server %s not answering", n.addr())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// kill SIGKILLs the node and waits until it is gone.
func (n *redisNode) kill() {
	if n.cmd == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.exited
	n.cmd = nil
}

// redisCluster is a 6-node Redis Cluster: 3 masters with a replica each.
type redisCluster struct {
	nodes       []*redisNode
	nodeTimeout time.Duration
}

// startRedisCluster starts six nodes on host with data under dir, creates
// the cluster and waits until every slot is served and every master has a
// replica in sync.
func startRedisCluster(ctx context.Context, host, dir string, nodeTimeout time.Duration) (*redisCluster, error) {
	c := &redisCluster{nodeTimeout: nodeTimeout}
	for i := range 6 {
		n := &redisNode{host: host, dir: filepath.Join(dir, fmt.Sprintf("redis%d", i))}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return nil, err
		}
		var err error
		if n.port, err = freePort(host); err == nil {
			n.bus, err = freePort(host)
		}
		if err == nil {
			err = n.start(ctx, nodeTimeout)
		}
		if err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	args := append([]string{"--cluster", "create"}, c.addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		c.stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *redisCluster) addrs() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.addr())
	}
	return out
}

func (c *redisCluster) stop() {
	for _, n := range c.nodes {
		n.kill()
	}
}

func (c *redisCluster) client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs(), MaxRedirects: 16})
}

// role is one node's view of itself: master or replica, and for a replica
// whether its link to the master is up.
func nodeRole(ctx context.Context, addr string) (master bool, linkUp bool, err error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer cl.Close()
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return false, false, err
	}
	return strings.Contains(info, "role:master"), strings.Contains(info, "master_link_status:up"), nil
}

// healthy reports whether every running node says cluster_state:ok, three
// masters are up, and (when all six run) each replica is in sync.
func (c *redisCluster) healthy(ctx context.Context) (bool, string) {
	masters, replicasUp, running := 0, 0, 0
	for _, n := range c.nodes {
		if n.cmd == nil {
			continue
		}
		running++
		cl := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
		info, err := cl.ClusterInfo(ctx).Result()
		cl.Close()
		if err != nil {
			return false, fmt.Sprintf("%s: %v", n.addr(), err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return false, n.addr() + " cluster_state not ok"
		}
		m, up, err := nodeRole(ctx, n.addr())
		if err != nil {
			return false, fmt.Sprintf("%s: %v", n.addr(), err)
		}
		if m {
			masters++
		} else if up {
			replicasUp++
		}
	}
	if masters != 3 {
		return false, fmt.Sprintf("%d masters", masters)
	}
	if running == 6 && replicasUp != 3 {
		return false, fmt.Sprintf("%d replicas in sync", replicasUp)
	}
	return true, ""
}

func (c *redisCluster) waitHealthy(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	why := ""
	for {
		ok, w := c.healthy(ctx)
		if ok {
			return nil
		}
		why = w
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis cluster not healthy after %v: %s", limit, why)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// masters returns the running nodes that are masters.
func (c *redisCluster) masters(ctx context.Context) []*redisNode {
	var out []*redisNode
	for _, n := range c.nodes {
		if n.cmd == nil {
			continue
		}
		if m, _, err := nodeRole(ctx, n.addr()); err == nil && m {
			out = append(out, n)
		}
	}
	return out
}

// killMaster SIGKILLs master victim, waits until its replica has taken
// over (the cluster serves every slot again), leaves it down for down,
// then starts it again: it rejoins as a replica of its successor. It
// returns how long the cluster needed to serve again.
func (c *redisCluster) killMaster(ctx context.Context, victim *redisNode, down time.Duration) (time.Duration, error) {
	t0 := time.Now()
	victim.kill()
	if err := c.waitHealthy(ctx, 30*time.Second); err != nil {
		return 0, fmt.Errorf("failover after killing %s: %w", victim.addr(), err)
	}
	took := time.Since(t0)
	sleepCtx(ctx, down)
	if err := victim.start(context.WithoutCancel(ctx), c.nodeTimeout); err != nil {
		return took, err
	}
	if err := c.waitHealthy(context.WithoutCancel(ctx), 60*time.Second); err != nil {
		return took, fmt.Errorf("old master %s back as a replica: %w", victim.addr(), err)
	}
	return took, nil
}

// manualFailover promotes the replica of master victim with CLUSTER
// FAILOVER (the coordinated kind: the master stops writes until the
// replica has caught up) and waits until the cluster is healthy.
func (c *redisCluster) manualFailover(ctx context.Context, victim *redisNode) error {
	cl := redis.NewClient(&redis.Options{Addr: victim.addr(), MaxRetries: -1})
	myID, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
	cl.Close()
	if err != nil {
		return fmt.Errorf("cluster myid of %s: %w", victim.addr(), err)
	}
	for _, n := range c.nodes {
		if n == victim || n.cmd == nil {
			continue
		}
		rc := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1})
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "role:slave") {
			nodes, _ := rc.ClusterNodes(ctx).Result()
			if replicaOf(nodes, myID) {
				err = rc.Do(ctx, "CLUSTER", "FAILOVER").Err()
				rc.Close()
				if err != nil {
					return fmt.Errorf("cluster failover on %s: %w", n.addr(), err)
				}
				return c.waitRole(ctx, victim, false)
			}
		}
		rc.Close()
	}
	return errors.New("no replica of " + victim.addr() + " found")
}

// replicaOf reports whether the CLUSTER NODES output, read on a replica,
// says that node ("myself") replicates master id.
func replicaOf(nodes, id string) bool {
	for line := range strings.SplitSeq(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.Contains(f[2], "myself") {
			return f[3] == id
		}
	}
	return false
}

// waitRole waits until n reports the role wanted and the cluster is healthy.
func (c *redisCluster) waitRole(ctx context.Context, n *redisNode, master bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if m, _, err := nodeRole(ctx, n.addr()); err == nil && m == master {
			return c.waitHealthy(ctx, 30*time.Second)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become a replica", n.addr())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePort asks the kernel for a free port on host.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
