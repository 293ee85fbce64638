// Package consumer applies MatchFinished events from a Redis stream to the
// rating store.
//
// The stream is read by the project's consumer-group reader
// (eventstream.Reader): several consumers (goroutines and processes) share
// it through one consumer group, an entry is acknowledged only after the
// store applied it or found it applied already, entries left pending by a
// consumer that died are taken over after ClaimMinIdle, and entries that
// can never be applied go to the dead-letter stream. Applying is
// idempotent (see package store), so a redelivery changes nothing: the
// effect is exactly once, the delivery at least once.
//
// Entries that can never be applied are those of an unknown type,
// undecodable data, an invalid result or an unknown rule set. So are
// matches outside the store's exactly-once window (finished more than the
// marker retention before the newest applied match of their pool, see
// package store) and matches finished more than a day in the future by
// this host's clock (they would push that window past everything else).
package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// maxFuture is how far in the future (by this host's clock) a match may
// have finished; later ones are dead-lettered. It allows for clock skew
// between hosts.
const maxFuture = 24 * time.Hour

// Config configures the consumers.
type Config struct {
	// Stream is the key of the MatchFinished stream.
	Stream string
	// Group is the consumer group shared by every rating instance.
	Group string
	// Name identifies this instance in the group; worker i reads as
	// "<Name>-<i>". It must be unique among live instances.
	Name string
	// Workers is the number of consumer loops of this instance.
	Workers int
	// DeadLetter is the key of the dead-letter stream.
	DeadLetter string
	// DeadLetterMaxLen caps the dead-letter stream (approximately).
	DeadLetterMaxLen int
	// Batch is the maximum number of entries read and applied at once.
	Batch int
	// Block is how long one read waits for new entries. It bounds how long
	// a stop request waits for an idle consumer.
	Block time.Duration
	// ClaimMinIdle is how long an entry must stay unacknowledged before
	// another consumer takes it over.
	ClaimMinIdle time.Duration
	// ClaimInterval is how often each worker looks for such entries.
	ClaimInterval time.Duration
	// MaxDeliveries is how often an entry is delivered without being
	// applied (Redis errors, a corrupt stored rating) before it goes to the
	// dead-letter stream.
	MaxDeliveries int
	// Retry spaces out the attempts of a worker whose steps fail (Redis
	// errors): see package backoff.
	Retry backoff.Policy
	// RuleSets are the pools that exist; events of another rule set are
	// dead-lettered.
	RuleSets []string
	// LinkStream is the key of the PlayerLinked stream (guests linked to
	// accounts), read by the same group (NewLinks).
	LinkStream string
	// LinkDeadLetter is the key of its dead-letter stream.
	LinkDeadLetter string
}

// DefaultConfig returns the defaults of every setting: the reader's
// (eventstream.DefaultReaderConfig) but for two workers and larger batches.
func DefaultConfig() Config {
	r := eventstream.DefaultReaderConfig(eventstream.MatchFinished().Key(), "rating", "rating")
	return Config{
		Stream:           r.Stream,
		Group:            r.Group,
		Name:             r.Consumer,
		Workers:          2,
		DeadLetter:       r.DeadLetter,
		DeadLetterMaxLen: r.DeadLetterMaxLen,
		Batch:            1024,
		Block:            r.Block,
		ClaimMinIdle:     r.ClaimMinIdle,
		ClaimInterval:    r.ClaimInterval,
		MaxDeliveries:    r.MaxDeliveries,
		Retry:            r.Retry,
		RuleSets:         rules.RuleSetNames(),
		LinkStream:       eventstream.PlayerLinked().Key(),
		LinkDeadLetter:   eventstream.DefaultReaderConfig(eventstream.PlayerLinked().Key(), "", "").DeadLetter,
	}
}

// Validate reports a setting that cannot work: the reader's settings of
// both streams (see eventstream.ReaderConfig) and the rating ones.
func (c Config) Validate() error {
	errs := []error{readerConfig(c).Validate(), readerConfig(c.links()).Validate()}
	if len(c.RuleSets) == 0 {
		errs = append(errs, errors.New("consumer: rule sets must be set"))
	}
	if c.LinkStream == c.Stream || c.LinkDeadLetter == c.DeadLetter {
		errs = append(errs, errors.New("consumer: the link stream and its dead-letter stream must differ from the match stream and its dead-letter stream"))
	}
	return errors.Join(errs...)
}

// links returns the configuration of the link consumer (NewLinks).
func (c Config) links() Config {
	lc := c
	lc.Stream, lc.DeadLetter, lc.Name, lc.Workers = c.LinkStream, c.LinkDeadLetter, c.Name+"-links", 1
	return lc
}

// Consumer applies events from the stream to the store.
type Consumer struct {
	store *store.Store
	cfg   Config
	log   *slog.Logger
	r     *eventstream.Reader
	// forgetAfter is defaultForgetAfter; tests shorten it.
	forgetAfter time.Duration
}

// defaultForgetAfter is how long a consumer of the group must have been silent,
// with nothing pending, before it is removed from the group. Live consumers
// touch the group at least every Block, so only departed instances (a pod
// name that will not come back) qualify.
const defaultForgetAfter = time.Hour

// Outcomes counted by the rating.consumer.events metric besides the
// reader's dead_letter and failed.
const (
	outcomeApplied   = "applied"
	outcomeDuplicate = "duplicate"
)

// readerConfig is the reader's part of cfg.
func readerConfig(cfg Config) eventstream.ReaderConfig {
	return eventstream.ReaderConfig{
		Stream:           cfg.Stream,
		Group:            cfg.Group,
		Consumer:         cfg.Name,
		Workers:          cfg.Workers,
		DeadLetter:       cfg.DeadLetter,
		DeadLetterMaxLen: cfg.DeadLetterMaxLen,
		Batch:            cfg.Batch,
		Block:            cfg.Block,
		ClaimMinIdle:     cfg.ClaimMinIdle,
		ClaimInterval:    cfg.ClaimInterval,
		MaxDeliveries:    cfg.MaxDeliveries,
		ForgetAfter:      defaultForgetAfter,
		Retry:            cfg.Retry,
		Component:        "rating-consumer",
	}
}

// New returns a consumer. cfg must be valid. mp receives the consumer's
// metrics (rating.consumer.events by outcome: applied, duplicate,
// dead_letter, failed; rating.consumer.lag and .pending, see
// eventstream.Reader); nil means none. report receives the result of every
// step of every worker loop, as component "rating-consumer <worker>" (nil
// after a successful step); the service passes its health's Report, so an
// instance whose consumers cannot work is reported not ready. A nil
// report ignores the results.
func New(rdb redis.UniversalClient, st *store.Store, cfg Config, log *slog.Logger, mp metric.MeterProvider, report func(component string, err error)) (*Consumer, error) {
	c := &Consumer{store: st, cfg: cfg, log: log, forgetAfter: defaultForgetAfter}
	rc := readerConfig(cfg)
	rc.Metrics, rc.Outcomes = "rating.consumer", []string{outcomeApplied, outcomeDuplicate}
	var meter metric.Meter
	if mp != nil {
		meter = mp.Meter("github.com/fourkingdoms/fourkingdoms/services/rating/internal/consumer")
	}
	r, err := eventstream.NewReader(rdb, rc, c.apply, log, meter, report)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	c.r = r
	return c, nil
}

// Run creates the consumer group if needed and runs cfg.Workers consumer
// loops until ctx is done. A failed step (Redis errors) is logged,
// reported and retried after a backoff delay; Run never gives up, and
// returns nil once ctx is done.
func (c *Consumer) Run(ctx context.Context) error { return c.r.Run(ctx) }

// ensureGroup creates the group at the start of the stream, so that events
// published before the first rating instance ran are applied too.
func (c *Consumer) ensureGroup(ctx context.Context) error { return c.r.EnsureGroup(ctx) }

// read reads new entries as the consumer name.
func (c *Consumer) read(ctx context.Context, name string) ([]redis.XMessage, error) {
	return c.r.Read(ctx, name)
}

// forget removes departed consumers (silent for forgetAfter, holding
// nothing) from the group.
func (c *Consumer) forget(ctx context.Context, name string) error {
	return c.r.Forget(ctx, name, c.forgetAfter)
}

// Handle applies a batch of stream entries and acknowledges those that are
// done: applied now, applied before, or dead-lettered. Entries it returns
// an error for stay pending and are retried after ClaimMinIdle.
func (c *Consumer) Handle(ctx context.Context, msgs []redis.XMessage) error {
	return c.r.Process(ctx, msgs)
}

// apply is the reader's handler: it applies a batch of MatchFinished
// entries in one store call and says what became of each.
func (c *Consumer) apply(ctx context.Context, msgs []redis.XMessage) []eventstream.Result {
	out := make([]eventstream.Result, len(msgs))
	results := make([]ladder.Result, 0, len(msgs))
	index := make([]int, 0, len(msgs)) // positions in msgs of results
	now := time.Now()
	for i, m := range msgs {
		res, err := Decode(m.Values)
		if err == nil && !slices.Contains(c.cfg.RuleSets, res.Pool) {
			err = fmt.Errorf("%w: unknown rule set %q", errUnprocessable, res.Pool)
		}
		if err == nil && res.FinishedAt.After(now.Add(maxFuture)) {
			// It would move the pool's watermark (see package store) so
			// far ahead that every later match counted as too old.
			err = fmt.Errorf("%w: finished at %s, more than %s in the future", errUnprocessable, res.FinishedAt.Format(time.RFC3339), maxFuture)
		}
		if err != nil {
			out[i].Err = eventstream.Permanent(err)
			continue
		}
		results = append(results, res)
		index = append(index, i)
	}
	if len(results) == 0 {
		return out
	}
	outcomes, applyErr := c.store.Apply(ctx, results)
	errs := make([]error, len(results)) // why a Pending one was not applied
	for i := range errs {
		errs[i] = applyErr
	}
	if applyErr != nil && len(results) > 1 && len(outcomes) == len(results) && ctx.Err() == nil && !errors.Is(applyErr, store.ErrNotReplicated) {
		// One bad match (say, a corrupt stored standing) must not hold
		// back the others: apply the rest one by one, so only the
		// failing ones stay pending. Unconfirmed replication is no
		// single match's fault: the whole batch waits for a retry.
		for i := range results {
			if outcomes[i].Status != store.Pending {
				continue
			}
			one, err := c.store.Apply(ctx, results[i:i+1])
			if len(one) == 1 {
				outcomes[i] = one[0]
			}
			errs[i] = err
		}
	}
	for i := range results {
		r := &out[index[i]]
		if i >= len(outcomes) {
			r.Err = applyErr
			continue
		}
		switch outcomes[i].Status {
		case store.Applied:
			r.Outcome = outcomeApplied
		case store.Duplicate:
			r.Outcome = outcomeDuplicate
		case store.Expired:
			r.Err = eventstream.Permanent(fmt.Errorf("finished at %s, older than the %s exactly-once window of pool %s (the marker retention before its newest applied match)",
				results[i].FinishedAt.Format(time.RFC3339), span(c.store.MarkerRetention()), results[i].Pool))
		case store.Unratable:
			r.Err = eventstream.Permanent(errors.New("a guest of the match was linked to an account that plays in the same match: one player holds two seats"))
		default:
			r.Err = errs[i]
			if r.Err == nil {
				r.Err = fmt.Errorf("match %s not applied", results[i].MatchID)
			}
		}
	}
	return out
}

// span formats a retention for people: "7-day" for whole days.
func span(d time.Duration) string {
	const day = 24 * time.Hour
	if d%day == 0 {
		return fmt.Sprintf("%d-day", d/day)
	}
	return d.String()
}
