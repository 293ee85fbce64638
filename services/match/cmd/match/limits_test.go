package main

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// TestWatchStreamsPerCaller: a player's WatchMatch streams beyond
// GRPC_MAX_STREAMS_PER_CALLER are refused with RESOURCE_EXHAUSTED
// (TOO_MANY_STREAMS) while another player may still watch; a service is
// exempt. (Oversized requests: TestBadInput; slow readers:
// TestSlowReaders, fanout's SlowConsumerDropped and the api's refusal table.)
func TestWatchStreamsPerCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, standalone(t))
	inst := e.start(map[string]string{"GRPC_MAX_STREAMS_PER_CALLER": "2"})
	id := e.create(inst.addr, nil).GetMatchId()
	watch := func(c matchv1.MatchServiceClient) error {
		s, err := c.WatchMatch(t.Context(), &matchv1.WatchMatchRequest{MatchId: id})
		if err != nil {
			return err
		}
		_, err = s.Recv() // the snapshot: the stream is open on the server
		return err
	}
	red := e.client(inst.addr, e.token(players[0], auth.RolePlayer))
	for i := range 2 {
		if err := watch(red); err != nil {
			t.Fatalf("stream %d within the cap: %v", i+1, err)
		}
	}
	err := watch(red)
	if status.Code(err) != codes.ResourceExhausted || rpcerr.Info(err).GetReason() != "TOO_MANY_STREAMS" {
		t.Fatalf("third stream: %v, want RESOURCE_EXHAUSTED TOO_MANY_STREAMS", err)
	}
	if err := watch(e.client(inst.addr, e.token(players[1], auth.RolePlayer))); err != nil {
		t.Errorf("another player's stream: %v", err)
	}
	svc := e.client(inst.addr, e.token("matchmaker", auth.RoleService))
	for i := range 3 {
		if err := watch(svc); err != nil {
			t.Errorf("service stream %d: %v", i+1, err)
		}
	}
}
