package api

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// A server stream's Send blocks while the client's HTTP/2 flow-control
// window is full and the transport's per-stream write quota (64 KB in
// grpc-go) is used up: a client that stops reading holds its handler in
// Send until it reads again or leaves, however long that is. The hub drops
// such a watcher once its buffer is full (fanout), which bounds what it
// queues, but the stream stays open. grpc-go has no per-Send deadline; its
// maintainers advise ending the stream instead (grpc/grpc-go#1229,
// #8447). A stallGuard does that without a goroutine per stream: one
// timer per stream, armed around each Send, that writes the stream's final
// status when a Send has waited longer than the timeout. Writing the
// status cancels the transport stream, which makes the blocked Send
// return, and the handler then ends. The status reaches the client after
// the messages already queued, as soon as it reads again; the server keeps
// only those (at most the write quota) until then or until the
// connection closes.

// statusWriter is implemented by grpc-go's server transport stream (the
// value grpc.ServerTransportStreamFromContext returns): WriteStatus is the
// call that ends a stream, safe to make while a Send waits. It is not part
// of grpc.ServerTransportStream, so it is asserted; TestSlowReaders fails
// if a grpc-go release drops it.
type statusWriter interface {
	WriteStatus(*status.Status) error
}

// stallGuard ends its stream with a status when a send waits too long. A
// nil *stallGuard guards nothing.
type stallGuard struct {
	timeout time.Duration
	w       statusWriter
	st      *status.Status
	timer   *time.Timer
	fired   atomic.Bool
}

// newStallGuard returns a guard for the stream of ctx that ends it with st
// after a send waited for timeout, or nil when timeout is 0 or the stream
// cannot be ended that way (the guard then does nothing: the stream ends
// when the client reads again or leaves, as without one).
func newStallGuard(ctx context.Context, timeout time.Duration, st *status.Status) *stallGuard {
	w, ok := grpc.ServerTransportStreamFromContext(ctx).(statusWriter)
	if timeout <= 0 || !ok {
		return nil
	}
	return &stallGuard{timeout: timeout, w: w, st: st}
}

// arm starts the clock of a send.
func (g *stallGuard) arm() {
	if g == nil {
		return
	}
	if g.timer == nil {
		g.timer = time.AfterFunc(g.timeout, g.fire)
		return
	}
	g.timer.Reset(g.timeout)
}

// disarm stops the clock after a send returned.
func (g *stallGuard) disarm() {
	if g != nil && g.timer != nil {
		g.timer.Stop()
	}
}

func (g *stallGuard) fire() {
	g.fired.Store(true)
	_ = g.w.WriteStatus(g.st) // fails only if the stream already ended
}

// stalled reports whether the guard ended the stream.
func (g *stallGuard) stalled() bool { return g != nil && g.fired.Load() }
