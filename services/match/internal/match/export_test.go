package match

import (
	"sync"
	"time"
)

// FakeClock is a service clock (New's now) that tests move: shared by the
// package's internal and external tests.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock at now.
func NewFakeClock(now time.Time) *FakeClock { return &FakeClock{now: now} }

// Now is the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d on.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
