// Command chaos runs the whole Four Kingdoms backend under faults and
// checks that nothing was lost (issue 22, docs/operations.md "Chaos run").
//
// It starts a 6-node Redis Cluster, two instances of each service (the
// built binaries, behind one TCP balancer per service that stands in for a
// Kubernetes Service), and 4×-games players who queue, get matched and play
// through the public API, recording every move the match service
// acknowledges. Meanwhile, on a schedule drawn from -seed, it SIGKILLs and
// restarts instances, SIGSTOPs instances for longer than their lease or
// claim timeouts, kills Redis masters (the replica is promoted, the old
// master rejoins as a replica) or fails them over with CLUSTER FAILOVER,
// and, where network namespaces can be made, adds latency and loss on the
// veth between the namespaced instances (match-1, rating-1) and Redis.
// At the end it checks, against Redis and the services, that every
// acknowledged move is in its game exactly once at its version, that no
// game is stuck, that every finished rated match changed its players'
// ratings exactly once, that no ticket was matched twice or lost, and that
// every flag fell within a second of its deadline; it prints a report
// table and exits 1 on any loss.
//
//	go run ./cmd/chaos -duration 10m -seed 7
//	scripts/chaos.sh -duration 10m
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := defaultConfig()
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	if err := cfg.bind(fs, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	v, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if v.losses() > 0 {
		os.Exit(1)
	}
}

// config is the run's configuration; every setting has a flag and an
// environment variable.
type config struct {
	Duration time.Duration // of play, faults included
	Seed     int
	Games    int           // games to keep running: 4 players each
	Think    time.Duration // least time a player takes per move
	Abandon  float64       // chance that a player walks away from a game
	Level    string        // the players' strength: random or greedy
	Every    time.Duration // mean time between faults
	Pause    time.Duration // how long SIGSTOP lasts
	// WaitReplicas sets MATCH_WAIT_REPLICAS, RATING_WAIT_REPLICAS and
	// MM_WAIT_REPLICAS to 1.
	WaitReplicas bool
	Netns        bool   // try network namespaces for the network faults
	TimeControl  string // of the queue the players join
	Bin          string // prebuilt service binaries (empty: go build them)
	Dir          string // work directory (empty: a temporary one, removed unless the run fails)
	Keep         bool   // keep the work directory
	Quiet        bool   // no progress lines
}

func defaultConfig() config {
	return config{
		Duration: 10 * time.Minute, Seed: 1, Games: 56, Think: 500 * time.Millisecond, Abandon: 0.05, Level: "greedy",
		Every: 20 * time.Second, Pause: 8 * time.Second, WaitReplicas: true, Netns: true,
		TimeControl: "1+0",
	}
}

func (c *config) bind(fs *flag.FlagSet, getenv func(string) string) error {
	b := envflag.New(fs, getenv)
	b.Duration(&c.Duration, "duration", "CHAOS_DURATION", "time of play with faults")
	b.Int(&c.Seed, "seed", "CHAOS_SEED", "seed of the fault schedule and the players' moves")
	b.Int(&c.Games, "games", "CHAOS_GAMES", "games to keep running (4 players each; a few are always between games, so 56 keeps 50 running)")
	b.Duration(&c.Think, "think", "CHAOS_THINK", "least time a player takes per move")
	b.String(&c.Level, "level", "CHAOS_LEVEL", "the players' strength: random or greedy (greedy games end sooner)")
	b.Float64(&c.Abandon, "abandon", "CHAOS_ABANDON", "chance that a player walks away from a game and lets its clock run out (flags to time)")
	b.Duration(&c.Every, "every", "CHAOS_EVERY", "mean time between faults (0: none)")
	b.Duration(&c.Pause, "pause", "CHAOS_PAUSE", "how long a SIGSTOP lasts (above the leases and claim timeouts the run sets)")
	b.Bool(&c.WaitReplicas, "wait-replicas", "CHAOS_WAIT_REPLICAS", "run match, rating and matchmaking with MATCH_WAIT_REPLICAS=1 / RATING_WAIT_REPLICAS=1 / MM_WAIT_REPLICAS=1")
	b.Bool(&c.Netns, "netns", "CHAOS_NETNS", "put match-1 and rating-1 in a network namespace for netem faults (skipped where not allowed)")
	b.String(&c.TimeControl, "time-control", "CHAOS_TIME_CONTROL", "time control of the players' queue")
	b.String(&c.Bin, "bin", "CHAOS_BIN", "directory with prebuilt match, matchmaking and rating binaries (empty: build them)")
	b.String(&c.Dir, "dir", "CHAOS_DIR", "work directory for logs and Redis data (empty: a temporary one)")
	b.Bool(&c.Keep, "keep", "CHAOS_KEEP", "keep the work directory")
	b.Bool(&c.Quiet, "quiet", "CHAOS_QUIET", "print the report only")
	return b.Err()
}
