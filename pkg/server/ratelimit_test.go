package server

import (
	"fmt"
	"testing"
	"time"
)

func TestLimiterBucket(t *testing.T) {
	t.Parallel()
	l := newLimiter(10, 3, 100)
	now := time.Unix(0, 0)
	for i := range 3 {
		if ok, _ := l.allow("a", now); !ok {
			t.Fatalf("call %d within burst refused", i)
		}
	}
	ok, wait := l.allow("a", now)
	if ok {
		t.Fatal("call beyond burst allowed")
	}
	if wait != 100*time.Millisecond {
		t.Errorf("retry hint = %v, want 100ms", wait)
	}
	if ok, _ := l.allow("b", now); !ok {
		t.Error("other caller refused")
	}
	if ok, _ := l.allow("a", now.Add(100*time.Millisecond)); !ok {
		t.Error("refilled token refused")
	}
}

func TestLimiterBoundedMemory(t *testing.T) {
	t.Parallel()
	l := newLimiter(1, 1, 10)
	now := time.Unix(0, 0)
	for i := range 1000 {
		l.allow(fmt.Sprint("caller-", i), now)
	}
	if n := l.len(); n != 10 {
		t.Fatalf("tracked callers = %d, want 10", n)
	}
	// The most recent callers are still tracked (and exhausted).
	if ok, _ := l.allow("caller-999", now); ok {
		t.Error("recent caller forgotten")
	}
}

func BenchmarkLimiter(b *testing.B) {
	l := newLimiter(1e9, 1e9, 1000)
	now := time.Now()
	keys := make([]string, 2000)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.allow(keys[i%len(keys)], now)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}
