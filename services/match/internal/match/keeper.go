package match

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// KeeperConfig tunes the Keeper.
type KeeperConfig struct {
	// Owner identifies this instance among the keepers (unique per
	// process; the keeper adds a random suffix per run).
	Owner string
	// Interval between scans; every scan starts with a heartbeat that
	// renews this instance's range leases.
	Interval time.Duration
	// LeaseTTL is how long a range lease (and the instance's announcement)
	// outlives its holder's last renewal: the longest time a range goes
	// unserved after its holder dies, less one Interval.
	LeaseTTL time.Duration
	// LeaseMargin is how long before a lease's expiry the holder stops
	// working its range, by its own clock counted from the moment it sent
	// the renewal: it covers the drift between that clock and the Redis
	// server's, and the delay of a command sent just before the end.
	LeaseMargin time.Duration
	// Batch bounds the deadlines and outbox entries taken per partition per scan.
	Batch int
	// Workers bounds concurrent flag operations.
	Workers int
	// Retry spaces out the scans after a failed one (Redis unreachable).
	Retry backoff.Policy
	// MaxLag is how late a scan may finish after it was due before it
	// counts against the instance: after a few such scans in a row it
	// gives its ranges to the other instances (keeper_lag.go). 0 never.
	MaxLag time.Duration
}

// DefaultKeeperConfig returns the production defaults: with them a deadline
// is processed within Interval after it passes while its range's holder
// lives, and within LeaseTTL+Interval after the holder dies.
func DefaultKeeperConfig(owner string) KeeperConfig {
	return KeeperConfig{Owner: owner, Interval: 200 * time.Millisecond, LeaseTTL: 800 * time.Millisecond,
		LeaseMargin: 100 * time.Millisecond, Batch: 200, Workers: 16, Retry: backoff.DefaultPolicy(),
		MaxLag: 500 * time.Millisecond}
}

// Validate reports settings the keeper cannot work with.
func (c KeeperConfig) Validate() error {
	switch {
	case c.Owner == "":
		return errors.New("keeper owner is empty")
	case c.Interval <= 0 || c.LeaseMargin <= 0 || c.LeaseTTL < 2*c.Interval+c.LeaseMargin:
		// Two renewals fit in a lease's working time, so one slow or
		// failed heartbeat does not stop the work.
		return fmt.Errorf("keeper interval %v, lease TTL %v and margin %v: need positive interval and margin, and 2*interval + margin <= TTL",
			c.Interval, c.LeaseTTL, c.LeaseMargin)
	case c.Batch < 1 || c.Workers < 1:
		return errors.New("keeper batch and workers must be positive")
	case c.MaxLag < 0:
		return fmt.Errorf("keeper max lag %v: must not be negative", c.MaxLag)
	}
	if err := c.Retry.Validate(); err != nil {
		return fmt.Errorf("keeper retry: %w", err)
	}
	return nil
}

// Keeper is the background work of the match service: it flags players
// whose clock deadline passed (even if no client calls again, and
// whichever instance served the match) and relays MatchFinished records
// from the partition outboxes to the global stream.
//
// The work is split into store.KeeperRanges ranges of partitions, each
// leased to one running instance (docs/match.md, "The keeper"): every
// instance announces itself, aims at its share of the ranges, gives back
// what exceeds it when others arrive and takes free ranges (released or
// lapsed) up to it. An instance works a range only while its lease is
// valid by its own clock, with a margin. Correctness never rests on the
// leases alone: flags are versioned commits that re-check the deadline on
// fresh state, and relayed records are deduplicated by consumers, so two
// instances on one range (a paused process, a stepped clock, a Redis
// failover) duplicate effort, not effects.
type Keeper struct {
	svc    *Service
	cfg    KeeperConfig
	log    *slog.Logger
	report func(component string, err error)
	// id is the owner name in the membership and the leases: cfg.Owner
	// and a random suffix, so that two keepers in one process (tests) or a
	// restarted process never mistake the other's leases for their own.
	id string
	// ranges is the number of ranges this instance holds
	// (match_keeper_ranges_held: summed over instances it should be
	// store.KeeperRanges); lost counts the heartbeats that found leases of
	// this instance taken over by another instance (reason "taken") or
	// lapsed and free (reason "lapsed": taken back at once)
	// (match_keeper_lease_lost_total).
	ranges metric.Int64Gauge
	lost   metric.Int64Counter
	// unconfirmed counts the partitions whose outbox a scan held back
	// because the replicas did not confirm it (store.Relay)
	// (match_keeper_relay_unconfirmed_total).
	unconfirmed metric.Int64Counter

	// Owned by Run's goroutine: the lease value held per range ("" for
	// none), and until when they may be worked (monotonic clock).
	held       [store.KeeperRanges]string
	validUntil time.Time
	// turn is where in its partitions the next scan starts.
	turn int
	// lag judges whether this instance is too slow to hold ranges.
	lag lagWatch
	// creditedTo is, per range, the end of the last outage of every
	// instance credited in it by this keeper: the same outage is not
	// given twice when the range lapses and is taken back twice in it.
	creditedTo [store.KeeperRanges]time.Time
}

// scanStride is how far on each scan starts from the last one: the
// partitions store.Scan reads in one round trip.
const scanStride = 32

// The reasons of match_keeper_lease_lost_total.
var (
	lostTaken  = metric.WithAttributes(attribute.String("reason", "taken"))
	lostLapsed = metric.WithAttributes(attribute.String("reason", "lapsed"))
)

// NewKeeper returns a Keeper for the service. report receives the result
// of every scan, as component "keeper" (nil after a successful one); the
// service passes its health's Report, so an instance whose keeper cannot
// work is reported not ready. A nil report ignores the results. mp
// receives the keeper's metrics; nil means none.
func NewKeeper(svc *Service, cfg KeeperConfig, log *slog.Logger, report func(component string, err error), mp metric.MeterProvider) (*Keeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if report == nil {
		report = func(string, error) {}
	}
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("github.com/fourkingdoms/fourkingdoms/services/match/internal/match")
	ranges, err := m.Int64Gauge("match.keeper.ranges.held",
		metric.WithDescription(fmt.Sprintf("Partition ranges (of %d) whose keeper lease this instance holds: it flags their overdue clocks and relays their finished matches.", store.KeeperRanges)))
	if err != nil {
		return nil, fmt.Errorf("keeper metrics: %w", err)
	}
	lost, err := m.Int64Counter("match.keeper.lease.lost",
		metric.WithDescription("Heartbeats of this instance that found range leases it held taken over by another instance (reason taken) or lapsed (reason lapsed): a pause or Redis trouble longer than the lease TTL."))
	if err != nil {
		return nil, fmt.Errorf("keeper metrics: %w", err)
	}
	unconfirmed, err := m.Int64Counter("match.keeper.relay.unconfirmed",
		metric.WithDescription("Partitions whose outbox a keeper scan did not relay because fewer than MATCH_WAIT_REPLICAS replicas confirmed it within MATCH_WAIT_TIMEOUT (or the rest of the scan's time): a replica lags or is gone; the entries are relayed by a later scan."))
	if err != nil {
		return nil, fmt.Errorf("keeper metrics: %w", err)
	}
	lag, err := newLagWatch(m)
	if err != nil {
		return nil, err
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:]) // crypto/rand.Read never fails on supported platforms
	lost.Add(context.Background(), 0, lostTaken)
	lost.Add(context.Background(), 0, lostLapsed)
	ranges.Record(context.Background(), 0)
	unconfirmed.Add(context.Background(), 0)
	svc.outages.setMin(outageMin * cfg.Interval)
	return &Keeper{svc: svc, cfg: cfg, log: log, report: report, ranges: ranges, lost: lost, unconfirmed: unconfirmed, lag: lag,
		id: cfg.Owner + "/" + hex.EncodeToString(suffix[:])}, nil
}

// Run works until ctx is cancelled, then releases its leases and leaves the
// membership, so that the other instances take its ranges over at their
// next scan. It never gives up: after a failed scan (heartbeat, deadline
// scan or outbox relay could not reach Redis) it reports the error and
// tries again after a backoff delay instead of the interval.
func (k *Keeper) Run(ctx context.Context) error {
	t := time.NewTimer(0) // announce at once: the others make room sooner
	defer t.Stop()
	bo := backoff.New(k.cfg.Retry)
	due := time.Now() // when the timer was set to fire
	for {
		select {
		case <-ctx.Done():
			k.leave(context.WithoutCancel(ctx))
			return nil
		case <-t.C:
		}
		start := time.Now()
		// A scan under way when ctx ends is finished, not cut short: a
		// relay interrupted between its copy and its delete would be
		// copied again by the next holder (a duplicate record), and the
		// leases are released only after the scan. The scan's work stops
		// when the leases' validity ends anyway, so this waits at most a
		// lease TTL.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.cfg.LeaseTTL)
		renewed, err := k.pass(sctx, due)
		cancel()
		if ctx.Err() != nil {
			continue // the select above releases the leases and returns
		}
		k.report("keeper", err)
		// Scans start every interval, as with a ticker, unless the
		// heartbeat failed. Other failures (some partitions unreadable
		// while their master fails over) do not slow the scans: backing
		// off then let the leases lapse, and the scans that see the
		// partitions back are the ones that credit their outage
		// (outage.go).
		next := max(k.cfg.Interval-time.Since(start), 0)
		switch {
		case err != nil && !renewed:
			next = bo.Next()
			k.log.Warn("keeper scan failed", "err", err, "failures", bo.Failures(), "retry_in", next)
		case err != nil:
			bo.Reset()
			k.log.Warn("keeper scan incomplete", "err", err)
		default:
			bo.Reset()
		}
		t.Reset(next)
		due = time.Now().Add(next)
	}
}

// leave releases every lease held and leaves the membership.
func (k *Keeper) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	held := map[int]string{}
	for r, v := range k.held {
		if v != "" {
			held[r] = v
		}
	}
	k.held = [store.KeeperRanges]string{}
	k.svc.outages.drop(func(_ int, ps *partState) bool { return ps.kept })
	k.ranges.Record(ctx, 0)
	if _, err := k.svc.store.ReleaseRanges(ctx, k.id, held, true); err != nil {
		k.log.Warn("keeper ranges not released: they lapse after the lease TTL", "err", err)
	}
	if err := k.svc.store.ForgetServed(ctx, slices.Collect(maps.Keys(held))); err != nil {
		k.log.Warn("keeper ranges' served notes not dropped: their next holder may credit an outage", "err", err)
	}
}

// scan renews the leases (one heartbeat), rebalances, and works the
// ranges held. It reports whether the heartbeat went through.
func (k *Keeper) scan(ctx context.Context) (bool, error) {
	st := k.svc.store
	sent := time.Now()
	m, err := st.Heartbeat(ctx, k.id, &k.held, k.cfg.LeaseTTL)
	if err != nil {
		// Whether the leases were renewed is unknown: they are worked no
		// more after validUntil, and lapse in Redis after their TTL.
		if !time.Now().Before(k.validUntil) {
			k.ranges.Record(ctx, 0)
		}
		return false, err
	}
	// An outage of every instance is recorded by the first that is back
	// (outage.go); the ranges' new holders give its time back.
	if err := st.Alive(ctx, k.svc.clockNow(), k.cfg.LeaseTTL+k.cfg.Interval); err != nil {
		k.log.Warn("keeper could not note itself alive", "err", err)
	}
	// Every lease renewed (or taken) below was set in Redis after sent, so
	// it lives there until at least sent+TTL by the server's clock.
	k.validUntil = sent.Add(k.cfg.LeaseTTL - k.cfg.LeaseMargin)

	k.lag.others = len(m.Members) - 1
	var mine []int
	taken, lapsed := 0, 0
	for r, v := range k.held {
		switch {
		case v == "":
		case m.Leases[r] == "":
			// Taken back at once below: what the scans knew of its
			// partitions stays, unless it is not (forgotten there).
			k.held[r] = ""
			lapsed++
		case m.Leases[r] != v:
			k.held[r] = ""
			k.forget(r)
			taken++
		default:
			mine = append(mine, r)
		}
	}
	if taken > 0 {
		k.lost.Add(ctx, 1, lostTaken)
	}
	if lapsed > 0 {
		k.lost.Add(ctx, 1, lostLapsed)
	}
	lost := taken + lapsed
	if lost > 0 {
		k.log.Warn("keeper range leases lost", "taken_over", taken, "lapsed", lapsed)
	}

	var errs []error
	// The partitions' outage notes (outage.go), before any range taken
	// below is credited or scanned: an outage that the range's last
	// holder saw begin is credited by this one, and moves on this
	// instance do not pay one its keeper saw.
	if notes, err := st.OutageNotes(ctx); err != nil {
		errs = append(errs, err)
	} else {
		k.svc.outages.learn(notes, func(p int) bool { return k.held[p*store.KeeperRanges/store.Partitions] != "" })
	}
	before := len(mine)
	switch target := share(store.KeeperRanges, m.Members, k.id); {
	case len(mine) > target:
		// Others arrived: give the highest ranges back (they are worked
		// no more from now on, whatever the release's outcome).
		give := map[int]string{}
		for _, r := range mine[target:] {
			give[r] = k.held[r]
			k.held[r] = ""
			k.forget(r)
		}
		mine = mine[:target]
		if _, err := st.ReleaseRanges(ctx, k.id, give, false); err != nil {
			errs = append(errs, err)
		}
		if err := st.ForgetServed(ctx, slices.Collect(maps.Keys(give))); err != nil {
			errs = append(errs, err)
		}
	case len(mine) < target:
		got, err := st.AcquireRanges(ctx, k.id, freeRanges(m, k.id), target-len(mine), k.cfg.LeaseTTL)
		if err != nil {
			errs = append(errs, err)
		}
		for r, v := range got {
			k.held[r] = v
			mine = append(mine, r)
		}
		slices.Sort(mine)
		// Before the new ranges' deadlines are looked at: give back the
		// time an outage took (outage.go).
		if err := k.creditOutages(ctx, slices.Collect(maps.Keys(got))); err != nil {
			errs = append(errs, err)
		}
	}
	if err := st.MarkServed(ctx, mine, k.svc.clockNow()); err != nil {
		errs = append(errs, err)
	}
	// What the scans found of each partition of the ranges held
	// (outage.go) is dropped when a range is let go or lost: a range that
	// lapsed is known here until another instance holds it, what happened
	// to it then is not seen by this one. What failed MakeMoves showed
	// (not kept) stays.
	k.svc.outages.drop(func(p int, ps *partState) bool {
		r := p * store.KeeperRanges / store.Partitions
		return ps.kept && k.held[r] == "" && m.Leases[r] != ""
	})
	k.ranges.Record(ctx, int64(len(mine)))
	if len(mine) != before || lost > 0 {
		k.log.Info("keeper ranges changed", "held", mine, "instances", len(m.Members))
	}
	if len(mine) > 0 {
		var parts []int
		for _, r := range mine {
			parts = append(parts, store.RangePartitions(r)...)
		}
		// The ranges are worked only while the leases are valid, and a
		// scan stops halfway through that time, so that the next
		// heartbeat renews the leases well before they expire; what a
		// scan cut short left (deadlines, outbox entries) stays for the
		// next one.
		//
		// A scan cut short that way is no failure: the next one starts
		// after the interval, not after a growing backoff (which, on a
		// loaded machine whose scans all ran long, delayed flags by
		// seconds and let the leases lapse). It starts a chunk further
		// on, so that no partition waits behind others for ever.
		k.turn = (k.turn + scanStride) % len(parts)
		parts = slices.Concat(parts[k.turn:], parts[:k.turn])
		wctx, cancel := context.WithDeadline(ctx, sent.Add((k.cfg.LeaseTTL-k.cfg.LeaseMargin)/2))
		if err := k.tick(wctx, parts); err != nil {
			if ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
				k.log.Debug("keeper scan cut short at the end of its time", "err", err)
			} else {
				errs = append(errs, err)
			}
		}
		cancel()
	}
	return true, errors.Join(errs...)
}

// creditOutages gives back, in the matches of the ranges just taken, the
// time of the last outage of every instance (outage.go), from when each
// range was last served: nobody could move in them then. A range whose
// holder alone died (the others went on accepting moves) was served after
// the last outage, or released, and gets nothing. A partition that this
// keeper's scans saw fail before (its leases lapsed in a failover and it
// takes them back) is left to the scan that reads it again, which credits
// the whole of its outage once.
func (k *Keeper) creditOutages(ctx context.Context, ranges []int) error {
	st := k.svc.store
	served, err := st.LastServed(ctx, ranges)
	if err != nil || len(served) == 0 {
		return err
	}
	outFrom, outTo, err := st.LastOutage(ctx)
	if err != nil || outTo.IsZero() {
		return err
	}
	var errs []error
	for r, last := range served {
		from := last
		if outFrom.After(from) {
			from = outFrom
		}
		if !outTo.After(from) || !outTo.After(k.creditedTo[r]) {
			continue // no outage, or this one was credited (a range that lapsed twice in it)
		}
		k.creditedTo[r] = outTo
		k.log.Warn("keeper range was not served during an outage: crediting the clocks to move", "range", r, "outage", outTo.Sub(from))
		for _, p := range store.RangePartitions(r) {
			if k.svc.outages.failedNow(p) {
				continue
			}
			ids, err := st.Running(ctx, p, int64(k.cfg.Batch)*100)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, id := range ids {
				if _, err := k.svc.creditOutage(ctx, id, window{from: from, to: outTo}); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// share returns how many of n ranges the member owner aims to hold: the
// members, sorted by name, split them as evenly as possible, the first
// n mod len(members) holding one more. The shares add up to n, so once
// every member holds its share no range is free and none is held twice.
func share(n int, members []string, owner string) int {
	i, found := slices.BinarySearch(members, owner)
	if !found {
		return 0
	}
	q, extra := n/len(members), n%len(members)
	if i < extra {
		return q + 1
	}
	return q
}

// freeRanges lists the free ranges of m, starting at a place that depends
// on owner's rank, so instances taking ranges at once mostly ask for
// different ones (the script settles any overlap).
func freeRanges(m store.Membership, owner string) []int {
	i, _ := slices.BinarySearch(m.Members, owner)
	start := i * store.KeeperRanges / max(len(m.Members), 1)
	var free []int
	for j := range store.KeeperRanges {
		if r := (start + j) % store.KeeperRanges; m.Leases[r] == "" {
			free = append(free, r)
		}
	}
	return free
}

// tick does one scan of the given partitions: flags due clocks and relays
// outbox entries. It returns the errors of the scan and of the relays
// (flags that fail are logged and retried by the next scan: their
// deadlines stay).
func (k *Keeper) tick(ctx context.Context, partitions []int) error {
	st := k.svc.store
	now := k.svc.clockNow()
	budget := time.Duration(math.MaxInt64)
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d)
	}
	due, scanErr := st.Scan(ctx, partitions, now, k.cfg.Batch)
	// Before any flag: give back the time of the partitions' outages that
	// this scan saw end (outage.go).
	held := k.noteScan(ctx, partitions, now, budget, scanErr)
	if scanErr != nil {
		scanErr = fmt.Errorf("keeper scan incomplete: %w", scanErr)
	}
	var (
		mu          sync.Mutex // guards the two below
		relayErrs   []error
		unconfirmed []int
	)
	sem := make(chan struct{}, k.cfg.Workers)
	var wg sync.WaitGroup
	for _, d := range due {
		for _, id := range d.Matches {
			if held(d.Partition, id) {
				continue
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				k.flag(ctx, id)
			})
		}
		for _, id := range d.Presence {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := k.svc.CheckPresence(ctx, id); err != nil && ctx.Err() == nil {
					k.log.Warn("presence check failed", "match", id, "err", err)
				}
			})
		}
		if len(d.Outbox) == 0 {
			continue
		}
		// Relays run beside the flags: with replicas to wait for, each
		// may wait for its barrier's WAIT (store.Relay), and one lagging
		// master must not hold back the partitions of the others.
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := st.Relay(ctx, d.Partition, d.Outbox)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, store.ErrNotReplicated):
				// Not a failure of the keeper: the entries wait in the
				// outbox until the replicas hold them.
				unconfirmed = append(unconfirmed, d.Partition)
			case err != nil:
				relayErrs = append(relayErrs, fmt.Errorf("outbox relay of partition %v: %w", d.Partition, err))
			}
		})
	}
	wg.Wait()
	if len(unconfirmed) > 0 {
		k.unconfirmed.Add(ctx, int64(len(unconfirmed)))
		slices.Sort(unconfirmed)
		k.log.Warn("keeper held back outbox entries the replicas have not confirmed", "partitions", unconfirmed)
	}
	return errors.Join(scanErr, errors.Join(relayErrs...))
}

func (k *Keeper) flag(ctx context.Context, id string) {
	flagged, err := k.svc.Flag(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		if err := k.svc.store.RemoveDeadline(ctx, id); err != nil && ctx.Err() == nil {
			k.log.Warn("stale deadline not removed", "match", id, "err", err)
		}
	case err != nil:
		if ctx.Err() == nil {
			k.log.Warn("flag failed", "match", id, "err", err)
		}
	case flagged:
		k.log.Info("clock flagged", "match", id)
	}
}
