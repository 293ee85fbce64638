package client

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

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
			lis := bufconn.Listen(1 << 20)
			srv := grpc.NewServer()
			matchv1.RegisterMatchServiceServer(srv, fake)
			go srv.Serve(lis)
			defer srv.Stop()
			cc, err := grpc.NewClient("passthrough:///fake", grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			c := &Client{Match: matchv1.NewMatchServiceClient(cc)}
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
