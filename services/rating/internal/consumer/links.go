package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric/noop"

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
	lc := cfg
	lc.Stream, lc.DeadLetter, lc.Name, lc.Workers = cfg.LinkStream, cfg.LinkDeadLetter, cfg.Name+"-links", 1
	events, err := noop.NewMeterProvider().Meter("").Int64Counter("rating.consumer.links")
	if err != nil {
		return nil, err
	}
	if report == nil {
		report = func(string, error) {}
	}
	c := &Consumer{rdb: rdb, store: st, cfg: lc, log: log, events: events, forgetAfter: defaultForgetAfter, report: report}
	c.handle = c.handleLinks
	return c, nil
}

// handleLinks applies a batch of PlayerLinked entries in order and
// acknowledges those applied or dead-lettered. A link that fails (Redis
// errors) stops the batch: it and the ones after it stay pending.
func (c *Consumer) handleLinks(ctx context.Context, msgs []redis.XMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleTimeout)
	defer cancel()
	var done []string
	var failed error
	for _, m := range msgs {
		l, err := decodeLink(m.Values)
		if err != nil {
			if err := c.deadLetter(ctx, []redis.XMessage{m}, []string{err.Error()}); err != nil {
				failed = err
				break
			}
			done = append(done, m.ID)
			continue
		}
		out, err := c.store.Link(ctx, c.cfg.RuleSets, l)
		if err != nil {
			failed = fmt.Errorf("link %s to %s: %w", l.Guest, l.Account, err)
			break
		}
		c.log.InfoContext(ctx, "guest linked to account", "player", l.Guest, "account", l.Account, "pools", c.cfg.RuleSets, "outcomes", out)
		done = append(done, m.ID)
	}
	if len(done) > 0 {
		if err := c.rdb.XAck(ctx, c.cfg.Stream, c.cfg.Group, done...).Err(); err != nil {
			return errors.Join(failed, fmt.Errorf("acknowledge %d link entries: %w", len(done), err))
		}
	}
	return failed
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
