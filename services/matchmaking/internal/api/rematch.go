package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/rematch"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/remote"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// Matches is what the rematch RPCs need of the match service
// (remote.Matches): read a finished match and create its rematch, as the
// matchmaking service.
type Matches interface {
	Get(ctx context.Context, id string) (*matchv1.Match, error)
	Create(ctx context.Context, req *matchv1.CreateMatchRequest) (*matchv1.Match, error)
}

// The ErrorInfo reasons of the rematch RPCs (docs/api.md lists them).
const (
	reasonMatchNotFound   = "MATCH_NOT_FOUND"
	reasonNotAPlayer      = "NOT_A_PLAYER"
	reasonNotFinished     = "MATCH_NOT_FINISHED"
	reasonDeclined        = "REMATCH_DECLINED"
	reasonExpired         = "REMATCH_EXPIRED"
	reasonStarted         = "REMATCH_STARTED"
	reasonAlreadySeated   = "ALREADY_SEATED"
	reasonRematchNotFound = "REMATCH_NOT_FOUND"
	reasonUnimplemented   = "UNIMPLEMENTED"
)

// maxMatchIDLen bounds a match id in a request (the match service's ids
// have 22 characters).
const maxMatchIDLen = 64

// startTimeout bounds the creation of a rematch, which goes on when the
// caller who completed the offer goes away (the offer waits in A
// otherwise until someone drives it again).
const startTimeout = 10 * time.Second

// restartAfter is how long a WatchRematch stream lets an offer stay in A
// (every human accepted) before it creates the match itself: the instance
// that took the last accept normally does it within milliseconds, but may
// have died doing it.
const restartAfter = 2 * time.Second

// rematchable reads the finished match named by req for the caller and
// checks that they may offer or decline its rematch: it returns the match
// and its humans, in seat order.
func (s *Matchmaking) rematchable(ctx context.Context, caller, matchID string) (*matchv1.Match, []string, error) {
	if matchID == "" || len(matchID) > maxMatchIDLen {
		return nil, nil, invalidArgument("match_id", fmt.Sprintf("give the finished match's id (1 to %d bytes)", maxMatchIDLen))
	}
	if s.set.Matches == nil || s.set.Rematches == nil {
		return nil, nil, rpcerr.Matchmaking.Error(codes.Unimplemented, reasonUnimplemented, "rematches are not configured on this instance", nil)
	}
	m, err := s.set.Matches.Get(ctx, matchID)
	if errors.Is(err, remote.ErrMatchNotFound) {
		return nil, nil, rpcerr.Matchmaking.Error(codes.NotFound, reasonMatchNotFound, fmt.Sprintf("no match %q", matchID), nil)
	}
	if err != nil {
		return nil, nil, s.matchServiceStatus(ctx, err)
	}
	var humans []string
	player := false
	for _, ss := range m.GetSeats() {
		p := ss.GetPlayer()
		// A bot accepts implicitly: its own call does not count.
		player = player || (p.GetPlayerId() == caller && !p.GetIsBot())
		if !p.GetIsBot() {
			humans = append(humans, p.GetPlayerId())
		}
	}
	if !player {
		return nil, nil, rpcerr.Matchmaking.Error(codes.PermissionDenied, reasonNotAPlayer, "only the human players of a match may offer, accept, decline or watch its rematch", nil)
	}
	if m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_FINISHED {
		msg := "the match is still being played: a rematch can be offered once it finished"
		if m.GetStatus() == matchv1.MatchStatus_MATCH_STATUS_ABORTED {
			msg = "the match was aborted, not finished: it has no rematch"
		}
		return nil, nil, rpcerr.Matchmaking.Error(codes.FailedPrecondition, reasonNotFinished, msg, nil)
	}
	return m, humans, nil
}

// matchServiceStatus is the refusal of a call the match service failed.
func (s *Matchmaking) matchServiceStatus(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	s.log.WarnContext(ctx, "match service call failed", "err", err)
	return rpcerr.Matchmaking.Error(codes.Unavailable, reasonNoMatches, "the match service is unreachable: retry with backoff", nil)
}

// rematchRefusal is the refusal of a change to an offer in a final state.
func rematchRefusal(o rematch.Offer) error {
	switch o.State {
	case rematch.Declined:
		return rpcerr.Matchmaking.Error(codes.FailedPrecondition, reasonDeclined, fmt.Sprintf("the rematch was declined by %s", o.DeclinedBy), nil)
	case rematch.Expired:
		return rpcerr.Matchmaking.Error(codes.FailedPrecondition, reasonExpired, "the rematch window has passed", nil)
	default:
		return rpcerr.Matchmaking.Error(codes.FailedPrecondition, reasonStarted, "every player accepted: the rematch starts (WatchRematch names it)", nil)
	}
}

// OfferRematch implements MatchmakingService.OfferRematch.
func (s *Matchmaking) OfferRematch(ctx context.Context, req *matchmakingv1.OfferRematchRequest) (*matchmakingv1.OfferRematchResponse, error) {
	id, err := player(ctx)
	if err != nil {
		return nil, err
	}
	m, humans, err := s.rematchable(ctx, id.Subject, req.GetMatchId())
	if err != nil {
		return nil, err
	}
	now := s.now()
	busy, err := s.store.Occupied(ctx, id.Subject, now)
	if err != nil {
		return nil, s.toStatus(ctx, "rematch live ticket", err)
	}
	if busy {
		return nil, rpcerr.Matchmaking.Error(codes.FailedPrecondition, reasonAlreadySeated, "you have a live ticket or a seat at an open table: cancel or leave it before accepting a rematch", nil)
	}
	o, err := s.set.Rematches.Offer(ctx, m.GetMatchId(), id.Subject, humans, now)
	if err != nil {
		return nil, s.toStatus(ctx, "offer rematch", err)
	}
	switch o.State {
	case rematch.Declined, rematch.Expired:
		return nil, rematchRefusal(o)
	case rematch.Accepted:
		if o, err = s.startRematch(ctx, m); err != nil {
			return nil, err
		}
	}
	return &matchmakingv1.OfferRematchResponse{Rematch: rematchProto(o)}, nil
}

// DeclineRematch implements MatchmakingService.DeclineRematch.
func (s *Matchmaking) DeclineRematch(ctx context.Context, req *matchmakingv1.DeclineRematchRequest) (*matchmakingv1.DeclineRematchResponse, error) {
	id, err := player(ctx)
	if err != nil {
		return nil, err
	}
	m, humans, err := s.rematchable(ctx, id.Subject, req.GetMatchId())
	if err != nil {
		return nil, err
	}
	o, err := s.set.Rematches.Decline(ctx, m.GetMatchId(), id.Subject, humans, s.now())
	if err != nil {
		return nil, s.toStatus(ctx, "decline rematch", err)
	}
	if o.State != rematch.Declined {
		return nil, rematchRefusal(o)
	}
	return &matchmakingv1.DeclineRematchResponse{Rematch: rematchProto(o)}, nil
}

// WatchRematch implements MatchmakingService.WatchRematch: the offer at
// once, then every change (read every RematchPoll), until a final state.
func (s *Matchmaking) WatchRematch(req *matchmakingv1.WatchRematchRequest, stream matchmakingv1.MatchmakingService_WatchRematchServer) error {
	stream, stop := guard(s, stream, droppedRematch)
	defer stop()
	ctx := stream.Context()
	id, err := player(ctx)
	if err != nil {
		return err
	}
	if req.GetMatchId() == "" || len(req.GetMatchId()) > maxMatchIDLen {
		return invalidArgument("match_id", fmt.Sprintf("give the finished match's id (1 to %d bytes)", maxMatchIDLen))
	}
	if s.set.Matches == nil || s.set.Rematches == nil {
		return rpcerr.Matchmaking.Error(codes.Unimplemented, reasonUnimplemented, "rematches are not configured on this instance", nil)
	}
	poll := time.NewTicker(s.set.RematchPoll)
	defer poll.Stop()
	// The wire form has no version: a change is a new version, or the
	// state shown (an offer past its window reads as expired before any
	// script wrote that).
	var sentVersion uint64
	var sentState matchmakingv1.RematchState
	var acceptedSince time.Time
	for first := true; ; first = false {
		now := s.now()
		o, err := s.set.Rematches.Get(ctx, req.GetMatchId(), now)
		if errors.Is(err, rematch.ErrNotFound) && first {
			return rpcerr.Matchmaking.Error(codes.NotFound, reasonRematchNotFound, "nobody offered a rematch of this match (yet): OfferRematch offers one", nil)
		}
		if err != nil {
			return s.toStatus(ctx, "watch rematch", err)
		}
		if first && !slices.Contains(o.Humans, id.Subject) {
			return rpcerr.Matchmaking.Error(codes.PermissionDenied, reasonNotAPlayer, "only the players of a match may offer, accept, decline or watch its rematch", nil)
		}
		if o.State == rematch.Accepted {
			if acceptedSince.IsZero() {
				acceptedSince = now
			} else if now.Sub(acceptedSince) >= restartAfter {
				acceptedSince = now
				if m, err := s.set.Matches.Get(ctx, o.MatchID); err == nil {
					if started, err := s.startRematch(ctx, m); err == nil {
						o = started
					}
				}
			}
		}
		if p := rematchProto(o); first || o.Version != sentVersion || p.GetState() != sentState {
			if err := stream.Send(&matchmakingv1.WatchRematchResponse{Rematch: p}); err != nil {
				return err
			}
			sentVersion, sentState = o.Version, p.GetState()
			if o.State.Final() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-poll.C:
		}
	}
}

// startRematch creates the rematch of m, whose offer every human accepted,
// and records it: the same players, seats rotated by one (Red's player
// plays Blue, Blue's Yellow, Yellow's Green, Green's Red), a new random
// seed, the same rule set, time control and rated-ness. Bot seats get
// fresh bots of the same level from the bot lobby. Every caller uses the
// same CreateMatch request id (and bot reservation holder), so concurrent
// or repeated starts create one match.
func (s *Matchmaking) startRematch(ctx context.Context, m *matchv1.Match) (rematch.Offer, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	holder := rematch.RequestID(m.GetMatchId())
	req := &matchv1.CreateMatchRequest{
		RequestId:   holder,
		RuleSet:     m.GetRuleSet(),
		TimeControl: m.GetTimeControl(),
		Unrated:     m.GetUnrated(),
	}
	// Bot seats, by level, in seat order: each level's reservation hands
	// its bots out in the same order on every retry.
	bots := map[string][]*gamev1.SeatPlayer{}
	var levels []string
	for _, ss := range m.GetSeats() {
		sp := &gamev1.SeatPlayer{Seat: gamev1.Seat(int(ss.GetSeat())%4 + 1), Player: ss.GetPlayer()}
		if ss.GetPlayer().GetIsBot() {
			l := s.botLevel(ss.GetPlayer().GetDisplayName())
			if _, ok := bots[l]; !ok {
				levels = append(levels, l)
			}
			bots[l] = append(bots[l], sp)
		}
		req.Players = append(req.Players, sp)
	}
	reserved := map[string][]store.Entry{}
	for _, l := range levels {
		entries, err := s.store.ReserveBots(ctx, l, holder, len(bots[l]))
		if err != nil {
			for _, done := range levels {
				if _, ok := reserved[done]; ok {
					if rerr := s.store.ReleaseBots(ctx, done, holder); rerr != nil {
						s.log.WarnContext(ctx, "releasing rematch bots failed", "match", m.GetMatchId(), "err", rerr)
					}
				}
			}
			if errors.Is(err, store.ErrNoBots) || errors.Is(err, store.ErrUnknownQueue) {
				s.log.WarnContext(ctx, "no bots for a rematch", "match", m.GetMatchId(), "level", l, "err", err)
				return rematch.Offer{}, rpcerr.Matchmaking.Error(codes.Unavailable, reasonNoBots,
					fmt.Sprintf("no %s bot is free to take a bot seat of the rematch: offer again in a moment", l), nil)
			}
			return rematch.Offer{}, s.toStatus(ctx, "reserve rematch bots", err)
		}
		reserved[l] = entries
		for i, sp := range bots[l] {
			e := entries[i]
			sp.Player = &gamev1.Player{PlayerId: e.Player.ID, DisplayName: e.Player.DisplayName, IsBot: true}
		}
	}
	nm, err := s.set.Matches.Create(ctx, req)
	if err != nil {
		return rematch.Offer{}, s.matchServiceStatus(ctx, err)
	}
	seatOf := map[string]int{}
	for _, ss := range nm.GetSeats() {
		seatOf[ss.GetPlayer().GetPlayerId()] = int(ss.GetSeat())
	}
	for _, l := range levels {
		seats := map[string]int{}
		for _, e := range reserved[l] {
			seats[e.TicketID] = seatOf[e.Player.ID]
		}
		if err := s.store.CompleteBots(ctx, l, holder, nm.GetMatchId(), seats); err != nil {
			return rematch.Offer{}, s.toStatus(ctx, "seat rematch bots", err)
		}
	}
	o, err := s.set.Rematches.Started(ctx, m.GetMatchId(), nm.GetMatchId())
	if err != nil {
		return rematch.Offer{}, s.toStatus(ctx, "record rematch", err)
	}
	s.log.InfoContext(ctx, "rematch started", "match", m.GetMatchId(), "rematch", nm.GetMatchId())
	return o, nil
}

// botLevel returns the level of a bot from its display name ("Bot Greedy
// 3", as cmd/internal/botpool names them) when it is a configured level,
// else the default level for bot seats.
func (s *Matchmaking) botLevel(displayName string) string {
	f := strings.Fields(displayName)
	if len(f) >= 2 && f[0] == "Bot" {
		if l := strings.ToLower(f[1]); slices.Contains(s.set.BotLevels, l) {
			return l
		}
	}
	if slices.Contains(s.set.BotLevels, defaultBotLevel) || len(s.set.BotLevels) == 0 {
		return defaultBotLevel
	}
	return s.set.BotLevels[0]
}

// defaultBotLevel is the level of a bot seat whose level is unknown (as
// StartTableRequest.fill_bot_level's default).
const defaultBotLevel = "greedy"

// rematchProto is the wire form of an offer; A (every human accepted, the
// match being created) shows as OFFERED.
func rematchProto(o rematch.Offer) *matchmakingv1.Rematch {
	out := &matchmakingv1.Rematch{
		MatchId:           o.MatchID,
		AcceptedPlayerIds: o.AcceptedBy,
		PlayerIds:         o.Humans,
		DeclinedBy:        o.DeclinedBy,
		NewMatchId:        o.NewMatchID,
		ExpiresAt:         timestamppb.New(o.ExpiresAt),
	}
	switch o.State {
	case rematch.Offered, rematch.Accepted:
		out.State = matchmakingv1.RematchState_REMATCH_STATE_OFFERED
	case rematch.Started:
		out.State = matchmakingv1.RematchState_REMATCH_STATE_STARTED
	case rematch.Declined:
		out.State = matchmakingv1.RematchState_REMATCH_STATE_DECLINED
	case rematch.Expired:
		out.State = matchmakingv1.RematchState_REMATCH_STATE_EXPIRED
	}
	return out
}
