package server

import "sync"

// streamCounter counts the open streams of each caller, so that one caller
// cannot hold an unbounded share of a server's streams (each WatchMatch or
// WatchTicket costs a goroutine, buffers and a Redis subscription).
// A caller's entry is deleted when its last stream ends, so the map holds
// only callers with an open stream.
type streamCounter struct {
	max int

	mu   sync.Mutex
	open map[string]int
}

func newStreamCounter(max int) *streamCounter {
	return &streamCounter{max: max, open: make(map[string]int)}
}

// acquire counts a new stream of key; it returns false, counting nothing,
// when key already has max open.
func (c *streamCounter) acquire(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[key] >= c.max {
		return false
	}
	c.open[key]++
	return true
}

// release ends a stream counted by acquire.
func (c *streamCounter) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[key] <= 1 {
		delete(c.open, key)
		return
	}
	c.open[key]--
}
