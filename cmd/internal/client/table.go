package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// ErrTableClosed is returned by WaitTable when the table closed (its last
// player left, or it stayed idle too long) before it started.
var ErrTableClosed = errors.New("the table closed")

// WaitTable follows a private table (WatchTable, re-opened after a broken
// stream) until it starts, and returns the match and the seat of player
// in it; changed, if not nil, is called with every state of the table.
func (c *Client) WaitTable(ctx context.Context, code, player string, changed func(*matchmakingv1.Table)) (Found, error) {
	var bo backoff
	for {
		st, err := c.Matchmaking.WatchTable(ctx, &matchmakingv1.WatchTableRequest{Code: code})
		for err == nil {
			var u *matchmakingv1.WatchTableResponse
			u, err = st.Recv()
			if err != nil {
				break
			}
			bo.reset()
			t := u.GetTable()
			if changed != nil {
				changed(t)
			}
			switch t.GetState() {
			case matchmakingv1.TableState_TABLE_STATE_STARTED:
				for _, s := range t.GetSeats() {
					if s.GetPlayer().GetPlayerId() == player {
						return Found{MatchID: t.GetMatchId(), Seat: s.GetSeat()}, nil
					}
				}
				return Found{}, fmt.Errorf("table %s started match %s without you", code, t.GetMatchId())
			case matchmakingv1.TableState_TABLE_STATE_CLOSED:
				return Found{}, fmt.Errorf("table %s: %w", code, ErrTableClosed)
			}
		}
		if ctx.Err() != nil {
			return Found{}, ctx.Err()
		}
		if !errors.Is(err, io.EOF) && !retryable(err) {
			return Found{}, fmt.Errorf("watch table %s: %w", code, err)
		}
		if err := bo.wait(ctx); err != nil {
			return Found{}, err
		}
	}
}
