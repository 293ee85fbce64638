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
// first round trip of a scan that had at least an interval to wait for it
// and read some other partition: a scan left short by a slow heartbeat
// (the keeper's own slow link), or one in which nothing answered in time
// (the keeper starved of CPU), once noted outages of every partition it
// held.
func TestUnserved(t *testing.T) {
	t.Parallel()
	const interval = 200 * time.Millisecond
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	ioTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	whole := scanView{cut: true, first: true, budget: 350 * time.Millisecond, interval: interval, readSome: true}
	with := func(change func(v *scanView)) scanView {
		v := whole
		change(&v)
		return v
	}
	tests := []struct {
		name string
		err  error
		scan scanView
		want bool
	}{
		{"refused, in time", refused, with(func(v *scanView) { v.cut, v.first = false, false }), true},
		{"refused, then the deadline, in a scan that read nothing", refused, with(func(v *scanView) { v.first, v.readSome = false, false }), true},
		{"a reset connection", reset, with(func(v *scanView) { v.cut = false }), true},
		{"first round trip timed out in a whole scan that read others", ioTimeout, whole, true},
		{"first round trip canceled at the deadline of a scan of exactly an interval", context.DeadlineExceeded, with(func(v *scanView) { v.budget = interval }), true},
		{"first round trip timed out in a scan a slow heartbeat left short", ioTimeout, with(func(v *scanView) { v.budget = 40 * time.Millisecond }), false},
		{"first round trip canceled in a scan just short of an interval", context.DeadlineExceeded, with(func(v *scanView) { v.budget = interval - time.Millisecond }), false},
		{"first round trip timed out in a scan that read nothing (a starved keeper)", ioTimeout, with(func(v *scanView) { v.readSome = false }), false},
		{"a later round trip timed out", ioTimeout, with(func(v *scanView) { v.first = false }), false},
		{"a later round trip canceled", context.Canceled, with(func(v *scanView) { v.first = false }), false},
		{"a bug is no outage", errors.New("ERR wrong number of arguments"), with(func(v *scanView) { v.cut = false }), false},
	}
	for _, tt := range tests {
		if got := unserved(tt.err, tt.scan); got != tt.want {
			t.Errorf("%s: unserved(%v, %+v) = %v, want %v", tt.name, tt.err, tt.scan, got, tt.want)
		}
	}
}
