package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestClusterFailoverWithWait: the master holding a match is killed while
// moves are being played; its replica takes over. The service recovers
// without a restart, and with WAIT on no acknowledged move is lost.
func TestClusterFailoverWithWait(t *testing.T) {
	t.Parallel()
	lc := redistest.NewCluster(t)
	e := newEnv(t, backend{name: "private-cluster", env: map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(lc.Addrs(), ",")},
		client: func(t testing.TB) redis.UniversalClient { return lc.Client(t) }})
	inst := e.start(map[string]string{"MATCH_WAIT_REPLICAS": "1", "MATCH_WAIT_TIMEOUT": "300ms", "REDIS_READ_TIMEOUT": "500ms"})
	m := e.create(inst.addr, nil)
	id := m.GetMatchId()
	cs := e.seatClients(inst.addr)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(4, 4))
	// A watcher connected through the failover must see every event.
	var watched []*matchv1.WatchMatchResponse
	var werr error
	wdone := make(chan struct{})
	spec := e.client(inst.addr, e.token("spectator", auth.RolePlayer))
	go func() {
		defer close(wdone)
		watched, werr = collect(ctx, spec, id)
	}()

	type ack struct {
		version uint64
		move    string
	}
	var acks []ack
	killed := make(chan string, 1)
	failures := 0
	for n := 0; len(acks) < 40 && ctx.Err() == nil; n++ {
		if len(acks) == 10 && len(killed) == 0 {
			p, _ := store.PartitionOf(id)
			addr := lc.KillMasterOf(t, fmt.Sprintf("{fk:p%02x}", p))
			killed <- addr
			// With WAIT 1 the promoted master needs a replica before it
			// can acknowledge writes: the killed node rejoins as one.
			lc.Restart(t, addr)
		}
		var mover matchv1.MatchServiceClient
		var legal []string
		for _, c := range cs {
			resp, err := c.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
			if err != nil {
				failures++
				time.Sleep(50 * time.Millisecond)
				break
			}
			if lm := resp.GetMatch().GetLegalMoves(); len(lm) > 0 {
				mover, legal = c, lm
				break
			}
		}
		if mover == nil {
			continue
		}
		req := &matchv1.MakeMoveRequest{MatchId: id, Move: legal[rng.IntN(len(legal))], ClientMoveId: fmt.Sprintf("f%d", n)}
		// Retry the same request (same move id) until it is answered.
		for ctx.Err() == nil {
			r, err := mover.MakeMove(ctx, req)
			if err == nil {
				acks = append(acks, ack{r.GetEvents()[0].GetVersion(), r.GetEvents()[0].GetMoveApplied().GetEffects().GetMove()})
				break
			}
			if c := status.Code(err); c != codes.Unavailable && c != codes.Aborted && c != codes.Internal {
				t.Fatalf("MakeMove: %v", err)
			}
			failures++
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(killed) == 0 || len(acks) < 40 {
		t.Fatalf("played %d moves (master killed: %v)", len(acks), len(killed) == 1)
	}
	t.Logf("%d acknowledged moves, %d failed calls during failover", len(acks), failures)
	op := e.client(inst.addr, e.token("op", auth.RoleOperator))
	if _, err := op.AbortMatch(ctx, &matchv1.AbortMatchRequest{MatchId: id, Reason: "test over"}); err != nil {
		t.Fatal(err)
	}
	hist, err := collect(ctx, op, id)
	if err != nil {
		t.Fatal(err)
	}
	<-wdone
	if werr != nil {
		t.Fatalf("watcher through the failover: %v", werr)
	}
	if len(watched) != len(hist) || watched[len(watched)-1].GetVersion() != hist[len(hist)-1].GetVersion() {
		t.Fatalf("watcher through the failover saw %d items, history has %d", len(watched), len(hist))
	}
	byVersion := map[uint64]string{}
	for i, it := range hist {
		if it.GetVersion() != uint64(i+2) {
			t.Fatalf("history item %d has version %d", i, it.GetVersion())
		}
		byVersion[it.GetVersion()] = it.GetEvent().GetMoveApplied().GetEffects().GetMove()
	}
	for _, a := range acks {
		if byVersion[a.version] != a.move {
			t.Errorf("acknowledged %s at version %d, history has %q", a.move, a.version, byVersion[a.version])
		}
	}
}
