package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestChaosRun is the short chaos run of `make test`: the whole system (a
// 6-node Redis Cluster, two instances of each service built from this
// tree, 24 players in 6 games at a time), 60 s of play with a fixed seed
// and a fault every 6 s on average (one at a time), so each kind of fault comes up (the
// network one only where namespaces can be made, as root); then every
// check must find nothing lost. About 100 s of wall time (120 s at a
// load average of 20 on two cores).
func TestChaosRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the whole system for 60 s")
	}
	for _, bin := range []string{"redis-server", "redis-cli", "go"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found and CI=true", bin)
			}
			t.Skipf("%s not found", bin)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cfg := defaultConfig()
	cfg.Duration, cfg.Games, cfg.Think, cfg.Every = 60*time.Second, 6, 50*time.Millisecond, 6*time.Second
	cfg.TimeControl, cfg.Abandon, cfg.Seed, cfg.Quiet = "0.5+0", 0.15, 22, true
	cfg.Dir = t.TempDir()
	var out strings.Builder
	v, err := run(ctx, cfg, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if n := v.losses(); n > 0 {
		t.Fatalf("%d losses (report above)", n)
	}
	if v.acked == 0 || v.games < cfg.Games || v.finished == 0 {
		t.Errorf("too little play to check: %d moves acknowledged, %d games, %d finished", v.acked, v.games, v.finished)
	}
	for _, k := range allKinds {
		if k == faultNetem && strings.Contains(out.String(), "skipped:") {
			continue
		}
		if !strings.Contains(out.String(), string(k)+"") {
			t.Errorf("no %s in the run", k)
		}
	}
}
