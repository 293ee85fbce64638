package servertest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Stalled is a server-streaming gRPC call over a raw HTTP/2 connection
// whose client announced a flow-control window of 0 and reads nothing
// until Resume: the server can send it nothing, so its sends block once
// the transport's write quota is full. It is the hostile slow reader of
// the services' slow-reader tests.
type Stalled struct {
	conn net.Conn
	fr   *http2.Framer
}

// OpenStalled calls the server-streaming method path ("/pkg.Service/Method")
// at addr (cleartext HTTP/2) with req and the bearer token.
func OpenStalled(t testing.TB, addr, path, token string, req proto.Message) *Stalled {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", path}, {":authority", addr},
		{"content-type", "application/grpc"}, {"te", "trailers"}, {"authorization", "Bearer " + token}} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	msg, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteData(1, true, frame(msg)); err != nil {
		t.Fatal(err)
	}
	return &Stalled{conn: conn, fr: fr}
}

// frame is a gRPC message: not compressed, its length (big-endian), the
// bytes.
func frame(msg []byte) []byte {
	n := len(msg)
	return append([]byte{0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, msg...)
}

// Started waits for the response's headers, which the server sends with
// its first message (headers are not flow-controlled): the call is then
// admitted and its handler running. A refusal (headers that end the
// stream) is returned as its status.
func (s *Stalled) Started() error {
	if err := s.conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return err
	}
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := s.fr.WriteSettingsAck(); err != nil {
					return err
				}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				return trailerStatus(f)
			}
			return nil
		}
	}
}

// Resume opens the windows, reads the stream to its end and returns the
// messages received and the status it ended with.
func (s *Stalled) Resume() ([][]byte, error) {
	if err := s.fr.WriteWindowUpdate(0, 1<<30); err != nil {
		return nil, err
	}
	if err := s.fr.WriteWindowUpdate(1, 1<<30); err != nil {
		return nil, err
	}
	if err := s.conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return nil, err
	}
	var data []byte
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := s.fr.WriteSettingsAck(); err != nil {
					return nil, err
				}
			}
		case *http2.DataFrame:
			data = append(data, f.Data()...)
		case *http2.RSTStreamFrame:
			return nil, fmt.Errorf("stream reset: %v", f.ErrCode)
		case *http2.GoAwayFrame:
			return nil, fmt.Errorf("connection closed: %v", f.ErrCode)
		case *http2.MetaHeadersFrame:
			if !f.StreamEnded() {
				continue
			}
			var msgs [][]byte
			for len(data) >= 5 {
				l := int(data[1])<<24 | int(data[2])<<16 | int(data[3])<<8 | int(data[4])
				if len(data) < 5+l {
					return msgs, errors.New("truncated message")
				}
				msgs = append(msgs, data[5:5+l])
				data = data[5+l:]
			}
			return msgs, trailerStatus(f)
		}
	}
}

// trailerStatus reads the gRPC status of a stream's trailers.
func trailerStatus(f *http2.MetaHeadersFrame) error {
	var st spb.Status
	for _, h := range f.RegularFields() {
		switch h.Name {
		case "grpc-status":
			c, err := strconv.Atoi(h.Value)
			if err != nil {
				return fmt.Errorf("grpc-status %q", h.Value)
			}
			st.Code = int32(c)
		case "grpc-message":
			m, err := url.PathUnescape(h.Value)
			if err != nil {
				return fmt.Errorf("grpc-message %q: %w", h.Value, err)
			}
			st.Message = m
		case "grpc-status-details-bin":
			b, err := base64.RawStdEncoding.DecodeString(h.Value)
			if err != nil {
				return err
			}
			if err := proto.Unmarshal(b, &st); err != nil {
				return err
			}
		}
	}
	return status.FromProto(&st).Err()
}
