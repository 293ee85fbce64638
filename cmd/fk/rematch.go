package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

const rematchHelp = `type "rematch" to offer a rematch (or accept one: every player must, within a minute;
seats rotate by one), "no" to decline, "quit" to leave.`

// rematchRetry is how often fk looks for an offer nobody made yet, and
// reopens a dropped offer stream.
const rematchRetry = time.Second

// rematchIdle is how long the prompt waits for anyone to offer a rematch
// before it ends by itself, so that fk does not stay open for good after a
// game nobody wants to play again (the server's default offer window).
const rematchIdle = time.Minute

// rematch runs the rematch prompt after a finished match: it shows the
// other players' offers as they come, sends the player's own offer
// ("rematch") or refusal ("no"), and returns the new match once every
// human accepted (ok true), or ok false when the offer ended otherwise or
// the player left ("quit", the end of stdin, Ctrl-C).
func (a *app) rematch(ctx context.Context, c *client.Client, playerID string, old client.Found, lines <-chan string) (client.Found, bool) {
	fmt.Fprintln(a.stdout, "\n"+rematchHelp)
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the watcher ends before we return
	defer cancel()
	offers := make(chan *matchmakingv1.Rematch, 16)
	wg.Go(func() { watchRematch(wctx, c, old.MatchID, offers) })
	idle := time.NewTimer(rematchIdle)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return client.Found{}, false
		case <-idle.C:
			fmt.Fprintln(a.stdout, "nobody offered a rematch")
			return client.Found{}, false
		case r := <-offers:
			idle.Stop() // an offer exists: it ends by its own window
			fmt.Fprintln(a.stdout, rematchLine(r, playerID))
			switch r.GetState() {
			case matchmakingv1.RematchState_REMATCH_STATE_STARTED:
				return a.rematchSeat(ctx, c, playerID, r.GetNewMatchId())
			case matchmakingv1.RematchState_REMATCH_STATE_DECLINED, matchmakingv1.RematchState_REMATCH_STATE_EXPIRED:
				return client.Found{}, false
			}
		case line, ok := <-lines:
			switch {
			case !ok || line == "quit" || line == "exit":
				return client.Found{}, false
			case line == "rematch" || line == "r" || line == "yes":
				idle.Stop()
				if _, err := c.Matchmaking.OfferRematch(ctx, &matchmakingv1.OfferRematchRequest{MatchId: old.MatchID}); err != nil {
					fmt.Fprintln(a.stdout, "rematch refused: "+explain(err))
				}
			case line == "no" || line == "decline":
				if _, err := c.Matchmaking.DeclineRematch(ctx, &matchmakingv1.DeclineRematchRequest{MatchId: old.MatchID}); err != nil {
					fmt.Fprintln(a.stdout, "decline refused: "+explain(err))
				}
				return client.Found{}, false
			case line != "":
				fmt.Fprintln(a.stdout, rematchHelp)
			}
		}
	}
}

// rematchSeat finds the player's seat in the new match.
func (a *app) rematchSeat(ctx context.Context, c *client.Client, playerID, id string) (client.Found, bool) {
	resp, err := c.Match.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
	if err != nil {
		fmt.Fprintln(a.stdout, "cannot load the rematch: "+explain(err))
		return client.Found{}, false
	}
	for _, s := range resp.GetMatch().GetSeats() {
		if s.GetPlayer().GetPlayerId() == playerID {
			return client.Found{MatchID: id, Seat: s.GetSeat()}, true
		}
	}
	fmt.Fprintf(a.stdout, "you have no seat in the rematch %s\n", id)
	return client.Found{}, false
}

// watchRematch sends every state of the offer of match to out until a
// final one or ctx ends. Before anyone offered, and after a dropped
// stream, it tries again every rematchRetry.
func watchRematch(ctx context.Context, c *client.Client, match string, out chan<- *matchmakingv1.Rematch) {
	for {
		if final := watchRematchOnce(ctx, c, match, out); final {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(rematchRetry):
		}
	}
}

// watchRematchOnce follows one WatchRematch stream; it reports whether the
// offer reached a final state (or is never coming: a refusal other than
// NOT_FOUND).
func watchRematchOnce(ctx context.Context, c *client.Client, match string, out chan<- *matchmakingv1.Rematch) bool {
	s, err := c.Matchmaking.WatchRematch(ctx, &matchmakingv1.WatchRematchRequest{MatchId: match})
	if err != nil {
		return ctx.Err() != nil
	}
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			switch status.Code(err) {
			case codes.NotFound, codes.Unavailable:
				return ctx.Err() != nil // nobody offered yet, or a dropped stream
			}
			return true
		}
		select {
		case out <- resp.GetRematch():
		case <-ctx.Done():
			return true
		}
	}
}

// rematchLine describes an offer for the player.
func rematchLine(r *matchmakingv1.Rematch, playerID string) string {
	switch r.GetState() {
	case matchmakingv1.RematchState_REMATCH_STATE_STARTED:
		return "rematch accepted by everyone: match " + r.GetNewMatchId()
	case matchmakingv1.RematchState_REMATCH_STATE_DECLINED:
		return "rematch declined by " + r.GetDeclinedBy()
	case matchmakingv1.RematchState_REMATCH_STATE_EXPIRED:
		return "rematch offer expired"
	}
	var waiting []string
	mine := false
	for _, p := range r.GetPlayerIds() {
		accepted := false
		for _, q := range r.GetAcceptedPlayerIds() {
			accepted = accepted || q == p
		}
		switch {
		case accepted && p == playerID:
			mine = true
		case !accepted:
			waiting = append(waiting, p)
		}
	}
	line := fmt.Sprintf("rematch: %d of %d accepted", len(r.GetAcceptedPlayerIds()), len(r.GetPlayerIds()))
	if len(waiting) > 0 {
		line += ", waiting for " + strings.Join(waiting, ", ")
	}
	if !mine {
		line += ` — type "rematch" to accept`
	}
	return line
}
