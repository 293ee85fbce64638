package redisconn_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// TestClassify classifies errors captured from real Redis servers (the
// shared standalone server and cluster, and private servers for those that
// reconfigure one), and, for replies that are hard to provoke, from a fake
// server sending the reply Redis would send, so that go-redis parses it as
// it parses Redis's own.
func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// err provokes the error; contains is a part of its text, checked
		// so that a test provoking the wrong error does not pass.
		err      func(t *testing.T) error
		contains string
		want     redisconn.Kind
	}{
		{"no error", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			return rdb.Ping(t.Context()).Err()
		}, "", redisconn.KindNone},

		// Bugs: the same call fails again.
		{"WRONGTYPE", func(t *testing.T) error {
			rdb, key := standaloneKey(t)
			rdb.Set(t.Context(), key, "x", 0)
			return rdb.LPush(t.Context(), key, "y").Err()
		}, "WRONGTYPE", redisconn.KindBug},
		{"syntax error", func(t *testing.T) error {
			rdb, key := standaloneKey(t)
			return rdb.Do(t.Context(), "set", key, "x", "bogus").Err()
		}, "ERR syntax error", redisconn.KindBug},
		{"unknown command", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			return rdb.Do(t.Context(), "nosuchcommand").Err()
		}, "ERR unknown command", redisconn.KindBug},
		{"script error_reply", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			return rdb.Eval(t.Context(), "return redis.error_reply('bad move')", nil).Err()
		}, "bad move", redisconn.KindBug},
		{"script error_reply with a code", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			return rdb.Eval(t.Context(), "return redis.error_reply('CONFLICT stale version')", nil).Err()
		}, "CONFLICT stale version", redisconn.KindBug},
		{"script runtime error", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			return rdb.Eval(t.Context(), "local x = nil; return x + 1", nil).Err()
		}, "user_script:1", redisconn.KindBug},
		{"script error() call", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			return rdb.Eval(t.Context(), "error('broken invariant')", nil).Err()
		}, "broken invariant", redisconn.KindBug},
		{"WRONGTYPE inside a script", func(t *testing.T) error {
			rdb, key := standaloneKey(t)
			rdb.Set(t.Context(), key, "x", 0)
			return rdb.Eval(t.Context(), "return redis.call('LPUSH', KEYS[1], 'y')", []string{key}).Err()
		}, "WRONGTYPE", redisconn.KindBug},
		{"NOSCRIPT", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			return rdb.EvalSha(t.Context(), strings.Repeat("0", 40), nil).Err()
		}, "NOSCRIPT", redisconn.KindBug},
		{"unhandled nil", func(t *testing.T) error {
			rdb, key := standaloneKey(t)
			return rdb.Get(t.Context(), key).Err()
		}, "redis: nil", redisconn.KindBug},
		{"CROSSSLOT on the cluster", func(t *testing.T) error {
			rdb, _ := redistest.Cluster(t)
			p := redistest.Prefix(t)
			return rdb.Do(t.Context(), "mset", "{"+p+"a}x", 1, "{"+p+"b}x", 2).Err()
		}, "CROSSSLOT", redisconn.KindBug},
		{"script error_reply on the cluster", func(t *testing.T) error {
			rdb, _ := redistest.Cluster(t)
			return rdb.Eval(t.Context(), "return redis.error_reply('bad move')", []string{redistest.Prefix(t)}).Err()
		}, "bad move", redisconn.KindBug},
		{"NOSCRIPT on the cluster", func(t *testing.T) error {
			rdb, _ := redistest.Cluster(t)
			return rdb.EvalSha(t.Context(), strings.Repeat("0", 40), []string{redistest.Prefix(t)}).Err()
		}, "NOSCRIPT", redisconn.KindBug},

		// The caller's context.
		{"caller cancelled", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return rdb.Ping(ctx).Err()
		}, "context canceled", redisconn.KindCanceled},
		{"caller's deadline passed", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			ctx, cancel := context.WithTimeout(t.Context(), -time.Second)
			defer cancel()
			return rdb.Ping(ctx).Err()
		}, "deadline exceeded", redisconn.KindCanceled},
		{"wrapped cancellation", func(t *testing.T) error {
			rdb, _ := redistest.Standalone(t)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return fmt.Errorf("load match: %w", rdb.Ping(ctx).Err())
		}, "load match: context canceled", redisconn.KindCanceled},

		// Transient: Redis unreachable or refusing for now.
		{"READONLY: write to a replica", func(t *testing.T) error {
			rdb := replica(t)
			return rdb.Set(t.Context(), "k", "v", 0).Err()
		}, "READONLY", redisconn.KindTransient},
		{"READONLY inside a script", func(t *testing.T) error {
			rdb := replica(t)
			return rdb.Eval(t.Context(), "return redis.call('SET', KEYS[1], 'v')", []string{"k"}).Err()
		}, "READONLY", redisconn.KindTransient},
		{"MASTERDOWN", func(t *testing.T) error {
			rdb := replica(t)
			if err := rdb.ConfigSet(t.Context(), "replica-serve-stale-data", "no").Err(); err != nil {
				t.Fatal(err)
			}
			return rdb.Get(t.Context(), "k").Err()
		}, "MASTERDOWN", redisconn.KindTransient},
		{"MOVED from a master", func(t *testing.T) error {
			return clusterNodeError(t, false)
		}, "MOVED", redisconn.KindTransient},
		{"MOVED from a replica (write)", func(t *testing.T) error {
			return clusterNodeError(t, true)
		}, "MOVED", redisconn.KindTransient},
		{"BUSY: a long script runs", busy, "BUSY", redisconn.KindTransient},
		{"connection refused", func(t *testing.T) error {
			c := redis.NewClient(&redis.Options{Addr: redistest.FreeAddr(t), MaxRetries: -1})
			defer c.Close()
			return c.Ping(t.Context()).Err()
		}, "connection refused", redisconn.KindTransient},
		{"client closed", func(t *testing.T) error {
			_, addr := redistest.Standalone(t)
			c := redis.NewClient(&redis.Options{Addr: addr})
			c.Close()
			return c.Ping(t.Context()).Err()
		}, "client is closed", redisconn.KindTransient},
		{"connection killed by the server", func(t *testing.T) error {
			admin, addr := redistest.NewStandalone(t)
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1})
			defer c.Close()
			conn := c.Conn()
			defer conn.Close()
			id, err := conn.ClientID(t.Context()).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := admin.ClientKillByFilter(t.Context(), "ID", fmt.Sprint(id)).Err(); err != nil {
				t.Fatal(err)
			}
			return conn.Ping(t.Context()).Err()
		}, "", redisconn.KindTransient},
		{"read timeout (server paused)", func(t *testing.T) error {
			admin, addr := redistest.NewStandalone(t)
			if err := admin.Do(t.Context(), "client", "pause", 1000, "all").Err(); err != nil {
				t.Fatal(err)
			}
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: 100 * time.Millisecond})
			defer c.Close()
			return c.Get(t.Context(), "k").Err()
		}, "i/o timeout", redisconn.KindTransient},
		{"pool timeout", func(t *testing.T) error {
			_, addr := redistest.NewStandalone(t)
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, PoolTimeout: 50 * time.Millisecond})
			defer c.Close()
			busy := c.Conn() // holds the only connection
			defer busy.Close()
			if err := busy.Ping(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			return c.Ping(t.Context()).Err()
		}, "connection pool timeout", redisconn.KindTransient},

		// Replies that are hard to provoke, sent by a fake server.
		{"ASK", fake("-ASK 3999 127.0.0.1:6381"), "ASK 3999", redisconn.KindTransient},
		{"MOVED (fake)", fake("-MOVED 3999 127.0.0.1:6381"), "MOVED 3999", redisconn.KindTransient},
		{"TRYAGAIN", fake("-TRYAGAIN Multiple keys request during rehashing of slot"), "TRYAGAIN", redisconn.KindTransient},
		{"CLUSTERDOWN", fake("-CLUSTERDOWN The cluster is down"), "CLUSTERDOWN", redisconn.KindTransient},
		{"LOADING", fake("-LOADING Redis is loading the dataset in memory"), "LOADING", redisconn.KindTransient},
		{"MASTERDOWN (fake)", fake("-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), "MASTERDOWN", redisconn.KindTransient},
		{"NOREPLICAS", fake("-NOREPLICAS Not enough good replicas to write."), "NOREPLICAS", redisconn.KindTransient},
		{"OOM", fake("-OOM command not allowed when used memory > 'maxmemory'."), "OOM", redisconn.KindTransient},
		{"max clients", fake("-ERR max number of clients reached"), "max number of clients", redisconn.KindTransient},
		{"BUSYGROUP is no BUSY", fake("-BUSYGROUP Consumer Group name already exists"), "BUSYGROUP", redisconn.KindBug},
		{"BUSYKEY is no BUSY", fake("-BUSYKEY Target key name already exists."), "BUSYKEY", redisconn.KindBug},
		{"NOPERM", fake("-NOPERM this user has no permissions to run the 'set' command"), "NOPERM", redisconn.KindBug},
		{"ERR", fake("-ERR wrong number of arguments for 'get' command"), "wrong number", redisconn.KindBug},
		{"not a Redis error", func(*testing.T) error { return errors.New("bad reply") }, "bad reply", redisconn.KindBug},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.err(t)
			if tt.want == redisconn.KindNone && err != nil {
				t.Fatalf("want no error, got %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("provoked %q (%T), want an error containing %q", err, err, tt.contains)
			}
			if got := redisconn.Classify(err); got != tt.want {
				t.Errorf("Classify(%q (%T)) = %v, want %v", err, err, got, tt.want)
			}
			if got := redisconn.Transient(fmt.Errorf("wrapped: %w", err)); got != (tt.want == redisconn.KindTransient) {
				t.Errorf("Transient(wrapped %q) = %v", err, got)
			}
		})
	}
}

func standaloneKey(t *testing.T) (redis.UniversalClient, string) {
	rdb, _ := redistest.Standalone(t)
	return rdb, redistest.Prefix(t) + "k"
}

// replica returns a client (without retries) of a private server made a
// replica of a master that does not exist, as a failed-over master is
// until it syncs: read-only, its link to the master down.
func replica(t *testing.T) redis.UniversalClient {
	admin, addr := redistest.NewStandalone(t)
	host, port, _ := net.SplitHostPort(redistest.FreeAddr(t))
	if err := admin.Do(t.Context(), "replicaof", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// clusterNodeError sends SET of a key to a node of the shared cluster that
// does not serve it as master: another master, or the key's own replica.
func clusterNodeError(t *testing.T, toReplica bool) error {
	rdb, addrs := redistest.Cluster(t)
	key := redistest.Prefix(t) + "k"
	master, err := rdb.(*redis.ClusterClient).MasterForKey(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	masterAddr := master.Options().Addr
	for _, a := range addrs {
		if a == masterAddr {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		defer c.Close()
		role, err := c.Do(t.Context(), "role").Slice()
		if err != nil {
			t.Fatal(err)
		}
		isReplica := role[0] == "slave"
		if isReplica && toReplica && fmt.Sprint(role[1], ":", role[2]) != masterAddr {
			continue // another master's replica
		}
		if isReplica == toReplica {
			return c.Set(t.Context(), key, "v", 0).Err()
		}
	}
	t.Fatalf("no suitable node for %s (master %s) among %v", key, masterAddr, addrs)
	return nil
}

// busy runs an endless script on a private server and returns the error of
// a PING sent meanwhile, then kills the script.
func busy(t *testing.T) error {
	admin, addr := redistest.NewStandalone(t)
	ctx := t.Context()
	if err := admin.ConfigSet(ctx, "busy-reply-threshold", "20").Err(); err != nil {
		t.Fatal(err)
	}
	looper := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	defer looper.Close()
	done := make(chan error, 1)
	go func() { done <- looper.Eval(ctx, "while true do end", nil).Err() }()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var err error
	for range 200 {
		if err = c.Ping(ctx).Err(); err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if kerr := c.Do(ctx, "script", "kill").Err(); kerr != nil {
		t.Errorf("script kill: %v", kerr)
	}
	if lerr := <-done; redisconn.Classify(lerr) != redisconn.KindBug {
		t.Errorf("killed script: %v is %v, want %v", lerr, redisconn.Classify(lerr), redisconn.KindBug)
	}
	return err
}

// fake returns a producer of the error go-redis returns for reply, sent by
// a fake server for every command but the connection handshake.
func fake(reply string) func(t *testing.T) error {
	return func(t *testing.T) error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		t.Cleanup(func() { l.Close(); wg.Wait() })
		wg.Go(func() {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			serveFake(conn, reply)
		})
		c := redis.NewClient(&redis.Options{Addr: l.Addr().String(), MaxRetries: -1, DisableIdentity: true})
		defer c.Close()
		return c.Get(t.Context(), "k").Err()
	}
}

// serveFake answers RESP commands on conn: an error to HELLO (so the
// client speaks RESP2), reply to everything else.
func serveFake(conn net.Conn, reply string) {
	r := bufio.NewReader(conn)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		out := reply
		if strings.EqualFold(args[0], "hello") {
			out = "-ERR unknown command 'HELLO'"
		}
		if _, err := conn.Write([]byte(out + "\r\n")); err != nil {
			return
		}
	}
}

func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	var n int
	if _, err := fmt.Sscanf(line, "*%d\r\n", &n); err != nil || n < 1 {
		return nil, fmt.Errorf("bad command header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		var size int
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		if _, err := fmt.Sscanf(line, "$%d\r\n", &size); err != nil {
			return nil, fmt.Errorf("bad argument header %q", line)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}
