package auth

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: the OIDC key
// refresher ([OIDC.Run]) must end with its context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
