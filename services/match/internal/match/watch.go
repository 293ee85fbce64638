package match

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// ErrSlowConsumer: a watcher did not keep up and was disconnected.
var ErrSlowConsumer = errors.New("watcher too slow: reconnect with the last version seen")

// watchBatch is how many stored events a catching-up watcher reads at once.
const watchBatch = 256

// WatchItem is one item of a match stream: a snapshot or an event.
type WatchItem struct {
	// Version is the match version the item brings the watcher to.
	Version uint64
	// Snapshot, when set, is the whole match at Version as the watcher
	// sees it.
	Snapshot *View
	// Event, when there is no snapshot, is the event of Version: an encoded
	// fourkingdoms.events.v1.MatchEvent as stored, shared by every watcher
	// and never modified. Passing it on as it is spares decoding it once
	// and encoding it again for every watcher.
	Event []byte
	// LegalMoves are the watcher's legal moves when they are to move after
	// the item (set on the last item of a batch only).
	LegalMoves []string
	// Premoves, when set (no snapshot, no event), is one of the watcher's
	// own premove queues, which changed; Version is unchanged by it.
	Premoves *Premoves

	// ev is the event as the hub delivered it (Encoded).
	ev fanout.Event
}

// Encoded returns enc(Version, Event) for an event item. For a live event
// it is computed once per event and shared by every watcher of the match
// on this instance (fanout.Event.Frame), so the transport encodes an event
// once, not once per stream. The result is shared: never modify it, nor
// append to it; enc must depend on its arguments alone (what differs per
// watcher, the legal moves, is the caller's to add in its own buffer).
func (it WatchItem) Encoded(enc func(version uint64, event []byte) []byte) []byte {
	if it.ev.Raw == nil {
		return enc(it.Version, it.Event)
	}
	return it.ev.Frame(enc)
}

// Watch streams a match to send: a snapshot (from 0) or the events after
// from, then every later event in version order, without gaps or
// duplicates. A caller who sees the match with the spectator delay
// (visibility.go) gets the snapshot and each event only once it is
// visible to them, and everything at once when the match ends; such a
// caller may resume from any version it was shown. Live events come from
// the hub; any gap (lost notification, reconnect) is filled from the
// match's event stream, and a gap the stream no longer covers (trimmed) is
// answered with a fresh snapshot. It returns
// nil after the match's final event, ErrSlowConsumer when the hub dropped
// the watcher, or the context's error.
func (s *Service) Watch(ctx context.Context, c Caller, id string, from uint64, send func(WatchItem) error) error {
	if _, err := store.PartitionOf(id); err != nil {
		return ErrNotFound
	}
	if s.hub == nil {
		return fmt.Errorf("watch %s: %w", id, fanout.ErrClosed)
	}
	w, err := s.hub.Watch(ctx, id)
	if err != nil {
		return fmt.Errorf("watch %s: %w", id, err)
	}
	defer w.Close()

	ws := &watchState{svc: s, c: c, id: id, send: send, lost: w.Lost()}
	if err := ws.start(ctx, from); err != nil || ws.done {
		return err
	}
	w.SetSeats(ws.noticeSeats())
	if ws.player {
		var seats []rules.Seat
		for gs := range ws.seats {
			if st, ok := wire.SeatOf(gs); ok {
				seats = append(seats, st)
			}
		}
		defer s.watchPresence(id, seats)()
	}
	return ws.follow(ctx, w.C, w.Closed())
}

// follow sends the live items of the hub until the match ends, the watcher
// is dropped (lost) or closed, or ctx ends.
func (ws *watchState) follow(ctx context.Context, items <-chan *fanout.Item, closed <-chan struct{}) error {
	for {
		// A dropped watcher may still hold items: a select with both
		// ready picks at random, and would go on with them.
		if ws.dropped() {
			return ErrSlowConsumer
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ws.lost:
			return ErrSlowConsumer
		case <-closed:
			return fanout.ErrClosed
		case it := <-items:
			var err error
			switch {
			case it.Private != nil:
				err = ws.private(ctx, it.Private)
			case it.Resync:
				if err = ws.catchUp(ctx); err == nil {
					err = ws.refreshPremoves(ctx)
				}
			default:
				err = ws.live(ctx, it.Events)
			}
			if err != nil {
				// A storage error while catching up (failover, reconnect)
				// is retried for a while before the stream gives up: the
				// client would otherwise have to reconnect for it.
				if err = ws.retryCatchUp(ctx, err); err != nil {
					return err
				}
			}
			if ws.done {
				return nil
			}
		}
	}
}

type watchState struct {
	svc  *Service
	c    Caller
	id   string
	send func(WatchItem) error
	// lost is closed when the hub dropped the watcher (fanout.Watcher.Lost).
	lost <-chan struct{}
	// last is the last version received; the events after sent are
	// pending until they are visible to the caller.
	last    uint64
	pending []fanout.Event
	// delay is the caller's spectator delay in plies (0: live).
	delay  int
	player bool // the caller holds a seat
	// seats are the caller's seats: only the one whose seat is to move
	// needs its legal moves, and looking them up takes the match's lock.
	seats map[gamev1.Seat]bool
	done  bool
	// premoves are the caller's queues as last sent (premove.go).
	premoves map[rules.Seat]Premoves
}

// dropped reports whether the hub dropped the watcher.
func (ws *watchState) dropped() bool {
	select {
	case <-ws.lost:
		return true
	default:
		return false
	}
}

// emit sends an item to the client unless the hub dropped the watcher. A
// watcher is dropped while it is stuck in a send (a client that does not
// read); what it does next (the rest of a batch, a catch-up from the store
// up to the end of the match) must not go on as if nothing happened: the
// stream would end with OK instead of SLOW_CONSUMER, and a dropped watcher
// would keep reading the store.
func (ws *watchState) emit(it WatchItem) error {
	if ws.dropped() {
		return ErrSlowConsumer
	}
	return ws.send(it)
}

// errSend marks a failure to send to the client: the stream is over.
type errSend struct{ err error }

func (e errSend) Error() string { return e.err.Error() }
func (e errSend) Unwrap() error { return e.err }

// Retry policy for storage errors during a stream.
const (
	watchRetries    = 50
	watchRetryPause = 200 * time.Millisecond
)

// retryCatchUp retries catching up after err unless err ends the stream.
func (ws *watchState) retryCatchUp(ctx context.Context, err error) error {
	for range watchRetries {
		var se errSend
		if errors.As(err, &se) || ctx.Err() != nil || errors.Is(err, ErrNotFound) {
			return err
		}
		if ws.dropped() {
			return ErrSlowConsumer
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(watchRetryPause):
		}
		// A premove notice may have been lost with the error: re-read.
		if err = ws.catchUp(ctx); err == nil {
			if err = ws.refreshPremoves(ctx); err == nil {
				return nil
			}
		}
	}
	return err
}

func (ws *watchState) start(ctx context.Context, from uint64) error {
	snap, vis, err := ws.svc.getVisible(ctx, ws.c, ws.id)
	if err != nil {
		return err
	}
	ws.delay = vis.delay
	ws.seats = make(map[gamev1.Seat]bool)
	for st, ss := range snap.Seats {
		if ss.Player.ID == ws.c.ID {
			ws.player = true
			ws.seats[wire.Seat(rules.Seat(st))] = true
		}
	}
	// A spectator cannot have seen more than it is shown now (and is not
	// told how far the live game is).
	if from > snap.Version {
		return fmt.Errorf("%w: from_version %d, match version %d", ErrFutureVersion, from, snap.Version)
	}
	if from == 0 {
		if err := ws.sendSnapshot(snap); err != nil {
			return err
		}
		if snap.Version == vis.version {
			return nil
		}
		// The events after a delayed snapshot are pending.
		return ws.catchUp(ctx)
	}
	ws.last = from
	if from == vis.version {
		ws.done = snap.Status != StatusActive
	} else if err := ws.catchUp(ctx); err != nil {
		return err
	}
	// A resumed stream has no snapshot to show the caller's premove
	// queues: they follow the missed events.
	return ws.sendPremoves(ctx, snap.Premoves)
}

func (ws *watchState) sendSnapshot(snap *View) error {
	for _, p := range snap.Premoves {
		ws.sentPremoves(p)
	}
	ws.last, ws.pending = snap.Version, ws.pending[:0]
	ws.done = snap.Status != StatusActive
	if err := ws.emit(WatchItem{Version: snap.Version, Snapshot: snap, LegalMoves: snap.LegalMoves}); err != nil {
		return errSend{err}
	}
	return nil
}

// catchUp sends the stored events after the last one received.
func (ws *watchState) catchUp(ctx context.Context) error {
	snapped := false
	for !ws.done {
		evs, err := ws.svc.store.Events(ctx, ws.id, ws.last, watchBatch)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		if evs[0].Version != ws.last+1 {
			if snapped {
				// A delayed snapshot whose next events are trimmed: the
				// event log is shorter than the spectator delay.
				return fmt.Errorf("watch %s: events after version %d are trimmed", ws.id, ws.last)
			}
			snapped = true
			// Trimmed: start over from a snapshot, then continue after it.
			snap, err := ws.svc.Get(ctx, ws.c, ws.id)
			if err != nil {
				return err
			}
			if err := ws.sendSnapshot(snap); err != nil {
				return err
			}
			continue
		}
		read := make([]fanout.Event, len(evs))
		for i, e := range evs {
			ev, err := fanout.ReadEvent(e.Data)
			if err != nil {
				return fmt.Errorf("read event %d of %s: %w", e.Version, ws.id, err)
			}
			if ev.Version != e.Version {
				return fmt.Errorf("read event %d of %s: it says version %d", e.Version, ws.id, ev.Version)
			}
			read[i] = ev
		}
		if err := ws.sendEvents(ctx, read); err != nil {
			return err
		}
		if len(evs) < watchBatch {
			return nil
		}
	}
	return nil
}

// live sends a live batch, or catches up first if it does not follow on.
func (ws *watchState) live(ctx context.Context, evs []fanout.Event) error {
	if len(evs) == 0 || evs[len(evs)-1].Version <= ws.last {
		return nil
	}
	if evs[0].Version > ws.last+1 {
		return ws.catchUp(ctx)
	}
	return ws.sendEvents(ctx, evs)
}

// mayMoveAfter reports whether the caller may be to move after ev. A
// MoveApplied names the seat to move; after other events the service is
// asked.
func (ws *watchState) mayMoveAfter(ev fanout.Event) bool {
	if !ws.player || ev.Final() {
		return false
	}
	if ev.Kind == fanout.KindMoveApplied {
		return ws.seats[ev.ToMove]
	}
	return true
}

// sendEvents takes the events after the last one received and sends those
// visible to the caller, each as it is stored; the last event sent carries
// the caller's legal moves when they are to move after it.
func (ws *watchState) sendEvents(ctx context.Context, evs []fanout.Event) error {
	final := false
	for _, ev := range evs {
		if ev.Version <= ws.last {
			continue
		}
		ws.pending = append(ws.pending, ev)
		ws.last = ev.Version
		if ev.Final() {
			final = true
			break
		}
	}
	if len(ws.pending) == 0 {
		return nil
	}
	n := len(ws.pending)
	if !final && ws.delay > 0 {
		// The last event received is the latest ply the watcher knows.
		now := ws.pending[n-1].Ply
		n = 0
		for n < len(ws.pending) && visible(ws.pending[n].Version, ws.pending[n].Ply, now, ws.delay) {
			n++
		}
	}
	for i, ev := range ws.pending[:n] {
		item := WatchItem{Version: ev.Version, Event: ev.Raw, ev: ev}
		if i == len(ws.pending)-1 && ws.mayMoveAfter(ev) {
			item.LegalMoves = ws.svc.LegalMovesAt(ctx, ws.c, ws.id, ev.Version)
		}
		if err := ws.emit(item); err != nil {
			return errSend{err}
		}
		if ev.Final() {
			ws.done = true
			break
		}
	}
	// Shift rather than reslice, so the buffer does not creep forward.
	ws.pending = ws.pending[:copy(ws.pending, ws.pending[n:])]
	return nil
}

// premoveNews reports whether a queue is news to the client: not the one
// sent before, nor older (a live notice that arrives after a read of the
// state that already showed what followed it).
func (ws *watchState) premoveNews(p *Premoves) bool {
	old, ok := ws.premoves[p.Seat]
	return !ok || p.Version > old.Version ||
		(p.Version == old.Version && (p.Change != old.Change || p.Move != old.Move || !slices.Equal(p.Moves, old.Moves)))
}

// sentPremoves records a queue as sent.
func (ws *watchState) sentPremoves(p Premoves) {
	if ws.premoves == nil {
		ws.premoves = make(map[rules.Seat]Premoves)
	}
	ws.premoves[p.Seat] = p
}

// sendPremoves sends those of the queues that are the caller's and were
// not sent as they are, after the events up to their version. Nothing
// follows the match's final event: the queues dropped with it are only
// shown by GetMatch.
func (ws *watchState) sendPremoves(ctx context.Context, ps []Premoves) error {
	for i := range ps {
		if ws.done {
			return nil
		}
		p := &ps[i]
		if !ws.seats[wire.Seat(p.Seat)] || !ws.premoveNews(p) {
			continue
		}
		if p.Version > ws.last {
			if err := ws.catchUp(ctx); err != nil || ws.done {
				return err
			}
		}
		if err := ws.emit(WatchItem{Version: ws.last, Premoves: p}); err != nil {
			return errSend{err}
		}
		ws.sentPremoves(*p)
	}
	return nil
}

// private sends the live premove notices meant for the caller: premove
// queues are private to their seat's player, so other players and
// spectators never get them.
func (ws *watchState) private(ctx context.Context, raw [][]byte) error {
	if !ws.player {
		return nil
	}
	ps := make([]Premoves, 0, len(raw))
	for _, b := range raw {
		p, err := decodeNotice(b)
		if err != nil {
			ws.svc.log.ErrorContext(ctx, "bad premove notice", "match", ws.id, "err", err)
			return ws.refreshPremoves(ctx)
		}
		ps = append(ps, p)
	}
	return ws.sendPremoves(ctx, ps)
}

// refreshPremoves reads the caller's queues afresh and sends those that
// changed (after a resubscription: notices are not stored, so one may have
// been lost).
func (ws *watchState) refreshPremoves(ctx context.Context) error {
	if !ws.player || ws.done {
		return nil
	}
	v, err := ws.svc.Get(ctx, ws.c, ws.id)
	if err != nil {
		return err
	}
	return ws.sendPremoves(ctx, v.Premoves)
}
