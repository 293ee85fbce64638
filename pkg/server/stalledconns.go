package server

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/stats"

	"github.com/fourkingdoms/fourkingdoms/pkg/stall"
)

// A stream ended by its send timeout (pkg/stall) leaves, in grpc-go's
// HTTP/2 transport, the messages it had queued (up to the 64 KB write
// quota) and its status in its connection until the client reads them or
// the connection closes: a client that keeps opening streams on one
// connection, stalling them and making them traffic would hold 64 KB more
// every send timeout, for as long as it likes. So the connection of a
// client that stalled maxStalledPerConn streams is closed, which frees all
// of it: a client that reads nothing on that many streams is broken or
// hostile, and a broken one reconnects and resumes its streams like after
// any lost connection. A connection thus holds at most
// maxStalledPerConn-1 ended streams' queues, about 200 KB, and a client
// that reads never meets the limit. (A limit on every connection's age,
// keepalive MaxConnectionAge, would also bound it, but only in time, and
// would cut the long streams of every client; docs/operations.md, "Slow
// readers".)
const maxStalledPerConn = 4

// stalledConns is a stats.Handler that counts, per native gRPC
// connection, the streams ended by a send timeout, and closes the
// connection at maxStalledPerConn. The split listener registers each
// connection it hands to grpc.Server (track); TagConn finds it by its
// addresses, the only handle grpc-go gives a stats.Handler.
type stalledConns struct {
	mu    sync.Mutex
	conns map[connKey]net.Conn
}

type connKey struct{ remote, local string }

func keyOf(remote, local net.Addr) connKey {
	if remote == nil || local == nil {
		return connKey{}
	}
	return connKey{remote.String(), local.String()}
}

func newStalledConns() *stalledConns { return &stalledConns{conns: make(map[connKey]net.Conn)} }

// track registers c until it is closed.
func (s *stalledConns) track(c net.Conn) net.Conn {
	k := keyOf(c.RemoteAddr(), c.LocalAddr())
	tc := &trackedConn{Conn: c, untrack: func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.conns, k)
	}}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[k] = tc
	return tc
}

// TagConn gives the connection's streams a stall hook that counts them.
func (s *stalledConns) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	s.mu.Lock()
	c := s.conns[keyOf(info.RemoteAddr, info.LocalAddr)]
	s.mu.Unlock()
	if c == nil {
		return ctx
	}
	var n atomic.Int32
	return stall.OnStall(ctx, func() {
		if n.Add(1) == maxStalledPerConn {
			c.Close()
		}
	})
}

func (s *stalledConns) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (s *stalledConns) HandleRPC(context.Context, stats.RPCStats)                       {}
func (s *stalledConns) HandleConn(context.Context, stats.ConnStats)                     {}

// trackedConn leaves the registry when closed.
type trackedConn struct {
	net.Conn
	once    sync.Once
	untrack func()
}

func (c *trackedConn) Close() error {
	c.once.Do(c.untrack)
	return c.Conn.Close()
}
