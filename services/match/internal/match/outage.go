package match

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
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

// creditOutage gives the running seat of a match back the part of its
// turn that fell in the outage w; it reports whether it did.
func (s *Service) creditOutage(ctx context.Context, id string, w window) (bool, error) {
	if s.cfg.OutageCreditMax == 0 {
		return false, nil
	}
	credited := false
	_, _, err := s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		credited = false
		if e.rec.Status != StatusActive {
			return nil, errNothingDue
		}
		credit, err := s.outageCredit(ctx, e, w)
		if err != nil || credit == 0 {
			return nil, cmp.Or(err, errNothingDue)
		}
		rec := e.rec
		ev := s.credit(e, &rec, credit, now)
		credited = true
		return &change{events: []*eventsv1.MatchEvent{ev}, rec: rec}, nil
	})
	if errors.Is(err, errNothingDue) || errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return credited && err == nil, err
}

// outageCredit is what the running seat of e gets back for the outage w:
// the part of its turn in w, capped; zero when none runs, the turn began
// after the last failure seen in w (a commit then: the partition was
// back), or the turn was credited for w already.
func (s *Service) outageCredit(ctx context.Context, e *entry, w window) (time.Duration, error) {
	c := &e.rec.Clocks
	if s.cfg.OutageCreditMax == 0 || c.Running == noSeat || !w.failed.IsZero() && c.TurnStart.After(w.failed) {
		return 0, nil
	}
	start := c.TurnStart
	if w.from.After(start) {
		start = w.from
	}
	credit := min(w.to.Sub(start), s.cfg.OutageCreditMax).Truncate(time.Millisecond)
	if credit <= 0 {
		return 0, nil
	}
	if done, err := s.creditedSince(ctx, e, w.from); err != nil || done {
		return 0, err
	}
	return credit, nil
}

// credit gives the running seat of rec credit more time (its turn counts
// as started that much later) and returns the ClockCredited event, the
// entry's next version.
func (s *Service) credit(e *entry, rec *record, credit time.Duration, now time.Time) *eventsv1.MatchEvent {
	rec.Clocks.TurnStart = rec.Clocks.TurnStart.Add(credit)
	seat := rules.Seat(rec.Clocks.Running)
	return &eventsv1.MatchEvent{MatchId: e.id, Version: e.version + 1, Ply: uint32(e.game.Ply()), OccurredAt: timestamppb.New(now),
		Event: &eventsv1.MatchEvent_ClockCredited{ClockCredited: &eventsv1.ClockCredited{Seat: wire.Seat(seat),
			Credited: durationpb.New(credit), Clocks: clocksPB(&rec.Clocks, e.tc, s.cfg.FirstMoveLimit, now)}}}
}

// recentEvents is how many of a match's last events creditedSince reads.
const recentEvents = 16

// creditedSince reports whether the running seat's turn got a
// ClockCredited committed at or after from: the outage that began at from
// was credited already (by the keeper or a move, on this instance or
// another: one commit in the partition means it served then), and is not
// given twice. It reads the match's last events, which only the rare
// credit costs.
func (s *Service) creditedSince(ctx context.Context, e *entry, from time.Time) (bool, error) {
	evs, err := s.store.Events(ctx, e.id, e.version-min(e.version, recentEvents), recentEvents)
	if err != nil {
		return false, err
	}
	seat := wire.Seat(rules.Seat(e.rec.Clocks.Running))
	for _, stored := range evs {
		ev := &eventsv1.MatchEvent{}
		if err := proto.Unmarshal(stored.Data, ev); err != nil {
			return false, fmt.Errorf("decode event %d of %s: %w", stored.Version, e.id, err)
		}
		cc := ev.GetClockCredited()
		if cc != nil && cc.GetSeat() == seat && int(ev.GetPly()) == e.game.Ply() && !ev.GetOccurredAt().AsTime().Before(from) {
			return true, nil
		}
	}
	return false, nil
}

// creditOnMove is the credit a move of the running seat of e, committed
// at now in partition p, carries for an outage of the partition (the
// outage book): zero when there is none, or it was credited.
func (s *Service) creditOnMove(ctx context.Context, e *entry, p int, now time.Time) (time.Duration, error) {
	w, ok := s.outages.onMove(p, e.id, now)
	if !ok {
		return 0, nil
	}
	return s.outageCredit(ctx, e, w)
}

// A Redis outage of some partitions (their master killed and its replica
// not yet promoted, the cluster down) stops moves in their matches while
// the instances live. An instance learns of it three ways, kept in one
// bookkeeping per partition (outageBook): the keeper's scans of the
// partitions of its ranges fail with a Redis error, MakeMove commits
// fail with one (redisconn.Transient), on any instance, and the outage
// notes that the keepers leave in Redis (learn): the keeper that sees an
// outage begin may not be the one holding the range when it ends. The outage ends at
// the first scan that reads the partition again, or at the first commit
// that goes through. The seat to move then gets back the part of its turn
// in the outage, once: in the commit of its move if that comes first
// (MakeMove, creditOnMove: a retried move after recovery does not pay the
// outage, nor is it refused as late), otherwise from the keeper, which
// credits every running match of a partition of its ranges before it
// flags any of them (docs/match.md "Outages").

// partState is what this instance knows of one partition's outages.
type partState struct {
	// ok is when the partition was last known served: the start of the
	// keeper's last scan that read it, the commit that ended an outage,
	// or (nothing better known) the first failed MakeMove of an outage.
	ok time.Time
	// failed: a scan or a MakeMove since ok met a Redis error on the
	// partition; lastFail is the last such failure.
	failed   bool
	lastFail time.Time
	// kept: the keeper's scans read the partition (its range is held).
	kept bool
	// resolved is the last outage ended by a commit (MakeMove), whose
	// running matches the keeper has not listed yet.
	resolved *window
	// pending are the running matches whose credit for the partition's
	// last outage is not committed yet (a Redis error): retried on the
	// next scans, and not flagged until then.
	pending map[string]window
	// note is the partition's outage note in Redis as this instance last
	// wrote or read it (nil: none known): what a keeper that saw the
	// outage left for the next holder of the range, and for MakeMove on
	// the other instances.
	note *store.OutageNote
}

// window is an outage, [from, to) in service time; failed is the last
// failure seen in it (zero: not known).
type window struct{ from, to, failed time.Time }

// outageMin is, in keeper intervals, how long a partition must have gone
// unread for its outage to be credited: shorter gaps are within what the
// scans can measure (one interval each side) and cost the player less
// than a second with the default interval.
const outageMin = 2

// outageRetryGap bounds how long after its last failed MakeMove a
// partition known only from MakeMove (no scan of this instance reads it)
// counts as still down: clients retry more often than that, and a
// partition whose last failure is older was back before the next commit
// came, at a moment this instance cannot know.
const outageRetryGap = 5 * time.Second

// outageBook is this instance's knowledge of its partitions' outages,
// shared by the keeper's scans and MakeMove.
type outageBook struct {
	mu    sync.Mutex
	parts map[int]*partState
	// min is the shortest outage credited (outageMin keeper intervals).
	min time.Duration
}

func newOutageBook() *outageBook {
	return &outageBook{parts: map[int]*partState{}, min: outageMin * DefaultKeeperConfig("").Interval}
}

// end is when the unresolved outage of ps ends if the partition serves
// at now. Called with mu held.
func (ps *partState) end(now time.Time) time.Time {
	if !ps.kept && now.Sub(ps.lastFail) > outageRetryGap {
		return ps.lastFail
	}
	return now
}

// failing notes a MakeMove of the partition that failed with a Redis
// error at at: the outage begins then, unless the keeper's scans know
// when the partition was last read.
func (b *outageBook) failing(p int, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := b.parts[p]
	if ps == nil {
		ps = &partState{ok: at}
		b.parts[p] = ps
	}
	if !ps.failed && !ps.kept {
		ps.ok = at
	}
	ps.failed, ps.lastFail = true, at
}

// onMove returns the outage whose time the seat to move in match id of
// partition p gets back in a commit at now: one not ended yet (the commit
// ends it), or one ended and not credited to the match yet.
func (b *outageBook) onMove(p int, id string, now time.Time) (window, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := b.parts[p]
	if ps == nil {
		return window{}, false
	}
	w, ok := ps.pending[id]
	switch {
	case ps.failed:
		w, ok = window{ps.ok, ps.end(now), ps.lastFail}, true
	case !ok && ps.resolved != nil:
		w, ok = *ps.resolved, true
	}
	return w, ok && w.to.Sub(w.from) > b.min
}

// served notes a commit in match id of partition p at at: an outage not
// ended yet ends there (the keeper lists its other matches), and the
// match's pending credit is given (or not owed any more: its turn passed).
func (b *outageBook) served(p int, id string, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := b.parts[p]
	if ps == nil {
		return
	}
	if ps.failed {
		if w := (window{ps.ok, ps.end(at), ps.lastFail}); w.to.Sub(w.from) > b.min {
			ps.resolved = &w
		}
		ps.failed, ps.ok = false, at
	}
	delete(ps.pending, id)
}

// learn takes in the partitions' outage notes (every note in Redis),
// read by this instance's keeper at each scan; mine reports whether a
// partition is in a range it holds. A note not seen before makes its
// partition failing since the note's start, or, when the note says the
// outage ended, leaves that outage to be listed (the holder of the range)
// or credited on a move (any instance): the outage a keeper saw begin is
// credited whoever holds the range when it ends, and a move on an
// instance that saw no failure does not pay it. A partition known only
// from a note (not kept here) is forgotten once the note is gone: its
// keeper committed every credit.
func (b *outageBook) learn(notes map[int]store.OutageNote, mine func(p int) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for p, n := range notes {
		ps := b.parts[p]
		if ps == nil {
			ps = &partState{ok: n.From}
			b.parts[p] = ps
		}
		ps.kept = ps.kept || mine(p)
		if ps.note != nil && ps.note.Equal(n) {
			continue // known: written by this keeper, or learnt before
		}
		ps.note = &n
		switch {
		case n.To.IsZero():
			if !ps.failed || n.From.Before(ps.ok) {
				ps.ok = n.From
			}
			ps.failed = true
			if n.Last.After(ps.lastFail) {
				ps.lastFail = n.Last
			}
		case ps.kept && ps.failed:
			// The keeper's scans fail again since the noted outage ended:
			// a new outage, credited on its own (joining the two would
			// credit the time between, when the partition served).
		default:
			ps.failed, ps.ok = false, n.To
			ps.resolved = &window{n.From, n.To, n.Last}
		}
	}
	for p, ps := range b.parts {
		if _, ok := notes[p]; ok || ps.note == nil {
			continue
		}
		if ps.kept {
			ps.note = nil
		} else {
			delete(b.parts, p)
		}
	}
}

// drop forgets the partitions for which drop is true.
func (b *outageBook) drop(drop func(p int, ps *partState) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for p, ps := range b.parts {
		if drop(p, ps) {
			delete(b.parts, p)
		}
	}
}

// failedNow reports whether partition p is in an outage not ended yet.
func (b *outageBook) failedNow(p int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := b.parts[p]
	return ps != nil && ps.failed
}

// forget drops what the keeper knew of range r's partitions (it let the
// range go, or lost it).
func (k *Keeper) forget(r int) {
	parts := store.RangePartitions(r)
	k.svc.outages.drop(func(p int, _ *partState) bool { return slices.Contains(parts, p) })
}

// noteScan records the outcome of a scan, started at now with budget
// until its deadline, of the given partitions, and credits the outages it
// saw end. Failures that are not Redis's (the scan cut short at its own
// deadline, see [unserved]) count as neither success nor failure. It
// returns whether a due match must not be flagged yet: its credit, or its
// partition's, is still to be committed.
func (k *Keeper) noteScan(ctx context.Context, partitions []int, now time.Time, budget time.Duration, scanErr error) func(p int, id string) bool {
	var failed map[int]error
	var notes map[int]store.OutageNote // to write: partitions failing
	if se, ok := errors.AsType[*store.ScanError](scanErr); ok {
		failed = se.Failed
	}
	b := k.svc.outages
	for i, p := range partitions {
		b.mu.Lock()
		ps := b.parts[p]
		if ps == nil {
			ps = &partState{ok: now}
			b.parts[p] = ps
		}
		ps.kept = true
		if err, bad := failed[p]; bad {
			if unserved(err, ctx.Err() != nil, i < scanStride, budget, k.cfg.Interval) {
				ps.failed, ps.lastFail = true, now
			}
			// Noted in Redis, for whoever holds the range when the
			// partition is back (learn), and for moves on the others.
			if n := store.NewOutageNote(ps.ok, ps.lastFail, time.Time{}); ps.failed && (ps.note == nil || !ps.note.Equal(n)) {
				if notes == nil {
					notes = map[int]store.OutageNote{}
				}
				notes[p] = n
			}
			b.mu.Unlock()
			continue
		}
		// The outage to list: one this scan sees end, or one a commit
		// ended since the last scan.
		var w window
		switch {
		case ps.failed:
			w = window{ps.ok, now, ps.lastFail}
		case ps.resolved != nil:
			w = *ps.resolved
		}
		b.mu.Unlock()
		if gap := w.to.Sub(w.from); gap > b.min {
			ids, err := k.svc.store.Running(ctx, p, int64(k.cfg.Batch)*100)
			if err != nil {
				continue // still to list: the next scan does (a longer gap if still failed)
			}
			// The outage's end is noted before any credit: a keeper that
			// takes the range before every credit is committed gives the
			// rest for this window, not up to its own first scan.
			ended := store.NewOutageNote(w.from, w.failed, w.to)
			if err := k.svc.store.NoteOutages(ctx, map[int]store.OutageNote{p: ended}); err != nil {
				continue // the next scan retries
			}
			k.log.Warn("keeper partition was not served: crediting the clocks to move", "partition", p, "outage", gap, "matches", len(ids))
			b.mu.Lock()
			ps.note = &ended
			if ps.pending == nil {
				ps.pending = map[string]window{}
			}
			for _, id := range ids {
				ps.pending[id] = w
			}
			b.mu.Unlock()
		}
		b.mu.Lock()
		ps.failed, ps.resolved, ps.ok = false, nil, now
		pending := maps.Clone(ps.pending)
		b.mu.Unlock()
		for id, w := range pending {
			_, err := k.svc.creditOutage(ctx, id, w)
			if err != nil && (errors.Is(err, ErrConflict) || redisconn.Classify(err) != redisconn.KindBug) {
				continue // Redis, the scan's deadline or a lost race: the next scan retries
			}
			if err != nil {
				k.log.Warn("outage credit failed", "match", id, "err", err)
			}
			b.mu.Lock()
			delete(ps.pending, id)
			b.mu.Unlock()
		}
		// Every credit committed: the outage's note has served.
		b.mu.Lock()
		note := ps.note
		done := note != nil && !ps.failed && len(ps.pending) == 0
		b.mu.Unlock()
		if done {
			if err := k.svc.store.DropOutageNote(ctx, p, *note); err == nil {
				b.mu.Lock()
				if ps.note == note {
					ps.note = nil
				}
				b.mu.Unlock()
			}
		}
	}
	if err := k.svc.store.NoteOutages(ctx, notes); err != nil {
		k.log.Warn("keeper could not note partition outages: a next holder of their ranges would not credit the time before it", "partitions", len(notes), "err", err)
	} else {
		b.mu.Lock()
		for p, n := range notes {
			if ps := b.parts[p]; ps != nil {
				ps.note = &n
			}
		}
		b.mu.Unlock()
	}
	return func(p int, id string) bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		ps := b.parts[p]
		if ps == nil {
			return false
		}
		_, pending := ps.pending[id]
		return ps.failed || pending
	}
}

// unserved reports whether err, a scan's failure on one partition, shows
// that Redis did not serve the partition. cut says the scan's deadline had
// passed, first that the partition was in the scan's first round trip,
// sent at its start, and budget is the time the scan had until its
// deadline.
//
// A refused connection, a reset, CLUSTERDOWN: Redis did not serve the
// partition, even if the client's retries then ran into the deadline. A
// timeout or a context error once the deadline passed is the deadline's
// own (a slow, loaded scan that did not reach the partition) unless the
// partition was in the first round trip and the scan had at least an
// interval to wait for it: then its master did not answer in all that
// time (a killed master: the client's dials and retries outlast it). A
// scan that started with less, because the keeper's heartbeat before it
// was slow (a slow link of the keeper's own, not the partition's), shows
// nothing about the partition; counting its timeouts once noted outages
// of every partition of such a keeper, and their next holder credited
// clocks with time in which Redis served them.
func unserved(err error, cut, first bool, budget, interval time.Duration) bool {
	var ne net.Error
	timeout := cut && (redisconn.Classify(err) == redisconn.KindCanceled || errors.As(err, &ne) && ne.Timeout())
	if timeout {
		return first && budget >= interval
	}
	return redisconn.Transient(err)
}

// setMin sets the shortest outage credited.
func (b *outageBook) setMin(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.min = d
}
