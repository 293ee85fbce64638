package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// applied is a MakeMove that succeeded.
type applied struct {
	version uint64 // of the player's MoveApplied
	ply     uint32 // before the move
	move    string
}

// race plays one seat of a match through a client until the match reaches
// maxPly or ends: whenever the seat is to move it sends a random legal move
// with the ply it saw. Several racers per seat (on different instances)
// compete; losers get FAILED_PRECONDITION or ABORTED.
func race(ctx context.Context, c matchv1.MatchServiceClient, id string, maxPly uint32, seed uint64, tag string) ([]applied, error) {
	rng := rand.New(rand.NewPCG(seed, 9))
	var out []applied
	for n := 0; ; n++ {
		resp, err := c.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			return out, err
		}
		m := resp.GetMatch()
		if m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ACTIVE || m.GetPly() >= maxPly {
			return out, nil
		}
		lm := m.GetLegalMoves()
		if len(lm) == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		ply := m.GetPly()
		mv := lm[rng.IntN(len(lm))]
		r, err := c.MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: id, Move: mv, ExpectedPly: &ply, ClientMoveId: fmt.Sprintf("%s-%d", tag, n)})
		switch status.Code(err) {
		case codes.OK:
			out = append(out, applied{version: r.GetEvents()[0].GetVersion(), ply: ply, move: r.GetEvents()[0].GetMoveApplied().GetEffects().GetMove()})
		case codes.FailedPrecondition, codes.Aborted:
		default:
			return out, err
		}
	}
}

// collect reads a watch stream to its end and returns its event items.
func collect(ctx context.Context, c matchv1.MatchServiceClient, id string) ([]*matchv1.WatchMatchResponse, error) {
	stream, err := c.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id, FromVersion: 1})
	if err != nil {
		return nil, err
	}
	var out []*matchv1.WatchMatchResponse
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
}

// TestTwoInstancesRacing: two instances on one Redis, two racing clients per
// seat (one per instance) on several matches, watchers on both instances:
// every acknowledged move is in the history exactly once, no two moves were
// applied for one ply, and every watcher sees the same sequence.
func TestTwoInstancesRacing(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		a, b := e.start(nil), e.start(nil)
		const matches, maxPly = 3, 40
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		op := e.client(a.addr, e.token("op", auth.RoleOperator))
		for mi := range matches {
			m := e.create(a.addr, nil)
			id := m.GetMatchId()
			var wg sync.WaitGroup
			// Watchers first, on both instances, from version 1.
			watched := make([][]*matchv1.WatchMatchResponse, 4)
			werrs := make([]error, 4)
			for w := range watched {
				inst := []*instance{a, b}[w%2]
				c := e.client(inst.addr, e.token(fmt.Sprintf("watcher-%d", w), auth.RolePlayer))
				wg.Go(func() { watched[w], werrs[w] = collect(ctx, c, id) })
			}
			var mu sync.Mutex
			var acks []applied
			var rerrs []error
			var racers sync.WaitGroup
			for s, p := range players {
				for i, inst := range []*instance{a, b} {
					c := e.client(inst.addr, e.token(p, auth.RolePlayer))
					racers.Go(func() {
						got, err := race(ctx, c, id, maxPly, uint64(mi*100+s*10+i), fmt.Sprintf("%d-%d", s, i))
						mu.Lock()
						defer mu.Unlock()
						acks = append(acks, got...)
						if err != nil {
							rerrs = append(rerrs, err)
						}
					})
				}
			}
			racers.Wait()
			if len(rerrs) > 0 {
				t.Fatalf("racers: %v", rerrs)
			}
			if _, err := op.AbortMatch(ctx, &matchv1.AbortMatchRequest{MatchId: id, Reason: "test over"}); err != nil && status.Code(err) != codes.FailedPrecondition {
				t.Fatal(err)
			}
			wg.Wait()
			for w, err := range werrs {
				if err != nil {
					t.Fatalf("watcher %d: %v", w, err)
				}
			}
			ref := watched[0]
			for w := 1; w < len(watched); w++ {
				if len(watched[w]) != len(ref) {
					t.Fatalf("watcher %d saw %d items, watcher 0 %d", w, len(watched[w]), len(ref))
				}
				for i := range ref {
					if watched[w][i].GetVersion() != ref[i].GetVersion() ||
						watched[w][i].GetEvent().GetMoveApplied().GetEffects().GetMove() != ref[i].GetEvent().GetMoveApplied().GetEffects().GetMove() {
						t.Fatalf("watcher %d item %d differs", w, i)
					}
				}
			}
			byVersion := map[uint64]string{}
			players := 0
			for i, it := range ref {
				if it.GetVersion() != uint64(i+2) {
					t.Fatalf("item %d has version %d, want %d", i, it.GetVersion(), i+2)
				}
				if ma := it.GetEvent().GetMoveApplied(); ma != nil {
					byVersion[it.GetVersion()] = ma.GetEffects().GetMove()
					if !ma.GetEffects().GetIsZombieMove() {
						players++
					}
				}
			}
			plies := map[uint32]bool{}
			for _, ack := range acks {
				if byVersion[ack.version] != ack.move {
					t.Errorf("acknowledged %s at version %d, history has %q", ack.move, ack.version, byVersion[ack.version])
				}
				if plies[ack.ply] {
					t.Errorf("two moves acknowledged for ply %d", ack.ply)
				}
				plies[ack.ply] = true
			}
			if players != len(acks) {
				t.Errorf("history has %d player moves, %d were acknowledged", players, len(acks))
			}
			if len(acks) < maxPly/2 {
				t.Errorf("only %d moves acknowledged", len(acks))
			}
		}
	})
}
