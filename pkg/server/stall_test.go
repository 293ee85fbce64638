package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/stall"
)

// floodStream sends messages of p's size until a send fails, each guarded
// by a stall.Guard of p's interval, and reports how it ended on s.flooded.
func (s *testService) floodStream(p *testpb.ResponseParameters, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	g := stall.New(stream.Context(), time.Duration(p.GetIntervalUs())*time.Microsecond,
		status.New(codes.ResourceExhausted, "slow consumer"))
	defer g.Stop()
	stream = stall.Stream(stream, g)
	msg := &testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, p.GetSize())}}
	for {
		if err := stream.Send(msg); err != nil {
			if !g.Stalled() {
				err = fmt.Errorf("not ended by the guard: %w", err)
			}
			s.flooded <- err
			return err
		}
	}
}

// TestStalledConnectReaderEnded: the server's HTTP transport (Connect and
// gRPC-Web through vanguard) lets a stream's stall.Guard end a client that
// reads nothing: the handler returns and the client's connection closes.
// Without stall.Handler around the transcoder the handler would wait in
// Send for as long as the client does not read (pkg/stall's tests).
func TestStalledConnectReaderEnded(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	// A socket with a small receive buffer, so that the server's writes
	// block soon.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msg, err := proto.Marshal(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 16 << 10, IntervalUs: 200_000}}})
	if err != nil {
		t.Fatal(err)
	}
	body := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST /grpc.testing.TestService/StreamingOutputCall HTTP/1.1\r\nHost: %s\r\nContent-Type: application/connect+proto\r\nConnect-Protocol-Version: 1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n",
		h.addr, h.token(t, "slow-browser"), len(body))
	req.Write(body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-h.svc.flooded:
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("the stream's handler ended with %v, want the guard's RESOURCE_EXHAUSTED", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the handler still sends to a Connect client that reads nothing after a minute")
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, conn)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("the connection is still open after its stream was ended (%d bytes read)", n)
	}
	t.Logf("the client read %d bytes, then %v", n, err)
}
