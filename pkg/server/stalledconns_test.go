package server

import (
	"bytes"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// TestConnectionOfStalledStreamsClosed: a client that opens flooding
// streams on one HTTP/2 connection with a window of 0 and reads nothing
// has each stream ended by its send timeout; at the maxStalledPerConn-th
// the server closes the connection, freeing what the ended streams left
// queued in it. Until then the client's connection stays usable: the
// server answers its PING after the first streams were ended.
func TestConnectionOfStalledStreamsClosed(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	msg, err := proto.Marshal(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 16 << 10, IntervalUs: 100_000}}})
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte{0, byte(len(msg) >> 24), byte(len(msg) >> 16), byte(len(msg) >> 8), byte(len(msg))}, msg...)
	tok := h.token(t, "stalling-client")
	open := func(id uint32) {
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/grpc.testing.TestService/StreamingOutputCall"},
			{":authority", h.addr}, {"content-type", "application/grpc"}, {"te", "trailers"}, {"authorization", "Bearer " + tok}} {
			if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
				t.Fatal(err)
			}
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		if err := fr.WriteData(id, true, body); err != nil {
			t.Fatal(err)
		}
	}
	ended := func() {
		t.Helper()
		select {
		case err := <-h.svc.flooded:
			if status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("a stalled stream's handler ended with %v, want the guard's RESOURCE_EXHAUSTED", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("a stalled stream was not ended in a minute")
		}
	}
	heapBase := heapInUse()
	// The connection outlives the first maxStalledPerConn-1 ended streams.
	for i := range maxStalledPerConn - 1 {
		open(uint32(2*i + 1))
		ended()
	}
	if err := fr.WritePing(false, [8]byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for pong := false; !pong; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("the connection after %d ended streams: %v, want it open", maxStalledPerConn-1, err)
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
			pong = true
		}
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
		}
	}
	heapHeld := heapInUse()
	// One more, and the server closes it.
	open(2*(maxStalledPerConn-1) + 1)
	ended()
	for {
		_, err := fr.ReadFrame()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection is still open after %d ended streams", maxStalledPerConn)
		}
		if err != nil {
			t.Logf("after %d ended streams the connection ended: %v", maxStalledPerConn, err)
			break
		}
	}
	// What the ended streams held, measured (collection noise included).
	heapClosed := heapInUse()
	t.Logf("heap in use: %d KB before, %d KB with %d ended streams queued in the connection (%d KB each), %d KB after it closed",
		heapBase>>10, heapHeld>>10, maxStalledPerConn-1, (int64(heapHeld)-int64(heapBase))/(maxStalledPerConn-1)>>10, heapClosed>>10)
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
