package match

import (
	"fmt"
	"testing"
)

func TestCacheNeverEvictsHeldEntries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		max, held  int
		free, more int
	}{
		{"some held", 4, 2, 2, 8},
		{"all held", 4, 4, 0, 4},
		{"more held than the bound", 2, 5, 0, 3},
		{"one slot", 1, 0, 1, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCache(tt.max)
			held := map[string]*entry{}
			for i := range tt.held {
				id := fmt.Sprintf("held-%d", i)
				held[id] = c.lock(id)
			}
			for i := range tt.free {
				c.lock(fmt.Sprintf("free-%d", i)).unlock()
			}
			for i := range tt.more {
				c.lock(fmt.Sprintf("more-%d", i)).unlock()
			}
			c.mu.Lock()
			for id, e := range held {
				if c.m[id] != e {
					t.Errorf("held entry %s was evicted", id)
				}
			}
			if n := len(c.m); n > max(tt.max, tt.held+1) {
				t.Errorf("cache holds %d entries, want at most %d", n, max(tt.max, tt.held+1))
			}
			c.mu.Unlock()
			for _, e := range held {
				e.unlock()
			}
			// Released entries can be dropped again.
			c.lock("last").unlock()
			c.mu.Lock()
			if n := len(c.m); n > max(tt.max, tt.held+1) {
				t.Errorf("after release the cache holds %d entries", n)
			}
			c.mu.Unlock()
		})
	}
}

// TestCacheSerialisesOneMatch checks that callers of one match share its
// entry however full the cache is: a second caller of a held match waits.
func TestCacheSerialisesOneMatch(t *testing.T) {
	t.Parallel()
	c := newCache(1)
	e := c.lock("a")
	got := make(chan *entry)
	go func() {
		e2 := c.lock("a")
		got <- e2
		e2.unlock()
	}()
	for i := range 10 {
		c.lock(fmt.Sprintf("other-%d", i)).unlock()
	}
	select {
	case <-got:
		t.Fatal("a second caller got a held match")
	default:
	}
	e.unlock()
	if e2 := <-got; e2 != e {
		t.Fatal("the second caller got another entry of the same match")
	}
}
