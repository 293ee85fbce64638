package match

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestRedisFailed: a keeper pass that ran out of time counts as lag only
// when every error in it is a deadline; a failure of Redis anywhere in the
// joined errors (a scan's partitions included) is an outage, not slowness.
func TestRedisFailed(t *testing.T) {
	t.Parallel()
	deadline := context.DeadlineExceeded
	refused := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"none", nil, false},
		{"a deadline", deadline, false},
		{"a wrapped deadline", fmt.Errorf("mark ranges served: %w", deadline), false},
		{"deadlines joined", errors.Join(fmt.Errorf("read ranges served: %w", deadline), fmt.Errorf("mark ranges served: %w", deadline)), false},
		{"a scan cut short", fmt.Errorf("keeper scan incomplete: %w", &store.ScanError{Failed: map[int]error{3: deadline, 4: deadline}}), false},
		{"a refused connection", fmt.Errorf("heartbeat: %w", refused), true},
		{"a refusal beside a deadline", errors.Join(fmt.Errorf("x: %w", deadline), fmt.Errorf("y: %w", refused)), true},
		{"one partition refused in a scan", fmt.Errorf("keeper scan incomplete: %w", &store.ScanError{Failed: map[int]error{3: deadline, 4: refused}}), true},
		{"a dial that timed out", fmt.Errorf("z: %w", &net.OpError{Op: "dial", Net: "tcp", Err: deadline}), true},
	}
	for _, tt := range tests {
		if got := redisFailed(tt.err); got != tt.want {
			t.Errorf("%s: redisFailed(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestUnserved: which failures of a keeper's scan on a partition count as
// the partition's outage. A timeout counts only for a partition of the
// first round trip of a scan that had at least an interval to wait for it:
// a scan left with less by a slow heartbeat (the keeper's own slow link)
// once noted outages of every partition it held.
func TestUnserved(t *testing.T) {
	t.Parallel()
	const interval = 200 * time.Millisecond
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	ioTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	tests := []struct {
		name   string
		err    error
		cut    bool // the scan's deadline had passed
		first  bool // the partition was in the first round trip
		budget time.Duration
		want   bool
	}{
		{"refused, in time", refused, false, false, time.Second, true},
		{"refused, then the deadline", refused, true, false, 10 * time.Millisecond, true},
		{"a reset connection", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false, true, time.Second, true},
		{"first round trip timed out in a whole scan", ioTimeout, true, true, 350 * time.Millisecond, true},
		{"first round trip canceled at the deadline of a whole scan", context.DeadlineExceeded, true, true, interval, true},
		{"first round trip timed out in a scan a slow heartbeat left short", ioTimeout, true, true, 40 * time.Millisecond, false},
		{"first round trip canceled in a short scan", context.DeadlineExceeded, true, true, interval - time.Millisecond, false},
		{"a later round trip timed out", ioTimeout, true, false, 350 * time.Millisecond, false},
		{"a later round trip canceled", context.Canceled, true, false, time.Second, false},
		{"a bug is no outage", errors.New("ERR wrong number of arguments"), false, true, time.Second, false},
	}
	for _, tt := range tests {
		if got := unserved(tt.err, tt.cut, tt.first, tt.budget, interval); got != tt.want {
			t.Errorf("%s: unserved(%v, cut=%v, first=%v, budget=%v) = %v, want %v", tt.name, tt.err, tt.cut, tt.first, tt.budget, got, tt.want)
		}
	}
}
