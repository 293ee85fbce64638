package server

import (
	"container/list"
	"math"
	"sync"
	"time"
)

// limiter is a set of token buckets, one per caller key, holding at most max
// buckets. When full, the least recently used bucket is dropped: a forgotten
// caller starts again with a full bucket, which errs on the side of serving.
type limiter struct {
	rate  float64 // tokens per second
	burst float64
	max   int

	mu      sync.Mutex
	buckets map[string]*list.Element // of *bucket
	lru     list.List                // front = most recently used
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst, max int) *limiter {
	return &limiter{rate: rate, burst: float64(burst), max: max, buckets: make(map[string]*list.Element)}
}

// allow takes one token from key's bucket at time now. If none is left it
// returns false and how long until one will be.
func (l *limiter) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b *bucket
	if e, ok := l.buckets[key]; ok {
		l.lru.MoveToFront(e)
		b = e.Value.(*bucket)
		if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
			b.tokens = math.Min(l.burst, b.tokens+elapsed*l.rate)
		}
		b.last = now
	} else {
		if len(l.buckets) >= l.max {
			oldest := l.lru.Back()
			l.lru.Remove(oldest)
			delete(l.buckets, oldest.Value.(*bucket).key)
		}
		b = &bucket{key: key, tokens: l.burst, last: now}
		l.buckets[key] = l.lru.PushFront(b)
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return false, wait
}

func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
