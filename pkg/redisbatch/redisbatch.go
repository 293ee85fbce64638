// Package redisbatch sends the commands of concurrent callers to Redis in
// shared pipelines.
//
// Every Redis round trip costs both sides a write and a read system call
// and Redis an event-loop wakeup; on a busy service those cost more CPU
// than the commands themselves. A [Batcher] allows a few round trips in
// flight at once. A command that finds one of them free is sent at once
// by its own caller (so a lone command waits for nothing and costs no
// goroutine switch); the commands that arrive while all are busy queue up
// and leave together as one pipeline, sent by a background sender. The
// busier the service, the larger the batches and the cheaper each command:
// batching costs latency only when there is a queue anyway.
//
// The commands of one batch are independent: each gets its own reply or
// error, as if sent alone. On a cluster client a batch is split by node
// (the client's pipeline does that, redirections included).
package redisbatch

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned for commands given to a closed Batcher.
var ErrClosed = errors.New("redisbatch: batcher closed")

// Config sizes a Batcher.
type Config struct {
	// Senders is the number of round trips in flight at once. More
	// senders mean lower latency under light load and smaller batches
	// under heavy load.
	Senders int
	// MaxBatch bounds the commands in one pipeline.
	MaxBatch int
}

// DefaultConfig returns sizes that suit a service sharing two to eight
// cores with its Redis client.
func DefaultConfig() Config { return Config{Senders: 4, MaxBatch: 128} }

// Batcher pipelines commands from concurrent callers. Its methods are safe
// for concurrent use.
type Batcher struct {
	rdb      redis.UniversalClient
	senders  int
	maxBatch int
	// work hands a batch, and with it a round-trip slot, to a background
	// sender; it has room for every slot, so a hand-off never blocks.
	work chan []*call
	wg   sync.WaitGroup

	mu      sync.Mutex
	queue   []*call
	running int // round trips in flight or being started
	closed  bool
	idle    sync.Cond // signalled when running drops to 0
}

type call struct {
	cmd  redis.Cmder
	done chan struct{} // buffered: the sender never waits for a caller that gave up
}

// New starts a Batcher's background senders on rdb. Close stops them.
func New(rdb redis.UniversalClient, cfg Config) *Batcher {
	b := &Batcher{
		rdb:      rdb,
		senders:  max(cfg.Senders, 1),
		maxBatch: max(cfg.MaxBatch, 1),
	}
	b.idle.L = &b.mu
	b.work = make(chan []*call, b.senders)
	for range b.senders {
		b.wg.Go(b.send)
	}
	return b
}

// Process sends cmd, alone or in the next pipeline, and waits for its
// reply; the reply or error is in cmd, and Process returns cmd.Err(). The
// name and signature are those of the go-redis clients', so a Batcher
// stands in for a client wherever only Process is needed.
//
// If ctx ends first, Process returns ctx.Err(), but the command may still run:
// as with any Redis call that times out, its outcome is unknown. Spans and
// deadlines of ctx do not reach a shared pipeline; the client's own read
// and write timeouts bound it.
func (b *Batcher) Process(ctx context.Context, cmd redis.Cmder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	if b.running < b.senders && len(b.queue) == 0 {
		// A free slot and nobody waiting: send it from here.
		b.running++
		b.mu.Unlock()
		_ = b.rdb.Process(ctx, cmd)
		b.mu.Lock()
		b.release()
		b.mu.Unlock()
		return cmd.Err()
	}
	c := &call{cmd: cmd, done: make(chan struct{}, 1)}
	b.queue = append(b.queue, c)
	if b.running < b.senders {
		b.running++
		b.work <- b.take()
	}
	b.mu.Unlock()
	select {
	case <-c.done:
		return cmd.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// take removes the next batch from the queue. b.mu is held.
func (b *Batcher) take() []*call {
	n := min(len(b.queue), b.maxBatch)
	batch := make([]*call, n)
	copy(batch, b.queue)
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return batch
}

// release gives back a round-trip slot, or passes it on to a background
// sender with the next batch if commands are waiting. b.mu is held.
func (b *Batcher) release() {
	if len(b.queue) > 0 {
		b.work <- b.take()
		return
	}
	b.running--
	if b.running == 0 {
		b.idle.Broadcast()
	}
}

// Close waits for the commands given so far and stops the background
// senders. Commands given afterwards fail with ErrClosed.
func (b *Batcher) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.wg.Wait()
		return
	}
	b.closed = true
	for b.running > 0 {
		b.idle.Wait()
	}
	b.mu.Unlock()
	close(b.work)
	b.wg.Wait()
}

func (b *Batcher) send() {
	for batch := range b.work {
		b.exec(batch)
		for _, c := range batch {
			c.done <- struct{}{}
		}
		b.mu.Lock()
		b.release()
		b.mu.Unlock()
	}
}

func (b *Batcher) exec(batch []*call) {
	ctx := context.Background()
	if len(batch) == 1 {
		_ = b.rdb.Process(ctx, batch[0].cmd)
		return
	}
	pipe := b.rdb.Pipeline()
	for _, c := range batch {
		_ = pipe.Process(ctx, c.cmd)
	}
	// Each command carries its own error; Exec's is the first of them.
	_, _ = pipe.Exec(ctx)
}
