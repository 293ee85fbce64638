package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/servertest"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// TestSlowReaders: a player opens WatchTicket over raw HTTP/2 with a
// flow-control window of 0 and never reads, while the service sends it a
// searching update every millisecond (MM_SEARCHING_EVERY); another player
// watches its own ticket. Once the transport's write quota is full the
// slow stream's send blocks, and MM_WATCH_SEND_TIMEOUT later the server
// ends it with nobody reading: its place under
// GRPC_MAX_STREAMS_PER_CALLER (1 here) is freed, so the same player's
// next WatchTicket is admitted. The slow client, when it reads again, gets
// what was queued and then RESOURCE_EXHAUSTED SLOW_CONSUMER; the other
// player's stream was served throughout and still is.
func TestSlowReaders(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("test")
	if err != nil {
		t.Fatal(err)
	}
	backend, _, _ := startBackends(t, keys)
	env := baseEnv(t, keys, backend)
	_, env["REDIS_ADDR"] = redistest.Standalone(t)
	env["MM_WATCH_SEND_TIMEOUT"], env["MM_SEARCHING_EVERY"], env["MM_WATCH_POLL"] = "1s", "1ms", "1ms"
	env["GRPC_MAX_STREAMS_PER_CALLER"] = "1"
	srv, conn := serveAndDial(t, env)
	mm := matchmakingv1.NewMatchmakingServiceClient(conn)
	token := func(subject string) string {
		tok, _, err := keys.Sign(auth.Identity{Subject: subject, Role: auth.RolePlayer, DisplayName: subject}, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	as := func(tok string) grpc.CallOption { return grpc.PerRPCCredentials(auth.BearerToken(tok, true)) }
	enqueue := func(tok string) string {
		resp, err := mm.Enqueue(t.Context(), &matchmakingv1.EnqueueRequest{
			Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, as(tok))
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetTicket().GetTicketId()
	}

	// The other player reads its updates all along.
	other := token("p-other")
	otherTicket := enqueue(other)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	otherStream, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: otherTicket}, as(other))
	if err != nil {
		t.Fatal(err)
	}
	var received atomic.Int64
	otherDone := make(chan error, 1)
	go func() {
		for {
			if _, err := otherStream.Recv(); err != nil {
				otherDone <- err
				return
			}
			received.Add(1)
		}
	}()

	slow := token("p-slow")
	slowTicket := enqueue(slow)
	stalled := servertest.OpenStalled(t, conn.Target(), "/fourkingdoms.matchmaking.v1.MatchmakingService/WatchTicket",
		slow, &matchmakingv1.WatchTicketRequest{TicketId: slowTicket})
	if err := stalled.Started(); err != nil {
		t.Fatalf("the stalled stream: %v", err)
	}

	// The stalled stream holds the player's only stream until the server
	// ends it.
	watch := func() error {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: slowTicket}, as(slow))
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	refused := 0
	for end := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		err := watch()
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || rpcerr.Info(err).GetReason() != "TOO_MANY_STREAMS" {
			t.Fatalf("the slow player's second stream: %v, want TOO_MANY_STREAMS while the stalled one is open", err)
		}
		refused++
		if time.Now().After(end) {
			t.Fatalf("the stalled stream still holds the player's stream after 2 minutes (%d refusals)", refused)
		}
	}
	if refused == 0 {
		t.Fatal("the slow player's second stream was admitted at once: the stalled stream was not counted")
	}

	msgs, err := stalled.Resume()
	if status.Code(err) != codes.ResourceExhausted || rpcerr.Info(err).GetReason() != "SLOW_CONSUMER" {
		t.Fatalf("slow reader, after %d queued messages: %v; want RESOURCE_EXHAUSTED SLOW_CONSUMER", len(msgs), err)
	}
	for i, m := range msgs {
		var r matchmakingv1.WatchTicketResponse
		if err := proto.Unmarshal(m, &r); err != nil || r.GetSearching() == nil {
			t.Fatalf("queued message %d: %v (%v), want a searching update", i, &r, err)
		}
	}
	t.Logf("slow reader: %d queued messages, then %v; %d second streams refused meanwhile", len(msgs), err, refused)
	// Counted for operators, as a ticket stream; the other player's stream
	// is not.
	servertest.WaitMetric(t, srv, "matchmaking_watch_dropped_total", "1", `stream="ticket"`, `reason="slow_consumer"`)

	// The other player is still served.
	before := received.Load()
	for end := time.Now().Add(time.Minute); received.Load() == before; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-otherDone:
			t.Fatalf("the other player's stream ended: %v", err)
		default:
		}
		if time.Now().After(end) {
			t.Fatal("the other player got no update for a minute after the slow stream ended")
		}
	}
	cancel()
	if err := <-otherDone; status.Code(err) != codes.Canceled && !errors.Is(err, context.Canceled) {
		t.Errorf("the other player's stream: %v, want CANCELED by the test", err)
	}
	t.Logf("the other player got %d updates", received.Load())
}
