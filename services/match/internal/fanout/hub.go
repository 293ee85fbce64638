// Package fanout delivers a match's live events to every watcher inside one
// service instance.
//
// One Redis sharded pub/sub connection per partition (opened when the first
// watcher of a match in that partition arrives) carries the channels of all
// watched matches of the partition; each match channel is subscribed once
// per instance, however many watchers it has. A notification is decoded
// once and handed to every watcher's bounded buffer without blocking: a
// watcher whose buffer is full is dropped (Lost is closed), so a slow
// consumer never delays the others.
//
// No Redis I/O happens under a lock that another partition needs: each
// partition has its own goroutine that opens its connection and sends its
// SSUBSCRIBE and SUNSUBSCRIBE commands, reconciling the channels subscribed
// with the channels watched, and its own lock for its watchers. A stalled
// connection to one node therefore delays the watchers of its partition
// only (TestStalledSubscribeDelaysNoOtherPartition).
//
// Pub/sub can lose messages (reconnects, failover). Watchers therefore treat
// the live feed as a hint: they detect gaps by version and fill them from
// the match's event stream, and after a reconnect the hub sends every
// watcher of the partition a Resync item so they catch up even if no further
// event arrives.
package fanout

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// Item is one delivery to a watcher: the events of one change, in version
// order, or (Resync) a request to catch up from the store. One Item is
// shared by all watchers of the match and never modified: a watcher's
// buffer holds pointers, a quarter of the memory (allocated whole per
// stream) and of what the garbage collector scans.
type Item struct {
	Events []Event
	Resync bool
	// Private, when set instead of Events, are notices meant for some of
	// the match's watchers only (premove queues). Each notice starts with
	// the seat it is for (one byte); the hub hands the item only to the
	// watchers of those seats (Watcher.SetSeats), and the watcher keeps
	// what is its own. They take no version.
	Private [][]byte
}

// AllSeats is the seat mask of a watcher whose seats are not known yet: it
// gets every private notice (SetSeats narrows it).
const AllSeats = 1<<4 - 1

// Watcher receives the live events of one match.
type Watcher struct {
	// C delivers items; it is never closed.
	C    <-chan *Item
	c    chan *Item
	lost chan struct{}
	hub  *Hub
	part *partition
	ch   string
	// seats is the mask (bit n: seat n, as in a private notice's first
	// byte) of the seats whose private notices the watcher gets.
	seats atomic.Uint32
	once  sync.Once
}

// Closed is closed when the hub shuts down: the watcher gets nothing more.
func (w *Watcher) Closed() <-chan struct{} { return w.hub.ctx.Done() }

// Lost is closed when the watcher fell behind and was dropped.
func (w *Watcher) Lost() <-chan struct{} { return w.lost }

// Close stops the watcher.
func (w *Watcher) Close() { w.once.Do(func() { w.hub.remove(w) }) }

// SetSeats narrows the private notices the watcher gets to those of the
// seats in mask (bit n for seat n; 0 for a spectator). A watcher starts
// with AllSeats, so that no notice is missed before its caller's seats are
// known; the watcher still checks every notice it gets.
func (w *Watcher) SetSeats(mask uint32) { w.seats.Store(mask) }

// Hub is the fan-out of one instance.
type Hub struct {
	store   *store.Store
	log     *slog.Logger
	bufSize int
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// mu guards closed and parts; it is held only to look a partition up
	// or add one, never across Redis I/O or a delivery.
	mu     sync.Mutex
	closed bool
	parts  map[int]*partition
}

// partition is the fan-out state of one partition: its subscription,
// owned by its goroutine (run), and its watched channels.
type partition struct {
	id int
	// wake (capacity 1) tells run that the channels watched changed or
	// that some must be subscribed again.
	wake chan struct{}

	// mu guards the fields below. It is never held across Redis I/O.
	mu sync.Mutex
	ps *redis.PubSub // nil until run opened it
	// topics are the watched channels, by name.
	topics map[string]*topic
	// subscribed are the channels whose last command sent was SSUBSCRIBE.
	subscribed map[string]bool
	// active are the channels whose subscription the server confirmed and
	// that were not unsubscribed since: a new topic on one is ready at once.
	active map[string]bool
	// resub are channels the server dropped while watched: subscribe again.
	resub map[string]bool
}

type topic struct {
	watchers map[*Watcher]struct{}
	ready    chan struct{} // closed when the subscription is confirmed
	isReady  bool
}

func (t *topic) markReady() {
	if !t.isReady {
		t.isReady = true
		close(t.ready)
	}
}

// ErrClosed is returned by Watch after Close.
var ErrClosed = errors.New("fan-out hub closed")

// New returns a hub; bufSize bounds each watcher's buffer (in changes).
func New(st *store.Store, log *slog.Logger, bufSize int) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{store: st, log: log, bufSize: bufSize, parts: map[int]*partition{}, ctx: ctx, cancel: cancel}
}

// Watch registers a watcher of a match and returns once the instance's
// subscription to the match is active, so any event committed after Watch
// returns is delivered (or detected as a gap).
func (h *Hub) Watch(ctx context.Context, id string) (*Watcher, error) {
	p, err := store.PartitionOf(id)
	if err != nil {
		return nil, err
	}
	ch, _ := h.store.Channel(id)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	part := h.parts[p]
	if part == nil {
		part = &partition{id: p, wake: make(chan struct{}, 1), topics: map[string]*topic{},
			subscribed: map[string]bool{}, active: map[string]bool{}, resub: map[string]bool{}}
		h.parts[p] = part
		h.wg.Add(1)
		go h.run(part)
	}
	h.mu.Unlock()

	c := make(chan *Item, h.bufSize)
	w := &Watcher{C: c, c: c, lost: make(chan struct{}), hub: h, part: part, ch: ch}
	w.seats.Store(AllSeats)
	part.mu.Lock()
	t := part.topics[ch]
	if t == nil {
		t = &topic{watchers: map[*Watcher]struct{}{}, ready: make(chan struct{})}
		part.topics[ch] = t
		if part.active[ch] {
			// Still subscribed: its last watcher left moments ago and
			// the unsubscription was not sent yet.
			t.markReady()
		} else {
			part.poke()
		}
	}
	t.watchers[w] = struct{}{}
	ready := t.ready
	part.mu.Unlock()
	select {
	case <-ready:
		return w, nil
	case <-ctx.Done():
		w.Close()
		return nil, ctx.Err()
	case <-h.ctx.Done():
		w.Close()
		return nil, ErrClosed
	case <-time.After(5 * time.Second):
		// The confirmation can be lost in a reconnect; the watcher still
		// works (it catches up on Resync), so do not fail the call.
		return w, nil
	}
}

// poke wakes the partition's goroutine without blocking.
func (part *partition) poke() {
	select {
	case part.wake <- struct{}{}:
	default:
	}
}

func (h *Hub) remove(w *Watcher) {
	part := w.part
	part.mu.Lock()
	defer part.mu.Unlock()
	t := part.topics[w.ch]
	if t == nil {
		return
	}
	delete(t.watchers, w)
	if len(t.watchers) == 0 {
		delete(part.topics, w.ch)
		// The partition's goroutine unsubscribes (best effort: a failed
		// unsubscribe only costs unused messages).
		part.poke()
	}
}

// run opens a partition's subscription, starts its receiver, and keeps
// the channels subscribed in step with the channels watched until the hub
// closes. Its Redis I/O holds no lock: a stalled node delays this
// partition only.
func (h *Hub) run(part *partition) {
	defer h.wg.Done()
	ps := h.store.Subscribe(h.ctx, part.id)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = ps.Close()
		return
	}
	part.mu.Lock()
	part.ps = ps
	part.mu.Unlock()
	h.wg.Add(1)
	h.mu.Unlock()
	go h.receive(part, ps)
	for {
		h.reconcile(part, ps)
		select {
		case <-h.ctx.Done():
			return
		case <-part.wake:
		}
	}
}

// reconcile subscribes the watched channels not subscribed (or dropped by
// the server) and unsubscribes those no longer watched, in one command
// each.
func (h *Hub) reconcile(part *partition, ps *redis.PubSub) {
	var sub, unsub []string
	part.mu.Lock()
	for ch := range part.topics {
		if !part.subscribed[ch] || part.resub[ch] {
			sub = append(sub, ch)
			part.subscribed[ch] = true
		}
	}
	clear(part.resub)
	for ch := range part.subscribed {
		if part.topics[ch] == nil {
			unsub = append(unsub, ch)
			delete(part.subscribed, ch)
			delete(part.active, ch)
		}
	}
	part.mu.Unlock()
	if len(sub) > 0 {
		if err := ps.SSubscribe(h.ctx, sub...); err != nil && h.ctx.Err() == nil {
			// The connection is broken: Receive reports it, and the
			// reconnection subscribes every channel again.
			h.log.Warn("watch subscription not sent", "partition", part.id, "channels", len(sub), "err", err)
		}
	}
	if len(unsub) > 0 {
		_ = ps.SUnsubscribe(h.ctx, unsub...)
	}
}

// receive reads one partition's subscription until the hub closes.
func (h *Hub) receive(part *partition, ps *redis.PubSub) {
	defer h.wg.Done()
	for {
		msg, err := ps.Receive(h.ctx)
		if err != nil {
			if h.ctx.Err() != nil {
				return
			}
			h.log.Warn("watch subscription interrupted", "partition", part.id, "err", err)
			h.resyncPartition(part)
			select {
			case <-h.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "ssubscribe":
				h.confirmed(part, m.Channel)
			case "sunsubscribe":
				h.dropped(part, m.Channel)
			}
		case *redis.Message:
			h.deliver(part, m.Channel, m.Payload)
		}
	}
}

// confirmed marks a channel's subscription active; a repeated confirmation
// (after a reconnect) tells its watchers to catch up.
func (h *Hub) confirmed(part *partition, ch string) {
	part.mu.Lock()
	defer part.mu.Unlock()
	part.active[ch] = true
	t := part.topics[ch]
	if t == nil {
		return
	}
	if !t.isReady {
		t.markReady()
		return
	}
	h.send(t, &Item{Resync: true})
}

// dropped handles the end of a channel's subscription: ours (its last
// watcher left) or the server's. A node drops the shard channels of a slot
// it stops serving without closing the connection, for example a master
// that failed over and came back as a replica: no error reaches Receive, so
// without this the channel's watchers would wait for events that never
// come. A channel that still has watchers is subscribed again; the
// confirmation makes them catch up (confirmed).
func (h *Hub) dropped(part *partition, ch string) {
	part.mu.Lock()
	defer part.mu.Unlock()
	delete(part.active, ch)
	if part.topics[ch] == nil || h.ctx.Err() != nil {
		return
	}
	if part.subscribed[ch] {
		h.log.Warn("watch subscription dropped by the server; subscribing again", "channel", ch)
		part.resub[ch] = true
	}
	part.poke()
}

// resyncPartition tells every watcher of the partition to catch up, after
// its connection failed: the reconnection confirms every channel again.
func (h *Hub) resyncPartition(part *partition) {
	part.mu.Lock()
	defer part.mu.Unlock()
	clear(part.active)
	it := &Item{Resync: true}
	for _, t := range part.topics {
		h.send(t, it)
	}
}

func (h *Hub) deliver(part *partition, ch, payload string) {
	part.mu.Lock()
	t := part.topics[ch]
	watched := t != nil && len(t.watchers) > 0
	part.mu.Unlock()
	if !watched {
		return
	}
	raw, private, err := store.DecodeNotification([]byte(payload))
	if err != nil {
		h.log.Error("bad live notification", "channel", ch, "err", err)
		return
	}
	var item *Item
	var seats uint32 = AllSeats
	switch {
	case private:
		item, seats = &Item{Private: raw}, noticeSeats(raw)
	default:
		item = &Item{Events: make([]Event, 0, len(raw))}
		for _, b := range raw {
			ev, err := ReadEvent(b)
			if err != nil {
				h.log.Error("bad live event", "channel", ch, "err", err)
				item = &Item{Resync: true}
				break
			}
			ev.frame = new(frame) // one encoding per event for every watcher
			item.Events = append(item.Events, ev)
		}
	}
	part.mu.Lock()
	defer part.mu.Unlock()
	if t := part.topics[ch]; t != nil {
		if private {
			h.sendTo(t, item, seats)
		} else {
			h.send(t, item)
		}
	}
}

// noticeSeats is the mask of the seats private notices are for (each
// starts with its seat). A notice that names no seat goes to every
// watcher whose seats may include one, which then reads it.
func noticeSeats(notices [][]byte) uint32 {
	var m uint32
	for _, b := range notices {
		if len(b) == 0 || b[0] >= 4 {
			return AllSeats
		}
		m |= 1 << b[0]
	}
	return m
}

// send hands an item to every watcher of a topic without blocking; a
// watcher with a full buffer is dropped. Called with part.mu held.
func (h *Hub) send(t *topic, it *Item) { h.sendTo(t, it, 0) }

// sendTo is send to the watchers of the given seats only (0: every
// watcher).
func (h *Hub) sendTo(t *topic, it *Item, seats uint32) {
	for w := range t.watchers {
		if seats != 0 && w.seats.Load()&seats == 0 {
			continue
		}
		select {
		case w.c <- it:
		default:
			delete(t.watchers, w)
			close(w.lost)
		}
	}
}

// Close closes every subscription and waits for the partitions'
// goroutines to stop. Watchers still open keep their channels (they see no
// further items).
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.cancel()
	parts := make([]*partition, 0, len(h.parts))
	for _, part := range h.parts {
		parts = append(parts, part)
	}
	h.mu.Unlock()
	var errs []error
	for _, part := range parts {
		part.mu.Lock()
		ps := part.ps
		part.mu.Unlock()
		if ps != nil {
			errs = append(errs, ps.Close())
		}
	}
	h.wg.Wait()
	return errors.Join(errs...)
}
