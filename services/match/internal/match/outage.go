package match

import (
	"context"
	"errors"
	"net"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// Outages are not the player's time (docs/match.md "Outages"). When a
// keeper takes over a range that nobody served for longer than a lease TTL
// plus an interval (every instance dead, or cut off from Redis: a single
// instance's death is covered by the others within that time, and they
// accepted moves meanwhile), the service could not accept moves for the
// range's matches from the last moment it was served until now. The seat
// to move in each of those matches gets that time back, at most
// Config.OutageCreditMax, before the keeper looks at their deadlines: its
// turn counts as started that much later (a ClockCredited event).

// CreditOutage gives the running seat of a match back the part of its
// turn that fell in the outage [from, to); it reports whether it did.
func (s *Service) CreditOutage(ctx context.Context, id string, from, to time.Time) (bool, error) {
	if s.cfg.OutageCreditMax == 0 {
		return false, nil
	}
	credited := false
	_, _, err := s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		credited = false
		rec := e.rec
		if rec.Status != StatusActive || rec.Clocks.Running == noSeat {
			return nil, errNothingDue
		}
		start := rec.Clocks.TurnStart
		if from.After(start) {
			start = from
		}
		credit := min(to.Sub(start), s.cfg.OutageCreditMax).Truncate(time.Millisecond)
		if credit <= 0 {
			return nil, errNothingDue
		}
		rec.Clocks.TurnStart = rec.Clocks.TurnStart.Add(credit)
		seat := rules.Seat(rec.Clocks.Running)
		ev := &eventsv1.MatchEvent{MatchId: e.id, Version: e.version + 1, Ply: uint32(e.game.Ply()), OccurredAt: timestamppb.New(now),
			Event: &eventsv1.MatchEvent_ClockCredited{ClockCredited: &eventsv1.ClockCredited{Seat: wire.Seat(seat),
				Credited: durationpb.New(credit), Clocks: clocksPB(&rec.Clocks, e.tc, s.cfg.FirstMoveLimit, now)}}}
		credited = true
		return &change{events: []*eventsv1.MatchEvent{ev}, rec: rec}, nil
	})
	if errors.Is(err, errNothingDue) || errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return credited && err == nil, err
}

// A Redis outage of some partitions (their master killed and its replica
// not yet promoted, the cluster down) stops moves in their matches while
// the instances live. The keeper holding a partition's range sees it: its
// scans of the partition fail with a Redis error. At the first scan that
// reads the partition again after such failures, if the partition went
// unread for longer than outageMin, the keeper gives the seat to move in
// each of its running matches the part of its turn since the last scan
// that read it, before it flags any of them. What it knows of a partition
// lives in its memory while it holds the partition's range, so an outage
// is credited once, by the holder that saw it end (docs/match.md
// "Outages").

// partState is what a keeper's scans found of one partition.
type partState struct {
	// ok is the service time at the start of the last scan that read the
	// partition (or at which the keeper began to hold it).
	ok time.Time
	// failed: a scan since ok met a Redis error on the partition.
	failed bool
	// pending are the running matches whose credit for the partition's
	// last outage is not committed yet (a Redis error): retried on the
	// next scans, and not flagged until then.
	pending map[string]window
}

// window is a span of service time, [from, to).
type window struct{ from, to time.Time }

// outageMin is, in keeper intervals, how long a partition must have gone
// unread for its outage to be credited: shorter gaps are within what the
// scans can measure (one interval each side) and cost the player less
// than a second with the default interval.
const outageMin = 2

// forget drops what the keeper knew of range r's partitions (it let the
// range go, or lost it).
func (k *Keeper) forget(r int) {
	for _, p := range store.RangePartitions(r) {
		delete(k.parts, p)
	}
}

// noteScan records the outcome of a scan, started at now, of the given
// partitions, and credits the outages it saw end. Failures that are not
// Redis's (the scan cut short at its own deadline: a context error, or a
// timeout once the deadline passed) count as neither success nor failure. It returns whether a due match must not be flagged
// yet: its credit, or its partition's, is still to be committed.
func (k *Keeper) noteScan(ctx context.Context, partitions []int, now time.Time, scanErr error) func(p int, id string) bool {
	var failed map[int]error
	if se, ok := errors.AsType[*store.ScanError](scanErr); ok {
		failed = se.Failed
	}
	if k.parts == nil {
		k.parts = map[int]*partState{}
	}
	for i, p := range partitions {
		ps := k.parts[p]
		if ps == nil {
			ps = &partState{ok: now}
			k.parts[p] = ps
		}
		if err, bad := failed[p]; bad {
			// A refused connection, a reset, CLUSTERDOWN: Redis did not
			// serve the partition, even if the client's retries then ran
			// into the scan's deadline. A timeout or a context error once
			// that deadline passed is the deadline's own (a slow, loaded
			// scan that did not reach the partition) unless the partition
			// was in the first round trip, sent at the start: its master
			// did not answer in all the scan's time (a killed master: the
			// client's dials and retries outlast it).
			var ne net.Error
			timeout := ctx.Err() != nil && (redisconn.Classify(err) == redisconn.KindCanceled || errors.As(err, &ne) && ne.Timeout())
			if (redisconn.Transient(err) || timeout) && (!timeout || i < scanStride) {
				ps.failed = true
			}
			continue
		}
		if ps.failed {
			if gap := now.Sub(ps.ok); gap > outageMin*k.cfg.Interval {
				ids, err := k.svc.store.Running(ctx, p, int64(k.cfg.Batch)*100)
				if err != nil {
					continue // still failed: the next scan credits a longer gap
				}
				k.log.Warn("keeper partition was not served: crediting the clocks to move", "partition", p, "outage", gap, "matches", len(ids))
				if ps.pending == nil {
					ps.pending = map[string]window{}
				}
				for _, id := range ids {
					ps.pending[id] = window{ps.ok, now}
				}
			}
			ps.failed = false
		}
		ps.ok = now
		for id, w := range ps.pending {
			_, err := k.svc.CreditOutage(ctx, id, w.from, w.to)
			if err != nil && (errors.Is(err, ErrConflict) || redisconn.Classify(err) != redisconn.KindBug) {
				continue // Redis, the scan's deadline or a lost race: the next scan retries
			}
			if err != nil {
				k.log.Warn("outage credit failed", "match", id, "err", err)
			}
			delete(ps.pending, id)
		}
	}
	return func(p int, id string) bool {
		ps := k.parts[p]
		if ps == nil {
			return false
		}
		_, pending := ps.pending[id]
		return ps.failed || pending
	}
}
