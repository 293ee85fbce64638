package api

import (
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// TestMain stops the Redis servers the tests started and checks for leaked
// goroutines. Every Redis test runs on a standalone server and on a 6-node
// cluster (redistest.Kinds), under its own key prefix.
func TestMain(m *testing.M) { redistest.Main(m) }
