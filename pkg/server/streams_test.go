package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

// TestStreamsPerCaller: a caller with MaxStreamsPerCaller streams open is
// refused one more with RESOURCE_EXHAUSTED (TOO_MANY_STREAMS), while other
// callers, services and health watches are not; once one of its streams
// ends, it may open another.
func TestStreamsPerCaller(t *testing.T) {
	t.Parallel()
	const max = 2
	h := start(t, func(c *Config) { c.MaxStreamsPerCaller = max })
	// open starts a stream and waits for its first message, so the server
	// counts it before open returns.
	open := func(ctx context.Context, cc *grpc.ClientConn) error {
		s, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
		if err != nil {
			return err
		}
		if _, err := s.Recv(); err != nil {
			return err
		}
		<-h.svc.started
		return nil
	}
	greedy := h.conn(t, "greedy")
	var cancels []context.CancelFunc
	for i := range max {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cancels = append(cancels, cancel)
		if err := open(ctx, greedy); err != nil {
			t.Fatalf("stream %d within the cap: %v", i+1, err)
		}
	}
	err := open(t.Context(), greedy)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "too many open streams") {
		t.Fatalf("stream beyond the cap: %v, want RESOURCE_EXHAUSTED naming the cause", err)
	}
	if info := rpcerr.Info(err); info.GetDomain() != "fourkingdoms.server" || info.GetReason() != "TOO_MANY_STREAMS" || info.GetMetadata()["max_streams"] != "2" {
		t.Errorf("ErrorInfo %v, want fourkingdoms.server TOO_MANY_STREAMS with max_streams 2", info)
	}
	// Another player, a service (past the cap) and health watches are served.
	if err := open(t.Context(), h.conn(t, "modest")); err != nil {
		t.Errorf("another caller's stream: %v", err)
	}
	tok, _, err := h.keys.Sign(auth.Identity{Subject: "matchmaking", Role: auth.RoleService}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(auth.BearerToken(tok, true)))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for i := range max + 1 {
		if err := open(t.Context(), svc); err != nil {
			t.Errorf("service stream %d: %v", i+1, err)
		}
	}
	watch, err := healthpb.NewHealthClient(greedy).Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = watch.Recv()
	}
	if err != nil {
		t.Errorf("health watch of a caller at its cap: %v", err)
	}

	// Closing one stream frees its place (the server counts it down when
	// its handler returns, a moment after the client cancels).
	cancels[0]()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := open(t.Context(), greedy)
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("stream after one closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
