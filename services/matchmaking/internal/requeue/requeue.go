// Package requeue consumes the MatchAbandoned stream (matches the match
// service aborted because a seat missed its first move) and puts the other
// players back in their queue with their original enqueue time
// (store.Store.Requeue).
//
// Every matchmaking instance reads the stream through one consumer group,
// so XREADGROUP hands each entry to one of them. An entry is acknowledged
// only after its requeue is stored (or found done by an earlier delivery),
// so an instance that dies in between leaves it pending, and another
// instance takes it over after ClaimMinIdle (XAUTOCLAIM). Requeue is
// idempotent per (match, player), so such a redelivery requeues nobody
// twice. An entry that can never be handled (not a MatchAbandoned) is
// logged and acknowledged, so it never blocks the rest.
package requeue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// handleTimeout bounds the handling of one batch, which goes on after
// shutdown has begun (so its entries need not wait for another instance).
const handleTimeout = 15 * time.Second

// Config configures a Consumer.
type Config struct {
	// Stream is the full key of the MatchAbandoned stream.
	Stream string
	// Group is the consumer group shared by every matchmaking instance.
	Group string
	// Name identifies this instance in the group; unique among live ones.
	Name string
	// Batch is the most entries read at once.
	Batch int
	// Block is how long one read waits for new entries; it bounds how long
	// a stop waits for an idle consumer.
	Block time.Duration
	// ClaimMinIdle is how long an entry stays unacknowledged before
	// another consumer takes it over; ClaimInterval how often each
	// consumer looks for such entries.
	ClaimMinIdle, ClaimInterval time.Duration
	// Retry spaces out the attempts after a failed step (Redis errors).
	Retry backoff.Policy
}

// DefaultConfig returns the defaults for an instance named name.
func DefaultConfig(name string) Config {
	return Config{
		Stream:        eventstream.MatchAbandoned().Key(),
		Group:         "matchmaking",
		Name:          name,
		Batch:         64,
		Block:         2 * time.Second,
		ClaimMinIdle:  30 * time.Second,
		ClaimInterval: 5 * time.Second,
		Retry:         backoff.DefaultPolicy(),
	}
}

// Validate reports a setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Stream == "" || c.Group == "" || c.Name == "":
		return errors.New("requeue consumer: stream, group and name must be set")
	case c.Batch <= 0 || c.Block <= 0 || c.ClaimMinIdle <= 0 || c.ClaimInterval <= 0:
		return errors.New("requeue consumer: batch, block, claim min idle and claim interval must be positive")
	}
	if err := c.Retry.Validate(); err != nil {
		return fmt.Errorf("requeue consumer: %w", err)
	}
	return nil
}

// Consumer requeues the players of abandoned matches.
type Consumer struct {
	rdb    redis.UniversalClient
	store  *store.Store
	cfg    Config
	log    *slog.Logger
	report func(component string, err error)
	now    func() time.Time
}

// New returns a consumer; cfg must be valid. report receives the result of
// every step (nil after a successful one) as component "requeue-consumer";
// nil ignores them.
func New(rdb redis.UniversalClient, st *store.Store, cfg Config, log *slog.Logger, report func(string, error)) *Consumer {
	if report == nil {
		report = func(string, error) {}
	}
	return &Consumer{rdb: rdb, store: st, cfg: cfg, log: log, report: report, now: time.Now}
}

// Run reads and handles the stream until ctx is done. Failed steps are
// logged, reported and retried after a backoff delay; Run returns nil
// once ctx is done.
func (c *Consumer) Run(ctx context.Context) error {
	bo := backoff.New(c.cfg.Retry)
	var lastClaim time.Time
	grouped := false
	for ctx.Err() == nil {
		var step string
		var err error
		if !grouped {
			step, err = "create consumer group", c.ensureGroup(ctx)
			grouped = err == nil
		}
		if grouped {
			step, err = c.step(ctx, &lastClaim)
		}
		if ctx.Err() != nil {
			return nil
		}
		c.report("requeue-consumer", err)
		if err == nil {
			bo.Reset()
			continue
		}
		d := bo.Next()
		c.log.WarnContext(ctx, "requeue consumer step failed", "step", step, "err", err, "failures", bo.Failures(), "retry_in", d)
		_ = backoff.Sleep(ctx, d) // ends early only at shutdown
	}
	return nil
}

// step is one claim now and then, one read and the handling of what it
// read; it names the step that failed. A missing group (first start, or
// Redis came back empty) is created, so the next step can succeed.
func (c *Consumer) step(ctx context.Context, lastClaim *time.Time) (string, error) {
	step, err := c.steps(ctx, lastClaim)
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		err = errors.Join(err, c.ensureGroup(ctx))
	}
	return step, err
}

func (c *Consumer) steps(ctx context.Context, lastClaim *time.Time) (string, error) {
	if time.Since(*lastClaim) >= c.cfg.ClaimInterval {
		*lastClaim = time.Now()
		if err := c.claim(ctx); err != nil {
			return "claim stale entries", err
		}
	}
	streams, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: c.cfg.Group, Consumer: c.cfg.Name, Streams: []string{c.cfg.Stream, ">"},
		Count: int64(c.cfg.Batch), Block: c.cfg.Block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "read entries", fmt.Errorf("read %s: %w", c.cfg.Stream, err)
	}
	for _, s := range streams {
		if err := c.Handle(ctx, s.Messages); err != nil {
			return "handle entries", err
		}
	}
	return "", nil
}

// ensureGroup creates the group at the start of the stream, so that
// matches abandoned before the first instance ran are handled too.
func (c *Consumer) ensureGroup(ctx context.Context) error {
	err := c.rdb.XGroupCreateMkStream(ctx, c.cfg.Stream, c.cfg.Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create consumer group %s on %s: %w", c.cfg.Group, c.cfg.Stream, err)
	}
	return nil
}

// claim takes over and handles the entries other consumers left pending
// for ClaimMinIdle.
func (c *Consumer) claim(ctx context.Context) error {
	start := "0-0"
	for {
		msgs, next, err := c.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: c.cfg.Stream, Group: c.cfg.Group, Consumer: c.cfg.Name,
			MinIdle: c.cfg.ClaimMinIdle, Start: start, Count: int64(c.cfg.Batch),
		}).Result()
		if err != nil {
			return fmt.Errorf("claim stale entries of %s: %w", c.cfg.Stream, err)
		}
		if err := c.Handle(ctx, msgs); err != nil {
			return err
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// Handle requeues the players of a batch of entries and acknowledges the
// entries done: handled now or before, or never handleable. Entries it
// returns an error for stay pending and are delivered again.
func (c *Consumer) Handle(ctx context.Context, msgs []redis.XMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleTimeout)
	defer cancel()
	done := make([]string, 0, len(msgs))
	var errs []error
	for _, m := range msgs {
		ab, err := eventstream.MatchAbandoned().Decode(m.Values)
		if err != nil {
			c.log.ErrorContext(ctx, "abandoned-match entry dropped", "id", m.ID, "stream", c.cfg.Stream, "err", err)
			done = append(done, m.ID)
			continue
		}
		missed := Missed(ab)
		if missed == "" {
			c.log.ErrorContext(ctx, "abandoned-match entry dropped", "id", m.ID, "stream", c.cfg.Stream,
				"err", "no player in the missed seat", "match", ab.GetMatchId(), "seat", ab.GetMissedSeat().String())
			done = append(done, m.ID)
			continue
		}
		res, err := c.store.Requeue(ctx, ab.GetMatchId(), missed, c.now())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range res {
			c.log.InfoContext(ctx, "player of an abandoned match handled", "match", ab.GetMatchId(), "player", r.Player.ID,
				"outcome", r.Outcome.String(), "ticket", r.TicketID, "enqueued_at", r.EnqueuedAt)
		}
		done = append(done, m.ID)
	}
	if len(done) > 0 {
		if err := c.rdb.XAck(ctx, c.cfg.Stream, c.cfg.Group, done...).Err(); err != nil {
			errs = append(errs, fmt.Errorf("acknowledge %d entries: %w", len(done), err))
		}
	}
	return errors.Join(errs...)
}

// Missed returns the id of the player in the seat that missed its first
// move ("" if no player has that seat: a record nobody can act on).
func Missed(ab *eventsv1.MatchAbandoned) string {
	for _, sp := range ab.GetPlayers() {
		if sp.GetSeat() == ab.GetMissedSeat() {
			return sp.GetPlayer().GetPlayerId()
		}
	}
	return ""
}
