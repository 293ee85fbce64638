package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// ErrResign, returned by a Chooser, makes the player resign instead of
// moving.
var ErrResign = errors.New("resign")

// Chooser picks the move for the caller's seat in m, a fresh snapshot with
// fen4 and the caller's legal moves. It returns ErrResign to resign.
type Chooser func(ctx context.Context, m *matchv1.Match) (string, error)

// SeatLive reports whether seat s of m is a live player and m is running.
func SeatLive(m *matchv1.Match, s gamev1.Seat) bool {
	if m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ACTIVE {
		return false
	}
	for _, st := range m.GetSeats() {
		if st.GetSeat() == s {
			return st.GetStatus() == gamev1.SeatStatus_SEAT_STATUS_LIVE
		}
	}
	return false
}

// PlayAuto follows match id and plays seat with choose whenever it is that
// seat's turn, until the match ends (or the seat leaves it and only
// watching remains). observe, if not nil, sees every update. It returns the
// final state.
func (c *Client) PlayAuto(ctx context.Context, id string, seat gamev1.Seat, choose Chooser, observe func(Update)) (*matchv1.Match, error) {
	// The seat's round trip is measured while seated, as every client
	// does (docs/match.md "Lag compensation"); these moves claim think
	// times, which win over it.
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { c.PingLoop(pctx, id, nil) })
	defer func() {
		stop()
		wg.Wait()
	}()
	actedAt := int64(-1) // the ply of the last move we submitted
	return c.Follow(ctx, id, FollowOptions{Check: true, Seat: seat}, func(u Update) error {
		if observe != nil {
			observe(u)
		}
		m := u.Match
		if m.GetToMove() != seat || !SeatLive(m, seat) || int64(m.GetPly()) == actedAt {
			return nil
		}
		// The player's think time runs from this update, which gave the
		// turn, to the move's send; the rest of the server's measure is
		// network lag it compensates (docs/match.md "Lag compensation").
		played, err := c.TurnSince(ctx, id, choose, time.Now())
		if err != nil {
			return err
		}
		if played {
			actedAt = int64(m.GetPly())
		}
		return nil
	})
}

// Turn loads match id and, if it is the caller's turn, asks choose for a
// move and plays it (or resigns). It reports whether it acted. Races with
// the clock or a concurrent change (the move is no longer wanted) are not
// errors; unavailable servers are retried with the same client move id,
// so a move is never applied twice.
func (c *Client) Turn(ctx context.Context, id string, choose Chooser) (bool, error) {
	return c.TurnSince(ctx, id, choose, time.Time{})
}

// TurnSince is Turn for a turn the caller saw begin at seen: the move
// claims the time from seen to its first send as the player's think time
// (MakeMoveRequest.client_think_time), so that the server gives back the
// network lag. A zero seen claims nothing.
func (c *Client) TurnSince(ctx context.Context, id string, choose Chooser, seen time.Time) (bool, error) {
	var bo backoff
	for attempt := 0; ; attempt++ {
		resp, err := c.Match.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			if retryable(err) && attempt < 8 {
				if err := bo.wait(ctx); err != nil {
					return false, err
				}
				continue
			}
			return false, fmt.Errorf("get match %s: %w", id, err)
		}
		m := resp.GetMatch()
		if len(m.GetLegalMoves()) == 0 {
			return false, nil // not our turn (any more)
		}
		move, err := choose(ctx, m)
		if errors.Is(err, ErrResign) {
			return c.resign(ctx, id, &bo)
		}
		if err != nil {
			return false, err
		}
		ply := m.GetPly()
		req := &matchv1.MakeMoveRequest{MatchId: id, Move: move, ExpectedPly: &ply, ClientMoveId: "ply-" + strconv.FormatUint(uint64(ply), 10)}
		if !seen.IsZero() {
			// Retries claim the same: their extra wait was the network's.
			req.ClientThinkTime = durationpb.New(max(time.Since(seen), 0))
		}
		for {
			_, err = c.Match.MakeMove(ctx, req)
			if err == nil || !retryable(err) || status.Code(err) == codes.Aborted || attempt >= 8 {
				break
			}
			attempt++
			if err := bo.wait(ctx); err != nil {
				return false, err
			}
		}
		switch status.Code(err) {
		case codes.OK:
			return true, nil
		case codes.Aborted:
			continue // a concurrent change won: reload and decide again
		case codes.FailedPrecondition:
			if Reason(err) == "ILLEGAL_MOVE" && attempt < 8 {
				continue // the chooser disagreed with the server: choose again
			}
			return false, nil // the turn passed (clock, zombie, race)
		}
		return false, fmt.Errorf("move %s in %s: %w", move, id, err)
	}
}

// Reason returns the google.rpc.ErrorInfo reason of a gRPC error
// ("NOT_YOUR_TURN", "ILLEGAL_MOVE", ...), or "".
func Reason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// resign resigns the caller's seat in match id, retrying what retryable
// says is worth repeating (a rate limit, an unreachable server): a refusal
// to resign would otherwise leave the caller playing a game it has given up.
// Resigning is idempotent from the caller's view: a repeat after an
// acknowledged resignation gets FailedPrecondition (the seat is no longer
// live), which counts as done.
func (c *Client) resign(ctx context.Context, id string, bo *backoff) (bool, error) {
	for attempt := 0; ; attempt++ {
		_, err := c.Match.Resign(ctx, &matchv1.ResignRequest{MatchId: id})
		if err == nil || status.Code(err) == codes.FailedPrecondition {
			return true, nil
		}
		if !retryable(err) || attempt >= 8 {
			return false, fmt.Errorf("resign %s: %w", id, err)
		}
		if err := bo.wait(ctx); err != nil {
			return false, err
		}
	}
}
