// Package redistest starts real redis-server processes for tests: a shared
// standalone server and a shared 6-node Redis Cluster (3 masters, 3
// replicas) per test binary, plus private clusters and standalone servers
// for destructive tests (failover, Redis going away and coming back).
// Import it only from tests.
//
// Use [Main] from TestMain so every process is stopped when the tests end:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// Shared servers start lazily on first use and are reused by all tests of
// the package, so each test must keep to its own keys: build them from
// [Prefix]. Processes run in their own process group with a parent-death
// signal, so they die with the test binary even if it crashes.
//
// When redis-server or redis-cli is not installed, tests skip with
// installation instructions, or fail if the environment has CI=true.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

const installHelp = "redis-server and redis-cli (Redis >= 7) are required: " +
	"apt-get install -y redis-server redis-tools (Debian/Ubuntu) or brew install redis (macOS)"

// startTimeout bounds how long a server or cluster may take to come up.
const startTimeout = 30 * time.Second

// registry holds what the test binary started. It is package state by
// necessity: TestMain and the tests share servers without a handle passed
// around; it is only ever touched by tests.
var registry struct {
	mu                     sync.Mutex
	procs                  map[*node]struct{}
	dir                    string
	standOnce, clusterOnce sync.Once
	stand                  *node
	standErr               error
	cluster                *LocalCluster
	clusterErr             error
}

var prefixSeq atomic.Uint64

// unsafeKeyChars are replaced in test names used in key prefixes; braces
// in particular would turn the prefix into a hash tag.
var unsafeKeyChars = regexp.MustCompile(`[^A-Za-z0-9_/-]+`)

// Main runs the tests, stops every Redis started, checks for leaked
// goroutines (go.uber.org/goleak) and exits.
func Main(m *testing.M) {
	code := m.Run()
	StopAll()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// StopAll kills every process this package started and removes their data.
// Main calls it; call it yourself if your TestMain does not use Main.
func StopAll() {
	registry.mu.Lock()
	procs := registry.procs
	registry.procs = nil
	dir := registry.dir
	registry.dir = ""
	registry.mu.Unlock()
	for n := range procs {
		n.kill() // takes registry.mu itself
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// require skips (or, with CI=true, fails) t when Redis is not installed.
func require(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found and CI=true: %s", bin, installHelp)
			}
			t.Skipf("%s not found: %s", bin, installHelp)
		}
	}
}

// Prefix returns a key prefix unique to t (and to this call), so tests
// sharing a server never see each other's keys. It contains no braces: the
// keys' own hash tags still decide their cluster slot.
func Prefix(t testing.TB) string {
	name := unsafeKeyChars.ReplaceAllString(t.Name(), "_")
	return fmt.Sprintf("test:%s:%d:", name, prefixSeq.Add(1))
}

// Standalone returns a client of the shared standalone server and its
// address. The client is closed when t ends.
func Standalone(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	require(t)
	registry.standOnce.Do(func() {
		registry.stand, registry.standErr = startNode(context.Background(), "standalone", 0)
	})
	if registry.standErr != nil {
		t.Fatalf("start redis: %v", registry.standErr)
	}
	addr := registry.stand.addr()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c, addr
}

// NewStandalone starts a private standalone server for t, stopped when t
// ends, and returns a client of it and its address: for tests that
// reconfigure or stop the server (REPLICAOF, CLIENT PAUSE, CONFIG SET).
func NewStandalone(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	p := NewRestartable(t)
	c := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { c.Close() })
	return c, p.Addr()
}

// Cluster returns a client of the shared cluster and its node addresses.
// Do not kill its nodes: use [NewCluster] for that.
func Cluster(t testing.TB) (redis.UniversalClient, []string) {
	t.Helper()
	require(t)
	registry.clusterOnce.Do(func() {
		registry.cluster, registry.clusterErr = startCluster(context.Background(), "cluster", sharedNodeTimeout)
	})
	if registry.clusterErr != nil {
		t.Fatalf("start redis cluster: %v", registry.clusterErr)
	}
	return registry.cluster.Client(t), registry.cluster.Addrs()
}

// NewCluster starts a private cluster for t, stopped when t ends: for tests
// that kill nodes.
func NewCluster(t testing.TB) *LocalCluster {
	t.Helper()
	require(t)
	c, err := startCluster(t.Context(), fmt.Sprintf("cluster-%d", prefixSeq.Add(1)), privateNodeTimeout)
	if err != nil {
		t.Fatalf("start redis cluster: %v", err)
	}
	t.Cleanup(c.stop)
	return c
}

// node is one redis-server process.
type node struct {
	dir     string
	port    int
	busPort int // 0 unless clustered
	args    []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been reaped
}

func (n *node) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

func dataDir(name string) (string, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.dir == "" {
		d, err := os.MkdirTemp("", "redistest-")
		if err != nil {
			return "", err
		}
		registry.dir = d
	}
	dir := filepath.Join(registry.dir, name)
	return dir, os.MkdirAll(dir, 0o755)
}

// FreeAddr returns a loopback address whose port the kernel just had
// free, for tests that start a service as a process on it. Another process
// could take the port first; the service then fails to start and the test
// with it (no retry).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before redis binds it; startNode retries.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Cluster node timeouts. The shared cluster is never failed over on purpose, so it gets a timeout that
// a loaded 2-core machine (tests of several packages at once) cannot trip into a spurious failover or
// CLUSTERDOWN; private clusters exist for failover tests and keep failovers quick.
const (
	sharedNodeTimeout  = 5 * time.Second
	privateNodeTimeout = 2 * time.Second
)

// startNode starts one redis-server; a nodeTimeout above zero makes it a cluster node.
func startNode(ctx context.Context, name string, nodeTimeout time.Duration) (*node, error) {
	clustered := nodeTimeout > 0
	dir, err := dataDir(name)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		n := &node{dir: dir}
		if n.port, err = freePort(); err != nil {
			return nil, err
		}
		if clustered {
			if n.busPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		n.args = []string{
			"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1",
			"--dir", dir, "--logfile", "redis.log",
			"--save", "", "--appendonly", "no",
		}
		if clustered {
			n.args = append(n.args,
				"--cluster-enabled", "yes",
				"--cluster-port", strconv.Itoa(n.busPort),
				"--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
				// Let a replica take over however long its master was gone.
				"--cluster-replica-validity-factor", "0",
				// Replicas sync at once instead of batching for 5 s.
				"--repl-diskless-sync-delay", "0",
			)
		}
		if lastErr = n.start(ctx); lastErr == nil {
			return n, nil
		}
	}
	return nil, lastErr
}

func (n *node) start(ctx context.Context) error {
	cmd := exec.Command("redis-server", n.args...)
	cmd.Dir = n.dir
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	registry.mu.Lock()
	if registry.procs == nil {
		registry.procs = make(map[*node]struct{})
	}
	registry.procs[n] = struct{}{}
	registry.mu.Unlock()

	c := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		if err := c.Ping(ctx).Err(); err == nil {
			return nil
		}
		select {
		case <-exited:
			n.kill()
			return fmt.Errorf("redis-server on port %d exited: %s", n.port, n.logTail())
		case <-ctx.Done():
			n.kill()
			return fmt.Errorf("redis-server on port %d not answering: %s", n.port, n.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill stops the process (and its group) and waits for it.
func (n *node) kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
	registry.mu.Lock()
	delete(registry.procs, n)
	registry.mu.Unlock()
}

func (n *node) logTail() string {
	b, err := os.ReadFile(filepath.Join(n.dir, "redis.log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

// Kind is a Redis deployment that integration tests run against.
type Kind struct {
	// Name is "standalone" or "cluster", for subtest names.
	Name string
	// Client returns a client of the deployment and the calling test's own key prefix.
	Client func(t testing.TB) (redis.UniversalClient, string)
	// Env returns the environment variable, and its value, that points a
	// service at the deployment (REDIS_ADDR or REDIS_CLUSTER_ADDRS, read by
	// pkg/redisconn): for tests that start services.
	Env func(t testing.TB) (name, value string)
}

// Kinds lists the shared standalone server and the shared 6-node cluster, so a test runs the same
// body against both: for _, k := range redistest.Kinds() { t.Run(k.Name, ...) }.
func Kinds() []Kind {
	return []Kind{
		{Name: "standalone", Client: func(t testing.TB) (redis.UniversalClient, string) {
			c, _ := Standalone(t)
			return c, Prefix(t)
		}, Env: func(t testing.TB) (string, string) {
			_, addr := Standalone(t)
			return "REDIS_ADDR", addr
		}},
		{Name: "cluster", Client: func(t testing.TB) (redis.UniversalClient, string) {
			c, _ := Cluster(t)
			return c, Prefix(t)
		}, Env: func(t testing.TB) (string, string) {
			_, addrs := Cluster(t)
			return "REDIS_CLUSTER_ADDRS", strings.Join(addrs, ",")
		}},
	}
}
