package match

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// Degraded instances (docs/match.md, "The keeper"). A keeper whose process
// is starved of CPU, paused in bursts shorter than its lease (SIGSTOP, a
// stalled VM) or whose Redis round trips crawl goes on renewing its leases
// (a heartbeat is one round trip) while its scans fall behind: flags in its
// ranges come seconds late, or never when every scan is cut short before it
// reads a deadline, and no healthy instance may take the ranges over. So
// each scan measures its lag: how long after it was due (when the keeper's
// timer was set to fire) it finished working its ranges. A flag is at most
// about Interval plus the lag late. After lagStrikes scans in a row that
// lag more than KeeperConfig.MaxLag, the keeper steps down: it releases its
// leases and leaves the membership, as at shutdown, so the others split
// the ranges among themselves at their next heartbeat. It steps down only
// while another instance is announced: a lone slow keeper is better than
// none.
//
// A keeper that stepped down probes instead of scanning: every interval it
// reads the membership and does a dry run of a scan (the reads of every
// partition, acting on nothing), and measures the lag of that. It joins
// again after lagCalmProbes probes in a row lag at most half of MaxLag,
// or at once when no other instance is announced. The two thresholds and
// the count of calm probes keep an instance at the edge from taking its
// ranges back and giving them away again every few scans.

const (
	// lagStrikes is how many scans in a row must lag before the keeper
	// steps down: a single slow scan (a garbage collection, a Redis
	// hiccup) moves no range.
	lagStrikes = 3
	// lagCalmProbes is how many probes in a row must lag at most half of
	// MaxLag before a keeper that stepped down joins again (5 s at the
	// default interval).
	lagCalmProbes = 25
)

// lagWatch is the keeper's judgement of its own lag; owned by Run's
// goroutine.
type lagWatch struct {
	// others is how many other instances the last heartbeat saw.
	others int
	// strikes counts the scans in a row that lagged more than MaxLag;
	// calm the probes in a row that lagged at most half of it.
	strikes, calm int
	// down is set while the keeper stepped down.
	down bool

	// gauge is match_keeper_scan_lag_seconds, steps
	// match_keeper_step_downs_total.
	gauge metric.Float64Gauge
	steps metric.Int64Counter
}

// newLagWatch creates the lag metrics.
func newLagWatch(m metric.Meter) (lagWatch, error) {
	gauge, err := m.Float64Gauge("match.keeper.scan.lag", metric.WithUnit("s"),
		metric.WithDescription("How long after it was due the keeper's last scan (or, after a step-down, its last probe) finished: a clock flag comes at most about the scan interval plus this late."))
	if err != nil {
		return lagWatch{}, fmt.Errorf("keeper metrics: %w", err)
	}
	steps, err := m.Int64Counter("match.keeper.step.downs",
		metric.WithDescription("Times this instance gave its keeper ranges back because its scans lagged more than MATCH_KEEPER_MAX_LAG for several scans in a row (a starved or paused process, slow Redis round trips)."))
	if err != nil {
		return lagWatch{}, fmt.Errorf("keeper metrics: %w", err)
	}
	steps.Add(context.Background(), 0)
	return lagWatch{gauge: gauge, steps: steps}, nil
}

// pass does the keeper's work that was due at due: a scan, or a probe
// while the keeper stepped down. renewed reports whether the leases were
// renewed (a failed heartbeat or probe backs off; see Run).
func (k *Keeper) pass(ctx context.Context, due time.Time) (renewed bool, err error) {
	if k.lag.down {
		// A failed probe backs off like a failed heartbeat.
		err := k.probe(ctx, due)
		return err == nil, err
	}
	renewed, err = k.scan(ctx)
	// A failed scan retries (after a backoff when the heartbeat failed):
	// Redis is unreachable, or some partitions are (an outage, credited in
	// outage.go), which a step-down would not help. But a pass that
	// renewed the leases, met no failure of Redis itself (every error is
	// a deadline) and still ran out of its whole time (a lease TTL: the
	// scan of the partitions stops halfway through the leases' validity,
	// so only the keeper's own round trips around it can take that long)
	// is this instance being slow: its lag counts (TestSlowKeeperStepsDown:
	// through a link 100 ms slow every pass failed on its deadline, and
	// the keeper never stepped down while its leases lapsed and nobody
	// else could take them).
	if k.cfg.MaxLag <= 0 || err != nil && !(renewed && ctx.Err() != nil && !redisFailed(err)) {
		return renewed, err
	}
	lag := time.Since(due)
	k.lag.gauge.Record(ctx, lag.Seconds())
	if lag <= k.cfg.MaxLag {
		k.lag.strikes = 0
		return true, err
	}
	k.lag.strikes++
	if k.lag.strikes < lagStrikes || k.lag.others == 0 {
		return true, err
	}
	k.log.Warn("keeper scans lag: giving the ranges back to the other instances",
		"lag", lag, "max_lag", k.cfg.MaxLag, "scans", k.lag.strikes, "others", k.lag.others)
	k.lag.steps.Add(ctx, 1)
	k.lag.down, k.lag.strikes, k.lag.calm = true, 0, 0
	k.leave(ctx)
	return true, err
}

// probe measures the lag of a keeper that stepped down, on the reads a
// scan would do, and decides whether it joins again.
func (k *Keeper) probe(ctx context.Context, due time.Time) error {
	st := k.svc.store
	others, err := st.KeeperMembers(ctx, time.Now())
	if err != nil {
		return err
	}
	if len(others) > 0 {
		if _, err := st.Scan(ctx, allPartitions(), k.svc.clockNow(), 1); err != nil {
			return err
		}
	}
	// Moves on this instance still learn of the partitions' outages
	// (outage.go), and forget them when their notes are dropped.
	notes, err := st.OutageNotes(ctx)
	if err != nil {
		return err
	}
	k.svc.outages.learn(notes, func(int) bool { return false })
	lag := time.Since(due)
	k.lag.gauge.Record(ctx, lag.Seconds())
	switch {
	case len(others) == 0:
		k.log.Warn("keeper joins again: no other instance works the ranges", "lag", lag)
	case lag <= k.cfg.MaxLag/2:
		if k.lag.calm++; k.lag.calm < lagCalmProbes {
			return nil
		}
		k.log.Info("keeper joins again: its scans keep up", "lag", lag, "probes", k.lag.calm)
	default:
		k.lag.calm = 0
		return nil
	}
	k.lag.down, k.lag.strikes, k.lag.calm = false, 0, 0
	return nil
}

// redisFailed reports whether err, possibly joined from several, holds a
// failure of Redis itself (refused, reset, CLUSTERDOWN: redisconn's
// transient errors) rather than only the deadlines of a slow caller.
func redisFailed(err error) bool {
	if err == nil {
		return false
	}
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		return slices.ContainsFunc(m.Unwrap(), redisFailed)
	}
	// Classify reads a whole chain, and a deadline anywhere in it wins
	// over a transient error beside it: unwrap one level at a time.
	return redisconn.Transient(err) || redisFailed(errors.Unwrap(err))
}

// allPartitions lists every partition, in order.
func allPartitions() []int {
	ps := make([]int, store.Partitions)
	for p := range ps {
		ps[p] = p
	}
	return ps
}
