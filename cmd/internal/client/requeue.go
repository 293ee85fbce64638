package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// FirstMoveMissed returns the seat whose missed first move aborted the
// ended match m (MatchAborted.first_move_missed, read from the match's last
// event), or SEAT_UNSPECIFIED when m was not aborted that way.
func (c *Client) FirstMoveMissed(ctx context.Context, m *matchv1.Match) (gamev1.Seat, error) {
	if m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ABORTED || m.GetVersion() < 2 {
		return gamev1.Seat_SEAT_UNSPECIFIED, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := c.Match.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: m.GetMatchId(), FromVersion: m.GetVersion() - 1})
	if err != nil {
		return gamev1.Seat_SEAT_UNSPECIFIED, fmt.Errorf("read how match %s ended: %w", m.GetMatchId(), err)
	}
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return gamev1.Seat_SEAT_UNSPECIFIED, nil
		}
		if err != nil {
			return gamev1.Seat_SEAT_UNSPECIFIED, fmt.Errorf("read how match %s ended: %w", m.GetMatchId(), err)
		}
		if ab := r.GetEvent().GetMatchAborted(); ab != nil {
			return ab.GetFirstMoveMissed(), nil
		}
		if r.GetSnapshot() != nil || r.GetVersion() >= m.GetVersion() {
			// The last event came (or a snapshot in its place): it was
			// not a first-move abort.
			return gamev1.Seat_SEAT_UNSPECIFIED, nil
		}
	}
}

// Requeue returns the caller's ticket in queue after a match of that queue
// was aborted because another seat missed its first move: the matchmaker
// puts the other players back in their queue with their original enqueue
// time, and Enqueue returns that ticket (existing, created_at the
// original). If the matchmaker has not done it yet, Enqueue makes a new
// ticket, which the matchmaker then gives the original enqueue time.
func (c *Client) Requeue(ctx context.Context, queue string) (*matchmakingv1.Ticket, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.Matchmaking.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: queue}})
	if err != nil {
		return nil, fmt.Errorf("back in %s: %w", queue, err)
	}
	return resp.GetTicket(), nil
}
