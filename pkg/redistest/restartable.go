package redistest

import (
	"context"
	"fmt"
	"testing"
)

// Restartable is a standalone redis-server of one test, which the test may
// stop and start again on the same port: for tests of how services behave
// while Redis is unreachable and after it returns. Its data does not
// survive a stop (no persistence).
type Restartable struct {
	n *node
}

// NewRestartable starts a private standalone server for t, stopped when t
// ends.
func NewRestartable(t testing.TB) *Restartable {
	t.Helper()
	require(t)
	n, err := startNode(t.Context(), fmt.Sprintf("private-%d", prefixSeq.Add(1)), 0)
	if err != nil {
		t.Fatalf("start redis: %v", err)
	}
	t.Cleanup(n.kill)
	return &Restartable{n: n}
}

// Addr returns the server's host:port, the same across Stop and Start.
func (p *Restartable) Addr() string { return p.n.addr() }

// Stop kills the server and waits until it is gone: connections to it fail
// at once (connection refused) until Start.
func (p *Restartable) Stop() { p.n.kill() }

// Start starts the stopped server again on its port and waits until it
// answers PING. Another process could have taken the port in between; the
// test then fails.
func (p *Restartable) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	if err := p.n.start(ctx); err != nil {
		t.Fatalf("restart redis on %s: %v", p.Addr(), err)
	}
}
