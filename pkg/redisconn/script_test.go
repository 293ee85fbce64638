package redisconn_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

// incrBy adds ARGV[1] to KEYS[1] and returns the sum; a non-number fails
// with the script's own error reply.
var incrBy = redisconn.NewScript(`
if not tonumber(ARGV[1]) then return redis.error_reply('not a number: ' .. ARGV[1]) end
return redis.call('INCRBY', KEYS[1], ARGV[1])`)

// flushScripts empties the script cache of every master, as a restart or
// failover does.
func flushScripts(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(t.Context(), func(ctx context.Context, c *redis.Client) error {
			return c.ScriptFlush(ctx).Err()
		})
	} else {
		err = rdb.ScriptFlush(t.Context()).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// keys returns n keys of t spread over the cluster's slots.
func keys(prefix string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("%s{%d}n", prefix, i)
	}
	return ks
}

// The script tests flush the script cache of the shared servers, so they
// do not run in parallel with each other.

func TestScriptRunAndDo(t *testing.T) {
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			rdb, prefix := k.Client(t)
			ctx := t.Context()
			for i, key := range keys(prefix, 6) {
				flushScripts(t, rdb)
				// Run: EVALSHA fails with NOSCRIPT, EVAL runs it once.
				if got, err := incrBy.Run(ctx, rdb, []string{key}, 2).Int(); err != nil || got != 2 {
					t.Fatalf("Run after SCRIPT FLUSH on %s: %d, %v; want 2", key, got, err)
				}
				master, err := redisconn.Master(ctx, rdb, key)
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := master.ScriptExists(ctx, incrBy.Hash()).Result(); err != nil || !ok[0] {
					t.Fatalf("script not cached after the fallback: %v %v", ok, err)
				}
				// Do with a command from Args, as hot paths build it.
				flushScripts(t, rdb)
				a := append(incrBy.Args(1, 2), key, i)
				cmd := redis.NewCmd(ctx, a...)
				if err := incrBy.Do(ctx, rdb, cmd); err != nil {
					t.Fatalf("Do: %v", err)
				}
				if got, err := cmd.Int(); err != nil || got != 2+i {
					t.Fatalf("Do after SCRIPT FLUSH on %s: %d, %v; want %d", key, got, err, 2+i)
				}
				// Cached now: the plain EVALSHA works.
				if got, err := rdb.EvalSha(ctx, incrBy.Hash(), []string{key}, 1).Int(); err != nil || got != 3+i {
					t.Fatalf("EVALSHA: %d, %v; want %d", got, err, 3+i)
				}
			}
			// The script's own error is returned, not retried or hidden.
			err := incrBy.Run(ctx, rdb, []string{prefix + "x"}, "x").Err()
			if err == nil || !strings.Contains(err.Error(), "not a number: x") || redisconn.Classify(err) != redisconn.KindBug {
				t.Errorf("Run of a failing script: %v", err)
			}
		})
	}
}

func TestScriptRetry(t *testing.T) {
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			rdb, prefix := k.Client(t)
			ctx := t.Context()
			ks := keys(prefix, 8)
			run := func() []*redis.Cmd {
				p := rdb.Pipeline()
				cmds := make([]*redis.Cmd, len(ks)+1)
				for i, key := range ks {
					cmds[i] = incrBy.Cmd(ctx, []string{key}, i)
					_ = p.Process(ctx, cmds[i])
				}
				// A failing run of the script in the same pipeline.
				cmds[len(ks)] = incrBy.Cmd(ctx, []string{prefix + "x"}, "x")
				_ = p.Process(ctx, cmds[len(ks)])
				_, _ = p.Exec(ctx)
				return cmds
			}
			flushScripts(t, rdb)
			cmds := run()
			if n := incrBy.Retry(ctx, rdb, cmds); n != len(cmds) {
				t.Errorf("Retry after SCRIPT FLUSH resent %d commands, want %d", n, len(cmds))
			}
			check := func(round int) {
				t.Helper()
				for i, c := range cmds[:len(ks)] {
					if got, err := c.Int(); err != nil || got != round*i {
						t.Errorf("round %d, key %d: %d, %v; want %d", round, i, got, err, round*i)
					}
				}
				if err := cmds[len(ks)].Err(); err == nil || !strings.Contains(err.Error(), "not a number") {
					t.Errorf("round %d: failing run: %v", round, err)
				}
			}
			check(1)
			// Cached everywhere now: nothing to resend.
			cmds = run()
			if n := incrBy.Retry(ctx, rdb, cmds); n != 0 {
				t.Errorf("Retry with the script cached resent %d commands", n)
			}
			check(2)
		})
	}
}

func TestWriteAndWait(t *testing.T) {
	tests := []struct {
		kind     redistest.Kind
		replicas int // the deployment's replicas per master
	}{
		{redistest.Kinds()[0], 0},
		{redistest.Kinds()[1], 1},
	}
	for _, tt := range tests {
		t.Run(tt.kind.Name, func(t *testing.T) {
			rdb, prefix := tt.kind.Client(t)
			ctx := t.Context()
			key := "{" + prefix + "}n"
			for round, flush := range []bool{true, false, true} {
				if flush {
					flushScripts(t, rdb)
				}
				var cmds []*redis.Cmd
				var set *redis.StatusCmd
				n, err := redisconn.WriteAndWait(ctx, rdb, key, 1, 200*time.Millisecond, func(p redis.Pipeliner) {
					set = p.Set(ctx, key+":plain", round, 0)
					for i := range 3 {
						c := incrBy.Cmd(ctx, []string{key}, i+1)
						_ = p.Process(ctx, c)
						cmds = append(cmds, c)
					}
				}, incrBy)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if n != tt.replicas {
					t.Errorf("round %d (flush %v): %d replicas confirmed, want %d", round, flush, n, tt.replicas)
				}
				if err := set.Err(); err != nil {
					t.Errorf("round %d: SET: %v", round, err)
				}
				sum := 6 * round
				for i, c := range cmds {
					sum += i + 1
					if got, err := c.Int(); err != nil || got != sum {
						t.Errorf("round %d, run %d: %d, %v; want %d", round, i, got, err, sum)
					}
				}
			}
			if _, ok := rdb.(*redis.ClusterClient); !ok {
				return
			}
			// A write of a key on another master is refused (MOVED), not
			// applied where WAIT would not cover it.
			m1, err := redisconn.Master(ctx, rdb, key)
			if err != nil {
				t.Fatal(err)
			}
			other := ""
			for i := 0; other == ""; i++ {
				k := fmt.Sprintf("%s{other-%d}", prefix, i)
				if m2, err := redisconn.Master(ctx, rdb, k); err == nil && m2.Options().Addr != m1.Options().Addr {
					other = k
				}
			}
			var set *redis.StatusCmd
			if _, err := redisconn.WriteAndWait(ctx, rdb, key, 0, time.Millisecond, func(p redis.Pipeliner) {
				set = p.Set(ctx, other, 1, 0)
			}); err != nil {
				t.Fatal(err)
			}
			if _, ok := redis.IsMovedError(set.Err()); !ok {
				t.Errorf("SET of another master's key through key's master: %v, want MOVED", set.Err())
			}
		})
	}
}

// TestStatus checks the mapping to gRPC status and that each error is
// logged exactly once, and only when the service must look at it.
func TestStatus(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		err      error
		want     codes.Code
		reason   string // of the ErrorInfo; "" for none
		wantLogs string // levels of the log lines
	}{
		{"nil", t.Context(), nil, codes.OK, "", ""},
		{"transient", t.Context(), fmt.Errorf("load: %w", redis.ErrClosed), codes.Unavailable, "STORE_UNAVAILABLE", "WARN"},
		{"bug", t.Context(), errors.New("bad reply"), codes.Internal, "INTERNAL", "ERROR"},
		{"script error", t.Context(), fmt.Errorf("commit: %w", redis.ErrNoScript), codes.Internal, "INTERNAL", "ERROR"},
		{"cancelled", t.Context(), fmt.Errorf("load: %w", context.Canceled), codes.Canceled, "", ""},
		{"deadline", t.Context(), context.DeadlineExceeded, codes.DeadlineExceeded, "", ""},
		{"timeout after the caller left", ended, fmt.Errorf("load: %w", redis.ErrPoolTimeout), codes.Canceled, "", ""},
		{"bug after the caller left", ended, errors.New("bad reply"), codes.Internal, "INTERNAL", "ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			err := redisconn.Status(tt.ctx, log, tt.err, "test.domain.v1", "test storage", "op", "x")
			st := status.Convert(err)
			if st.Code() != tt.want {
				t.Errorf("code %v, want %v", st.Code(), tt.want)
			}
			ei := rpcerr.Info(err)
			if ei.GetReason() != tt.reason || (tt.reason != "" && ei.GetDomain() != "test.domain.v1") {
				t.Errorf("ErrorInfo %v, want domain test.domain.v1 reason %q", ei, tt.reason)
			}
			if tt.err != nil && strings.Contains(st.Message(), tt.err.Error()) {
				t.Errorf("message %q shows the error", st.Message())
			}
			var levels []string
			for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
				if _, rest, ok := strings.Cut(line, "level="); ok {
					lvl, _, _ := strings.Cut(rest, " ")
					levels = append(levels, lvl)
				}
			}
			if got := strings.Join(levels, ","); got != tt.wantLogs {
				t.Errorf("logged %q, want %q:\n%s", got, tt.wantLogs, buf.String())
			}
		})
	}
}

func TestConfirmed(t *testing.T) {
	for _, tt := range []struct {
		name        string
		n, replicas int
		waitErr     error
		wantText    string // "": confirmed
	}{
		{"enough replicas", 2, 2, nil, ""},
		{"more than asked", 3, 1, nil, ""},
		{"none asked", 0, 0, nil, ""},
		{"too few", 1, 2, nil, "1 of 2 replicas confirmed within 500ms"},
		{"the WAIT failed", 0, 1, errors.New("connection reset"), "connection reset"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := redisconn.Confirmed(tt.n, tt.replicas, 500*time.Millisecond, tt.waitErr)
			if tt.wantText == "" {
				if err != nil {
					t.Fatalf("Confirmed = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, redisconn.ErrNotReplicated) || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("Confirmed = %v, want ErrNotReplicated saying %q", err, tt.wantText)
			}
		})
	}
}
