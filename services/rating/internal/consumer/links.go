package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// NewLinks returns a consumer of the PlayerLinked stream (cfg.LinkStream):
// each link of a guest to an account is applied to the store in every
// rule set's pool (store.Link), exactly once however often it is
// delivered or published, and acknowledged after. It runs in the same
// group as the MatchFinished consumer, under the name "<Name>-links",
// with one worker: links are rare. Entries that can never be applied go
// to cfg.LinkDeadLetter. Its metrics are the service log's: links are too
// few for a counter to tell anything.
func NewLinks(rdb redis.UniversalClient, st *store.Store, cfg Config, log *slog.Logger, report func(component string, err error)) (*Consumer, error) {
	lc := cfg.links()
	c := &Consumer{store: st, cfg: lc, log: log, forgetAfter: defaultForgetAfter}
	r, err := eventstream.NewReader(rdb, readerConfig(lc), c.link, log, nil, report)
	if err != nil {
		return nil, fmt.Errorf("link consumer: %w", err)
	}
	c.r = r
	return c, nil
}

// handleLinks applies a batch of PlayerLinked entries in order and
// acknowledges those applied or dead-lettered.
func (c *Consumer) handleLinks(ctx context.Context, msgs []redis.XMessage) error {
	return c.r.Process(ctx, msgs)
}

// errEarlierLink leaves the links after a failed one pending.
var errEarlierLink = errors.New("an earlier link of the batch failed")

// link is the link reader's handler: it applies links in order. A link
// that fails (Redis errors) stops the batch: it and the ones after it stay
// pending, so links are applied in the order they were published.
func (c *Consumer) link(ctx context.Context, msgs []redis.XMessage) []eventstream.Result {
	out := make([]eventstream.Result, len(msgs))
	for i, m := range msgs {
		l, err := decodeLink(m.Values)
		if err != nil {
			out[i].Err = eventstream.Permanent(err)
			continue
		}
		res, err := c.store.Link(ctx, c.cfg.RuleSets, l)
		if err != nil {
			out[i].Err = fmt.Errorf("link %s to %s: %w", l.Guest, l.Account, err)
			for j := i + 1; j < len(msgs); j++ {
				out[j].Err = errEarlierLink
			}
			break
		}
		c.log.InfoContext(ctx, "guest linked to account", "player", l.Guest, "account", l.Account, "pools", c.cfg.RuleSets, "outcomes", res)
	}
	return out
}

// decodeLink turns the fields of a PlayerLinked entry into a link. Errors
// wrap errUnprocessable.
func decodeLink(values map[string]any) (store.Link, error) {
	ev, err := eventstream.PlayerLinked().Decode(values)
	if err != nil {
		return store.Link{}, fmt.Errorf("%w: %v", errUnprocessable, err)
	}
	l := store.Link{Guest: ev.GetGuestPlayerId(), Account: ev.GetAccountPlayerId(), AccountName: ev.GetAccountDisplayName()}
	switch {
	case !strings.HasPrefix(l.Guest, "g-"): // AuthService.GuestLogin's ids
		return l, fmt.Errorf("%w: guest_player_id %q is not a guest's", errUnprocessable, l.Guest)
	case !strings.HasPrefix(l.Account, auth.OIDCPlayerIDPrefix):
		return l, fmt.Errorf("%w: account_player_id %q is not an account's", errUnprocessable, l.Account)
	}
	return l, nil
}
