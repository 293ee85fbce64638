package api

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// Events wakes WatchTicket streams when their ticket reaches a final state
// (matched, cancelled, expired), from the store's pub/sub channels, so a
// player learns of the match at once instead of at the next poll. Pub/sub
// delivers at most once (a message sent while the subscription reconnects
// is lost), so watchers keep polling, slowly, as well.
type Events struct {
	subscribed chan struct{}
	once       sync.Once

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

// NewEvents returns an Events with no watchers.
func NewEvents() *Events {
	return &Events{subscribed: make(chan struct{}), waiters: map[string]map[chan struct{}]struct{}{}}
}

// Subscribed is closed once Run's subscriptions are confirmed by Redis.
func (e *Events) Subscribed() <-chan struct{} { return e.subscribed }

// Run subscribes to the queues' channels and wakes watchers until ctx ends.
func (e *Events) Run(ctx context.Context, st *store.Store, queues []string) error {
	ps := st.Subscribe(ctx, queues)
	defer ps.Close()
	for range queues {
		if _, err := ps.Receive(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("subscribe to ticket events: %w", err)
		}
	}
	e.once.Do(func() { close(e.subscribed) })
	msgs := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case msg, ok := <-msgs:
			if !ok {
				return nil
			}
			for _, id := range strings.Fields(msg.Payload) {
				e.wake(id)
			}
		}
	}
}

// watch registers interest in a ticket; the channel receives (without
// blocking the sender) when the ticket may have changed. stop unregisters.
func (e *Events) watch(ticketID string) (wake <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	e.mu.Lock()
	set := e.waiters[ticketID]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		e.waiters[ticketID] = set
	}
	set[ch] = struct{}{}
	e.mu.Unlock()
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(set, ch)
		if len(set) == 0 {
			delete(e.waiters, ticketID)
		}
	}
}

func (e *Events) wake(ticketID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.waiters[ticketID] {
		select {
		case ch <- struct{}{}:
		default: // already woken
		}
	}
}
