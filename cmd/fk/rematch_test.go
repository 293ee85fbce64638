package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// fakeRematch serves an offer that nobody made until the player offers,
// which every other human has accepted already: the rematch starts.
type fakeRematch struct {
	matchmakingv1.UnimplementedMatchmakingServiceServer
	matchv1.UnimplementedMatchServiceServer
	mu      sync.Mutex
	offered chan struct{}
}

func (f *fakeRematch) OfferRematch(context.Context, *matchmakingv1.OfferRematchRequest) (*matchmakingv1.OfferRematchResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.offered:
	default:
		close(f.offered)
	}
	return &matchmakingv1.OfferRematchResponse{}, nil
}

func (f *fakeRematch) WatchRematch(req *matchmakingv1.WatchRematchRequest, s matchmakingv1.MatchmakingService_WatchRematchServer) error {
	select {
	case <-f.offered:
	default:
		return status.Error(codes.NotFound, "nobody offered")
	}
	humans := []string{"me", "b", "c"}
	for _, r := range []*matchmakingv1.Rematch{
		{MatchId: req.GetMatchId(), State: matchmakingv1.RematchState_REMATCH_STATE_OFFERED, PlayerIds: humans, AcceptedPlayerIds: humans},
		{MatchId: req.GetMatchId(), State: matchmakingv1.RematchState_REMATCH_STATE_STARTED, PlayerIds: humans, AcceptedPlayerIds: humans, NewMatchId: "new"},
	} {
		if err := s.Send(&matchmakingv1.WatchRematchResponse{Rematch: r}); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeRematch) GetMatch(_ context.Context, req *matchv1.GetMatchRequest) (*matchv1.GetMatchResponse, error) {
	m := &matchv1.Match{MatchId: req.GetMatchId()}
	for i, p := range []string{"c", "me", "b", "bot"} {
		m.Seats = append(m.Seats, &matchv1.SeatState{Seat: gamev1.Seat(i + 1), Player: &gamev1.Player{PlayerId: p}})
	}
	return &matchv1.GetMatchResponse{Match: m}, nil
}

func TestRematchPromptFollowsIntoTheNewMatch(t *testing.T) {
	t.Parallel()
	f := &fakeRematch{offered: make(chan struct{})}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	matchmakingv1.RegisterMatchmakingServiceServer(gs, f)
	matchv1.RegisterMatchServiceServer(gs, f)
	go gs.Serve(lis)
	defer gs.Stop()
	cc, err := grpc.NewClient("passthrough:///fake", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := &client.Client{Matchmaking: matchmakingv1.NewMatchmakingServiceClient(cc), Match: matchv1.NewMatchServiceClient(cc)}
	var out bytes.Buffer
	a := &app{stdout: &out}
	lines := make(chan string, 1)
	lines <- "rematch"
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	found, ok := a.rematch(ctx, c, "me", client.Found{MatchID: "old", Seat: gamev1.Seat_SEAT_RED}, lines)
	if !ok || found.MatchID != "new" || found.Seat != gamev1.Seat_SEAT_BLUE {
		t.Fatalf("rematch = %+v %v, want match new as Blue\n%s", found, ok, out.String())
	}
	if !strings.Contains(out.String(), "accepted by everyone") {
		t.Errorf("output does not say the rematch started:\n%s", out.String())
	}
}

func TestRematchPromptEndsWithStdin(t *testing.T) {
	t.Parallel()
	lines := make(chan string)
	close(lines)
	var out bytes.Buffer
	a := &app{stdout: &out}
	// No server at all: the watcher keeps failing and the closed input
	// ends the prompt (which returns only once its watcher ended).
	cc, err := grpc.NewClient("passthrough:///nowhere", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return nil, net.ErrClosed }))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c := &client.Client{Matchmaking: matchmakingv1.NewMatchmakingServiceClient(cc)}
	if _, ok := a.rematch(t.Context(), c, "me", client.Found{MatchID: "old"}, lines); ok {
		t.Fatal("rematch after the end of input")
	}
}

func TestRematchLine(t *testing.T) {
	t.Parallel()
	humans := []string{"me", "b"}
	for _, c := range []struct {
		r    *matchmakingv1.Rematch
		want string
	}{
		{&matchmakingv1.Rematch{State: matchmakingv1.RematchState_REMATCH_STATE_OFFERED, PlayerIds: humans, AcceptedPlayerIds: []string{"b"}},
			`rematch: 1 of 2 accepted, waiting for me — type "rematch" to accept`},
		{&matchmakingv1.Rematch{State: matchmakingv1.RematchState_REMATCH_STATE_OFFERED, PlayerIds: humans, AcceptedPlayerIds: []string{"me"}},
			"rematch: 1 of 2 accepted, waiting for b"},
		{&matchmakingv1.Rematch{State: matchmakingv1.RematchState_REMATCH_STATE_DECLINED, DeclinedBy: "b"}, "rematch declined by b"},
		{&matchmakingv1.Rematch{State: matchmakingv1.RematchState_REMATCH_STATE_EXPIRED}, "rematch offer expired"},
		{&matchmakingv1.Rematch{State: matchmakingv1.RematchState_REMATCH_STATE_STARTED, NewMatchId: "m2"}, "rematch accepted by everyone: match m2"},
	} {
		if got := rematchLine(c.r, "me"); got != c.want {
			t.Errorf("rematchLine(%v) = %q, want %q", c.r, got, c.want)
		}
	}
}
