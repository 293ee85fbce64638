package server

import (
	"context"
	"sync"
)

// inflight counts running calls so shutdown can wait for them on both
// transports (native gRPC and the HTTP transcoder). grpc.Server's
// GracefulStop alone would cut calls served through ServeHTTP: it closes
// those transports instead of draining them.
type inflight struct {
	mu       sync.Mutex
	n        int
	draining bool
	idle     chan struct{} // closed when draining and n == 0
}

func newInflight() *inflight { return &inflight{idle: make(chan struct{})} }

// begin registers a call; it returns false once draining has started.
func (f *inflight) begin() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.draining {
		return false
	}
	f.n++
	return true
}

func (f *inflight) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.draining && f.n == 0 {
		close(f.idle)
	}
}

// drain refuses new calls and waits until the running ones have finished
// or ctx is done.
func (f *inflight) drain(ctx context.Context) error {
	f.mu.Lock()
	if !f.draining {
		f.draining = true
		if f.n == 0 {
			close(f.idle)
		}
	}
	f.mu.Unlock()
	select {
	case <-f.idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
