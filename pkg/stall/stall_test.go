package stall_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/vanguard/vanguardgrpc"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/server/servertest"
	"github.com/fourkingdoms/fourkingdoms/pkg/stall"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const path = "/grpc.testing.TestService/StreamingOutputCall"

// slowStatus is what a guard ends its stream with.
var slowStatus = status.New(codes.ResourceExhausted, "the client read nothing for too long")

// flooder's StreamingOutputCall sends 16 KB messages through a guard until
// a send fails, and reports how its handler ended.
type flooder struct {
	testpb.UnimplementedTestServiceServer
	timeout time.Duration
	ended   chan ended
}

type ended struct {
	sent    int
	stalled bool
	err     error
}

func (f *flooder) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	g := stall.New(stream.Context(), f.timeout, slowStatus)
	defer g.Stop()
	if g == nil {
		f.ended <- ended{err: errors.New("no guard for a grpc-go stream: its transport stream lost WriteStatus")}
		return nil
	}
	stream = stall.Stream(stream, g)
	msg := &testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, 16<<10)}}
	for n := 0; ; n++ {
		if err := stream.Send(msg); err != nil {
			f.ended <- ended{sent: n, stalled: g.Stalled(), err: err}
			return err
		}
	}
}

// serve starts a grpc.Server with a flooder, natively or behind the
// vanguard transcoder (Connect, gRPC-Web) wrapped by stall.Handler, and
// returns its address.
func serve(t *testing.T, native bool, f *flooder) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	testpb.RegisterTestServiceServer(g, f)
	if native {
		go func() { _ = g.Serve(lis) }()
		t.Cleanup(g.Stop)
		return lis.Addr().String()
	}
	tc, err := vanguardgrpc.NewTranscoder(g)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: stall.Handler(tc), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(lis) }()
	t.Cleanup(func() {
		hs.Close()
		g.Stop()
	})
	return lis.Addr().String()
}

// openHTTP1 calls the flooder over HTTP/1.1 with contentType (an enveloped
// request body, as Connect and gRPC-Web streams have) from a socket with a
// small receive buffer, and reads nothing.
func openHTTP1(t *testing.T, addr, contentType string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	msg, err := proto.Marshal(&testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	body := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nConnect-Protocol-Version: 1\r\nX-Grpc-Web: 1\r\nContent-Length: %d\r\n\r\n",
		path, addr, contentType, len(body))
	req.Write(body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestStalledReaderEnded: a client that stops reading a server stream is
// ended by the guard whatever the protocol: native gRPC (HTTP/2 window 0)
// with the guard's status once it reads again; Connect and gRPC-Web over
// HTTP/1.1 (a full socket) by closing its connection, since an HTTP/1.1
// response cannot be cut short with a status the client is not reading.
func TestStalledReaderEnded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		native      bool
		contentType string
	}{
		{name: "grpc", native: true},
		{name: "connect", contentType: "application/connect+proto"},
		{name: "grpc-web", contentType: "application/grpc-web+proto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &flooder{timeout: 200 * time.Millisecond, ended: make(chan ended, 1)}
			addr := serve(t, tc.native, f)
			var (
				native *servertest.Stalled
				conn   net.Conn
			)
			if tc.native {
				native = servertest.OpenStalled(t, addr, path, "none", &testpb.StreamingOutputCallRequest{})
			} else {
				conn = openHTTP1(t, addr, tc.contentType)
			}
			var e ended
			select {
			case e = <-f.ended:
			case <-time.After(time.Minute):
				t.Fatal("the handler still sends to a client that reads nothing after a minute")
			}
			if !e.stalled || status.Code(e.err) != codes.ResourceExhausted {
				t.Fatalf("handler ended after %d messages with %v (stalled %v), want the guard's RESOURCE_EXHAUSTED", e.sent, e.err, e.stalled)
			}
			if tc.native {
				msgs, err := native.Resume()
				if status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != slowStatus.Message() {
					t.Fatalf("client, after %d queued messages: %v, want the guard's status", len(msgs), err)
				}
				t.Logf("handler sent %d messages; the client got %d, then %v", e.sent, len(msgs), err)
				return
			}
			// The client reads what was sent, then its connection ends.
			if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, conn)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection is still open after the stream was ended (%d bytes read)", n)
			}
			t.Logf("handler sent %d messages; the client read %d bytes, then %v", e.sent, n, err)
		})
	}
}

// TestGuardOff: without a timeout, or outside a gRPC stream, there is no
// guard, and a nil guard only calls send.
func TestGuardOff(t *testing.T) {
	t.Parallel()
	if g := stall.New(context.Background(), time.Second, slowStatus); g != nil {
		t.Error("New outside a gRPC stream returned a guard")
	}
	var g *stall.Guard
	want := errors.New("send failed")
	if err := g.Send(func() error { return want }); err != want {
		t.Errorf("nil guard's Send = %v, want send's own error", err)
	}
	g.Stop()
	if g.Stalled() {
		t.Error("nil guard reports stalled")
	}
}
