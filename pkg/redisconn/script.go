package redisconn

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Processor sends one command and waits for its reply: a go-redis client
// or a redisbatch.Batcher. (A pipeline's Process only queues the command;
// use [Script.Retry] after its Exec instead.)
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Script is a Lua script run by its SHA1 digest (EVALSHA), so that its
// source crosses the network only when a node lacks it: a restarted node,
// a promoted replica, a new shard, SCRIPT FLUSH. Such a node answers
// NOSCRIPT, which means nothing ran; the script is then sent once more as
// EVAL with its source, which also caches it on that node. The fallback is
// bounded: one EVAL per failed EVALSHA, never a loop.
//
// Run and Do serve single calls, Retry a pipeline after its Exec, and
// [WriteAndWait] a pipeline confirmed by WAIT.
type Script struct {
	src, hash string
}

// NewScript returns the script with source src.
func NewScript(src string) *Script {
	h := sha1.Sum([]byte(src))
	return &Script{src: src, hash: hex.EncodeToString(h[:])}
}

// Hash returns the script's SHA1 digest, hex-encoded as EVALSHA takes it.
func (s *Script) Hash() string { return s.hash }

// Args starts the arguments of an EVALSHA of s with nkeys keys
// ("evalsha", digest, nkeys) in a slice with room for n more: the caller
// appends the keys, then the script's arguments, and sends
// redis.NewCmd(ctx, args...) with [Script.Do]. It is for hot paths, where
// one slice holds the whole command; elsewhere use [Script.Cmd].
func (s *Script) Args(nkeys, n int) []any {
	return append(make([]any, 0, 3+n), "evalsha", s.hash, nkeys)
}

// Cmd returns an EVALSHA of s with keys and args, not sent: queue it on a
// pipeline (then [Script.Retry]) or send it with [Script.Do].
func (s *Script) Cmd(ctx context.Context, keys []string, args ...any) *redis.Cmd {
	a := s.Args(len(keys), len(keys)+len(args))
	for _, k := range keys {
		a = append(a, k)
	}
	return redis.NewCmd(ctx, append(a, args...)...)
}

// Run runs s once with keys and args through c, falling back to EVAL on
// NOSCRIPT (see [Script.Do]), and returns the command holding the reply.
func (s *Script) Run(ctx context.Context, c Processor, keys []string, args ...any) *redis.Cmd {
	cmd := s.Cmd(ctx, keys, args...)
	_ = s.Do(ctx, c, cmd)
	return cmd
}

// Do sends cmd, an EVALSHA of s (from [Script.Cmd] or [Script.Args]),
// through c and waits for the reply; on NOSCRIPT it sends the command once
// more as EVAL, through c again, and puts that reply into cmd. It returns
// the error of the last call, which is cmd.Err() unless ctx ended while cmd
// was in flight (a redisbatch.Batcher returns then and cmd must not be
// read).
func (s *Script) Do(ctx context.Context, c Processor, cmd *redis.Cmd) error {
	err := c.Process(ctx, cmd)
	if !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return err
	}
	eval := s.eval(ctx, cmd)
	err = c.Process(ctx, eval)
	cmd.SetVal(eval.Val())
	cmd.SetErr(eval.Err())
	return err
}

// Retry follows the Exec of a pipeline that ran EVALSHAs of s: each of
// cmds that failed with NOSCRIPT is sent once more as EVAL, all in one
// pipeline on c (the cluster client routes each by its key), and its new
// reply put into it. Other commands, including EVALSHAs of other scripts,
// and nil entries are left alone. It returns how many commands it resent;
// their errors, if any, are in them.
func (s *Script) Retry(ctx context.Context, c redis.Cmdable, cmds []*redis.Cmd) int {
	var p redis.Pipeliner
	var evals []*redis.Cmd
	for _, cmd := range cmds {
		if !s.missing(cmd) {
			continue
		}
		if p == nil {
			p = c.Pipeline()
		}
		evals = s.queueEval(ctx, p, cmd, evals)
	}
	if p == nil {
		return 0
	}
	_, _ = p.Exec(ctx) // each command holds its own error
	s.settle(cmds, evals)
	return len(evals)
}

// missing reports whether cmd is an EVALSHA of s that failed with NOSCRIPT.
func (s *Script) missing(cmd *redis.Cmd) bool {
	if cmd == nil || !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		return false
	}
	a := cmd.Args()
	return len(a) > 1 && a[1] == s.hash
}

// eval returns cmd, an EVALSHA of s, as an EVAL with the source.
func (s *Script) eval(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	a := append([]any(nil), cmd.Args()...)
	a[0], a[1] = "eval", s.src
	return redis.NewCmd(ctx, a...)
}

func (s *Script) queueEval(ctx context.Context, p redis.Pipeliner, cmd *redis.Cmd, evals []*redis.Cmd) []*redis.Cmd {
	eval := s.eval(ctx, cmd)
	_ = p.Process(ctx, eval)
	return append(evals, eval)
}

// settle puts the replies of evals into the commands they replace: the
// missing ones of cmds, in order.
func (s *Script) settle(cmds, evals []*redis.Cmd) {
	i := 0
	for _, cmd := range cmds {
		if i < len(evals) && s.missing(cmd) {
			cmd.SetVal(evals[i].Val())
			cmd.SetErr(evals[i].Err())
			i++
		}
	}
}

// ErrNotReplicated: writes were made on the master, but fewer of its
// replicas than asked confirmed them in time (Redis WAIT). They may still
// replicate, or a failover may take them back; every service that WAITs
// wraps this one error (see [Confirmed]) and maps it to UNAVAILABLE.
var ErrNotReplicated = errors.New("writes not confirmed by the replicas in time")

// Confirmed turns what [WriteAndWait] returned into the answer to "did
// replicas of the master confirm the writes?": nil when the WAIT
// succeeded with at least replicas confirmations, else an error wrapping
// ErrNotReplicated that says why (the WAIT's error, or how many confirmed
// within timeout).
func Confirmed(n, replicas int, timeout time.Duration, waitErr error) error {
	switch {
	case waitErr != nil:
		return fmt.Errorf("%w: %v", ErrNotReplicated, waitErr)
	case n < replicas:
		return fmt.Errorf("%w: %d of %d replicas confirmed within %v", ErrNotReplicated, n, replicas, timeout)
	}
	return nil
}

// WriteAndWait sends the commands that queue adds to a pipeline, then
// WAIT replicas timeout, as one pipeline on one connection of the master
// that serves key, and returns how many replicas confirmed the writes: WAIT
// covers only the writes made on its own connection, which is why they
// must share it. Every key the commands touch must live on that master
// (share key's hash tag).
//
// EVALSHAs of the given scripts that fail with NOSCRIPT are sent once more
// as EVAL, followed by a second WAIT, on the same master; the count is then
// the smaller of the two. Each command holds its own reply or error. The
// error returned says the commands could not be sent (no master for key) or
// the WAIT failed; then the count is 0. A transient error of any command
// or the WAIT reloads a cluster client's slot map ([ReloadCluster]): errors
// of the master's own client do not reach it.
func WriteAndWait(ctx context.Context, rdb redis.UniversalClient, key string, replicas int, timeout time.Duration,
	queue func(redis.Pipeliner), scripts ...*Script) (int, error) {
	node, err := Master(ctx, rdb, key)
	if err != nil {
		return 0, err
	}
	p := node.Pipeline()
	queue(p)
	wait := redis.NewIntCmd(ctx, "wait", replicas, timeout.Milliseconds())
	_ = p.Process(ctx, wait)
	cmds, _ := p.Exec(ctx) // each command holds its own error
	n, err := wait.Result()

	var retry redis.Pipeliner
	var missing, evals []*redis.Cmd
	for _, c := range cmds {
		cmd, ok := c.(*redis.Cmd)
		if !ok {
			continue
		}
		for _, s := range scripts {
			if s.missing(cmd) {
				if retry == nil {
					retry = node.Pipeline()
				}
				missing = append(missing, cmd)
				evals = s.queueEval(ctx, retry, cmd, evals)
				break
			}
		}
	}
	if retry != nil {
		wait2 := redis.NewIntCmd(ctx, "wait", replicas, timeout.Milliseconds())
		_ = retry.Process(ctx, wait2)
		_, _ = retry.Exec(ctx)
		for i, cmd := range missing {
			cmd.SetVal(evals[i].Val())
			cmd.SetErr(evals[i].Err())
		}
		n2, err2 := wait2.Result()
		if err == nil {
			n, err = min(n, n2), err2
		}
		cmds = append(cmds, wait2)
	}
	for _, c := range cmds {
		if Transient(c.Err()) {
			ReloadCluster(ctx, rdb)
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("WAIT for %d replicas: %w", replicas, err)
	}
	return int(n), nil
}
