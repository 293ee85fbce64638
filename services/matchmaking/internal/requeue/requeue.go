// Package requeue consumes the MatchAbandoned stream (matches the match
// service aborted because a seat missed its first move) and puts the other
// players back in their queue with their original enqueue time
// (store.Store.Requeue).
//
// The stream is read by the project's consumer-group reader
// (eventstream.Reader): every matchmaking instance reads it through one
// consumer group, an entry is acknowledged only after its requeue is
// stored (or found done by an earlier delivery), entries left pending by
// an instance that died are taken over after ClaimMinIdle, and an entry
// that can never be handled (not a MatchAbandoned, no player in the missed
// seat) or that failed MaxDeliveries times goes to the dead-letter stream
// "<stream>:dead". Requeue is idempotent per (match, player), so a
// redelivery requeues nobody twice.
package requeue

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// Config configures a Consumer: the settings of its stream reader.
type Config = eventstream.ReaderConfig

// DefaultConfig returns the defaults for the stream's full key (after the
// deployment's key prefix) and an instance named name: group
// "matchmaking", dead letters to "<stream>:dead", metrics
// matchmaking.requeue.events (by outcome: handled, dead_letter, failed),
// .lag and .pending (the reader's), besides the consumer's own
// matchmaking.requeue.players and .delay (New).
func DefaultConfig(stream, name string) Config {
	c := eventstream.DefaultReaderConfig(stream, "matchmaking", name)
	c.Component = "requeue-consumer"
	c.Metrics = "matchmaking.requeue"
	return c
}

// Consumer requeues the players of abandoned matches.
type Consumer struct {
	store *store.Store
	log   *slog.Logger
	r     *eventstream.Reader
	now   func() time.Time
	// players counts the players handled, by store.RequeueOutcome;
	// delay records, per player requeued or adopted, the time from the
	// abort to the requeue stored: how long the player waited outside
	// every queue (unless its client enqueued first).
	players metric.Int64Counter
	delay   metric.Float64Histogram
}

// delayBuckets cover an abort handled at once (milliseconds) up to one
// waiting for a claim after a consumer died (ClaimMinIdle, 30 s) and
// several failed tries.
var delayBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// New returns a consumer; cfg must be valid. meter receives its metrics
// (nil: none): the reader's (DefaultConfig) and matchmaking.requeue.players
// (by outcome: requeued, adopted, kept, done, moved_on) and
// matchmaking.requeue.delay (seconds from the abort to the requeue, for
// requeued and adopted players). report receives the result of every
// step (nil after a successful one) as component
// "requeue-consumer <name>-0"; nil ignores them.
func New(rdb redis.UniversalClient, st *store.Store, cfg Config, log *slog.Logger, meter metric.Meter, report func(string, error)) (*Consumer, error) {
	c := &Consumer{store: st, log: log, now: time.Now}
	if meter == nil {
		meter = noop.NewMeterProvider().Meter("")
	}
	var err error
	if c.players, err = meter.Int64Counter("matchmaking.requeue.players", metric.WithUnit("{player}"),
		metric.WithDescription("Players of matches aborted for a missed first move, by what the requeue did: requeued (a ticket with the original enqueue time), adopted (the player had enqueued again in the same queue: that ticket got the original time), kept (the player had moved on: another queue, a formation or a table), done (an earlier delivery handled the player), moved_on (the player enqueued again after the abort and that ticket has ended already: nothing created).")); err != nil {
		return nil, fmt.Errorf("requeue metrics: %w", err)
	}
	for _, o := range []store.RequeueOutcome{store.Requeued, store.Adopted, store.Kept, store.Done, store.MovedOn} {
		c.players.Add(context.Background(), 0, outcome(o))
	}
	if c.delay, err = meter.Float64Histogram("matchmaking.requeue.delay", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(delayBuckets...),
		metric.WithDescription("Time from a first-move abort (the event's occurred_at) to its player's requeue stored, for requeued and adopted players.")); err != nil {
		return nil, fmt.Errorf("requeue metrics: %w", err)
	}
	r, err := eventstream.NewReader(rdb, cfg, c.requeue, log, meter, report)
	if err != nil {
		return nil, fmt.Errorf("requeue consumer: %w", err)
	}
	c.r = r
	return c, nil
}

// Run reads and handles the stream until ctx is done. Failed steps are
// logged, reported and retried after a backoff delay; Run returns nil
// once ctx is done.
func (c *Consumer) Run(ctx context.Context) error { return c.r.Run(ctx) }

// Handle requeues the players of a batch of entries and acknowledges the
// entries done: handled now or before, or dead-lettered. Entries it
// returns an error for stay pending and are delivered again.
func (c *Consumer) Handle(ctx context.Context, msgs []redis.XMessage) error {
	return c.r.Process(ctx, msgs)
}

// requeue is the reader's handler.
func (c *Consumer) requeue(ctx context.Context, msgs []redis.XMessage) []eventstream.Result {
	out := make([]eventstream.Result, len(msgs))
	for i, m := range msgs {
		ab, err := eventstream.MatchAbandoned().Decode(m.Values)
		if err != nil {
			out[i].Err = err // wraps eventstream.ErrMalformed: dead-lettered
			continue
		}
		missed := Missed(ab)
		if missed == "" {
			out[i].Err = eventstream.Permanent(fmt.Errorf("match %s: no player in the missed seat %s", ab.GetMatchId(), ab.GetMissedSeat()))
			continue
		}
		// The abort's time tells a player who enqueued after it (and was
		// served) from one still waiting outside every queue.
		var abortedAt time.Time
		if at := ab.GetOccurredAt(); at != nil {
			abortedAt = at.AsTime()
		}
		res, err := c.store.Requeue(ctx, ab.GetMatchId(), missed, abortedAt, c.now())
		if err != nil {
			out[i].Err = fmt.Errorf("requeue match %s: %w", ab.GetMatchId(), err)
			continue
		}
		now := c.now()
		for _, r := range res {
			c.players.Add(ctx, 1, outcome(r.Outcome))
			if !abortedAt.IsZero() && (r.Outcome == store.Requeued || r.Outcome == store.Adopted) {
				c.delay.Record(ctx, max(now.Sub(abortedAt), 0).Seconds())
			}
			c.log.InfoContext(ctx, "player of an abandoned match handled", "match", ab.GetMatchId(), "player", r.Player.ID,
				"outcome", r.Outcome.String(), "ticket", r.TicketID, "enqueued_at", r.EnqueuedAt)
		}
	}
	return out
}

// outcome is the metric attribute of a requeue outcome.
func outcome(o store.RequeueOutcome) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("outcome", o.String()))
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
