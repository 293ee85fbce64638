// Package backoff spaces out the retries of a failing background loop:
// exponentially growing, jittered delays between a minimum and a maximum.
//
// Every worker loop of the services (matchmaking's ticket-event
// subscriber, rating's stream consumers, match's keeper) retries a failed
// step this way, and reports itself not ready while it fails (see
// docs/architecture.md, "Background workers").
package backoff

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Policy is the shape of the delays.
type Policy struct {
	// Initial is the delay after the first failure.
	Initial time.Duration
	// Max caps the delay: a failing loop tries again at least this often.
	Max time.Duration
}

// DefaultPolicy is what the services use: quick first retries, and no more
// than one attempt every five seconds during a long outage.
func DefaultPolicy() Policy {
	return Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
}

// Validate reports a policy that cannot work.
func (p Policy) Validate() error {
	if p.Initial <= 0 || p.Max < p.Initial {
		return errors.New("backoff: need 0 < initial <= max")
	}
	return nil
}

// Backoff counts consecutive failures and returns the delay before the next
// attempt. The zero value is not usable; create one with [New]. A Backoff
// belongs to one loop (it is not safe for concurrent use).
type Backoff struct {
	p        Policy
	failures int
}

// New returns a Backoff following p (which must be valid).
func New(p Policy) *Backoff { return &Backoff{p: p} }

// Failures is the number of failures since the last [Backoff.Reset].
func (b *Backoff) Failures() int { return b.failures }

// Next records a failure and returns the delay before the next attempt:
// Initial doubled per consecutive failure, capped at Max, then jittered
// down by up to a fifth so that instances that failed together (a Redis
// outage) do not retry in lockstep.
func (b *Backoff) Next() time.Duration {
	d := b.p.Initial
	for i := 0; i < b.failures && d < b.p.Max; i++ {
		d *= 2
	}
	d = min(d, b.p.Max)
	b.failures++
	return d - rand.N(d/5+1)
}

// Reset forgets the failures, after a success.
func (b *Backoff) Reset() { b.failures = 0 }

// Sleep waits for d, the delay from [Backoff.Next] (loops log it first).
// It returns ctx's error if ctx ends first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
