package match

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

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
