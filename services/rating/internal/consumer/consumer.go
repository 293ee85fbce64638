// Package consumer applies MatchFinished events from a Redis stream to the
// rating store.
//
// Several consumers (goroutines and processes) share the stream through one
// consumer group: XREADGROUP hands each entry to one of them. An entry is
// acknowledged (XACK) only after the store applied it or found it applied
// already, so a consumer that dies in between leaves it pending; after
// ClaimMinIdle another consumer takes it over with XAUTOCLAIM. Applying is
// idempotent (see package store), so such a redelivery changes nothing: the
// effect is exactly once, the delivery at least once.
//
// Entries that can never be applied (unknown type, undecodable data, an
// invalid result, an unknown rule set) are copied to the dead-letter stream with the reason
// (fields dead_reason, dead_stream, dead_id beside the entry's own) and
// acknowledged, so they never block the rest. The copy is made before the
// acknowledgement: a crash in between may copy an entry twice. So are
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
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// handleTimeout bounds the handling of one batch, which goes on after
// shutdown has begun.
const handleTimeout = 15 * time.Second

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

// DefaultConfig returns the defaults of every setting.
func DefaultConfig() Config {
	return Config{
		Stream:           eventstream.MatchFinished().Key(),
		Group:            "rating",
		Name:             "rating",
		Workers:          2,
		DeadLetter:       eventstream.MatchFinished().Key() + ":dead",
		DeadLetterMaxLen: 100_000,
		Batch:            1024,
		Block:            2 * time.Second,
		ClaimMinIdle:     30 * time.Second,
		ClaimInterval:    5 * time.Second,
		MaxDeliveries:    10,
		Retry:            backoff.DefaultPolicy(),
		RuleSets:         rules.RuleSetNames(),
		LinkStream:       eventstream.PlayerLinked().Key(),
		LinkDeadLetter:   eventstream.PlayerLinked().Key() + ":dead",
	}
}

// Validate reports a setting that cannot work.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, msg string) {
		if !ok {
			errs = append(errs, errors.New(msg))
		}
	}
	check(c.Stream != "", "consumer: stream must be set")
	check(c.Group != "", "consumer: group must be set")
	check(c.Name != "", "consumer: name must be set")
	check(c.DeadLetter != "" && c.DeadLetter != c.Stream, "consumer: dead-letter stream must be set and differ from the stream")
	check(c.DeadLetterMaxLen > 0, "consumer: dead-letter max length must be positive")
	check(c.Workers > 0, "consumer: workers must be positive")
	check(c.Batch > 0 && c.Batch <= 10_000, "consumer: batch must be in 1..10000")
	check(c.Block > 0, "consumer: block must be positive")
	check(c.ClaimMinIdle > 0, "consumer: claim min idle must be positive")
	check(c.ClaimInterval > 0, "consumer: claim interval must be positive")
	check(c.MaxDeliveries > 1, "consumer: max deliveries must be at least 2")
	check(c.Retry.Validate() == nil, "consumer: retry needs 0 < initial <= max")
	check(len(c.RuleSets) > 0, "consumer: rule sets must be set")
	check(c.LinkStream != "" && c.LinkStream != c.Stream, "consumer: link stream must be set and differ from the stream")
	check(c.LinkDeadLetter != "" && c.LinkDeadLetter != c.LinkStream && c.LinkDeadLetter != c.DeadLetter,
		"consumer: link dead-letter stream must be set and differ from the link stream and the dead-letter stream")
	return errors.Join(errs...)
}

// Consumer applies events from the stream to the store.
type Consumer struct {
	rdb    redis.UniversalClient
	store  *store.Store
	cfg    Config
	log    *slog.Logger
	events metric.Int64Counter
	// forgetAfter is defaultForgetAfter; tests shorten it.
	forgetAfter time.Duration
	report      func(component string, err error)
	// handle handles a batch of entries: Handle, or handleLinks for a
	// consumer of the link stream (NewLinks).
	handle func(ctx context.Context, msgs []redis.XMessage) error
}

// Outcomes counted by the rating.consumer.events metric.
var (
	outcomeApplied   = metric.WithAttributes(attribute.String("outcome", "applied"))
	outcomeDuplicate = metric.WithAttributes(attribute.String("outcome", "duplicate"))
	outcomeDead      = metric.WithAttributes(attribute.String("outcome", "dead_letter"))
	outcomeFailed    = metric.WithAttributes(attribute.String("outcome", "failed"))
)

// New returns a consumer. cfg must be valid. mp receives the consumer's
// metrics; nil means none. report receives the result of every step of
// every worker loop, as component "rating-consumer <worker>" (nil after a
// successful step); the service passes its health's Report, so an
// instance whose consumers cannot work is reported not ready. A nil
// report ignores the results.
func New(rdb redis.UniversalClient, st *store.Store, cfg Config, log *slog.Logger, mp metric.MeterProvider, report func(component string, err error)) (*Consumer, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	if report == nil {
		report = func(string, error) {}
	}
	events, err := mp.Meter("github.com/fourkingdoms/fourkingdoms/services/rating/internal/consumer").Int64Counter(
		"rating.consumer.events",
		metric.WithDescription("MatchFinished stream entries handled, by outcome: applied, duplicate, dead_letter, failed (left pending)"),
		metric.WithUnit("{event}"))
	if err != nil {
		return nil, fmt.Errorf("consumer metrics: %w", err)
	}
	// Every outcome's series exists from the start, so the alert on
	// dead letters sees the first one as an increase.
	for _, o := range []metric.AddOption{outcomeApplied, outcomeDuplicate, outcomeDead, outcomeFailed} {
		events.Add(context.Background(), 0, o)
	}
	c := &Consumer{rdb: rdb, store: st, cfg: cfg, log: log, events: events, forgetAfter: defaultForgetAfter, report: report}
	c.handle = c.Handle
	if err := c.registerGroupMetrics(mp.Meter("github.com/fourkingdoms/fourkingdoms/services/rating/internal/consumer")); err != nil {
		return nil, err
	}
	return c, nil
}

// groupInfoTimeout bounds the XINFO GROUPS a scrape of /metrics makes.
const groupInfoTimeout = 500 * time.Millisecond

// registerGroupMetrics exports the consumer group's backlog, read from
// Redis (XINFO GROUPS) when the metrics are collected, so every instance
// reports the same group-wide numbers (alerts take the max over pods):
//
//   - rating_consumer_lag: entries in the stream the group has not read
//     yet (Redis's "lag"; absent while Redis cannot compute it, after
//     deletions in the stream);
//   - rating_consumer_pending: entries read but not yet acknowledged.
//
// While Redis does not answer, both are absent (the Redis alert covers it).
func (c *Consumer) registerGroupMetrics(m metric.Meter) error {
	lag, err := m.Int64ObservableGauge("rating.consumer.lag", metric.WithUnit("{event}"),
		metric.WithDescription("MatchFinished entries the consumer group has not read yet (XINFO GROUPS lag)."))
	if err != nil {
		return fmt.Errorf("consumer metrics: %w", err)
	}
	pending, err := m.Int64ObservableGauge("rating.consumer.pending", metric.WithUnit("{event}"),
		metric.WithDescription("MatchFinished entries delivered to a consumer and not yet acknowledged (XINFO GROUPS pending)."))
	if err != nil {
		return fmt.Errorf("consumer metrics: %w", err)
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, groupInfoTimeout)
		defer cancel()
		groups, err := c.rdb.XInfoGroups(ctx, c.cfg.Stream).Result()
		if err != nil {
			return nil // no stream or group yet, or Redis unavailable: no sample
		}
		for _, g := range groups {
			if g.Name != c.cfg.Group {
				continue
			}
			if g.Lag >= 0 {
				o.ObserveInt64(lag, g.Lag)
			}
			o.ObserveInt64(pending, g.Pending)
		}
		return nil
	}, lag, pending)
	if err != nil {
		return fmt.Errorf("consumer metrics: %w", err)
	}
	return nil
}

// Run creates the consumer group if needed and runs cfg.Workers consumer
// loops until ctx is done. A failed step (Redis errors) is logged,
// reported and retried after a backoff delay; Run never gives up, and
// returns nil once ctx is done.
func (c *Consumer) Run(ctx context.Context) error {
	bo := backoff.New(c.cfg.Retry)
	component := "rating-consumer " + c.cfg.Name
	for {
		err := c.ensureGroup(ctx)
		c.report(component, err)
		if err == nil {
			break
		}
		c.pause(ctx, bo, c.cfg.Name, "create consumer group", err)
		if ctx.Err() != nil {
			return nil
		}
	}
	var wg sync.WaitGroup
	for i := range c.cfg.Workers {
		wg.Go(func() { c.loop(ctx, fmt.Sprintf("%s-%d", c.cfg.Name, i)) })
	}
	wg.Wait()
	return nil
}

// ensureGroup creates the group at the start of the stream, so that events
// published before the first rating instance ran are applied too.
func (c *Consumer) ensureGroup(ctx context.Context) error {
	err := c.rdb.XGroupCreateMkStream(ctx, c.cfg.Stream, c.cfg.Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create consumer group %s on %s: %w", c.cfg.Group, c.cfg.Stream, err)
	}
	return nil
}

// loop is one worker: it takes over stale entries now and then and reads
// new ones in between.
func (c *Consumer) loop(ctx context.Context, name string) {
	bo := backoff.New(c.cfg.Retry)
	component := "rating-consumer " + name
	var lastClaim time.Time
	for ctx.Err() == nil {
		step, err := c.step(ctx, name, &lastClaim)
		if ctx.Err() != nil {
			return
		}
		c.report(component, err)
		if err != nil {
			c.pause(ctx, bo, name, step, err)
			continue
		}
		bo.Reset()
	}
}

// step is one iteration of a worker: a claim now and then, a read and the
// handling of what it read. It names the step that failed.
//
// When the group is gone (the stream was deleted, or Redis came back
// empty), every step fails with NOGROUP whichever runs first: step then
// creates the group again, so the next iteration can succeed.
func (c *Consumer) step(ctx context.Context, name string, lastClaim *time.Time) (string, error) {
	step, err := c.steps(ctx, name, lastClaim)
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		err = errors.Join(err, c.ensureGroup(ctx))
	}
	return step, err
}

func (c *Consumer) steps(ctx context.Context, name string, lastClaim *time.Time) (string, error) {
	if time.Since(*lastClaim) >= c.cfg.ClaimInterval {
		*lastClaim = time.Now()
		if err := c.claim(ctx, name); err != nil {
			return "claim stale events", err
		}
	}
	msgs, err := c.read(ctx, name)
	if err != nil {
		return "read events", err
	}
	if err := c.handle(ctx, msgs); err != nil {
		return "handle events", err
	}
	return "", nil
}

// pause logs a failed step and waits for the backoff delay before the
// next one.
func (c *Consumer) pause(ctx context.Context, bo *backoff.Backoff, name, step string, err error) {
	if ctx.Err() != nil {
		return
	}
	d := bo.Next()
	c.log.WarnContext(ctx, "rating consumer step failed", "step", step, "consumer", name, "err", err,
		"failures", bo.Failures(), "retry_in", d)
	_ = backoff.Sleep(ctx, d) // ends early only at shutdown
}

func (c *Consumer) read(ctx context.Context, name string) ([]redis.XMessage, error) {
	streams, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group:    c.cfg.Group,
		Consumer: name,
		Streams:  []string{c.cfg.Stream, ">"},
		Count:    int64(c.cfg.Batch),
		Block:    c.cfg.Block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.cfg.Stream, err)
	}
	if len(streams) == 0 {
		return nil, nil
	}
	return streams[0].Messages, nil
}

// claim takes over and handles every entry idle for at least ClaimMinIdle.
// Entries delivered MaxDeliveries times without being applied go to the
// dead-letter stream instead.
func (c *Consumer) claim(ctx context.Context, name string) error {
	if err := c.retire(ctx, name); err != nil {
		return err
	}
	if err := c.forget(ctx, name); err != nil {
		return err
	}
	start := "0-0"
	for {
		msgs, next, err := c.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream:   c.cfg.Stream,
			Group:    c.cfg.Group,
			Consumer: name,
			MinIdle:  c.cfg.ClaimMinIdle,
			Start:    start,
			Count:    int64(c.cfg.Batch),
		}).Result()
		if err != nil {
			return fmt.Errorf("claim stale entries of %s: %w", c.cfg.Stream, err)
		}
		if len(msgs) > 0 {
			c.log.InfoContext(ctx, "claimed stale rating events", "consumer", name, "stream", c.cfg.Stream, "count", len(msgs))
			if err := c.handle(ctx, msgs); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// defaultForgetAfter is how long a consumer of the group must have been silent,
// with nothing pending, before it is removed from the group. Live consumers
// touch the group at least every Block, so only departed instances (a pod
// name that will not come back) qualify.
const defaultForgetAfter = time.Hour

// forget removes departed consumers from the group, so that it does not
// grow with every restart of an instance under a new name. Their pending
// entries were taken over before (they have none).
func (c *Consumer) forget(ctx context.Context, name string) error {
	consumers, err := c.rdb.XInfoConsumers(ctx, c.cfg.Stream, c.cfg.Group).Result()
	if err != nil {
		return fmt.Errorf("list consumers of group %s: %w", c.cfg.Group, err)
	}
	for _, g := range consumers {
		if g.Name == name || g.Pending > 0 || g.Idle < c.forgetAfter {
			continue
		}
		if err := c.rdb.XGroupDelConsumer(ctx, c.cfg.Stream, c.cfg.Group, g.Name).Err(); err != nil {
			return fmt.Errorf("remove consumer %s: %w", g.Name, err)
		}
		c.log.InfoContext(ctx, "removed departed rating consumer", "consumer", g.Name, "idle", g.Idle)
	}
	return nil
}

// retire dead-letters and acknowledges the idle entries that were
// delivered MaxDeliveries times already.
func (c *Consumer) retire(ctx context.Context, name string) error {
	pending, err := c.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: c.cfg.Stream,
		Group:  c.cfg.Group,
		Idle:   c.cfg.ClaimMinIdle,
		Start:  "-",
		End:    "+",
		Count:  int64(c.cfg.Batch),
	}).Result()
	if err != nil {
		return fmt.Errorf("list pending entries of %s: %w", c.cfg.Stream, err)
	}
	var ids []string
	for _, p := range pending {
		if p.RetryCount >= int64(c.cfg.MaxDeliveries) {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// Take them over first, so that no other consumer retires them too.
	msgs, err := c.rdb.XClaim(ctx, &redis.XClaimArgs{
		Stream:   c.cfg.Stream,
		Group:    c.cfg.Group,
		Consumer: name,
		MinIdle:  c.cfg.ClaimMinIdle,
		Messages: ids,
	}).Result()
	if err != nil {
		return fmt.Errorf("claim undeliverable entries of %s: %w", c.cfg.Stream, err)
	}
	if len(msgs) == 0 {
		return nil
	}
	reasons := make([]string, len(msgs))
	done := make([]string, len(msgs))
	for i, m := range msgs {
		reasons[i] = fmt.Sprintf("not applied after %d deliveries (see the rating service log)", c.cfg.MaxDeliveries)
		done[i] = m.ID
	}
	if err := c.deadLetter(ctx, msgs, reasons); err != nil {
		return err
	}
	if err := c.rdb.XAck(ctx, c.cfg.Stream, c.cfg.Group, done...).Err(); err != nil {
		return fmt.Errorf("acknowledge %d undeliverable entries: %w", len(done), err)
	}
	return nil
}

// Handle applies a batch of stream entries and acknowledges those that are
// done: applied now, applied before, or dead-lettered. Entries it returns
// an error for stay pending and are retried after ClaimMinIdle.
func (c *Consumer) Handle(ctx context.Context, msgs []redis.XMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	// A batch that was read is finished even when shutdown begins, so that
	// its entries need not wait ClaimMinIdle for another consumer.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleTimeout)
	defer cancel()
	results := make([]ladder.Result, 0, len(msgs))
	ids := make([]string, 0, len(msgs)) // stream ids of results
	index := make([]int, 0, len(msgs))  // positions in msgs of results
	var dead []redis.XMessage
	var reasons []string
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
			dead = append(dead, m)
			reasons = append(reasons, err.Error())
			continue
		}
		results = append(results, res)
		ids = append(ids, m.ID)
		index = append(index, i)
	}

	done := make([]string, 0, len(msgs))
	if len(dead) > 0 {
		if err := c.deadLetter(ctx, dead, reasons); err != nil {
			return err
		}
		for _, m := range dead {
			done = append(done, m.ID)
		}
	}
	var applyErr error
	if len(results) > 0 {
		var outcomes []store.Outcome
		outcomes, applyErr = c.store.Apply(ctx, results)
		if applyErr != nil && len(results) > 1 && ctx.Err() == nil && !errors.Is(applyErr, store.ErrNotReplicated) {
			// One bad match (say, a corrupt stored standing) must not hold
			// back the others: apply the rest one by one, so only the
			// failing ones stay pending. Unconfirmed replication is no
			// single match's fault: the whole batch waits for a retry.
			applyErr = nil
			for i := range results {
				if outcomes[i].Status != store.Pending {
					continue
				}
				one, err := c.store.Apply(ctx, results[i:i+1])
				outcomes[i] = one[0]
				applyErr = errors.Join(applyErr, err)
			}
		}
		var applied, dups, failed int64
		var expired []redis.XMessage
		var why []string
		for i, o := range outcomes {
			switch o.Status {
			case store.Applied:
				applied++
			case store.Duplicate:
				dups++
			case store.Expired:
				expired = append(expired, msgs[index[i]])
				why = append(why, fmt.Sprintf("finished at %s, older than the %s exactly-once window of pool %s (the marker retention before its newest applied match)",
					results[i].FinishedAt.Format(time.RFC3339), span(c.store.MarkerRetention()), results[i].Pool))
				continue
			case store.Unratable:
				expired = append(expired, msgs[index[i]])
				why = append(why, "a guest of the match was linked to an account that plays in the same match: one player holds two seats")
				continue
			default:
				failed++
				continue
			}
			done = append(done, ids[i])
		}
		if len(expired) > 0 {
			if err := c.deadLetter(ctx, expired, why); err != nil {
				return errors.Join(applyErr, err)
			}
			for _, m := range expired {
				done = append(done, m.ID)
			}
		}
		c.events.Add(ctx, applied, outcomeApplied)
		c.events.Add(ctx, dups, outcomeDuplicate)
		c.events.Add(ctx, failed, outcomeFailed)
	}
	if len(done) > 0 {
		if err := c.rdb.XAck(ctx, c.cfg.Stream, c.cfg.Group, done...).Err(); err != nil {
			return errors.Join(applyErr, fmt.Errorf("acknowledge %d entries: %w", len(done), err))
		}
	}
	return applyErr
}

// span formats a retention for people: "7-day" for whole days.
func span(d time.Duration) string {
	const day = 24 * time.Hour
	if d%day == 0 {
		return fmt.Sprintf("%d-day", d/day)
	}
	return d.String()
}

// deadLetter copies unprocessable entries to the dead-letter stream.
func (c *Consumer) deadLetter(ctx context.Context, msgs []redis.XMessage, reasons []string) error {
	pipe := c.rdb.Pipeline()
	for i, m := range msgs {
		// The entry's own fields are kept as they are, so an operator can
		// publish a fixed copy again.
		values := []any{"dead_reason", reasons[i], "dead_stream", c.cfg.Stream, "dead_id", m.ID}
		for k, v := range m.Values {
			if !strings.HasPrefix(k, "dead_") {
				values = append(values, k, v)
			}
		}
		pipe.XAdd(ctx, &redis.XAddArgs{
			Stream: c.cfg.DeadLetter,
			MaxLen: int64(c.cfg.DeadLetterMaxLen),
			Approx: true,
			Values: values,
		})
		c.log.WarnContext(ctx, "rating event dead-lettered", "id", m.ID, "reason", reasons[i])
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("dead-letter %d entries: %w", len(msgs), err)
	}
	c.events.Add(ctx, int64(len(msgs)), outcomeDead)
	return nil
}
