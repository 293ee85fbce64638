package client

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeMatches serves a scripted WatchMatch: the history is a snapshot at
// version 1 then events 2..n; each stream sends the items after the
// requested version and drops (UNAVAILABLE) after dropAfter items, so a
// client must reconnect to see everything.
type fakeMatches struct {
	matchv1.UnimplementedMatchServiceServer
	events    []*eventsv1.MatchEvent // versions 2..
	dropAfter int
	// premoves are sent after the event of their version.
	premoves map[uint64]*matchv1.PremoveQueue

	mu    sync.Mutex
	froms []uint64 // from_version of every WatchMatch call
}

func (f *fakeMatches) WatchMatch(req *matchv1.WatchMatchRequest, st grpc.ServerStreamingServer[matchv1.WatchMatchResponse]) error {
	f.mu.Lock()
	f.froms = append(f.froms, req.GetFromVersion())
	f.mu.Unlock()
	sent := 0
	if req.GetFromVersion() == 0 {
		snap := &matchv1.Match{
			MatchId: req.GetMatchId(), Status: matchv1.MatchStatus_MATCH_STATUS_ACTIVE, Version: 1,
			ToMove: gamev1.Seat_SEAT_RED,
		}
		for s := gamev1.Seat_SEAT_RED; s <= gamev1.Seat_SEAT_GREEN; s++ {
			snap.Seats = append(snap.Seats, &matchv1.SeatState{Seat: s, Status: gamev1.SeatStatus_SEAT_STATUS_LIVE})
		}
		if err := st.Send(&matchv1.WatchMatchResponse{Version: 1, Item: &matchv1.WatchMatchResponse_Snapshot{Snapshot: snap}}); err != nil {
			return err
		}
		sent++
	}
	for _, ev := range f.events {
		if ev.GetVersion() <= req.GetFromVersion() {
			continue
		}
		if sent == f.dropAfter {
			return status.Error(codes.Unavailable, "dropped")
		}
		if err := st.Send(&matchv1.WatchMatchResponse{Version: ev.GetVersion(), Item: &matchv1.WatchMatchResponse_Event{Event: ev}}); err != nil {
			return err
		}
		sent++
		if q := f.premoves[ev.GetVersion()]; q != nil {
			if err := st.Send(&matchv1.WatchMatchResponse{Version: ev.GetVersion(), Item: &matchv1.WatchMatchResponse_Premoves{Premoves: q}}); err != nil {
				return err
			}
		}
	}
	return nil
}

func moveEvent(v uint64, seat, next gamev1.Seat, text string) *eventsv1.MatchEvent {
	return &eventsv1.MatchEvent{Version: v, Ply: uint32(v - 1), Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{
		Effects: &gamev1.MoveEffects{Move: text, Seat: seat},
		ToMove:  next,
		Points:  []*gamev1.SeatPoints{{Seat: seat, Points: int32(v)}},
	}}}
}

func TestFollowResumesFromTheLastVersionAfterADrop(t *testing.T) {
	events := []*eventsv1.MatchEvent{
		moveEvent(2, gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, "h2-h3"),
		moveEvent(3, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, "m8-l8"),
		{Version: 4, Ply: 2, Event: &eventsv1.MatchEvent_PlayerResigned{PlayerResigned: &eventsv1.PlayerResigned{Seat: gamev1.Seat_SEAT_GREEN, FrozenPoints: 0}}},
		moveEvent(5, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN, "h13-h12"),
		{Version: 6, Ply: 3, Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{Result: &gamev1.Result{
			Ranking:     []gamev1.Seat{gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_GREEN},
			Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING,
		}}}},
	}
	fake := &fakeMatches{events: events, dropAfter: 2}
	c := fakeClient(t, fake)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var versions []uint64
	final, err := c.Follow(ctx, "m1", FollowOptions{}, func(u Update) error {
		versions = append(versions, u.Match.GetVersion())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{1, 2, 3, 4, 5, 6}
	if len(versions) != len(want) {
		t.Fatalf("updates at versions %v, want %v (each exactly once)", versions, want)
	}
	for i := range want {
		if versions[i] != want[i] {
			t.Fatalf("updates at versions %v, want %v", versions, want)
		}
	}
	fake.mu.Lock()
	froms := fake.froms
	fake.mu.Unlock()
	if len(froms) != 3 || froms[0] != 0 || froms[1] != 2 || froms[2] != 4 {
		t.Errorf("WatchMatch from_version per call = %v, want [0 2 4]", froms)
	}
	if !Over(final) || final.GetResult().GetRanking()[0] != gamev1.Seat_SEAT_YELLOW {
		t.Errorf("final state %v, want finished with Yellow first", final)
	}
	green := final.GetSeats()[3]
	if green.GetStatus() != gamev1.SeatStatus_SEAT_STATUS_ZOMBIE || green.GetExitReason() != gamev1.ExitReason_EXIT_REASON_RESIGNED {
		t.Errorf("Green = %v, want a zombie that resigned", green)
	}
	if got := final.GetLastMove().GetMove(); got != "h13-h12" {
		t.Errorf("last move %q, want h13-h12", got)
	}
}

// TestFollowDeliversPremoveQueues: a premove item reaches the callback as
// such, at the version of the event before it, and changes nothing else.
func TestFollowDeliversPremoveQueues(t *testing.T) {
	q := &matchv1.PremoveQueue{Seat: gamev1.Seat_SEAT_BLUE, Moves: []string{"m7-l7"}, Change: matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED, Version: 3, Move: "m8-l8"}
	fake := &fakeMatches{dropAfter: 100, premoves: map[uint64]*matchv1.PremoveQueue{3: q}, events: []*eventsv1.MatchEvent{
		moveEvent(2, gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, "h2-h3"),
		moveEvent(3, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, "m8-l8"),
		{Version: 4, Ply: 2, Event: &eventsv1.MatchEvent_MatchAborted{MatchAborted: &eventsv1.MatchAborted{Reason: "test"}}},
	}}
	c := fakeClient(t, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	if _, err := c.Follow(ctx, "m1", FollowOptions{}, func(u Update) error {
		kind := "snapshot"
		switch {
		case u.Premoves != nil:
			kind = "premoves " + u.Premoves.GetMoves()[0]
		case u.Event != nil:
			kind = "event"
		}
		got = append(got, fmt.Sprintf("%d %s", u.Match.GetVersion(), kind))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"1 snapshot", "2 event", "3 event", "3 premoves m7-l7", "4 event"}
	if !slices.Equal(got, want) {
		t.Errorf("updates %v, want %v", got, want)
	}
}

func TestFollowStopsOnPermanentErrors(t *testing.T) {
	c := fakeClient(t, &matchv1.UnimplementedMatchServiceServer{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Follow(ctx, "m1", FollowOptions{}, func(Update) error { return nil })
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("Follow = %v, want the Unimplemented error at once", err)
	}
}

// fakeClient serves srv over an in-memory connection for the test and
// returns a Client of it.
func fakeClient(t *testing.T, srv matchv1.MatchServiceServer) *Client {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	matchv1.RegisterMatchServiceServer(gs, srv)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient("passthrough:///fake", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return &Client{Match: matchv1.NewMatchServiceClient(cc)}
}
