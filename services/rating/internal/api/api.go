// Package api serves fourkingdoms.rating.v1.RatingService from the rating
// store. Handlers validate the request, read the store and map every error
// to a gRPC status in one place (see toStatus).
package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// Page sizes, as documented in the contract.
const (
	defaultPageSize = 50
	maxPageSize     = 100
	maxBatch        = 1000
)

// Service implements ratingv1.RatingServiceServer.
type Service struct {
	ratingv1.UnimplementedRatingServiceServer
	store    *store.Store
	policy   ladder.Policy
	ruleSets []string
	log      *slog.Logger
}

// New returns the service. ruleSets are the pools that exist; a request for
// another gets NOT_FOUND.
func New(st *store.Store, policy ladder.Policy, ruleSets []string, log *slog.Logger) *Service {
	return &Service{store: st, policy: policy, ruleSets: slices.Clone(ruleSets), log: log}
}

// Register registers the service on s.
func (s *Service) Register(gs grpc.ServiceRegistrar) {
	ratingv1.RegisterRatingServiceServer(gs, s)
}

// GetRating returns one player's rating.
func (s *Service) GetRating(ctx context.Context, req *ratingv1.GetRatingRequest) (*ratingv1.GetRatingResponse, error) {
	if err := s.checkPool(req.GetRuleSet()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if err := checkPlayer("player_id", req.GetPlayerId()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	players, err := s.store.Players(ctx, req.GetRuleSet(), []string{req.GetPlayerId()})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if !players[0].Known {
		// The service knows players only from their rated matches: an
		// unknown id is as likely a typo as a new player (issue 24).
		return nil, s.toStatus(ctx, fmt.Errorf("player %q in pool %s: %w", req.GetPlayerId(), req.GetRuleSet(), errUnknownPlayer))
	}
	r := s.rating(req.GetRuleSet(), players[0])
	// A guest linked to an account reads as the account (store.Players),
	// under the id asked for.
	r.PlayerId = req.GetPlayerId()
	return &ratingv1.GetRatingResponse{Rating: r}, nil
}

// BatchGetRatings returns several players' ratings, in request order.
func (s *Service) BatchGetRatings(ctx context.Context, req *ratingv1.BatchGetRatingsRequest) (*ratingv1.BatchGetRatingsResponse, error) {
	if err := s.checkPool(req.GetRuleSet()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	ids := req.GetPlayerIds()
	if len(ids) == 0 || len(ids) > maxBatch {
		return nil, s.toStatus(ctx, invalid("player_ids", fmt.Sprintf("give 1 to %d player ids, not %d", maxBatch, len(ids))))
	}
	for i, id := range ids {
		if err := checkPlayer(fmt.Sprintf("player_ids[%d]", i), id); err != nil {
			return nil, s.toStatus(ctx, err)
		}
	}
	if n := req.GetRecentMatches(); n > store.MaxRecent {
		return nil, s.toStatus(ctx, invalid("recent_matches", fmt.Sprintf("give 0 to %d, not %d", store.MaxRecent, n)))
	}
	players, err := s.store.Players(ctx, req.GetRuleSet(), ids)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	recent, err := s.store.Recent(ctx, req.GetRuleSet(), players, int(req.GetRecentMatches()))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &ratingv1.BatchGetRatingsResponse{Ratings: make([]*ratingv1.Rating, len(players))}
	for i, p := range players {
		r := s.rating(req.GetRuleSet(), p)
		r.PlayerId = ids[i] // a linked guest reads as its account, under the id asked for
		for _, m := range recent[i] {
			r.RecentMatches = append(r.RecentMatches, &ratingv1.RecentMatch{
				MatchId: m.MatchID, FinishedAt: timestamppb.New(m.FinishedAt), CoPlayerIds: m.CoPlayers,
			})
		}
		resp.Ratings[i] = r
	}
	return resp, nil
}

// GetLeaderboard returns a page of a section of a pool's leaderboard.
func (s *Service) GetLeaderboard(ctx context.Context, req *ratingv1.GetLeaderboardRequest) (*ratingv1.GetLeaderboardResponse, error) {
	pool := req.GetRuleSet()
	if err := s.checkPool(pool); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	size, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	section, sec, kind := ratingv1.LeaderboardSection_LEADERBOARD_SECTION_RANKED, store.Ranked, "lb"
	switch req.GetSection() {
	case ratingv1.LeaderboardSection_LEADERBOARD_SECTION_UNSPECIFIED, ratingv1.LeaderboardSection_LEADERBOARD_SECTION_RANKED:
	case ratingv1.LeaderboardSection_LEADERBOARD_SECTION_PROVISIONAL:
		// Its own token kind: a token of one section is refused by the other.
		section, sec, kind = req.GetSection(), store.Provisional, "lbp"
	default:
		return nil, s.toStatus(ctx, invalid("section", fmt.Sprintf("unknown section %d: use LEADERBOARD_SECTION_RANKED or LEADERBOARD_SECTION_PROVISIONAL", req.GetSection())))
	}
	cursor, err := decodeToken(req.GetPageToken(), kind, pool)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	page, err := s.store.Leaderboard(ctx, pool, sec, cursor, size)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &ratingv1.GetLeaderboardResponse{
		Entries:     make([]*ratingv1.LeaderboardEntry, len(page.Entries)),
		Section:     section,
		SectionSize: uint32(min(page.Size, math.MaxUint32)),
	}
	for i, e := range page.Entries {
		st := e.Player.Standing
		resp.Entries[i] = &ratingv1.LeaderboardEntry{
			Rank:          uint32(e.Rank),
			Player:        &gamev1.Player{PlayerId: e.Player.ID, DisplayName: e.Player.Name, IsBot: e.Player.Bot},
			DisplayRating: int32(e.Display),
			Mu:            st.Rating.Mu,
			Sigma:         st.Rating.Sigma,
			GamesPlayed:   uint32(st.Games),
			// From the standing read just after the section: a player
			// established meanwhile shows 0 until the next page read.
			Provisional:      sec == store.Provisional,
			GamesToEstablish: uint32(s.policy.GamesToEstablish(st)),
		}
	}
	if page.Next != "" {
		resp.NextPageToken = encodeToken(kind, pool, page.Next)
	}
	return resp, nil
}

// GetRatingHistory returns a page of a player's history, newest first.
func (s *Service) GetRatingHistory(ctx context.Context, req *ratingv1.GetRatingHistoryRequest) (*ratingv1.GetRatingHistoryResponse, error) {
	pool := req.GetRuleSet()
	if err := s.checkPool(pool); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if err := checkPlayer("player_id", req.GetPlayerId()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	size, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	scope := pool + "/" + req.GetPlayerId()
	cursor, err := decodeToken(req.GetPageToken(), "h", scope)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	entries, next, err := s.store.History(ctx, pool, req.GetPlayerId(), cursor, size)
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, s.toStatus(ctx, errBadToken)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &ratingv1.GetRatingHistoryResponse{Entries: make([]*ratingv1.RatingHistoryEntry, len(entries))}
	for i, e := range entries {
		resp.Entries[i] = &ratingv1.RatingHistoryEntry{
			MatchId:      e.MatchID,
			FinishedAt:   timestamppb.New(e.FinishedAt),
			Rank:         uint32(e.Place),
			RatingBefore: int32(e.DisplayBefore),
			RatingAfter:  int32(e.DisplayAfter),
			Change:       int32(e.DisplayAfter - e.DisplayBefore),
			MuAfter:      e.Mu,
			SigmaAfter:   e.Sigma,
		}
	}
	if next != "" {
		resp.NextPageToken = encodeToken("h", scope, next)
	}
	return resp, nil
}

func (s *Service) rating(pool string, p store.Player) *ratingv1.Rating {
	r := &ratingv1.Rating{
		PlayerId:         p.ID,
		RuleSet:          pool,
		Mu:               p.Standing.Rating.Mu,
		Sigma:            p.Standing.Rating.Sigma,
		DisplayRating:    int32(ladder.Display(p.Standing.Rating)),
		GamesPlayed:      uint32(p.Standing.Games),
		Provisional:      s.policy.Provisional(p.Standing),
		IsDefault:        !p.Known,
		DisplayName:      p.Name,
		GamesToEstablish: uint32(s.policy.GamesToEstablish(p.Standing)),
	}
	if !p.Standing.UpdatedAt.IsZero() {
		r.UpdatedAt = timestamppb.New(p.Standing.UpdatedAt)
	}
	return r
}

func (s *Service) checkPool(pool string) error {
	if pool == "" {
		return invalid("rule_set", "required")
	}
	if !slices.Contains(s.ruleSets, pool) {
		return fmt.Errorf("rule set %q (known: %s): %w", pool, strings.Join(s.ruleSets, ", "), errUnknownRuleSet)
	}
	return nil
}

func checkPlayer(field, id string) error {
	if err := ladder.CheckPlayerID(id); err != nil {
		return invalid(field, fmt.Sprintf("must be 1 to %d bytes without spaces or control characters", ladder.MaxIDLen))
	}
	return nil
}

func pageSize(n int32) (int, error) {
	switch {
	case n < 0:
		return 0, invalid("page_size", "must not be negative")
	case n == 0:
		return defaultPageSize, nil
	}
	return int(min(n, maxPageSize)), nil
}

// Page tokens are opaque to clients: base64url of "<kind>\x00<scope>\x00<cursor>",
// so that a token of another query (another pool, player or RPC) is refused.
func encodeToken(kind, scope, cursor string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "\x00" + scope + "\x00" + cursor))
}

func decodeToken(token, kind, scope string) (string, error) {
	if token == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", errBadToken
	}
	parts := strings.SplitN(string(raw), "\x00", 3)
	if len(parts) != 3 || parts[0] != kind || parts[1] != scope || parts[2] == "" {
		return "", errBadToken
	}
	return parts[2], nil
}

var (
	errUnknownRuleSet = errors.New("unknown rule set")
	errUnknownPlayer  = errors.New("no rated match in the pool")
	errBadToken       = invalid("page_token", "not a token of this query")
)
