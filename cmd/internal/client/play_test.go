package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// fakeResign offers the caller a move and answers Resign with the scripted
// errors first (nil entries are successes), then OK.
type fakeResign struct {
	matchv1.UnimplementedMatchServiceServer
	errs []error

	mu    sync.Mutex
	calls int
}

func (f *fakeResign) GetMatch(context.Context, *matchv1.GetMatchRequest) (*matchv1.GetMatchResponse, error) {
	return &matchv1.GetMatchResponse{Match: &matchv1.Match{MatchId: "m1", LegalMoves: []string{"d2-d3"}}}, nil
}

func (f *fakeResign) Resign(context.Context, *matchv1.ResignRequest) (*matchv1.ResignResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= len(f.errs) {
		return nil, f.errs[f.calls-1]
	}
	return &matchv1.ResignResponse{}, nil
}

func TestTurnResign(t *testing.T) {
	limited := status.Error(codes.ResourceExhausted, "rate limit exceeded: retry after 7ms")
	for _, tc := range []struct {
		name      string
		errs      []error
		wantActed bool
		wantErr   codes.Code
		wantCalls int
	}{
		{"accepted at once", nil, true, codes.OK, 1},
		{"rate limited twice, then accepted", []error{limited, limited}, true, codes.OK, 3},
		{"unreachable, then already resigned", []error{status.Error(codes.Unavailable, "down"), status.Error(codes.FailedPrecondition, "seat not live")}, true, codes.OK, 2},
		{"refused for good", []error{status.Error(codes.PermissionDenied, "not your seat")}, false, codes.PermissionDenied, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeResign{errs: tc.errs}
			c := fakeClient(t, fake)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			acted, err := c.Turn(ctx, "m1", func(context.Context, *matchv1.Match) (string, error) { return "", ErrResign })
			if acted != tc.wantActed || status.Code(err) != tc.wantErr {
				t.Fatalf("Turn = %v, %v; want acted %v, code %v", acted, err, tc.wantActed, tc.wantErr)
			}
			if fake.calls != tc.wantCalls {
				t.Fatalf("Resign called %d times, want %d", fake.calls, tc.wantCalls)
			}
		})
	}
}

// fakeMove offers a move and records MakeMove requests, failing the first
// with UNAVAILABLE.
type fakeMove struct {
	matchv1.UnimplementedMatchServiceServer
	mu   sync.Mutex
	reqs []*matchv1.MakeMoveRequest
}

func (f *fakeMove) GetMatch(context.Context, *matchv1.GetMatchRequest) (*matchv1.GetMatchResponse, error) {
	return &matchv1.GetMatchResponse{Match: &matchv1.Match{MatchId: "m1", LegalMoves: []string{"d2-d3"}}}, nil
}

func (f *fakeMove) MakeMove(_ context.Context, r *matchv1.MakeMoveRequest) (*matchv1.MakeMoveResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
	if len(f.reqs) == 1 {
		return nil, status.Error(codes.Unavailable, "down")
	}
	return &matchv1.MakeMoveResponse{}, nil
}

// TestTurnSinceClaimsThinkTime: a move claims the time since the turn was
// seen as its think time, the same on a retry; Turn claims none.
func TestTurnSinceClaimsThinkTime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ago      time.Duration // 0: Turn
		wantSome bool
	}{{"turn seen a second ago", time.Second, true}, {"no turn start known", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeMove{}
			c := fakeClient(t, fake)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			choose := func(context.Context, *matchv1.Match) (string, error) { return "d2-d3", nil }
			var acted bool
			var err error
			if tc.ago == 0 {
				acted, err = c.Turn(ctx, "m1", choose)
			} else {
				acted, err = c.TurnSince(ctx, "m1", choose, time.Now().Add(-tc.ago))
			}
			if !acted || err != nil {
				t.Fatalf("acted %v, %v", acted, err)
			}
			if len(fake.reqs) != 2 {
				t.Fatalf("%d MakeMove calls, want 2", len(fake.reqs))
			}
			first, retry := fake.reqs[0].GetClientThinkTime(), fake.reqs[1].GetClientThinkTime()
			if (first != nil) != tc.wantSome || (tc.wantSome && first.AsDuration() < tc.ago) {
				t.Fatalf("claimed think time %v, want at least %v (none if 0)", first, tc.ago)
			}
			if first.AsDuration() != retry.AsDuration() {
				t.Errorf("retry claims %v, the first send %v", retry.AsDuration(), first.AsDuration())
			}
		})
	}
}
