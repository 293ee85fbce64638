// Package stall ends a server stream whose send waits too long for a
// client that does not read: the one way every service bounds a slow
// reader (issue 22).
//
// A server stream's Send blocks while the client's HTTP/2 flow-control
// window is full and the transport's per-stream write quota (64 KB in
// grpc-go) is used up, or, on HTTP/1.1 (Connect and gRPC-Web through the
// vanguard transcoder), while the socket's buffers are full: a client that
// stops reading holds its handler in Send until it reads again or leaves,
// however long that is. grpc-go has no per-Send deadline; its maintainers
// advise ending the stream instead (grpc/grpc-go#1229, #8447). A [Guard]
// does that without a goroutine per stream: one timer per stream, armed
// around each send, that ends the stream when a send has waited longer
// than the timeout.
//
// How the stream ends depends on its transport:
//
//   - native gRPC (grpc-go's HTTP/2 transport): the guard writes the
//     stream's final status, which cancels the transport stream and makes
//     the blocked Send return. The status reaches the client after the
//     messages already queued, as soon as it reads again; the server keeps
//     only those (at most the write quota) until then or until the
//     connection closes; [OnStall] lets pkg/server close a connection
//     after several (docs/operations.md, "Slow readers").
//   - HTTP served through [Handler] (pkg/server wraps the transcoder with
//     it): grpc-go's ServeHTTP transport writes from one goroutine per
//     request, which the blocked write holds, so writing a status would
//     wait behind it. The guard first sets the response's write deadline
//     to now: the blocked write fails, every later one fails at once, the
//     handler ends and net/http closes the connection (HTTP/1.1) or resets
//     the stream (HTTP/2). The client, which is not reading, gets no
//     status: its connection ends.
package stall

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// statusWriter is implemented by grpc-go's server transport stream (the
// value grpc.ServerTransportStreamFromContext returns): WriteStatus is the
// call that ends a stream, safe to make while a Send waits. It is not part
// of grpc.ServerTransportStream, so it is asserted; the package's tests
// fail if a grpc-go release drops it.
type statusWriter interface {
	WriteStatus(*status.Status) error
}

// Guard ends its stream with a status when a send waits too long. A nil
// *Guard guards nothing. Its methods other than Stalled are called by the
// stream's handler goroutine only (the one that sends).
type Guard struct {
	timeout time.Duration
	w       statusWriter
	abort   func() // from Handler; nil on native gRPC
	onStall func() // from OnStall; nil without
	st      *status.Status
	timer   *time.Timer
	fired   atomic.Bool
}

// New returns a guard for the stream of ctx that ends it with st after a
// send waited for timeout, or nil when timeout is 0 or the stream cannot be
// ended that way (the guard then does nothing: the stream ends when the
// client reads again or leaves, as without one). st is shared, not copied:
// build it once per server.
func New(ctx context.Context, timeout time.Duration, st *status.Status) *Guard {
	w, ok := grpc.ServerTransportStreamFromContext(ctx).(statusWriter)
	if timeout <= 0 || !ok {
		return nil
	}
	g := &Guard{timeout: timeout, w: w, st: st}
	g.onStall, _ = ctx.Value(onStallKey{}).(func())
	if rw, ok := ctx.Value(responseKey{}).(http.ResponseWriter); ok {
		g.abort = func() { _ = http.NewResponseController(rw).SetWriteDeadline(time.Now()) }
	}
	return g
}

// Send calls send (the stream's Send) under the guard's clock. When the
// guard ended the stream while send waited, Send returns the guard's
// status as an error, which the handler returns.
func (g *Guard) Send(send func() error) error {
	if g == nil {
		return send()
	}
	if g.timer == nil {
		g.timer = time.AfterFunc(g.timeout, g.fire)
	} else {
		g.timer.Reset(g.timeout)
	}
	err := send()
	g.timer.Stop()
	if g.fired.Load() {
		return g.st.Err()
	}
	return err
}

// Stop stops the clock for good; call it when the handler returns.
func (g *Guard) Stop() {
	if g != nil && g.timer != nil {
		g.timer.Stop()
	}
}

// Stalled reports whether the guard ended the stream.
func (g *Guard) Stalled() bool { return g != nil && g.fired.Load() }

func (g *Guard) fire() {
	g.fired.Store(true)
	if g.abort != nil {
		g.abort() // unblocks the write WriteStatus would wait behind
	}
	_ = g.w.WriteStatus(g.st) // fails only if the stream already ended
	if g.onStall != nil {
		g.onStall()
	}
}

type onStallKey struct{}

// OnStall returns ctx with f called, from a timer's goroutine, each time a
// [Guard] of a stream under ctx ends its stream. pkg/server sets it on each
// native gRPC connection's context, to bound what the ended streams leave
// queued in the connection.
func OnStall(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, onStallKey{}, f)
}

// Stream returns s with every Send made through g.
func Stream[T any](s grpc.ServerStreamingServer[T], g *Guard) grpc.ServerStreamingServer[T] {
	if g == nil {
		return s
	}
	return guarded[T]{s, g}
}

type guarded[T any] struct {
	grpc.ServerStreamingServer[T]
	g *Guard
}

func (s guarded[T]) Send(m *T) error {
	return s.g.Send(func() error { return s.ServerStreamingServer.Send(m) })
}

// responseKey is the context key of the http.ResponseWriter a [Handler]
// serves a request with.
type responseKey struct{}

// Handler returns h with the requests' contexts carrying their response
// writers, so that a [Guard] can end a response's writes (a write deadline
// of now; setting one is safe while a write waits). Wrap the handler that
// passes calls to grpc.Server.ServeHTTP (the vanguard transcoder) with it;
// w must be net/http's own (or unwrap to it: http.ResponseController).
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), responseKey{}, w)))
	})
}
