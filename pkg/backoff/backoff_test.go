package backoff

import (
	"context"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	t.Parallel()
	p := Policy{Initial: 100 * time.Millisecond, Max: time.Second}
	tests := []struct {
		name     string
		failures int // before the call
		want     time.Duration
	}{
		{"first failure", 0, 100 * time.Millisecond},
		{"second", 1, 200 * time.Millisecond},
		{"third", 2, 400 * time.Millisecond},
		{"fourth", 3, 800 * time.Millisecond},
		{"capped", 4, time.Second},
		{"long outage", 1000, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 100 { // the jitter is random: check its bounds often
				b := New(p)
				b.failures = tt.failures
				got := b.Next()
				if got > tt.want || got < tt.want-tt.want/5 {
					t.Fatalf("Next after %d failures = %v, want within [%v, %v]", tt.failures, got, tt.want-tt.want/5, tt.want)
				}
				if b.Failures() != tt.failures+1 {
					t.Fatalf("Failures = %d, want %d", b.Failures(), tt.failures+1)
				}
			}
		})
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	b := New(Policy{Initial: time.Millisecond, Max: time.Hour})
	for range 10 {
		b.Next()
	}
	b.Reset()
	if d := b.Next(); d > time.Millisecond {
		t.Errorf("Next after Reset = %v, want at most the initial delay", d)
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Errorf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
	if err := Sleep(t.Context(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		p  Policy
		ok bool
	}{
		{DefaultPolicy(), true},
		{Policy{Initial: time.Second, Max: time.Second}, true},
		{Policy{}, false},
		{Policy{Initial: time.Second, Max: time.Millisecond}, false},
	} {
		if err := tt.p.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v.Validate() = %v, want ok=%v", tt.p, err, tt.ok)
		}
	}
}
