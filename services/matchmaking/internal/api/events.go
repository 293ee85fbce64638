package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// eventsComponent names the subscriber in health reports.
const eventsComponent = "ticket-events"

// Events wakes WatchTicket streams when their ticket reaches a final state
// (matched, cancelled, expired), and WatchTable streams when their table
// changed, from the store's pub/sub channels, so a
// player learns of the match at once instead of at the next poll. Pub/sub
// delivers at most once (a message sent while the subscription reconnects
// is lost), so watchers keep polling, slowly, as well.
type Events struct {
	log        *slog.Logger
	retry      backoff.Policy
	report     func(component string, err error)
	subscribed chan struct{}
	once       sync.Once

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

// NewEvents returns an Events with no watchers. report receives the state
// of the subscription, as component "ticket-events": an error while it
// cannot subscribe, nil once it has; the service passes its health's
// Report. A nil report ignores it.
func NewEvents(log *slog.Logger, report func(component string, err error)) *Events {
	if report == nil {
		report = func(string, error) {}
	}
	return &Events{
		log: log, retry: backoff.DefaultPolicy(), report: report,
		subscribed: make(chan struct{}), waiters: map[string]map[chan struct{}]struct{}{},
	}
}

// Subscribed is closed once Run's subscriptions are first confirmed by Redis.
func (e *Events) Subscribed() <-chan struct{} { return e.subscribed }

// Run subscribes to the queues' channels and wakes watchers until ctx ends.
// It never gives up: a subscription that cannot be made (Redis
// unreachable) is reported, logged and tried again after a backoff delay.
// Once subscribed, the client re-subscribes by itself after a lost
// connection; watchers poll meanwhile.
func (e *Events) Run(ctx context.Context, st *store.Store, queues []string) error {
	bo := backoff.New(e.retry)
	for {
		err := e.listen(ctx, st, queues, bo)
		if ctx.Err() != nil {
			return nil
		}
		e.report(eventsComponent, err)
		d := bo.Next()
		e.log.WarnContext(ctx, "ticket events subscription failed", "err", err, "failures", bo.Failures(), "retry_in", d)
		if backoff.Sleep(ctx, d) != nil {
			return nil
		}
	}
}

// listen subscribes and wakes watchers until ctx ends (nil) or the
// subscription fails.
func (e *Events) listen(ctx context.Context, st *store.Store, queues []string, bo *backoff.Backoff) error {
	ps := st.Subscribe(ctx, queues)
	defer ps.Close()
	for range len(queues) + 1 { // the queues' channels and the tables'
		if _, err := ps.Receive(ctx); err != nil {
			return fmt.Errorf("subscribe to ticket events: %w", err)
		}
	}
	e.report(eventsComponent, nil)
	bo.Reset()
	e.once.Do(func() { close(e.subscribed) })
	msgs := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case msg, ok := <-msgs:
			if !ok {
				return errors.New("ticket events subscription closed")
			}
			if msg.Channel == st.TablesChannel() {
				e.wake(tableWatchKey(msg.Payload))
				continue
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
