// Package redisbatch sends the commands of concurrent callers to Redis in
// shared pipelines.
//
// Every Redis round trip costs both sides a write and a read system call
// and Redis an event-loop wakeup; on a busy service those cost more CPU
// than the commands themselves. A [Batcher] keeps a few sender goroutines:
// an idle sender takes a command at once (so a lone command waits for
// nothing), and while every sender is busy, the commands that arrive queue
// up and leave together as one pipeline. The busier the service, the
// larger the batches and the cheaper each command: batching costs latency
// only when there is a queue anyway.
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
	// Senders is the number of pipelines in flight at once. More senders
	// mean lower latency under light load and smaller batches under heavy
	// load.
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
	maxBatch int
	calls    chan *call
	stop     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
}

type call struct {
	cmd  redis.Cmder
	done chan struct{}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// New starts a Batcher's senders on rdb. Close stops them.
func New(rdb redis.UniversalClient, cfg Config) *Batcher {
	cfg.Senders = max(cfg.Senders, 1)
	cfg.MaxBatch = max(cfg.MaxBatch, 1)
	b := &Batcher{
		rdb:      rdb,
		maxBatch: cfg.MaxBatch,
		calls:    make(chan *call),
		stop:     make(chan struct{}),
	}
	for range cfg.Senders {
		b.wg.Go(b.send)
	}
	return b
}

// Do sends cmd in the next pipeline and waits for its reply; the reply or
// error is in cmd, and Do returns cmd.Err().
//
// If ctx ends first, Do returns ctx.Err(), but the command may still run:
// as with any Redis call that times out, its outcome is unknown. Spans and
// deadlines of ctx do not reach the pipeline, which serves many callers;
// the client's own read and write timeouts bound it.
func (b *Batcher) Do(ctx context.Context, cmd redis.Cmder) error {
	c := callPool.Get().(*call)
	c.cmd = cmd
	select {
	case b.calls <- c:
	case <-ctx.Done():
		c.cmd = nil
		callPool.Put(c)
		return ctx.Err()
	case <-b.stop:
		c.cmd = nil
		callPool.Put(c)
		return ErrClosed
	}
	select {
	case <-c.done:
		c.cmd = nil
		callPool.Put(c)
		return cmd.Err()
	case <-ctx.Done():
		// The sender still owns c and signals it later; c is not reused.
		return ctx.Err()
	}
}

// Close stops the senders after the pipelines in flight. Commands given
// afterwards fail with ErrClosed.
func (b *Batcher) Close() {
	b.once.Do(func() { close(b.stop) })
	b.wg.Wait()
}

func (b *Batcher) send() {
	batch := make([]*call, 0, b.maxBatch)
	for {
		select {
		case c := <-b.calls:
			batch = append(batch[:0], c)
		case <-b.stop:
			return
		}
	more:
		for len(batch) < b.maxBatch {
			select {
			case c := <-b.calls:
				batch = append(batch, c)
			default:
				break more
			}
		}
		b.exec(batch)
		for _, c := range batch {
			c.done <- struct{}{}
		}
		clear(batch)
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
