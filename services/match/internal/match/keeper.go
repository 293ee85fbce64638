package match

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
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
}

// DefaultKeeperConfig returns the production defaults: with them a deadline
// is processed within Interval after it passes while the lease holder lives,
// and within LeaseTTL+Interval after the holder dies.
func DefaultKeeperConfig(owner string) KeeperConfig {
	return KeeperConfig{Owner: owner, Interval: 200 * time.Millisecond, LeaseTTL: 800 * time.Millisecond, Batch: 200, Workers: 16}
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
	svc *Service
	cfg KeeperConfig
	log *slog.Logger
}

const keeperLease = "keeper"

// NewKeeper returns a Keeper for the service.
func NewKeeper(svc *Service, cfg KeeperConfig, log *slog.Logger) (*Keeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Keeper{svc: svc, cfg: cfg, log: log}, nil
}

// Run works until ctx is cancelled, then releases the lease.
func (k *Keeper) Run(ctx context.Context) error {
	t := time.NewTicker(k.cfg.Interval)
	defer t.Stop()
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
			}
			return nil
		case <-t.C:
		}
		ok, err := st.AcquireLease(ctx, keeperLease, k.cfg.Owner, k.cfg.LeaseTTL)
		if err != nil {
			if ctx.Err() == nil {
				k.log.Warn("keeper lease unavailable", "err", err)
			}
			continue
		}
		if ok != held {
			k.log.Info("keeper lease changed", "held", ok)
			held = ok
		}
		if ok {
			k.Tick(ctx)
		}
	}
}

// Tick does one scan: flags due clocks and relays outbox entries.
func (k *Keeper) Tick(ctx context.Context) {
	st := k.svc.store
	due, err := st.Scan(ctx, k.svc.clockNow(), k.cfg.Batch)
	if err != nil && ctx.Err() == nil {
		k.log.Warn("keeper scan incomplete", "err", err)
	}
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
		if err := st.Relay(ctx, d.Partition, d.Outbox); err != nil && ctx.Err() == nil {
			k.log.Warn("outbox relay failed", "partition", d.Partition, "err", err)
		}
	}
	wg.Wait()
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
