package client

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// defaultPingInterval is the wait between measurements until the server
// names its own (PingResponse.next_ping_in).
const defaultPingInterval = 5 * time.Second

// PingLoop measures the caller's round trip to the match service in match
// id, for the lag compensation of moves sent without a think time
// (docs/match.md "Lag compensation"): every interval the server asks for,
// a Ping without a token, then at once a Ping with the token it returned.
// report, if not nil, sees each completed measurement. It returns when ctx
// ends or there is nothing more to measure: the match is over, the caller
// holds no seat, the match is gone, or the server has no Ping. Other
// failures (an unavailable server, a refused token) wait for the next
// round.
func (c *Client) PingLoop(ctx context.Context, id string, report func(*matchv1.PingResponse)) {
	next := defaultPingInterval
	for {
		first, err := c.Match.Ping(ctx, &matchv1.PingRequest{MatchId: id})
		if err == nil {
			var resp *matchv1.PingResponse
			resp, err = c.Match.Ping(ctx, &matchv1.PingRequest{MatchId: id, Token: first.GetToken()})
			if err == nil {
				if report != nil {
					report(resp)
				}
				if d := resp.GetNextPingIn().AsDuration(); d > 0 {
					next = d
				}
			}
		}
		switch status.Code(err) {
		case codes.FailedPrecondition, codes.PermissionDenied, codes.NotFound, codes.Unimplemented:
			return
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
