package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// TestRematchEndToEndRealMatchService: four guests are matched by the
// queue on the real match service, the match ends (three resign), all
// four accept a rematch, and the real match service runs the new match
// with the same players, seats rotated by one.
func TestRematchEndToEndRealMatchService(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("real")
	if err != nil {
		t.Fatal(err)
	}
	ratingAddr, _, _ := startBackends(t, keys)
	env := baseEnv(t, keys, ratingAddr)
	_, public := authtest.Files(t, keys)
	matchAddr := startRealMatchService(t, public)
	env["MATCH_ADDR"] = matchAddr
	_, redisAddr := redistest.Standalone(t)
	env["REDIS_ADDR"] = redisAddr
	env["MM_REMATCH_POLL"] = "20ms"
	conn := startService(t, env)
	authc := authv1.NewAuthServiceClient(conn)
	mm := matchmakingv1.NewMatchmakingServiceClient(conn)
	mconn, err := grpc.NewClient(matchAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer mconn.Close()
	matches := matchv1.NewMatchServiceClient(mconn)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	tokens := map[string]grpc.CallOption{}
	var tickets []string
	var ids []string
	for i := range 4 {
		login, err := authc.GuestLogin(ctx, &authv1.GuestLoginRequest{DisplayName: fmt.Sprintf("again %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		tok := grpc.PerRPCCredentials(auth.BearerToken(login.GetToken(), true))
		enq, err := mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/1|15 d"}}, tok)
		if err != nil {
			t.Fatal(err)
		}
		tokens[login.GetPlayerId()] = tok
		ids = append(ids, login.GetPlayerId())
		tickets = append(tickets, enq.GetTicket().GetTicketId())
	}
	var matchID string
	for i, id := range ids {
		stream, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: tickets[i]}, tokens[id])
		if err != nil {
			t.Fatal(err)
		}
		for {
			up, err := stream.Recv()
			if err != nil {
				t.Fatalf("watch %s: %v", id, err)
			}
			if m := up.GetMatched(); m != nil {
				matchID = m.GetMatchId()
				break
			}
		}
	}
	old, err := matches.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: matchID}, tokens[ids[0]])
	if err != nil {
		t.Fatal(err)
	}
	seatOf := map[string]gamev1.Seat{}
	for _, ss := range old.GetMatch().GetSeats() {
		seatOf[ss.GetPlayer().GetPlayerId()] = ss.GetSeat()
	}
	// Offering while the match runs is refused.
	if _, err := mm.OfferRematch(ctx, &matchmakingv1.OfferRematchRequest{MatchId: matchID}, tokens[ids[0]]); err == nil {
		t.Fatal("OfferRematch of a running match succeeded")
	}
	// Everyone but the first player resigns: the match is over.
	for _, id := range ids[1:] {
		if _, err := matches.Resign(ctx, &matchv1.ResignRequest{MatchId: matchID}, tokens[id]); err != nil {
			t.Fatalf("%s resigns: %v", id, err)
		}
	}
	first, err := mm.OfferRematch(ctx, &matchmakingv1.OfferRematchRequest{MatchId: matchID}, tokens[ids[0]])
	if err != nil {
		t.Fatal(err)
	}
	if first.GetRematch().GetState() != matchmakingv1.RematchState_REMATCH_STATE_OFFERED {
		t.Fatalf("first offer = %v", first)
	}
	// A watcher follows the offer to the new match; the stream's end is
	// checked in the goroutine, before it reports.
	watched := make(chan string, 1)
	go func() {
		defer close(watched)
		s, err := mm.WatchRematch(ctx, &matchmakingv1.WatchRematchRequest{MatchId: matchID}, tokens[ids[3]])
		if err != nil {
			t.Errorf("WatchRematch: %v", err)
			return
		}
		var last *matchmakingv1.Rematch
		for {
			resp, err := s.Recv()
			if errors.Is(err, io.EOF) {
				watched <- last.GetNewMatchId()
				return
			}
			if err != nil {
				t.Errorf("WatchRematch ended with %v", err)
				return
			}
			last = resp.GetRematch()
		}
	}()
	var started *matchmakingv1.Rematch
	for _, id := range ids[1:] {
		r, err := mm.OfferRematch(ctx, &matchmakingv1.OfferRematchRequest{MatchId: matchID}, tokens[id])
		if err != nil {
			t.Fatalf("%s accepts: %v", id, err)
		}
		started = r.GetRematch()
	}
	if started.GetState() != matchmakingv1.RematchState_REMATCH_STATE_STARTED || started.GetNewMatchId() == "" {
		t.Fatalf("after every accept: %v", started)
	}
	if w := <-watched; w != started.GetNewMatchId() {
		t.Errorf("the watcher saw new match %q, the offer says %q", w, started.GetNewMatchId())
	}
	nm, err := matches.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: started.GetNewMatchId()}, tokens[ids[0]])
	if err != nil {
		t.Fatalf("GetMatch(new match) on the real match service: %v", err)
	}
	m := nm.GetMatch()
	if m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ACTIVE || m.GetTimeControl().GetName() != "1|15 d" || m.GetRuleSet() != old.GetMatch().GetRuleSet() {
		t.Errorf("new match = %v", m)
	}
	for _, ss := range m.GetSeats() {
		id := ss.GetPlayer().GetPlayerId()
		if want := gamev1.Seat(int(seatOf[id])%4 + 1); ss.GetSeat() != want {
			t.Errorf("%s plays %v in the rematch, was %v: want %v", id, ss.GetSeat(), seatOf[id], want)
		}
	}
}

// TestRematchOnTwoInstances: the last two players accept at once, each
// through another matchmaker instance (twice each): one rematch is
// created, and both instances name it.
func TestRematchOnTwoInstances(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("two")
	if err != nil {
		t.Fatal(err)
	}
	backend, matches, _ := startBackends(t, keys)
	env := baseEnv(t, keys, backend)
	_, env["REDIS_ADDR"] = redistest.Standalone(t)
	conns := []*grpc.ClientConn{startService(t, env), startService(t, env)}
	old := &matchv1.Match{MatchId: "finished-1", Status: matchv1.MatchStatus_MATCH_STATUS_FINISHED, RuleSet: "fourkingdoms",
		TimeControl: &gamev1.TimeControl{Name: "5+5"}}
	ids := []string{"p1", "p2", "p3", "p4"}
	for i, id := range ids {
		old.Seats = append(old.Seats, &matchv1.SeatState{Seat: gamev1.Seat(i + 1), Player: &gamev1.Player{PlayerId: id}})
	}
	matches.mu.Lock()
	matches.byID[old.GetMatchId()] = old
	matches.mu.Unlock()
	as := func(id string) grpc.CallOption {
		tok, _, err := keys.Sign(auth.Identity{Subject: id, Role: auth.RolePlayer, DisplayName: id}, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return grpc.PerRPCCredentials(auth.BearerToken(tok, true))
	}
	offer := func(conn *grpc.ClientConn, id string) (*matchmakingv1.Rematch, error) {
		r, err := matchmakingv1.NewMatchmakingServiceClient(conn).OfferRematch(t.Context(), &matchmakingv1.OfferRematchRequest{MatchId: old.GetMatchId()}, as(id))
		return r.GetRematch(), err
	}
	for _, id := range ids[:2] {
		if _, err := offer(conns[0], id); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := offer(conns[i%2], ids[2+i%2])
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var news []string
	for _, conn := range conns {
		r, err := offer(conn, "p1")
		if err != nil || r.GetState() != matchmakingv1.RematchState_REMATCH_STATE_STARTED {
			t.Fatalf("offer after the start = %v, %v", r, err)
		}
		news = append(news, r.GetNewMatchId())
	}
	matches.mu.Lock()
	n := len(matches.byID)
	matches.mu.Unlock()
	if n != 2 || news[0] != news[1] {
		t.Fatalf("%d matches known (want the old one and one rematch); instances name %v", n, news)
	}
}
