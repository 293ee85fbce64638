package server

import (
	"context"
	"sync"

	"google.golang.org/grpc"
)

// warmPool runs unary handlers on goroutines that keep their grown stacks
// from call to call. gRPC starts a goroutine per call (or hands it to one
// of its stream workers), and a handler that goes deep (a match move:
// rules, protobuf, the Redis client and its hooks) grows that goroutine's
// stack from its starting size by copying, on every call: 5-9% of the
// match service's CPU under the watched load (runtime.copystack).
//
// grpc.NumStreamWorkers does not help there: a gRPC worker keeps a stream
// until the stream ends, so the first long-lived streams (WatchMatch, a
// player's stream for a whole match) hold every worker and every unary
// call falls back to a fresh goroutine. This pool serves unary calls only.
// Idle workers are taken last in, first out, so the next call runs on the
// stack that was used last (the runtime halves idle stacks at each GC; a
// FIFO pool much larger than the calls in flight would hand out cold,
// shrunken stacks). When every worker is busy a call runs on its own
// goroutine, as without the pool.
//
// The pool is large (warmWorkersPerCore) because last in, first out keeps
// the workers a burst started idle afterwards, and idle they cost only
// their stacks, which each GC halves. A small pool spills exactly when it
// matters: under the watched load on an overloaded machine (MakeMove p50
// about 100 ms, so about a hundred calls in flight) a pool of 32 was used
// up and the calls beyond it grew their stacks again (copystack 6.8% of
// the service's CPU against 9.2% without the pool; docs/match.md).
type warmPool struct {
	max int

	mu      sync.Mutex
	idle    []*warmWorker // last in, first out
	started int
	closed  bool
}

type warmWorker struct {
	calls chan *warmCall
	done  chan struct{}
}

// warmCall is one unary call handed to a worker.
type warmCall struct {
	ctx     context.Context
	req     any
	handler grpc.UnaryHandler
	resp    any
	err     error
}

// warmWorkersPerCore bounds the pool per GOMAXPROCS.
const warmWorkersPerCore = 128

func newWarmPool(max int) *warmPool { return &warmPool{max: max} }

// unary is the first unary interceptor: the rest of the chain (recovery
// included) and the handler run on a warm worker.
func (p *warmPool) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	w := p.get()
	if w == nil {
		return handler(ctx, req)
	}
	c := &warmCall{ctx: ctx, req: req, handler: handler}
	w.calls <- c
	<-w.done
	return c.resp, c.err
}

// get returns an idle worker, starts one if fewer than max run, or
// returns nil.
func (p *warmPool) get() *warmWorker {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		return w
	}
	if p.started == p.max {
		return nil
	}
	p.started++
	w := &warmWorker{calls: make(chan *warmCall), done: make(chan struct{})}
	go p.work(w)
	return w
}

func (p *warmPool) work(w *warmWorker) {
	for c := range w.calls {
		c.resp, c.err = c.handler(c.ctx, c.req)
		// Idle again before the caller learns it is done, so that its
		// next call finds this worker. A caller that takes it meanwhile
		// waits in its send until done has gone to this call's caller.
		idle := p.put(w)
		w.done <- struct{}{}
		if !idle {
			return
		}
	}
}

// put returns a worker to the idle list; false once the pool is closed.
func (p *warmPool) put(w *warmWorker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.started--
		return false
	}
	p.idle = append(p.idle, w)
	return true
}

// close ends the idle workers; busy ones end after their call, and later
// calls run on their own goroutines.
func (p *warmPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, w := range p.idle {
		close(w.calls)
	}
	p.started -= len(p.idle)
	p.idle = nil
}
