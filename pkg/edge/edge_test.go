package edge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRoutesCoverEveryPublicService reads every service declared in proto/
// and checks that the routing table has exactly one route for each, to one
// of the three services, and nothing else: a new service without a route,
// or a route left behind by a removed one, fails here.
func TestRoutesCoverEveryPublicService(t *testing.T) {
	t.Parallel()
	pkgRE := regexp.MustCompile(`(?m)^package\s+([\w.]+)\s*;`)
	svcRE := regexp.MustCompile(`(?m)^service\s+(\w+)\s*\{`)
	var declared []string
	err := filepath.WalkDir("../../proto/fourkingdoms", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".proto" {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pkg := pkgRE.FindSubmatch(src)
		for _, m := range svcRE.FindAllSubmatch(src, -1) {
			if pkg == nil {
				t.Fatalf("%s declares service %s without a package", p, m[1])
			}
			declared = append(declared, "/"+string(pkg[1])+"."+string(m[1])+"/")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(declared) == 0 {
		t.Fatal("no service found in proto/")
	}
	var routed []string
	for _, r := range Routes() {
		routed = append(routed, r.Prefix)
		if !slices.Contains([]Backend{Match, Matchmaking, Rating}, r.Backend) {
			t.Errorf("route %s goes to %q, which is no service", r.Prefix, r.Backend)
		}
	}
	slices.Sort(declared)
	slices.Sort(routed)
	if !slices.Equal(declared, routed) {
		t.Errorf("routes %q, want one per service of proto/ %q", routed, declared)
	}
}

// The interop TestService (in the global registry, so the services'
// transcoder knows it) stands in for a Four Kingdoms service.
const testPrefix = "/grpc.testing.TestService/"

type testService struct {
	testpb.UnimplementedTestServiceServer
	// release receives from the test once the client has a stream's
	// first message; only then does the stream send its last and end.
	// Closed at the end of the test.
	release chan struct{}
}

func (s *testService) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	id, _ := auth.FromContext(ctx)
	return &testpb.SimpleResponse{Payload: req.GetPayload(), Username: id.Subject}, nil
}

func (s *testService) StreamingOutputCall(_ *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte("first")}}); err != nil {
		return err
	}
	select {
	case <-s.release:
	case <-stream.Context().Done():
		return stream.Context().Err()
	}
	return stream.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte("last")}})
}

// devServer is the origin the test service allows (a web app's
// development server).
const devServer = "http://localhost:5173"

type harness struct {
	edge  string // the edge's address
	token string
	svc   *testService
	// stopEdge stops the edge (once; the cleanup calls it too).
	stopEdge func() error
}

// start runs a real service (pkg/server: native gRPC, Connect and gRPC-Web
// on one port) and an edge in front of it that routes the test service to
// it, and a second route to a port where nothing listens.
func start(t *testing.T) *harness {
	t.Helper()
	keys, keyFile := authtest.KeyFile(t)
	cfg := server.DefaultConfig("edgetest")
	cfg.GRPCAddr, cfg.AdminAddr, cfg.AuthKeysFile = "127.0.0.1:0", "127.0.0.1:0", keyFile
	cfg.RateLimitRPS = 0
	cfg.CORSAllowedOrigins = []string{devServer}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg, slog.New(slog.DiscardHandler), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := &testService{release: make(chan struct{})}
	testpb.RegisterTestServiceServer(srv.GRPC(), svc)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	h, err := New(Config{
		Services: map[Backend]string{Match: srv.GRPCAddr().String(), Rating: deadAddr},
		WebDir:   t.TempDir(),
		Routes: []Route{
			{Prefix: testPrefix, Backend: Match},
			{Prefix: "/grpc.testing.UnimplementedService/", Backend: Rating},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	edgeCtx, cancelEdge := context.WithCancel(context.Background())
	edged := make(chan error, 1)
	go func() { edged <- Serve(edgeCtx, l, h) }()
	stopEdge := sync.OnceValue(func() error {
		cancelEdge()
		return <-edged
	})
	t.Cleanup(func() {
		if err := stopEdge(); err != nil {
			t.Errorf("edge: %v", err)
		}
		close(svc.release)
		cancel()
		if err := <-served; err != nil {
			t.Errorf("service: %v", err)
		}
	})
	tok, _, err := keys.Sign(auth.Identity{Subject: "edge-player", Role: auth.RolePlayer}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{edge: l.Addr().String(), token: tok, svc: svc, stopEdge: stopEdge}
}

func (h *harness) httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// post sends an HTTP/1.1 call through the edge.
func (h *harness) post(t *testing.T, c *http.Client, method, contentType string, body []byte, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.edge+testPrefix+method, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+h.token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.ProtoMajor != 1 {
		t.Errorf("%s answered over %s, want HTTP/1.1", method, resp.Proto)
	}
	return resp
}

// frame is one length-prefixed message of the gRPC-Web and Connect
// streaming envelopes: a flags byte, a 4-byte length, the payload.
func frame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(payload))), payload...)
}

func readFrame(t *testing.T, r *bufio.Reader) (flags byte, payload []byte) {
	t.Helper()
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		t.Fatalf("read frame: %v", err)
	}
	payload = make([]byte, binary.BigEndian.Uint32(head[1:]))
	if _, err := io.ReadFull(r, payload); err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return head[0], payload
}

// TestEdgeForwardsEveryProtocol calls a real service through the edge in
// the three protocols, unary and server stream. Each stream's first
// message must reach the client while the service still holds the stream
// open (it sends its last message only after the test has read the first):
// an edge that buffered would deadlock here and the test would time out.
func TestEdgeForwardsEveryProtocol(t *testing.T) {
	h := start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	cc, err := grpc.NewClient(h.edge, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.BearerToken(h.token, true)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	grpcClient := testpb.NewTestServiceClient(cc)
	c := h.httpClient(t)

	release := func() { h.svc.release <- struct{}{} }

	t.Run("gRPC unary over h2c", func(t *testing.T) {
		resp, err := grpcClient.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("h2c")}})
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.GetPayload().GetBody()) != "h2c" || resp.GetUsername() != "edge-player" {
			t.Errorf("response %v, want the payload back for edge-player", resp)
		}
	})
	t.Run("gRPC status in trailers", func(t *testing.T) {
		anon, err := grpc.NewClient(h.edge, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer anon.Close()
		_, err = testpb.NewTestServiceClient(anon).UnaryCall(ctx, &testpb.SimpleRequest{})
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(status.Convert(err).Message(), "token") {
			t.Errorf("call without a token: %v, want the service's UNAUTHENTICATED", err)
		}
	})
	t.Run("gRPC server stream", func(t *testing.T) {
		stream, err := grpcClient.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
		if err != nil {
			t.Fatal(err)
		}
		first, err := stream.Recv()
		if err != nil || string(first.GetPayload().GetBody()) != "first" {
			t.Fatalf("first message %v, %v", first, err)
		}
		release()
		last, err := stream.Recv()
		if err != nil || string(last.GetPayload().GetBody()) != "last" {
			t.Fatalf("last message %v, %v", last, err)
		}
		if _, err := stream.Recv(); err != io.EOF {
			t.Errorf("after the last message: %v, want the end of the stream with OK", err)
		}
	})
	t.Run("Connect unary", func(t *testing.T) {
		resp := h.post(t, c, "UnaryCall", "application/json", []byte(`{"payload":{"body":"Y29ubmVjdA=="}}`), "Connect-Protocol-Version", "1")
		body, _ := io.ReadAll(resp.Body)
		var got struct {
			Payload  struct{ Body string }
			Username string
		}
		if err := json.Unmarshal(body, &got); resp.StatusCode != http.StatusOK || err != nil || got.Payload.Body != "Y29ubmVjdA==" || got.Username != "edge-player" {
			t.Errorf("Connect call: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("Connect server stream", func(t *testing.T) {
		resp := h.post(t, c, "StreamingOutputCall", "application/connect+json", frame([]byte(`{}`)))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		r := bufio.NewReader(resp.Body)
		if _, p := readFrame(t, r); !strings.Contains(string(p), b64("first")) {
			t.Fatalf("first message %s", p)
		}
		release()
		if _, p := readFrame(t, r); !strings.Contains(string(p), b64("last")) {
			t.Fatalf("last message %s", p)
		}
		if flags, p := readFrame(t, r); flags&0x02 == 0 || strings.Contains(string(p), "error") {
			t.Errorf("end of stream: flags %#x %s, want a clean end", flags, p)
		}
	})
	t.Run("CORS preflight passes", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodOptions, "http://"+h.edge+testPrefix+"UnaryCall", nil)
		req.Header.Set("Origin", devServer)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != devServer {
			t.Errorf("preflight through the edge: %d %v, want the service's permission", resp.StatusCode, resp.Header)
		}
	})
	t.Run("gRPC-Web server stream", func(t *testing.T) {
		req, _ := proto.Marshal(&testpb.StreamingOutputCallRequest{})
		resp := h.post(t, c, "StreamingOutputCall", "application/grpc-web+proto", frame(req), "X-Grpc-Web", "1")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		r := bufio.NewReader(resp.Body)
		var msg testpb.StreamingOutputCallResponse
		if _, p := readFrame(t, r); proto.Unmarshal(p, &msg) != nil || string(msg.GetPayload().GetBody()) != "first" {
			t.Fatalf("first message %q", p)
		}
		release()
		if _, p := readFrame(t, r); proto.Unmarshal(p, &msg) != nil || string(msg.GetPayload().GetBody()) != "last" {
			t.Fatalf("last message %q", p)
		}
		if flags, p := readFrame(t, r); flags&0x80 == 0 || !strings.Contains(strings.ToLower(string(p)), "grpc-status: 0") {
			t.Errorf("trailers: flags %#x %q, want grpc-status 0", flags, p)
		}
	})
}

// b64 is how Connect's JSON writes a bytes field.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestEdgeRefusals: a call the edge cannot forward gets a status in its own
// protocol, never a proxy's error page.
func TestEdgeRefusals(t *testing.T) {
	h := start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cc, err := grpc.NewClient(h.edge, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()

	// The route's service is down.
	err = cc.Invoke(ctx, "/grpc.testing.UnimplementedService/UnimplementedCall", &testpb.Empty{}, &testpb.Empty{})
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "rating service cannot be reached") {
		t.Errorf("gRPC call to a service that is down: %v, want UNAVAILABLE naming it", err)
	}
	c := h.httpClient(t)
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.edge+"/grpc.testing.UnimplementedService/UnimplementedCall", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var connectErr struct{ Code, Message string }
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &connectErr) != nil || connectErr.Code != "unavailable" {
		t.Errorf("Connect call to a service that is down: %d %s, want 503 with code unavailable", resp.StatusCode, body)
	}

	// Health is not routed: operators probe each service's own port.
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("health check through the edge: %v, want UNIMPLEMENTED", err)
	}
}

// TestServeStopsWithOpenStreams: stopping the edge while a stream is open
// ends the stream with an error instead of waiting for it, and leaves no
// connection or goroutine behind (goleak checks).
func TestServeStopsWithOpenStreams(t *testing.T) {
	h := start(t)
	cc, err := grpc.NewClient(h.edge, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.BearerToken(h.token, true)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stream, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(t.Context(), &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := h.stopEdge(); err != nil {
		t.Fatalf("edge: %v", err)
	}
	if _, err := stream.Recv(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("stream after the edge stopped: %v, want an error", err)
	}
}
