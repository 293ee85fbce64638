package eventstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
)

// The consumer-group reader (Reader) is the one loop every service uses to
// consume a stream. Its guarantees:
//
//   - Several readers (goroutines and processes) share the stream through
//     one consumer group: XREADGROUP hands each entry to one of them.
//   - An entry is acknowledged (XACK) only after the handler reported its
//     work durable, or after it was copied to the dead-letter stream, so a
//     reader that dies in between leaves it pending; after ClaimMinIdle
//     another reader takes it over (XAUTOCLAIM). Handlers must therefore be
//     idempotent: the delivery is at least once.
//   - An entry the handler reports permanent (Permanent, or a Decode error)
//     and an entry delivered MaxDeliveries times without being handled are
//     copied to the dead-letter stream with the reason (fields dead_reason,
//     dead_stream, dead_id beside the entry's own) and acknowledged, so they
//     never block the rest. The copy precedes the acknowledgement: a crash
//     in between may copy an entry twice.
//   - Consumers of the group silent for ForgetAfter with nothing pending
//     (departed instances) are removed from the group.
//   - A failed step (Redis errors) is logged, reported and retried after a
//     backoff delay; Run never gives up and returns once ctx is done. A
//     batch that was read is finished even after ctx is done.

// handleTimeout bounds the handling of one batch, which goes on after
// shutdown has begun, so that its entries need not wait ClaimMinIdle for
// another reader.
const handleTimeout = 15 * time.Second

// groupInfoTimeout bounds the XINFO GROUPS a collection of the metrics makes.
const groupInfoTimeout = 500 * time.Millisecond

// ReaderConfig configures a Reader.
type ReaderConfig struct {
	// Stream is the full key of the stream read.
	Stream string
	// Group is the consumer group shared by every instance.
	Group string
	// Consumer identifies this instance in the group; worker i reads as
	// "<Consumer>-<i>". It must be unique among live instances.
	Consumer string
	// Workers is the number of read loops of this instance.
	Workers int
	// DeadLetter is the key of the dead-letter stream.
	DeadLetter string
	// DeadLetterMaxLen caps the dead-letter stream (approximately).
	DeadLetterMaxLen int
	// Batch is the most entries read and handled at once.
	Batch int
	// Block is how long one read waits for new entries. It bounds how long
	// a stop waits for an idle reader.
	Block time.Duration
	// ClaimMinIdle is how long an entry stays unacknowledged before another
	// reader takes it over; ClaimInterval is how often each worker looks
	// for such entries.
	ClaimMinIdle, ClaimInterval time.Duration
	// MaxDeliveries is how often an entry is delivered without being
	// handled before it goes to the dead-letter stream.
	MaxDeliveries int
	// ForgetAfter is how long a consumer of the group must have been
	// silent, with nothing pending, before it is removed from the group.
	// Live readers touch the group at least every Block.
	ForgetAfter time.Duration
	// Retry spaces out the attempts of a worker whose steps fail.
	Retry backoff.Policy
	// Component names the reader in health reports and logs: results are
	// reported as "<Component> <consumer name>".
	Component string
	// Metrics is the prefix of the metric names (<Metrics>.events,
	// <Metrics>.lag, <Metrics>.pending); empty means no metrics.
	Metrics string
	// Outcomes are the outcomes the handler names (Result.Outcome) beside
	// dead_letter and failed; their series exist from the start.
	Outcomes []string
}

// DefaultReaderConfig returns the defaults of the settings for a stream
// key, a group and a consumer name: one worker, the dead-letter stream
// "<stream>:dead".
func DefaultReaderConfig(stream, group, consumer string) ReaderConfig {
	return ReaderConfig{
		Stream:           stream,
		Group:            group,
		Consumer:         consumer,
		Workers:          1,
		DeadLetter:       stream + ":dead",
		DeadLetterMaxLen: 100_000,
		Batch:            64,
		Block:            2 * time.Second,
		ClaimMinIdle:     30 * time.Second,
		ClaimInterval:    5 * time.Second,
		MaxDeliveries:    10,
		ForgetAfter:      time.Hour,
		Retry:            backoff.DefaultPolicy(),
		Component:        "stream-reader",
		Outcomes:         []string{OutcomeHandled},
	}
}

// Validate reports a setting that cannot work.
func (c ReaderConfig) Validate() error {
	var errs []error
	check := func(ok bool, msg string) {
		if !ok {
			errs = append(errs, fmt.Errorf("reader of %q: %s", c.Stream, msg))
		}
	}
	check(c.Stream != "", "stream must be set")
	check(c.Group != "", "group must be set")
	check(c.Consumer != "", "consumer name must be set")
	check(c.DeadLetter != "" && c.DeadLetter != c.Stream, "dead-letter stream must be set and differ from the stream")
	check(c.DeadLetterMaxLen > 0, "dead-letter max length must be positive")
	check(c.Workers > 0, "workers must be positive")
	check(c.Batch > 0 && c.Batch <= 10_000, "batch must be in 1..10000")
	check(c.Block > 0, "block must be positive")
	check(c.ClaimMinIdle > 0, "claim min idle must be positive")
	check(c.ClaimInterval > 0, "claim interval must be positive")
	check(c.MaxDeliveries > 1, "max deliveries must be at least 2")
	check(c.ForgetAfter > 0, "forget after must be positive")
	check(c.Retry.Validate() == nil, "retry needs 0 < initial <= max")
	return errors.Join(errs...)
}

// Outcomes counted by the <Metrics>.events metric besides the handler's.
const (
	// OutcomeHandled is the outcome of a Result that names none.
	OutcomeHandled = "handled"
	// OutcomeDeadLetter counts entries copied to the dead-letter stream.
	OutcomeDeadLetter = "dead_letter"
	// OutcomeFailed counts entries left pending after a handler error.
	OutcomeFailed = "failed"
)

// Result is what became of one entry of a batch.
type Result struct {
	// Err is nil when the entry's work is durable (it is acknowledged). An
	// error for which IsPermanent holds sends the entry to the dead-letter
	// stream with the error as reason; any other leaves it pending, to be
	// delivered again.
	Err error
	// Outcome names a handled entry in the events metric ("applied",
	// "duplicate"); empty means OutcomeHandled.
	Outcome string
}

// Handler handles a batch of entries and returns one Result per entry, in
// order. It must be idempotent (see Reader). Its ctx outlives shutdown by
// up to handleTimeout.
type Handler func(ctx context.Context, msgs []redis.XMessage) []Result

// permanent marks an error with which an entry can never be handled.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as one that handling the entry again will not
// change: the entry goes to the dead-letter stream with err's message.
func Permanent(err error) error { return permanent{err} }

// IsPermanent reports whether err was marked by Permanent or wraps
// ErrMalformed.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p) || errors.Is(err, ErrMalformed)
}

// Reader reads a stream through a consumer group and hands its entries to
// a Handler; see the guarantees at the top of this file.
type Reader struct {
	rdb    redis.UniversalClient
	cfg    ReaderConfig
	handle Handler
	log    *slog.Logger
	report func(component string, err error)
	events metric.Int64Counter
}

// NewReader returns a reader, or an error if cfg is not valid. meter receives the
// metrics named by cfg.Metrics (nil: none). report receives the result of
// every step of every worker (nil after a successful one); nil ignores
// them.
func NewReader(rdb redis.UniversalClient, cfg ReaderConfig, handle Handler, log *slog.Logger, meter metric.Meter, report func(component string, err error)) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if report == nil {
		report = func(string, error) {}
	}
	if meter == nil || cfg.Metrics == "" {
		meter = noop.NewMeterProvider().Meter("")
	}
	r := &Reader{rdb: rdb, cfg: cfg, handle: handle, log: log, report: report}
	events, err := meter.Int64Counter(cfg.Metrics+".events",
		metric.WithDescription("Entries of stream "+cfg.Stream+" handled, by outcome: "+strings.Join(append(cfg.Outcomes[:len(cfg.Outcomes):len(cfg.Outcomes)], OutcomeDeadLetter, OutcomeFailed+" (left pending)"), ", ")),
		metric.WithUnit("{event}"))
	if err != nil {
		return nil, fmt.Errorf("reader metrics: %w", err)
	}
	r.events = events
	// Every outcome's series exists from the start, so an alert on dead
	// letters sees the first one as an increase.
	for _, o := range append(cfg.Outcomes[:len(cfg.Outcomes):len(cfg.Outcomes)], OutcomeDeadLetter, OutcomeFailed) {
		events.Add(context.Background(), 0, metric.WithAttributes(attribute.String("outcome", o)))
	}
	if cfg.Metrics != "" {
		if err := r.registerGroupMetrics(meter); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// registerGroupMetrics exports the group's backlog, read from Redis (XINFO
// GROUPS) when the metrics are collected, so every instance reports the
// same group-wide numbers (alerts take the max over instances):
// <Metrics>.lag, entries the group has not read yet (absent while Redis
// cannot compute it, after deletions in the stream), and
// <Metrics>.pending, entries read but not yet acknowledged. While Redis
// does not answer, both are absent.
func (r *Reader) registerGroupMetrics(m metric.Meter) error {
	lag, err := m.Int64ObservableGauge(r.cfg.Metrics+".lag", metric.WithUnit("{event}"),
		metric.WithDescription("Entries of stream "+r.cfg.Stream+" the consumer group has not read yet (XINFO GROUPS lag)."))
	if err != nil {
		return fmt.Errorf("reader metrics: %w", err)
	}
	pending, err := m.Int64ObservableGauge(r.cfg.Metrics+".pending", metric.WithUnit("{event}"),
		metric.WithDescription("Entries of stream "+r.cfg.Stream+" delivered to a consumer and not yet acknowledged (XINFO GROUPS pending)."))
	if err != nil {
		return fmt.Errorf("reader metrics: %w", err)
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, groupInfoTimeout)
		defer cancel()
		groups, err := r.rdb.XInfoGroups(ctx, r.cfg.Stream).Result()
		if err != nil {
			return nil // no stream or group yet, or Redis unavailable: no sample
		}
		for _, g := range groups {
			if g.Name != r.cfg.Group {
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
		return fmt.Errorf("reader metrics: %w", err)
	}
	return nil
}

// Run creates the consumer group if needed and runs cfg.Workers read
// loops until ctx is done. It returns nil once ctx is done.
func (r *Reader) Run(ctx context.Context) error {
	bo := backoff.New(r.cfg.Retry)
	for {
		err := r.EnsureGroup(ctx)
		r.report(r.cfg.Component+" "+r.cfg.Consumer, err)
		if err == nil {
			break
		}
		r.pause(ctx, bo, r.cfg.Consumer, "create consumer group", err)
		if ctx.Err() != nil {
			return nil
		}
	}
	var wg sync.WaitGroup
	for i := range r.cfg.Workers {
		wg.Go(func() { r.loop(ctx, fmt.Sprintf("%s-%d", r.cfg.Consumer, i)) })
	}
	wg.Wait()
	return nil
}

// EnsureGroup creates the group at the start of the stream (and the
// stream), so that entries published before the first reader ran are
// handled too. An existing group is left as it is.
func (r *Reader) EnsureGroup(ctx context.Context) error {
	err := r.rdb.XGroupCreateMkStream(ctx, r.cfg.Stream, r.cfg.Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create consumer group %s on %s: %w", r.cfg.Group, r.cfg.Stream, err)
	}
	return nil
}

// loop is one worker: it takes over stale entries now and then and reads
// new ones in between.
func (r *Reader) loop(ctx context.Context, name string) {
	bo := backoff.New(r.cfg.Retry)
	component := r.cfg.Component + " " + name
	var lastClaim time.Time
	for ctx.Err() == nil {
		step, err := r.step(ctx, name, &lastClaim)
		if ctx.Err() != nil {
			return
		}
		r.report(component, err)
		if err != nil {
			r.pause(ctx, bo, name, step, err)
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
func (r *Reader) step(ctx context.Context, name string, lastClaim *time.Time) (string, error) {
	step, err := r.steps(ctx, name, lastClaim)
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		err = errors.Join(err, r.EnsureGroup(ctx))
	}
	return step, err
}

func (r *Reader) steps(ctx context.Context, name string, lastClaim *time.Time) (string, error) {
	if time.Since(*lastClaim) >= r.cfg.ClaimInterval {
		*lastClaim = time.Now()
		if err := r.claim(ctx, name); err != nil {
			return "claim stale entries", err
		}
	}
	msgs, err := r.Read(ctx, name)
	if err != nil {
		return "read entries", err
	}
	if err := r.Process(ctx, msgs); err != nil {
		return "handle entries", err
	}
	return "", nil
}

// pause logs a failed step and waits for the backoff delay before the
// next one. Transient Redis errors are warnings; others (a bug, a
// misconfiguration) are errors, retried all the same.
func (r *Reader) pause(ctx context.Context, bo *backoff.Backoff, name, step string, err error) {
	if ctx.Err() != nil {
		return
	}
	d := bo.Next()
	level := slog.LevelError
	if redisconn.Transient(err) {
		level = slog.LevelWarn
	}
	r.log.Log(ctx, level, "stream reader step failed", "component", r.cfg.Component, "stream", r.cfg.Stream,
		"step", step, "consumer", name, "err", err, "failures", bo.Failures(), "retry_in", d)
	_ = backoff.Sleep(ctx, d) // ends early only at shutdown
}

// Read reads up to Batch new entries for the consumer name, waiting up to
// Block for them. The entries are pending for name until acknowledged.
func (r *Reader) Read(ctx context.Context, name string) ([]redis.XMessage, error) {
	streams, err := r.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group:    r.cfg.Group,
		Consumer: name,
		Streams:  []string{r.cfg.Stream, ">"},
		Count:    int64(r.cfg.Batch),
		Block:    r.cfg.Block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.cfg.Stream, err)
	}
	if len(streams) == 0 {
		return nil, nil
	}
	return streams[0].Messages, nil
}

// claim retires undeliverable entries, removes departed consumers, and
// takes over and handles every entry idle for at least ClaimMinIdle.
func (r *Reader) claim(ctx context.Context, name string) error {
	if err := r.retire(ctx, name); err != nil {
		return err
	}
	if err := r.Forget(ctx, name, r.cfg.ForgetAfter); err != nil {
		return err
	}
	start := "0-0"
	for {
		msgs, next, err := r.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream:   r.cfg.Stream,
			Group:    r.cfg.Group,
			Consumer: name,
			MinIdle:  r.cfg.ClaimMinIdle,
			Start:    start,
			Count:    int64(r.cfg.Batch),
		}).Result()
		if err != nil {
			return fmt.Errorf("claim stale entries of %s: %w", r.cfg.Stream, err)
		}
		if len(msgs) > 0 {
			r.log.InfoContext(ctx, "claimed stale stream entries", "component", r.cfg.Component, "consumer", name, "stream", r.cfg.Stream, "count", len(msgs))
			if err := r.Process(ctx, msgs); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// Forget removes from the group the consumers other than self that have
// been silent for at least minIdle and hold nothing, so that the group
// does not grow with every restart of an instance under a new name. Those
// with pending entries stay until their entries are taken over.
func (r *Reader) Forget(ctx context.Context, self string, minIdle time.Duration) error {
	consumers, err := r.rdb.XInfoConsumers(ctx, r.cfg.Stream, r.cfg.Group).Result()
	if err != nil {
		return fmt.Errorf("list consumers of group %s: %w", r.cfg.Group, err)
	}
	for _, g := range consumers {
		if g.Name == self || g.Pending > 0 || g.Idle < minIdle {
			continue
		}
		if err := r.rdb.XGroupDelConsumer(ctx, r.cfg.Stream, r.cfg.Group, g.Name).Err(); err != nil {
			return fmt.Errorf("remove consumer %s: %w", g.Name, err)
		}
		r.log.InfoContext(ctx, "removed departed stream consumer", "component", r.cfg.Component, "stream", r.cfg.Stream, "consumer", g.Name, "idle", g.Idle)
	}
	return nil
}

// retire dead-letters and acknowledges the idle entries that were
// delivered MaxDeliveries times already.
func (r *Reader) retire(ctx context.Context, name string) error {
	pending, err := r.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: r.cfg.Stream,
		Group:  r.cfg.Group,
		Idle:   r.cfg.ClaimMinIdle,
		Start:  "-",
		End:    "+",
		Count:  int64(r.cfg.Batch),
	}).Result()
	if err != nil {
		return fmt.Errorf("list pending entries of %s: %w", r.cfg.Stream, err)
	}
	var ids []string
	for _, p := range pending {
		if p.RetryCount >= int64(r.cfg.MaxDeliveries) {
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// Take them over first, so that no other reader retires them too.
	msgs, err := r.rdb.XClaim(ctx, &redis.XClaimArgs{
		Stream:   r.cfg.Stream,
		Group:    r.cfg.Group,
		Consumer: name,
		MinIdle:  r.cfg.ClaimMinIdle,
		Messages: ids,
	}).Result()
	if err != nil {
		return fmt.Errorf("claim undeliverable entries of %s: %w", r.cfg.Stream, err)
	}
	if len(msgs) == 0 {
		return nil
	}
	reasons := make([]string, len(msgs))
	done := make([]string, len(msgs))
	for i, m := range msgs {
		reasons[i] = fmt.Sprintf("not handled after %d deliveries (see the %s log)", r.cfg.MaxDeliveries, r.cfg.Component)
		done[i] = m.ID
	}
	if err := r.deadLetter(ctx, msgs, reasons); err != nil {
		return err
	}
	if err := r.rdb.XAck(ctx, r.cfg.Stream, r.cfg.Group, done...).Err(); err != nil {
		return fmt.Errorf("acknowledge %d undeliverable entries: %w", len(done), err)
	}
	return nil
}

// Process hands a batch of entries to the handler, dead-letters those it
// found permanently unhandleable and acknowledges those done (handled or
// dead-lettered). It returns the errors of the entries left pending (one
// of each, joined); they are delivered again after ClaimMinIdle.
func (r *Reader) Process(ctx context.Context, msgs []redis.XMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	// A batch that was read is finished even when shutdown begins, so that
	// its entries need not wait ClaimMinIdle for another reader.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleTimeout)
	defer cancel()
	results := r.handle(ctx, msgs)
	if len(results) != len(msgs) {
		return fmt.Errorf("handler of %s returned %d results for %d entries", r.cfg.Stream, len(results), len(msgs))
	}
	done := make([]string, 0, len(msgs))
	var dead []redis.XMessage
	var reasons []string
	var errs []error
	counts := map[string]int64{}
	for i, res := range results {
		switch {
		case res.Err == nil:
			o := res.Outcome
			if o == "" {
				o = OutcomeHandled
			}
			counts[o]++
			done = append(done, msgs[i].ID)
		case IsPermanent(res.Err):
			dead = append(dead, msgs[i])
			reasons = append(reasons, res.Err.Error())
		default:
			counts[OutcomeFailed]++
			// A batch often fails as a whole (Redis down): one of each error.
			if len(errs) == 0 || errs[len(errs)-1] != res.Err {
				errs = append(errs, res.Err)
			}
		}
	}
	if len(dead) > 0 {
		if err := r.deadLetter(ctx, dead, reasons); err != nil {
			errs = append(errs, err)
		} else {
			for _, m := range dead {
				done = append(done, m.ID)
			}
		}
	}
	for o, n := range counts {
		r.events.Add(ctx, n, metric.WithAttributes(attribute.String("outcome", o)))
	}
	if len(done) > 0 {
		if err := r.rdb.XAck(ctx, r.cfg.Stream, r.cfg.Group, done...).Err(); err != nil {
			errs = append(errs, fmt.Errorf("acknowledge %d entries of %s: %w", len(done), r.cfg.Stream, err))
		}
	}
	return errors.Join(errs...)
}

// deadLetter copies entries that cannot be handled to the dead-letter
// stream.
func (r *Reader) deadLetter(ctx context.Context, msgs []redis.XMessage, reasons []string) error {
	pipe := r.rdb.Pipeline()
	for i, m := range msgs {
		// The entry's own fields are kept as they are, so an operator can
		// publish a fixed copy again.
		values := []any{"dead_reason", reasons[i], "dead_stream", r.cfg.Stream, "dead_id", m.ID}
		for k, v := range m.Values {
			if !strings.HasPrefix(k, "dead_") {
				values = append(values, k, v)
			}
		}
		pipe.XAdd(ctx, &redis.XAddArgs{
			Stream: r.cfg.DeadLetter,
			MaxLen: int64(r.cfg.DeadLetterMaxLen),
			Approx: true,
			Values: values,
		})
		r.log.WarnContext(ctx, "stream entry dead-lettered", "component", r.cfg.Component, "stream", r.cfg.Stream, "id", m.ID, "reason", reasons[i])
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("dead-letter %d entries of %s: %w", len(msgs), r.cfg.Stream, err)
	}
	r.events.Add(ctx, int64(len(msgs)), metric.WithAttributes(attribute.String("outcome", OutcomeDeadLetter)))
	return nil
}
