//go:build !unix

package redistest

import (
	"testing"
	"time"
)

// ProcessCPU skips tb: this platform has no getrusage.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	tb.Skip("process CPU time needs getrusage (unix)")
	return 0
}
