package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// readGames reads every match's event log from Redis (the stream
// `{fk:pNN}:m:<id>:ev` on the masters, docs/match.md), in version order.
func readGames(ctx context.Context, rdb *redis.ClusterClient) (map[string][]*eventsv1.MatchEvent, error) {
	var mu sync.Mutex
	var keys []string
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		iter := c.ScanType(ctx, 0, "{fk:p*}:m:*:ev", 1000, "stream").Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("scan event logs: %w", err)
	}
	sort.Strings(keys)
	games := map[string][]*eventsv1.MatchEvent{}
	for _, k := range keys {
		entries, err := rdb.XRange(ctx, k, "-", "+").Result()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", k, err)
		}
		var evs []*eventsv1.MatchEvent
		for _, e := range entries {
			raw, _ := e.Values["e"].(string)
			ev := &eventsv1.MatchEvent{}
			if err := proto.Unmarshal([]byte(raw), ev); err != nil {
				return nil, fmt.Errorf("%s entry %s: %w", k, e.ID, err)
			}
			evs = append(evs, ev)
		}
		if len(evs) == 0 || evs[0].GetMatchCreated() == nil {
			return nil, fmt.Errorf("%s: the log does not start with MatchCreated (trimmed? raise MATCH_EVENT_LOG_LEN)", k)
		}
		games[evs[0].GetMatchId()] = evs
	}
	return games, nil
}

// asPlayer returns a client of the services signed in as player id.
func asPlayer(ks *auth.KeySet, ep client.Endpoints, id string) (*client.Client, error) {
	c, err := client.Dial(ep)
	if err != nil {
		return nil, err
	}
	tok, _, err := ks.Sign(auth.Identity{Subject: id, Role: auth.RolePlayer, DisplayName: id}, time.Now(), time.Hour)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetToken(tok)
	return c, nil
}

// readRunning asks the match service, as one of each game's players (who
// see the live game, not the spectators' delayed one), for the state of
// every game whose log has no end.
func readRunning(ctx context.Context, ks *auth.KeySet, ep client.Endpoints, games map[string][]*eventsv1.MatchEvent) (map[string]runningGame, error) {
	out := map[string]runningGame{}
	for id, evs := range games {
		last := lastEvent(evs)
		if last.GetGameOver() != nil || last.GetMatchAborted() != nil {
			continue
		}
		p := evs[0].GetMatchCreated().GetPlayers()[0].GetPlayer().GetPlayerId()
		c, err := asPlayer(ks, ep, p)
		if err != nil {
			return nil, err
		}
		var resp *matchv1.GetMatchResponse
		for attempt := 0; attempt < 5; attempt++ {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err = c.Match.GetMatch(cctx, &matchv1.GetMatchRequest{MatchId: id})
			cancel()
			if err == nil {
				break
			}
			sleepCtx(ctx, 500*time.Millisecond)
		}
		c.Close()
		if err != nil {
			continue // reported as stuck: not readable
		}
		m := resp.GetMatch()
		rg := runningGame{active: m.GetStatus() == matchv1.MatchStatus_MATCH_STATUS_ACTIVE}
		for _, cl := range m.GetClocks() {
			if cl.GetRunning() && cl.GetTurnDeadline() != nil {
				rg.deadline = cl.GetTurnDeadline().AsTime()
			}
		}
		if !rg.active {
			// It ended between the read of its log and now: read the log
			// again rather than call it stuck.
			continue
		}
		out[id] = rg
	}
	return out, nil
}

// readTickets asks the matchmaker for the state of every ticket the
// clients saw, as the ticket's player: WatchTicket's first update is the
// final one for an ended ticket, "searching" otherwise.
func readTickets(ctx context.Context, ks *auth.KeySet, ep client.Endpoints, tickets map[string]*ticketRec) error {
	byPlayer := map[string][]*ticketRec{}
	for _, t := range tickets {
		byPlayer[t.player] = append(byPlayer[t.player], t)
	}
	for p, ts := range byPlayer {
		c, err := asPlayer(ks, ep, p)
		if err != nil {
			return err
		}
		for _, t := range ts {
			t.final = ticketState(ctx, c, t)
		}
		c.Close()
	}
	return nil
}

func ticketState(ctx context.Context, c *client.Client, t *ticketRec) string {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var st grpc.ServerStreamingClient[matchmakingv1.WatchTicketResponse]
		st, err = c.Matchmaking.WatchTicket(cctx, &matchmakingv1.WatchTicketRequest{TicketId: t.id})
		var u *matchmakingv1.WatchTicketResponse
		if err == nil {
			u, err = st.Recv()
		}
		cancel()
		if err == nil {
			if m := u.GetMatched().GetMatchId(); m != "" {
				t.matches[m] = true
			}
			if s := ticketUpdateState(u); s != "" {
				return s
			}
			return "searching"
		}
		if status.Code(err) == codes.NotFound {
			return "not found"
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
	return "unreadable: " + status.Code(err).String()
}

// readRatings waits (up to limit) until the rating service has applied
// every finished rated match, then reads each player's games played and
// history. Each player's reads are made as that player: the services rate
// limit per caller, and one checker reading 200 histories would be refused.
func readRatings(ctx context.Context, ks *auth.KeySet, ep client.Endpoints, games map[string][]*eventsv1.MatchEvent, limit time.Duration) (map[string]playerRating, error) {
	want := map[string]int{} // player -> finished rated matches
	ruleSet := ""
	for _, evs := range games {
		created := evs[0].GetMatchCreated()
		ruleSet = created.GetRuleSet()
		if created.GetUnrated() {
			continue
		}
		// Every player of a rated game is read, also one whose games all
		// still run: a rating of a game whose end a failover took back
		// is found only that way.
		over := lastEvent(evs).GetGameOver() != nil
		for _, sp := range created.GetPlayers() {
			p := sp.GetPlayer().GetPlayerId()
			want[p] += 0
			if over {
				want[p]++
			}
		}
	}
	deadline := time.Now().Add(limit)
	out := map[string]playerRating{}
	for p, n := range want {
		c, err := asPlayer(ks, ep, p)
		if err != nil {
			return nil, err
		}
		var played int
		for {
			err = retry(ctx, func(ctx context.Context) (err error) {
				played, err = gamesPlayed(ctx, c, p, ruleSet)
				return err
			})
			if err == nil && played >= n || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			sleepCtx(ctx, 500*time.Millisecond)
		}
		var hist map[string]int
		if err == nil {
			err = retry(ctx, func(ctx context.Context) (err error) {
				hist, err = history(ctx, c, p, ruleSet)
				return err
			})
		}
		c.Close()
		if err != nil {
			out[p] = playerRating{err: err.Error()}
			continue
		}
		out[p] = playerRating{history: hist, gamesPlayed: played}
	}
	return out, nil
}

// retry calls f until it succeeds, fails for good, or has failed 10 times
// with a status worth retrying (a refusal by the rate limit, an instance
// unreachable), each call within 5 s.
func retry(ctx context.Context, f func(ctx context.Context) error) error {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = f(cctx)
		cancel()
		switch status.Code(err) {
		case codes.OK:
			return nil
		case codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
			sleepCtx(ctx, time.Duration(attempt+1)*300*time.Millisecond)
		default:
			return err
		}
	}
	return err
}

func gamesPlayed(ctx context.Context, c *client.Client, p, ruleSet string) (int, error) {
	resp, err := c.Rating.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: p, RuleSet: ruleSet})
	if status.Code(err) == codes.NotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int(resp.GetRating().GetGamesPlayed()), nil
}

func history(ctx context.Context, c *client.Client, p, ruleSet string) (map[string]int, error) {
	out := map[string]int{}
	token := ""
	for page := 0; page < 1000; page++ {
		resp, err := c.Rating.GetRatingHistory(ctx, &ratingv1.GetRatingHistoryRequest{PlayerId: p, RuleSet: ruleSet, PageSize: 100, PageToken: token})
		if status.Code(err) == codes.NotFound {
			return out, nil // never rated
		}
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetEntries() {
			out[e.GetMatchId()]++
		}
		if token = resp.GetNextPageToken(); token == "" {
			return out, nil
		}
	}
	return nil, errors.New("history of " + p + ": too many pages")
}
