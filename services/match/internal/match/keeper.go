package match

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
)

// KeeperConfig tunes the Keeper.
type KeeperConfig struct {
	// Owner identifies this instance in the lease (unique per process).
	Owner string
	// Interval between scans.
	Interval time.Duration
	// LeaseTTL is how long the lease outlives its holder's last renewal: the
	// longest time deadlines go unprocessed after the holder dies.
	LeaseTTL time.Duration
	// Batch bounds the deadlines and outbox entries taken per partition per scan.
	Batch int
	// Workers bounds concurrent flag operations.
	Workers int
	// Retry spaces out the scans after a failed one (Redis unreachable).
	Retry backoff.Policy
}

// DefaultKeeperConfig returns the production defaults: with them a deadline
// is processed within Interval after it passes while the lease holder lives,
// and within LeaseTTL+Interval after the holder dies.
func DefaultKeeperConfig(owner string) KeeperConfig {
	return KeeperConfig{Owner: owner, Interval: 200 * time.Millisecond, LeaseTTL: 800 * time.Millisecond, Batch: 200, Workers: 16,
		Retry: backoff.DefaultPolicy()}
}

// Validate reports settings the keeper cannot work with.
func (c KeeperConfig) Validate() error {
	switch {
	case c.Owner == "":
		return errors.New("keeper owner is empty")
	case c.Interval <= 0 || c.LeaseTTL <= 2*c.Interval:
		return fmt.Errorf("keeper interval %v and lease TTL %v: need 0 < 2*interval < TTL", c.Interval, c.LeaseTTL)
	case c.Batch < 1 || c.Workers < 1:
		return errors.New("keeper batch and workers must be positive")
	}
	if err := c.Retry.Validate(); err != nil {
		return fmt.Errorf("keeper retry: %w", err)
	}
	return nil
}

// Keeper is the background work one instance at a time does for all
// matches: it flags players whose clock deadline passed (even if no client
// calls again, and whichever instance served the match) and relays
// MatchFinished records from the partition outboxes to the global stream.
//
// Whoever holds the lease "keeper" does the work. The lease only avoids
// duplicated effort: flags are versioned commits that re-check the deadline
// on fresh state, and relayed records are deduplicated by consumers, so two
// holders at once (a paused process, clock skew) are harmless.
type Keeper struct {
	svc    *Service
	cfg    KeeperConfig
	log    *slog.Logger
	report func(component string, err error)
	// held is 1 while this instance holds the lease (match_keeper_lease_held:
	// summed over instances it should be 1); lost counts the times another
	// instance took it over while this one was running
	// (match_keeper_lease_lost_total).
	held metric.Int64Gauge
	lost metric.Int64Counter
}

const keeperLease = "keeper"

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
	held, err := m.Int64Gauge("match.keeper.lease.held",
		metric.WithDescription("1 while this instance holds the keeper lease (flags overdue clocks, relays finished matches), else 0."))
	if err != nil {
		return nil, fmt.Errorf("keeper metrics: %w", err)
	}
	lost, err := m.Int64Counter("match.keeper.lease.lost",
		metric.WithDescription("Times another instance took the keeper lease over while this one held it (a pause or Redis trouble longer than the lease TTL)."))
	if err != nil {
		return nil, fmt.Errorf("keeper metrics: %w", err)
	}
	lost.Add(context.Background(), 0)
	held.Record(context.Background(), 0)
	return &Keeper{svc: svc, cfg: cfg, log: log, report: report, held: held, lost: lost}, nil
}

// Run works until ctx is cancelled, then releases the lease. It never
// gives up: after a failed scan (the lease, the deadline scan or an outbox
// relay could not reach Redis) it reports the error and tries again after
// a backoff delay instead of the interval.
func (k *Keeper) Run(ctx context.Context) error {
	t := time.NewTimer(k.cfg.Interval)
	defer t.Stop()
	bo := backoff.New(k.cfg.Retry)
	st := k.svc.store
	held := false
	for {
		select {
		case <-ctx.Done():
			if held {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				defer cancel()
				if err := st.ReleaseLease(rctx, keeperLease, k.cfg.Owner); err != nil {
					k.log.Warn("keeper lease not released", "err", err)
				}
				k.held.Record(rctx, 0)
			}
			return nil
		case <-t.C:
		}
		start := time.Now()
		err := k.scan(ctx, &held)
		if ctx.Err() != nil {
			continue // the select above releases the lease and returns
		}
		k.report("keeper", err)
		// Scans start every interval, as with a ticker, unless one failed.
		next := max(k.cfg.Interval-time.Since(start), 0)
		if err != nil {
			next = bo.Next()
			k.log.Warn("keeper scan failed", "err", err, "failures", bo.Failures(), "retry_in", next)
		} else {
			bo.Reset()
		}
		t.Reset(next)
	}
}

// scan takes or renews the lease and, while held, does one Tick.
func (k *Keeper) scan(ctx context.Context, held *bool) error {
	ok, err := k.svc.store.AcquireLease(ctx, keeperLease, k.cfg.Owner, k.cfg.LeaseTTL)
	if err != nil {
		// Whether the lease still holds is unknown; it lapses after its TTL.
		k.held.Record(ctx, 0)
		return fmt.Errorf("keeper lease: %w", err)
	}
	if ok != *held {
		k.log.Info("keeper lease changed", "held", ok)
		if *held {
			k.lost.Add(ctx, 1)
		}
		*held = ok
	}
	if ok {
		k.held.Record(ctx, 1)
	} else {
		k.held.Record(ctx, 0)
	}
	if !ok {
		return nil
	}
	return k.Tick(ctx)
}

// Tick does one scan: flags due clocks and relays outbox entries. It
// returns the errors of the scan and of the relays (flags that fail are
// logged and retried by the next scan: their deadlines stay).
func (k *Keeper) Tick(ctx context.Context) error {
	st := k.svc.store
	due, scanErr := st.Scan(ctx, k.svc.clockNow(), k.cfg.Batch)
	if scanErr != nil {
		scanErr = fmt.Errorf("keeper scan incomplete: %w", scanErr)
	}
	var relayErrs []error
	sem := make(chan struct{}, k.cfg.Workers)
	var wg sync.WaitGroup
	for _, d := range due {
		for _, id := range d.Matches {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				k.flag(ctx, id)
			})
		}
		if err := st.Relay(ctx, d.Partition, d.Outbox); err != nil {
			relayErrs = append(relayErrs, fmt.Errorf("outbox relay of partition %v: %w", d.Partition, err))
		}
	}
	wg.Wait()
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
