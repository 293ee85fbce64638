//go:build unix

package redistest

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU returns the CPU time (user + system) of this process so far,
// the client-side counterpart of ServerCPU.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
