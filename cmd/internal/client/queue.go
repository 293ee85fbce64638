package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// ErrTicketEnded is returned when a ticket was cancelled or expired before
// a match was found.
var ErrTicketEnded = errors.New("ticket ended without a match")

// Found is the match a ticket led to.
type Found struct {
	MatchID string
	Seat    gamev1.Seat
}

// FindMatch enqueues the caller in queue and waits until the matchmaker
// puts them in a match. searching, if not nil, is called with every
// progress update. A dropped ticket stream is reopened. If ctx ends first,
// the ticket is cancelled (best effort) and ctx's error returned.
func (c *Client) FindMatch(ctx context.Context, queue string, searching func(*matchmakingv1.Searching)) (Found, error) {
	// The enqueue itself is not cut short by ctx: a ticket created by a
	// call whose answer was lost would wait on without anyone watching it
	// and be matched. With the answer, an ended ctx cancels the ticket
	// below.
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	resp, err := c.Matchmaking.Enqueue(ectx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: queue}})
	cancel()
	if err != nil {
		return Found{}, fmt.Errorf("enqueue in %s: %w", queue, err)
	}
	tk := resp.GetTicket()
	if tk.GetState() == matchmakingv1.TicketState_TICKET_STATE_MATCHED {
		return Found{MatchID: tk.GetMatchId(), Seat: tk.GetSeat()}, nil
	}
	found, err := c.watchTicket(ctx, tk.GetTicketId(), searching)
	if err != nil && ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		defer cancel()
		_, _ = c.Matchmaking.CancelTicket(cctx, &matchmakingv1.CancelTicketRequest{TicketId: tk.GetTicketId()})
	}
	return found, err
}

func (c *Client) watchTicket(ctx context.Context, id string, searching func(*matchmakingv1.Searching)) (Found, error) {
	var bo backoff
	for {
		st, err := c.Matchmaking.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: id})
		for err == nil {
			var u *matchmakingv1.WatchTicketResponse
			u, err = st.Recv()
			if err != nil {
				break
			}
			bo.reset()
			switch x := u.GetUpdate().(type) {
			case *matchmakingv1.WatchTicketResponse_Searching:
				if searching != nil {
					searching(x.Searching)
				}
			case *matchmakingv1.WatchTicketResponse_Matched:
				return Found{MatchID: x.Matched.GetMatchId(), Seat: x.Matched.GetSeat()}, nil
			case *matchmakingv1.WatchTicketResponse_Cancelled:
				return Found{}, fmt.Errorf("ticket %s: cancelled: %w", id, ErrTicketEnded)
			case *matchmakingv1.WatchTicketResponse_Expired:
				return Found{}, fmt.Errorf("ticket %s: expired: %w", id, ErrTicketEnded)
			}
		}
		if ctx.Err() != nil {
			return Found{}, ctx.Err()
		}
		if !errors.Is(err, io.EOF) && !retryable(err) {
			return Found{}, fmt.Errorf("watch ticket %s: %w", id, err)
		}
		if err := bo.wait(ctx); err != nil {
			return Found{}, err
		}
	}
}
