package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// One port serves two kinds of clients. Native gRPC clients open a
// cleartext HTTP/2 connection with prior knowledge, which starts with the
// fixed client preface; those connections go straight to grpc.Server (its
// own, fastest transport, and GracefulStop drains them). Everything else
// (HTTP/1.1 from browsers: gRPC-Web and Connect; h2c upgrades) goes to an
// http.Server whose handler is the vanguard transcoder.
//
// Consequence: a Connect or gRPC-Web client speaking cleartext HTTP/2 with
// prior knowledge is routed to grpc.Server and fails; such clients must use
// HTTP/1.1 or TLS terminated by a proxy that speaks HTTP/1.1 to us.

var http2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// peekTimeout bounds how long a new connection may take to send its first
// bytes before it is dropped.
const peekTimeout = 10 * time.Second

// splitListener accepts from root and hands each connection to grpcL or
// httpL after peeking at its first bytes.
type splitListener struct {
	root  net.Listener
	grpcL *chanListener
	httpL *chanListener
	// track, if set, wraps each connection handed to grpcL
	// (stalledConns.track).
	track func(net.Conn) net.Conn
}

func newSplitListener(root net.Listener) *splitListener {
	done := make(chan struct{})
	var once sync.Once
	closeFn := func() error {
		var err error
		once.Do(func() { close(done); err = root.Close() })
		return err
	}
	return &splitListener{
		root:  root,
		grpcL: &chanListener{addr: root.Addr(), conns: make(chan net.Conn), done: done, close: closeFn},
		httpL: &chanListener{addr: root.Addr(), conns: make(chan net.Conn), done: done, close: closeFn},
	}
}

// serve accepts until the root listener is closed.
func (s *splitListener) serve() {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := s.root.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.route(c)
		}()
	}
}

func (s *splitListener) route(c net.Conn) {
	buf := make([]byte, len(http2Preface))
	_ = c.SetReadDeadline(time.Now().Add(peekTimeout))
	n, err := io.ReadFull(c, buf)
	_ = c.SetReadDeadline(time.Time{})
	buf = buf[:n]
	if n == 0 && err != nil {
		c.Close()
		return
	}
	// A short read (err != nil, n > 0) can only be HTTP/1: let net/http
	// answer it.
	target := s.httpL
	if bytes.Equal(buf, http2Preface) {
		target = s.grpcL
	}
	var pc net.Conn = &peekedConn{Conn: c, peeked: buf}
	if target == s.grpcL && s.track != nil {
		pc = s.track(pc)
	}
	select {
	case target.conns <- pc:
	case <-target.done:
		pc.Close()
	}
}

func (s *splitListener) Close() error { return s.grpcL.close() }

// chanListener is a net.Listener fed by splitListener. Closing either
// child closes the shared root.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	close func() error
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { return l.close() }
func (l *chanListener) Addr() net.Addr { return l.addr }

// peekedConn replays the peeked bytes before reading from the connection.
type peekedConn struct {
	net.Conn
	peeked []byte
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(c.peeked) > 0 {
		n := copy(p, c.peeked)
		c.peeked = c.peeked[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
