package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testService is grpc's interop TestService: it is in the global proto
// registry, so reflection and vanguard see it without code generation.
type testService struct {
	testpb.UnimplementedTestServiceServer
	started chan struct{} // receives when a stream has sent its first message
	release chan struct{} // closed to let streams finish
	flooded chan error    // receives how a flooding stream ended (floodStream)
}

func (s *testService) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func (s *testService) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if req.GetPayload().GetBody() != nil && string(req.GetPayload().GetBody()) == "panic" {
		panic("test panic")
	}
	id, _ := auth.FromContext(ctx)
	resp := &testpb.SimpleResponse{Payload: req.GetPayload(), Username: id.Subject}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		resp.ServerId = sc.TraceID().String()
	}
	return resp, nil
}

func (s *testService) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	if p := req.GetResponseParameters(); len(p) > 0 {
		return s.floodStream(p[0], stream)
	}
	if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte("first")}}); err != nil {
		return err
	}
	s.started <- struct{}{}
	select {
	case <-s.release:
	case <-stream.Context().Done():
		return stream.Context().Err()
	}
	return stream.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: []byte("last")}})
}

type harness struct {
	srv   *Server
	svc   *testService
	keys  *auth.KeySet
	addr  string // gRPC/HTTP address
	admin string // admin base URL
	stop  context.CancelFunc
	done  chan error
	logs  *syncBuffer
}

type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

func start(t testing.TB, mod func(*Config)) *harness {
	t.Helper()
	keys, keyFile := authtest.PublicKeyFile(t)
	cfg := DefaultConfig("test")
	cfg.GRPCAddr, cfg.AdminAddr, cfg.AuthKeysFile = "127.0.0.1:0", "127.0.0.1:0", keyFile
	cfg.TLS.Plaintext = true
	cfg.ShutdownTimeout = 10 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	logs := &syncBuffer{mu: make(chan struct{}, 1)}
	log := NewLogger(logs, slog.LevelDebug, cfg.ServiceName)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, cfg, log, Options{PublicMethods: []string{"/grpc.testing.TestService/EmptyCall"}})
	if err != nil {
		t.Fatal(err)
	}
	svc := &testService{started: make(chan struct{}, 10), release: make(chan struct{}), flooded: make(chan error, 10)}
	testpb.RegisterTestServiceServer(srv.GRPC(), svc)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	h := &harness{srv: srv, svc: svc, keys: keys, addr: srv.GRPCAddr().String(),
		admin: "http://" + srv.AdminAddr().String(), stop: cancel, done: make(chan error, 1), logs: logs}
	go func() { h.done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-svc.release:
		default:
			close(svc.release)
		}
		if err := <-h.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", logs.String())
		}
	})
	return h
}

func (h *harness) token(t testing.TB, subject string) string {
	t.Helper()
	tok, _, err := h.keys.Sign(auth.Identity{Subject: subject, Role: auth.RolePlayer}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// conn dials the server; a non-empty subject sends a token for it.
func (h *harness) conn(t testing.TB, subject string) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if subject != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(auth.BearerToken(h.token(t, subject), true)))
	}
	cc, err := grpc.NewClient(h.addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func unary(ctx context.Context, cc *grpc.ClientConn, body string) (*testpb.SimpleResponse, error) {
	return testpb.NewTestServiceClient(cc).UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte(body)}})
}

func TestHealthAndReflection(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	cc := h.conn(t, "")
	ctx := t.Context()
	for _, svc := range []string{"", "grpc.testing.TestService"} {
		resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q = %v, %v; want SERVING", svc, resp.GetStatus(), err)
		}
	}

	want := []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection", "grpc.testing.TestService"}
	v1, err := reflectionv1.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := v1.Send(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := v1.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		got = append(got, s.GetName())
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("reflection v1 services = %v, want %v", got, want)
	}
	v1.CloseSend()

	// v1alpha is deprecated but still what older grpcurl versions use.
	alpha, err := reflectionv1alpha.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 testing the deprecated protocol on purpose
	if err := alpha.Send(&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "grpc.testing.TestService"}}); err != nil {
		t.Fatal(err)
	}
	aresp, err := alpha.Recv()
	//lint:ignore SA1019 testing the deprecated protocol on purpose
	if err != nil || len(aresp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Errorf("reflection v1alpha file for TestService: %v, %v", aresp, err)
	}
	alpha.CloseSend()

	c := httpClient(t)
	for path, code := range map[string]int{"/healthz": 200, "/readyz": 200, "/debug/pprof/": 404} {
		r, err := c.Get(h.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != code {
			t.Errorf("GET %s = %d, want %d", path, r.StatusCode, code)
		}
	}
}

func TestSetServingFollowsReadiness(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.srv.SetServing("grpc.testing.TestService", false)
	cc := h.conn(t, "")
	resp, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("overall health = %v, %v; want NOT_SERVING", resp.GetStatus(), err)
	}
	r, err := httpClient(t).Get(h.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d, want 503", r.StatusCode)
	}
}

func TestConnectAndGRPCWebOnSamePort(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	c := httpClient(t)
	tok := h.token(t, "browser-player")

	t.Run("connect", func(t *testing.T) {
		req, _ := http.NewRequest("POST", "http://"+h.addr+"/grpc.testing.TestService/UnaryCall",
			strings.NewReader(`{"payload":{"body":"aGVsbG8="}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Connect-Protocol-Version", "1")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.ProtoMajor != 1 || resp.StatusCode != 200 {
			t.Fatalf("Connect call: %s %d %s", resp.Proto, resp.StatusCode, body)
		}
		var got struct {
			Payload  struct{ Body string }
			Username string
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Payload.Body != "aGVsbG8=" || got.Username != "browser-player" {
			t.Errorf("Connect response = %s", body)
		}
	})

	t.Run("connect unauthenticated", func(t *testing.T) {
		req, _ := http.NewRequest("POST", "http://"+h.addr+"/grpc.testing.TestService/UnaryCall", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Connect-Protocol-Version", "1")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"unauthenticated"`) {
			t.Errorf("Connect call without token: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("grpc-web", func(t *testing.T) {
		msg, _ := proto.Marshal(&testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("web")}})
		frame := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
		req, _ := http.NewRequest("POST", "http://"+h.addr+"/grpc.testing.TestService/UnaryCall", bytes.NewReader(append(frame, msg...)))
		req.Header.Set("Content-Type", "application/grpc-web+proto")
		req.Header.Set("X-Grpc-Web", "1")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.ProtoMajor != 1 || resp.StatusCode != 200 {
			t.Fatalf("gRPC-Web call: %s %d %q", resp.Proto, resp.StatusCode, body)
		}
		var got testpb.SimpleResponse
		var trailers string
		for len(body) >= 5 {
			flag, n := body[0], binary.BigEndian.Uint32(body[1:5])
			payload := body[5 : 5+n]
			body = body[5+n:]
			if flag&0x80 != 0 {
				trailers = string(payload)
			} else if err := proto.Unmarshal(payload, &got); err != nil {
				t.Fatal(err)
			}
		}
		if string(got.GetPayload().GetBody()) != "web" || got.GetUsername() != "browser-player" {
			t.Errorf("gRPC-Web response = %v", &got)
		}
		if !strings.Contains(strings.ToLower(trailers), "grpc-status: 0") && !strings.Contains(strings.ToLower(trailers), "grpc-status:0") {
			t.Errorf("gRPC-Web trailers = %q, want grpc-status 0", trailers)
		}
	})
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	ctx := t.Context()
	anon := h.conn(t, "")
	_, err := unary(ctx, anon, "x")
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "authorization: Bearer") {
		t.Errorf("call without token: %v, want UNAUTHENTICATED explaining the header", err)
	}
	if _, err := testpb.NewTestServiceClient(anon).EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Errorf("public method without token: %v", err)
	}
	expired, _, _ := h.keys.Sign(auth.Identity{Subject: "late", Role: auth.RolePlayer}, time.Now().Add(-time.Hour), time.Minute)
	_, err = testpb.NewTestServiceClient(anon).UnaryCall(ctx, &testpb.SimpleRequest{},
		grpc.PerRPCCredentials(auth.BearerToken(expired, true)))
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "expired") {
		t.Errorf("call with expired token: %v, want UNAUTHENTICATED (expired)", err)
	}
	resp, err := unary(ctx, h.conn(t, "p-1"), "x")
	if err != nil || resp.GetUsername() != "p-1" {
		t.Errorf("authenticated call = %v, %v", resp, err)
	}
	if !strings.Contains(h.logs.String(), `"subject":"p-1"`) {
		t.Error("call log line lacks the caller subject")
	}
}

func TestRateLimitPerCaller(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *Config) { c.RateLimitRPS, c.RateLimitBurst = 0.01, 3 })
	ctx := t.Context()
	greedy := h.conn(t, "greedy")
	for i := range 3 {
		if _, err := unary(ctx, greedy, "x"); err != nil {
			t.Fatalf("call %d within burst: %v", i, err)
		}
	}
	_, err := unary(ctx, greedy, "x")
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("call beyond burst: %v, want RESOURCE_EXHAUSTED", err)
	}
	var hint *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			hint = ri
		}
	}
	if hint.GetRetryDelay().AsDuration() <= 0 {
		t.Errorf("no retry hint in %v", st.Details())
	}
	if info := rpcerr.Info(err); info.GetDomain() != "fourkingdoms.server" || info.GetReason() != "RATE_LIMITED" {
		t.Errorf("rate limit ErrorInfo %v, want fourkingdoms.server RATE_LIMITED", info)
	}
	if _, err := unary(ctx, h.conn(t, "modest"), "x"); err != nil {
		t.Errorf("other caller affected: %v", err)
	}
	// Health is never rate limited.
	for range 5 {
		if _, err := healthpb.NewHealthClient(greedy).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("health check limited: %v", err)
		}
	}
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	cc := h.conn(t, "p")
	_, err := unary(t.Context(), cc, "panic")
	if st := status.Convert(err); st.Code() != codes.Internal || strings.Contains(st.Message(), "test panic") {
		t.Errorf("panicking call: %v, want INTERNAL with a generic message", err)
	}
	if info := rpcerr.Info(err); info.GetDomain() != "fourkingdoms.server" || info.GetReason() != "INTERNAL" {
		t.Errorf("panicking call ErrorInfo %v, want fourkingdoms.server INTERNAL", info)
	}
	if _, err := unary(t.Context(), cc, "fine"); err != nil {
		t.Errorf("call after panic: %v", err)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "test panic") || !strings.Contains(logs, "goroutine") {
		t.Error("panic and stack not logged")
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	if _, err := unary(t.Context(), h.conn(t, "p"), "x"); err != nil {
		t.Fatal(err)
	}
	// The server records a call's metrics when the call ends on its side,
	// which may be just after the client has the reply: scrape until they
	// are there.
	wants := []string{"rpc_server_", `rpc_method="grpc.testing.TestService/UnaryCall"`, "go_goroutines"}
	var body []byte
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := httpClient(t).Get(h.admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		missing := slices.DeleteFunc(slices.Clone(wants), func(w string) bool { return strings.Contains(string(body), w) })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q:\n%s", missing, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHealthMetrics: a failing component shows on /metrics as
// server_component_failing{component=...} 1 and server_ready 0 (the alerts
// on Redis and the workers read them), and as 0 and 1 once it recovers.
func TestHealthMetrics(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	// Collection happens per scrape, but readiness changes asynchronously
	// (Serve marks services SERVING): scrape until the state shows.
	waitFor := func(what string, cond func(body string) bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; {
			body := scrape(t, h.admin)
			if cond(body) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/metrics does not show %s:\n%s", what, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("ready", func(b string) bool { return metricValueIs(b, "server_ready", "1") })
	h.srv.Report("redis", errors.New("connection refused"))
	waitFor("redis failing and not ready", func(b string) bool {
		return strings.Contains(b, `component="redis"`) &&
			metricValueIs(b, "server_component_failing", "1") && metricValueIs(b, "server_ready", "0")
	})
	h.srv.Report("redis", nil)
	waitFor("redis recovered and ready", func(b string) bool {
		return metricValueIs(b, "server_component_failing", "0") && metricValueIs(b, "server_ready", "1")
	})
}

func scrape(t *testing.T, admin string) string {
	t.Helper()
	resp, err := httpClient(t).Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// metricValueIs reports whether every sample of the metric name in a
// Prometheus text exposition has the value want.
func metricValueIs(body, name, want string) bool {
	found := false
	for line := range strings.Lines(body) {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		fields := strings.Fields(line)
		if fields[len(fields)-1] != want {
			return false
		}
		found = true
	}
	return found
}

func TestGracefulShutdownDrainsStream(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *Config) { c.ShutdownDrainDelay = 300 * time.Millisecond })
	cc := h.conn(t, "p")
	ctx := t.Context()

	watch, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first health update = %v, %v", r, err)
	}
	stream, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	<-h.svc.started

	h.stop()
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health update during shutdown = %v, %v; want NOT_SERVING", r, err)
	}
	r, err := httpClient(t).Get(h.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz during shutdown = %d, want 503", r.StatusCode)
	}
	// The health watch ends once the drain delay is over instead of
	// holding the shutdown.
	if _, err := watch.Recv(); err == nil {
		t.Error("health watch still open after drain delay")
	}
	select {
	case err := <-h.done:
		t.Fatalf("Serve returned %v with a stream in flight", err)
		h.done <- err
	default:
	}
	close(h.svc.release)
	msg, err := stream.Recv()
	if err != nil || string(msg.GetPayload().GetBody()) != "last" {
		t.Fatalf("in-flight stream after shutdown began: %v, %v", msg, err)
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("stream end = %v, want io.EOF", err)
	}
}

func TestHardStopAfterTimeout(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *Config) { c.ShutdownTimeout = 200 * time.Millisecond })
	stream, err := testpb.NewTestServiceClient(h.conn(t, "p")).StreamingOutputCall(t.Context(), &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	<-h.svc.started
	h.stop() // the stream is never released
	_, err = stream.Recv()
	if code := status.Code(err); code != codes.Unavailable && code != codes.Canceled {
		t.Fatalf("stream after hard stop: %v, want UNAVAILABLE or CANCELED", err)
	}
	err = <-h.done
	h.done <- err
	if !strings.Contains(h.logs.String(), "shutdown timeout") {
		t.Error("forced stop not logged")
	}
}

func TestConfigBindAndValidate(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GRPC_ADDR": ":7000", "RATE_LIMIT_RPS": "5", "SHUTDOWN_TIMEOUT": "3s", "AUTH_KEYS_FILE": "/k.json",
		"TLS_CERT_FILE": "/tls/tls.crt", "TLS_KEY_FILE": "/tls/tls.key"}
	cfg := DefaultConfig("match")
	fs := flag.NewFlagSet("match", flag.ContinueOnError)
	if err := cfg.Bind(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"-log-level=debug"}); err != nil {
		t.Fatal(err)
	}
	if cfg.GRPCAddr != ":7000" || cfg.TLS.CertFile != "/tls/tls.crt" || cfg.RateLimitRPS != 5 || cfg.ShutdownTimeout != 3*time.Second || cfg.LogLevel != "debug" {
		t.Errorf("bound config = %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}

	bad := DefaultConfig("")
	bad.LogLevel, bad.ShutdownTimeout, bad.RateLimitBurst, bad.TraceSampleRatio = "loud", 0, 0, 1.5
	err := bad.Validate()
	for _, want := range []string{"service name", "log level", "AUTH_KEYS_FILE", "shutdown timeout", "burst", "trace sample ratio", "TLS_CERT_FILE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %v does not mention %q", err, want)
		}
	}
	other := DefaultConfig("x")
	if err := other.Bind(flag.NewFlagSet("x", flag.ContinueOnError), func(k string) string {
		return map[string]string{"SHUTDOWN_TIMEOUT": "soon"}[k]
	}); err == nil {
		t.Error("unparsable env accepted")
	}
}

// TestTracerProviderOnlyWhenExporting: without an OTLP endpoint there is no
// tracer provider to instrument clients with, since their spans would go
// nowhere; with one there is.
func TestTracerProviderOnlyWhenExporting(t *testing.T) {
	t.Parallel()
	_, keyFile := authtest.PublicKeyFile(t)
	for _, endpoint := range []string{"", "http://127.0.0.1:1"} {
		cfg := DefaultConfig("tracing")
		cfg.GRPCAddr, cfg.AdminAddr, cfg.AuthKeysFile, cfg.OTLPEndpoint = "127.0.0.1:0", "127.0.0.1:0", keyFile, endpoint
		cfg.TLS.Plaintext = true
		s, err := New(t.Context(), cfg, NewLogger(io.Discard, slog.LevelInfo, "tracing"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.TracerProvider(); (got != nil) != (endpoint != "") {
			t.Errorf("endpoint %q: TracerProvider() = %v", endpoint, got)
		}
		s.discard()
	}
}

// TestTraceContextPropagatesWithoutExporter: without an OTLP endpoint the
// server records no spans, yet a caller's trace context still reaches the
// handler, for the calls it makes in turn.
func TestTraceContextPropagatesWithoutExporter(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := metadata.AppendToOutgoingContext(t.Context(), "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := unary(ctx, h.conn(t, "p"), "x")
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetServerId() != traceID {
		t.Errorf("handler's trace ID = %q, want the caller's %q", resp.GetServerId(), traceID)
	}
	resp, err = unary(t.Context(), h.conn(t, "p"), "x")
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetServerId() != "" {
		t.Errorf("handler's trace ID = %q without a caller's trace context, want none (nothing is recorded)", resp.GetServerId())
	}
}

func TestWorkers(t *testing.T) {
	t.Parallel()
	_, keyFile := authtest.PublicKeyFile(t)
	cfg := DefaultConfig("workers")
	cfg.GRPCAddr, cfg.AdminAddr, cfg.AuthKeysFile = "127.0.0.1:0", "127.0.0.1:0", keyFile
	cfg.TLS.Plaintext = true
	log := NewLogger(io.Discard, slog.LevelInfo, "workers")

	t.Run("cancelled at shutdown", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		stopped := make(chan struct{})
		err := Run(ctx, cfg, log, Options{}, func(s *Server) error {
			s.Go("waiter", func(wctx context.Context) error {
				cancel() // trigger shutdown once running
				<-wctx.Done()
				close(stopped)
				return wctx.Err()
			})
			return nil
		})
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		select {
		case <-stopped:
		default:
			t.Fatal("Run returned before the worker stopped")
		}
	})

	t.Run("failure stops server", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("boom")
		err := Run(t.Context(), cfg, log, Options{}, func(s *Server) error {
			s.Go("failing", func(context.Context) error { return boom })
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Run = %v, want the worker's error", err)
		}
	})
}

// healthOf returns the overall gRPC health status and the /readyz code.
func healthOf(t *testing.T, h *harness, cc *grpc.ClientConn) (healthpb.HealthCheckResponse_ServingStatus, healthpb.HealthCheckResponse_ServingStatus, int, string) {
	t.Helper()
	var st [2]healthpb.HealthCheckResponse_ServingStatus
	for i, svc := range []string{"", "grpc.testing.TestService"} {
		resp, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		st[i] = resp.GetStatus()
	}
	r, err := httpClient(t).Get(h.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	return st[0], st[1], r.StatusCode, string(body)
}

func TestReportFollowsComponents(t *testing.T) {
	t.Parallel()
	const serving, notServing = healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING
	h := start(t, nil)
	cc := h.conn(t, "")
	steps := []struct {
		name      string
		component string
		err       error
		want      healthpb.HealthCheckResponse_ServingStatus
		body      string // substring of /readyz
	}{
		{"redis fails", "redis", errors.New("dial tcp: refused"), notServing, "redis: dial tcp: refused"},
		{"worker fails too", "worker", errors.New("stuck"), notServing, "worker: stuck"},
		{"redis recovers, worker still failing", "redis", nil, notServing, "worker: stuck"},
		{"worker recovers", "worker", nil, serving, "ready"},
		{"a healthy report changes nothing", "worker", nil, serving, "ready"},
	}
	for _, s := range steps {
		h.srv.Report(s.component, s.err)
		overall, svc, code, body := healthOf(t, h, cc)
		wantCode := http.StatusOK
		if s.want != serving {
			wantCode = http.StatusServiceUnavailable
		}
		if overall != s.want || svc != s.want || code != wantCode || !strings.Contains(body, s.body) {
			t.Errorf("%s: health %v / %v, /readyz %d %q; want %v, %d containing %q", s.name, overall, svc, code, body, s.want, wantCode, s.body)
		}
	}
	// Liveness never follows readiness.
	h.srv.Report("redis", errors.New("down"))
	r, err := httpClient(t).Get(h.admin + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Errorf("/healthz while not ready = %d, want 200", r.StatusCode)
	}
}

func TestCheckRunsPeriodically(t *testing.T) {
	t.Parallel()
	_, keyFile := authtest.PublicKeyFile(t)
	cfg := DefaultConfig("check")
	cfg.GRPCAddr, cfg.AdminAddr, cfg.AuthKeysFile = "127.0.0.1:0", "127.0.0.1:0", keyFile
	cfg.TLS.Plaintext = true
	cfg.HealthCheckInterval, cfg.HealthCheckTimeout = 10*time.Millisecond, 20*time.Millisecond
	log := NewLogger(io.Discard, slog.LevelInfo, "check")
	var mu sync.Mutex
	var result error
	set := func(err error) { mu.Lock(); result = err; mu.Unlock() }
	ctx, cancel := context.WithCancel(t.Context())
	srvc := make(chan *Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, log, Options{Listening: func(s *Server) { srvc <- s }}, func(s *Server) error {
			s.Check("dependency", func(ctx context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				if result == errSlow {
					<-ctx.Done() // the timeout fails the check
					return ctx.Err()
				}
				return result
			})
			return nil
		})
	}()
	s := <-srvc
	waitReady := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.Ready() != want {
			if time.Now().After(deadline) {
				t.Fatalf("Ready never became %v", want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitReady(true)
	set(errors.New("down"))
	waitReady(false)
	set(nil)
	waitReady(true)
	set(errSlow)
	waitReady(false)
	set(nil)
	waitReady(true)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

var errSlow = errors.New("slow")

// TestShuttingDownRefusal: calls refused while the server drains carry an
// ErrorInfo of the server's domain.
func TestShuttingDownRefusal(t *testing.T) {
	t.Parallel()
	if info := rpcerr.Info(errShuttingDown); status.Code(errShuttingDown) != codes.Unavailable ||
		info.GetDomain() != "fourkingdoms.server" || info.GetReason() != "SHUTTING_DOWN" {
		t.Errorf("errShuttingDown = %v, ErrorInfo %v", errShuttingDown, info)
	}
}

// TestOIDCTokensAccepted configures an OpenID Connect provider: its
// tokens reach the handler as the derived player id, the deployment's own
// tokens still work, and a token for another audience is refused.
func TestOIDCTokensAccepted(t *testing.T) {
	t.Parallel()
	idp := authtest.NewProvider(t)
	h := start(t, func(c *Config) { c.OIDC = idp.Config() })
	call := func(tok string) (*testpb.SimpleResponse, error) {
		cc, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(auth.BearerToken(tok, true)))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		return unary(t.Context(), cc, "x")
	}
	resp, err := call(idp.Token(t, "acct-42", "alice", time.Hour))
	if err != nil {
		t.Fatalf("provider token: %v", err)
	}
	if want := auth.OIDCPlayerID(idp.Issuer, "acct-42"); resp.GetUsername() != want {
		t.Errorf("handler saw subject %q, want %q", resp.GetUsername(), want)
	}
	if resp, err := call(h.token(t, "g-guest")); err != nil || resp.GetUsername() != "g-guest" {
		t.Errorf("own token with a provider configured: %v, %v", resp.GetUsername(), err)
	}
	idp.Audience = "another-app" // the server keeps the audience it was started with
	_, err = call(idp.Token(t, "acct-42", "alice", time.Hour))
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(status.Convert(err).Message(), "audience") {
		t.Errorf("token for another audience: %v, want UNAUTHENTICATED naming the audience", err)
	}
}
