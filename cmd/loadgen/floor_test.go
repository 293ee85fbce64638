package main

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// TestRunAgainstFloor: loadgen's watched run against the floor (with its
// Redis round trip) moves, and every event reaches every stream once and in
// order; the floor's Redis counters show one round trip per move.
func TestRunAgainstFloor(t *testing.T) {
	t.Parallel()
	rdb, redisAddr := redistest.Standalone(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- serveFloor(ctx, lis, redisAddr) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("floor: %v", err)
		}
	}()
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := run(ctx, []string{"-write-keys", keys}, io.Discard); err != nil {
		t.Fatalf("write keys: %v", err)
	}
	out := runLoadgen(ctx, t, "-addr", lis.Addr().String(), "-keys", keys, "-watch", "-games", "3", "-think", "20ms",
		"-warmup", "300ms", "-duration", "1s")
	r, err := parseReport(out)
	if err != nil {
		t.Fatalf("bad report: %v\n%s", err, out)
	}
	if !r.watched || r.moves == 0 {
		t.Fatalf("no watched moves against the floor:\n%s", out)
	}
	if !strings.Contains(out, "watch events delivered=") {
		t.Errorf("no delivery line:\n%s", out)
	}
	keysFound, err := rdb.Keys(t.Context(), "floor:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var incrs int64
	for _, k := range keysFound {
		n, err := rdb.Get(t.Context(), k).Int64()
		if err != nil {
			t.Fatal(err)
		}
		incrs += n
	}
	if incrs < int64(r.moves) {
		t.Errorf("%d Redis round trips for %d measured moves, want one per move at least", incrs, r.moves)
	}
}
