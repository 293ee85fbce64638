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
	// the match's watchers only (premove queues: the watcher decides whom
	// they are for). They take no version.
	Private [][]byte
}

// Watcher receives the live events of one match.
type Watcher struct {
	// C delivers items; it is never closed.
	C    <-chan *Item
	c    chan *Item
	lost chan struct{}
	hub  *Hub
	id   string
	once sync.Once
}

// Closed is closed when the hub shuts down: the watcher gets nothing more.
func (w *Watcher) Closed() <-chan struct{} { return w.hub.ctx.Done() }

// Lost is closed when the watcher fell behind and was dropped.
func (w *Watcher) Lost() <-chan struct{} { return w.lost }

// Close stops the watcher.
func (w *Watcher) Close() { w.once.Do(func() { w.hub.remove(w) }) }

// Hub is the fan-out of one instance.
type Hub struct {
	store   *store.Store
	log     *slog.Logger
	bufSize int

	mu     sync.Mutex
	closed bool
	parts  map[int]*partition
	topics map[string]*topic // by channel name
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

type partition struct {
	ps *redis.PubSub
}

type topic struct {
	id       string
	watchers map[*Watcher]struct{}
	ready    chan struct{} // closed when the subscription is confirmed
	isReady  bool
}

// ErrClosed is returned by Watch after Close.
var ErrClosed = errors.New("fan-out hub closed")

// New returns a hub; bufSize bounds each watcher's buffer (in changes).
func New(st *store.Store, log *slog.Logger, bufSize int) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{store: st, log: log, bufSize: bufSize, parts: map[int]*partition{}, topics: map[string]*topic{},
		ctx: ctx, cancel: cancel}
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
		part = &partition{ps: h.store.Subscribe(h.ctx, p)}
		h.parts[p] = part
		h.wg.Add(1)
		go h.receive(p, part)
	}
	t := h.topics[ch]
	if t == nil {
		t = &topic{id: id, watchers: map[*Watcher]struct{}{}, ready: make(chan struct{})}
		h.topics[ch] = t
		if err := part.ps.SSubscribe(ctx, ch); err != nil {
			delete(h.topics, ch)
			h.mu.Unlock()
			return nil, err
		}
	}
	c := make(chan *Item, h.bufSize)
	w := &Watcher{C: c, c: c, lost: make(chan struct{}), hub: h, id: ch}
	t.watchers[w] = struct{}{}
	ready := t.ready
	h.mu.Unlock()
	select {
	case <-ready:
		return w, nil
	case <-ctx.Done():
		w.Close()
		return nil, ctx.Err()
	case <-time.After(5 * time.Second):
		// The confirmation can be lost in a reconnect; the watcher still
		// works (it catches up on Resync), so do not fail the call.
		return w, nil
	}
}

func (h *Hub) remove(w *Watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[w.id]
	if t == nil {
		return
	}
	delete(t.watchers, w)
	if len(t.watchers) == 0 && !h.closed {
		delete(h.topics, w.id)
		p, _ := store.PartitionOf(t.id)
		if part := h.parts[p]; part != nil {
			// Best effort: a failed unsubscribe only costs unused messages.
			_ = part.ps.SUnsubscribe(h.ctx, w.id)
		}
	}
}

// receive reads one partition's subscription until the hub closes.
func (h *Hub) receive(p int, part *partition) {
	defer h.wg.Done()
	for {
		msg, err := part.ps.Receive(h.ctx)
		if err != nil {
			if h.ctx.Err() != nil {
				return
			}
			h.log.Warn("watch subscription interrupted", "partition", p, "err", err)
			h.resyncPartition(p)
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
				h.confirmed(m.Channel)
			case "sunsubscribe":
				h.dropped(part, m.Channel)
			}
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		}
	}
}

// confirmed marks a topic's subscription active; a repeated confirmation
// (after a reconnect) tells its watchers to catch up.
func (h *Hub) confirmed(ch string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[ch]
	if t == nil {
		return
	}
	if !t.isReady {
		t.isReady = true
		close(t.ready)
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
	h.mu.Lock()
	_, wanted := h.topics[ch]
	wanted = wanted && !h.closed
	h.mu.Unlock()
	if !wanted {
		return
	}
	h.log.Warn("watch subscription dropped by the server; subscribing again", "channel", ch)
	if err := part.ps.SSubscribe(h.ctx, ch); err != nil && h.ctx.Err() == nil {
		// The connection is broken: Receive reports it, and the
		// reconnection subscribes every channel again.
		h.log.Warn("watch subscription not renewed", "channel", ch, "err", err)
	}
}

func (h *Hub) resyncPartition(p int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.topics {
		if tp, _ := store.PartitionOf(t.id); tp == p {
			h.send(t, &Item{Resync: true})
		}
	}
}

func (h *Hub) deliver(ch, payload string) {
	h.mu.Lock()
	t := h.topics[ch]
	if t == nil || len(t.watchers) == 0 {
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	raw, private, err := store.DecodeNotification([]byte(payload))
	if err != nil {
		h.log.Error("bad live notification", "channel", ch, "err", err)
		return
	}
	item := &Item{Events: make([]Event, 0, len(raw))}
	if private {
		item = &Item{Private: raw}
		raw = nil
	}
	for _, b := range raw {
		ev, err := ReadEvent(b)
		if err != nil {
			h.log.Error("bad live event", "channel", ch, "err", err)
			item = &Item{Resync: true}
			break
		}
		item.Events = append(item.Events, ev)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[ch]; t != nil {
		h.send(t, item)
	}
}

// send hands an item to every watcher of a topic without blocking; a
// watcher with a full buffer is dropped. Called with h.mu held.
func (h *Hub) send(t *topic, it *Item) {
	for w := range t.watchers {
		select {
		case w.c <- it:
		default:
			delete(t.watchers, w)
			close(w.lost)
		}
	}
}

// Close closes every subscription and waits for the receivers to stop.
// Watchers still open keep their channels (they see no further items).
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.cancel()
	var errs []error
	for _, part := range h.parts {
		errs = append(errs, part.ps.Close())
	}
	h.mu.Unlock()
	h.wg.Wait()
	return errors.Join(errs...)
}
