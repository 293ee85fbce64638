package remote

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/matchmaker"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

func TestTimeControl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tc   timecontrol.TimeControl
		mode gamev1.TimeControlMode
		name string
	}{
		{timecontrol.TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}, gamev1.TimeControlMode_TIME_CONTROL_MODE_INCREMENT, "5+5"},
		{timecontrol.TimeControl{Initial: time.Minute, Delay: 15 * time.Second}, gamev1.TimeControlMode_TIME_CONTROL_MODE_DELAY, "1|15 d"},
		{timecontrol.TimeControl{Initial: time.Minute}, gamev1.TimeControlMode_TIME_CONTROL_MODE_INCREMENT, "1+0"},
	}
	for _, tt := range tests {
		got := TimeControl(tt.tc)
		if got.GetMode() != tt.mode || got.GetName() != tt.name || got.GetInitial().AsDuration() != tt.tc.Initial ||
			got.GetIncrement().AsDuration() != tt.tc.Increment || got.GetDelay().AsDuration() != tt.tc.Delay {
			t.Errorf("TimeControl(%+v) = %v", tt.tc, got)
		}
	}
}

// matchClient answers CreateMatch with the requested seats reversed, as a
// match created earlier with other seats would.
type matchClient struct {
	matchv1.MatchServiceClient
	got *matchv1.CreateMatchRequest
	err error
}

func (c *matchClient) CreateMatch(_ context.Context, in *matchv1.CreateMatchRequest, _ ...grpc.CallOption) (*matchv1.CreateMatchResponse, error) {
	c.got = in
	if c.err != nil {
		return nil, c.err
	}
	m := &matchv1.Match{MatchId: "m1"}
	for i, sp := range in.GetPlayers() {
		m.Seats = append(m.Seats, &matchv1.SeatState{Seat: gamev1.Seat(4 - i), Player: sp.GetPlayer()})
	}
	return &matchv1.CreateMatchResponse{Match: m}, nil
}

func TestCreateMatch(t *testing.T) {
	t.Parallel()
	c := &matchClient{}
	req := matchmaker.MatchRequest{
		RequestID: "mm-1", RuleSet: "fourkingdoms", Seed: 42,
		TimeControl: timecontrol.TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second},
		Players:     [4]store.Player{{ID: "a"}, {ID: "b", Bot: true}, {ID: "c"}, {ID: "d", DisplayName: "Dee"}},
	}
	got, err := Matches{Client: c}.CreateMatch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	in := c.got
	if in.GetRequestId() != "mm-1" || in.GetSeed() != 42 || in.GetTimeControl().GetName() != "5+5" || len(in.GetPlayers()) != 4 ||
		in.GetPlayers()[0].GetSeat() != gamev1.Seat_SEAT_RED || in.GetPlayers()[3].GetSeat() != gamev1.Seat_SEAT_GREEN ||
		!in.GetPlayers()[1].GetPlayer().GetIsBot() || in.GetPlayers()[3].GetPlayer().GetDisplayName() != "Dee" {
		t.Errorf("request = %v", in)
	}
	// The seats come from the answer, not from the request.
	if got.ID != "m1" || got.Seats["a"] != 4 || got.Seats["d"] != 1 {
		t.Errorf("match = %+v", got)
	}
	c.err = errors.New("down")
	if _, err := (Matches{Client: c}).CreateMatch(context.Background(), req); err == nil {
		t.Error("an error from the match service was lost")
	}
}

type ratingClient struct {
	ratingv1.RatingServiceClient
	got *ratingv1.BatchGetRatingsRequest
}

var finished = time.UnixMilli(1764000000123).UTC()

func (c *ratingClient) BatchGetRatings(_ context.Context, in *ratingv1.BatchGetRatingsRequest, _ ...grpc.CallOption) (*ratingv1.BatchGetRatingsResponse, error) {
	c.got = in
	return &ratingv1.BatchGetRatingsResponse{Ratings: []*ratingv1.Rating{
		{PlayerId: "known", DisplayRating: 1710, RecentMatches: []*ratingv1.RecentMatch{
			{MatchId: "m2", FinishedAt: timestamppb.New(finished), CoPlayerIds: []string{"a", "b", "c"}},
			{MatchId: "m1", FinishedAt: timestamppb.New(finished.Add(-time.Hour)), CoPlayerIds: []string{"a", "d", "e"}},
		}},
		{PlayerId: "new", DisplayRating: 1500, IsDefault: true},
		{PlayerId: "settling", DisplayRating: 1420, Provisional: true},
	}}, nil
}

func TestBatchRatings(t *testing.T) {
	t.Parallel()
	c := &ratingClient{}
	got, err := Ratings{Client: c}.BatchRatings(context.Background(), "fourkingdoms", []string{"known", "new", "settling"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if c.got.GetRecentMatches() != 3 || c.got.GetRuleSet() != "fourkingdoms" {
		t.Errorf("request = %v, want 3 recent matches in fourkingdoms", c.got)
	}
	want := map[string]matchmaker.Rating{
		"known": {Value: 1710, Recent: []matchmaker.Game{
			{MatchID: "m2", Ended: finished, CoPlayers: []string{"a", "b", "c"}},
			{MatchID: "m1", Ended: finished.Add(-time.Hour), CoPlayers: []string{"a", "d", "e"}},
		}},
		"new": {Value: 1500, Provisional: true}, "settling": {Value: 1420, Provisional: true},
	}
	for id, w := range want {
		g := got[id]
		if g.Value != w.Value || g.Provisional != w.Provisional || fmt.Sprint(g.Recent) != fmt.Sprint(w.Recent) {
			t.Errorf("%s = %+v, want %+v", id, g, w)
		}
	}
}
