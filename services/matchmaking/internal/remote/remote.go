// Package remote adapts the gRPC clients of the rating and match services to
// the interfaces the matchmaker consumes.
package remote

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/matchmaker"
)

// Ratings asks the rating service.
type Ratings struct {
	Client ratingv1.RatingServiceClient
}

// BatchRatings makes one BatchGetRatings call. Players the service does not
// know come back with the pool's default rating and count as provisional.
// With recentGames > 0 the call also asks for each player's latest rated
// matches (a rating service that predates the field answers without them:
// no anti-teaming).
func (r Ratings) BatchRatings(ctx context.Context, ruleSet string, playerIDs []string, recentGames int) (map[string]matchmaker.Rating, error) {
	req := &ratingv1.BatchGetRatingsRequest{PlayerIds: playerIDs, RuleSet: ruleSet, RecentMatches: uint32(max(recentGames, 0))}
	resp, err := r.Client.BatchGetRatings(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("batch get ratings: %w", err)
	}
	out := make(map[string]matchmaker.Rating, len(resp.GetRatings()))
	for _, rt := range resp.GetRatings() {
		mr := matchmaker.Rating{
			Value:       float64(rt.GetDisplayRating()),
			Provisional: rt.GetProvisional() || rt.GetIsDefault(),
		}
		for _, m := range rt.GetRecentMatches() {
			mr.Recent = append(mr.Recent, matchmaker.Game{MatchID: m.GetMatchId(), Ended: m.GetFinishedAt().AsTime(), CoPlayers: m.GetCoPlayerIds()})
		}
		out[rt.GetPlayerId()] = mr
	}
	return out, nil
}

// Matches creates matches through the match service.
type Matches struct {
	Client matchv1.MatchServiceClient
}

// TimeControl converts a time control to its wire form, with the mode and
// name derived from the durations.
func TimeControl(tc timecontrol.TimeControl) *gamev1.TimeControl {
	mode := gamev1.TimeControlMode_TIME_CONTROL_MODE_INCREMENT
	if tc.Delay > 0 {
		mode = gamev1.TimeControlMode_TIME_CONTROL_MODE_DELAY
	}
	return &gamev1.TimeControl{
		Initial:   durationpb.New(tc.Initial),
		Increment: durationpb.New(tc.Increment),
		Delay:     durationpb.New(tc.Delay),
		Mode:      mode,
		Name:      tc.Name(),
	}
}

// CreateMatch calls MatchService.CreateMatch with the request's players in
// seat order (Red, Blue, Yellow, Green) and returns the seats the match has
// (on a retry, those of the match created the first time).
func (m Matches) CreateMatch(ctx context.Context, req matchmaker.MatchRequest) (matchmaker.Match, error) {
	in := &matchv1.CreateMatchRequest{
		RequestId:   req.RequestID,
		RuleSet:     req.RuleSet,
		TimeControl: TimeControl(req.TimeControl),
		Seed:        &req.Seed,
		Unrated:     req.Unrated,
	}
	for i, p := range req.Players {
		in.Players = append(in.Players, &gamev1.SeatPlayer{
			Seat:   gamev1.Seat(i + 1),
			Player: &gamev1.Player{PlayerId: p.ID, DisplayName: p.DisplayName, IsBot: p.Bot},
		})
	}
	resp, err := m.Client.CreateMatch(ctx, in)
	if err != nil {
		return matchmaker.Match{}, fmt.Errorf("create match %s: %w", req.RequestID, err)
	}
	match := resp.GetMatch()
	out := matchmaker.Match{ID: match.GetMatchId(), Seats: make(map[string]int, 4)}
	for _, s := range match.GetSeats() {
		out.Seats[s.GetPlayer().GetPlayerId()] = int(s.GetSeat())
	}
	if out.ID == "" {
		return matchmaker.Match{}, fmt.Errorf("create match %s: the answer has no match id", req.RequestID)
	}
	return out, nil
}

// ErrMatchNotFound reports that the match service has no such match.
var ErrMatchNotFound = errors.New("match not found")

// Get reads a match as the service sees it (every seat, no delay).
func (m Matches) Get(ctx context.Context, id string) (*matchv1.Match, error) {
	resp, err := m.Client.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
	if status.Code(err) == codes.NotFound {
		return nil, fmt.Errorf("get match %s: %w", id, ErrMatchNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get match %s: %w", id, err)
	}
	return resp.GetMatch(), nil
}

// Create calls MatchService.CreateMatch with req as it is and returns the
// match (on a retry of the request id, the one created the first time).
func (m Matches) Create(ctx context.Context, req *matchv1.CreateMatchRequest) (*matchv1.Match, error) {
	resp, err := m.Client.CreateMatch(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("create match %s: %w", req.GetRequestId(), err)
	}
	if resp.GetMatch().GetMatchId() == "" {
		return nil, fmt.Errorf("create match %s: the answer has no match id", req.GetRequestId())
	}
	return resp.GetMatch(), nil
}
