package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// TestLimits: an Enqueue flood by one player is refused with
// RESOURCE_EXHAUSTED (RATE_LIMITED, with a RetryInfo) while another
// player is served; a player's WatchTicket streams beyond
// GRPC_MAX_STREAMS_PER_CALLER are refused (TOO_MANY_STREAMS). The
// latency the others see during a flood is measured by
// BenchmarkCallDuringFlood in pkg/server, which all three services share.
func TestLimits(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("test")
	if err != nil {
		t.Fatal(err)
	}
	backend, _, _ := startBackends(t, keys)
	env := baseEnv(t, keys, backend)
	_, env["REDIS_ADDR"] = redistest.Standalone(t)
	env["RATE_LIMIT_RPS"], env["RATE_LIMIT_BURST"], env["GRPC_MAX_STREAMS_PER_CALLER"] = "0.1", "10", "2"
	conn := startService(t, env)
	mm := matchmakingv1.NewMatchmakingServiceClient(conn)
	as := func(subject string) grpc.CallOption {
		tok, _, err := keys.Sign(auth.Identity{Subject: subject, Role: auth.RolePlayer, DisplayName: subject}, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return grpc.PerRPCCredentials(auth.BearerToken(tok, true))
	}
	enq := &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}

	t.Run("EnqueueFlood", func(t *testing.T) {
		flooder := as("p-flood")
		var refusal error
		for i := range 11 { // the burst is 10 calls
			if _, err := mm.Enqueue(t.Context(), enq, flooder); err != nil {
				refusal = err
				break
			} else if i == 10 {
				t.Fatal("11 Enqueue calls at once all served, want the 11th refused (burst 10)")
			}
		}
		if status.Code(refusal) != codes.ResourceExhausted {
			t.Fatalf("flood: %v, want RESOURCE_EXHAUSTED", refusal)
		}
		if ei := rpcerr.Info(refusal); ei.GetDomain() != "fourkingdoms.server" || ei.GetReason() != "RATE_LIMITED" {
			t.Errorf("flood ErrorInfo %v, want fourkingdoms.server RATE_LIMITED", ei)
		}
		var retry *errdetails.RetryInfo
		for _, d := range status.Convert(refusal).Details() {
			if r, ok := d.(*errdetails.RetryInfo); ok {
				retry = r
			}
		}
		if retry.GetRetryDelay().AsDuration() <= 0 {
			t.Errorf("flood refusal without a RetryInfo delay: %v", status.Convert(refusal).Details())
		}
		if _, err := mm.Enqueue(t.Context(), enq, as("p-patient")); err != nil {
			t.Errorf("another player's Enqueue during the flood: %v", err)
		}
	})

	t.Run("StreamsPerCaller", func(t *testing.T) {
		watcher := as("p-watcher")
		resp, err := mm.Enqueue(t.Context(), enq, watcher)
		if err != nil {
			t.Fatal(err)
		}
		watch := func(ctx context.Context) error {
			s, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: resp.GetTicket().GetTicketId()}, watcher)
			if err != nil {
				return err
			}
			_, err = s.Recv() // the first update: the stream is open on the server
			return err
		}
		for i := range 2 {
			if err := watch(t.Context()); err != nil {
				t.Fatalf("stream %d within the cap: %v", i+1, err)
			}
		}
		err = watch(t.Context())
		if status.Code(err) != codes.ResourceExhausted || rpcerr.Info(err).GetReason() != "TOO_MANY_STREAMS" {
			t.Fatalf("third stream: %v, want RESOURCE_EXHAUSTED TOO_MANY_STREAMS", err)
		}
	})
}
