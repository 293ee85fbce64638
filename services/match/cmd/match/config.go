package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisbatch"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/api"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// config is the whole configuration of the match service.
type config struct {
	// Server is the shared bootstrap's configuration (listen addresses, auth, limits).
	Server server.Config
	// Redis selects the Redis deployment (standalone or cluster).
	Redis redisconn.Config
	// Store configures the Redis layout (event log length, retention, WAIT).
	Store store.Config
	// Match configures the domain logic (first-move limit, cache size).
	Match match.Config
	// Keeper configures deadline processing and the outbox relay.
	Keeper match.KeeperConfig
	// WatchBuffer bounds each watcher's buffer, in changes; a watcher that
	// falls further behind is disconnected with RESOURCE_EXHAUSTED.
	WatchBuffer int
}

func defaultConfig() config {
	host, _ := os.Hostname()
	return config{
		Server:      server.DefaultConfig("match"),
		Redis:       redisconn.DefaultConfig(),
		Store:       store.DefaultConfig(),
		Match:       match.DefaultConfig(),
		Keeper:      match.DefaultKeeperConfig(host + ":" + strconv.Itoa(os.Getpid())),
		WatchBuffer: 64,
	}
}

func (c *config) bind(fs *flag.FlagSet, getenv func(string) string) error {
	err := errors.Join(c.Server.Bind(fs, getenv), c.Redis.Bind(fs, getenv))
	b := envflag.New(fs, getenv)
	b.String(&c.Store.Prefix, "key-prefix", "MATCH_KEY_PREFIX", "prefix of every Redis key (tests)")
	b.Int(&c.Store.EventLogLen, "event-log-len", "MATCH_EVENT_LOG_LEN", "events kept per match for resuming watchers")
	b.Duration(&c.Store.Retention, "retention", "MATCH_RETENTION", "how long finished matches stay readable")
	b.Duration(&c.Store.RequestTTL, "request-ttl", "MATCH_REQUEST_TTL", "how long CreateMatch request ids are remembered")
	b.String(&c.Store.FinishedStream, "finished-stream", "MATCH_FINISHED_STREAM", "stream receiving MatchFinished records")
	b.Int(&c.Store.WaitReplicas, "wait-replicas", "MATCH_WAIT_REPLICAS", "replicas that must confirm each change (0: none)")
	b.Duration(&c.Store.WaitTimeout, "wait-timeout", "MATCH_WAIT_TIMEOUT", "how long to wait for replica confirmation")
	b.Duration(&c.Match.FirstMoveLimit, "first-move-limit", "MATCH_FIRST_MOVE_LIMIT", "time for a player's first move")
	b.Int(&c.Match.CacheSize, "cache-size", "MATCH_CACHE_SIZE", "decoded games cached per instance")
	b.Duration(&c.Keeper.Interval, "keeper-interval", "MATCH_KEEPER_INTERVAL", "interval of deadline scans")
	b.Duration(&c.Keeper.LeaseTTL, "keeper-lease-ttl", "MATCH_KEEPER_LEASE_TTL", "keeper lease lifetime")
	b.Int(&c.WatchBuffer, "watch-buffer", "MATCH_WATCH_BUFFER", "changes buffered per watcher")
	return errors.Join(err, b.Err())
}

func (c config) validate() error {
	var errs []error
	errs = append(errs, c.Server.Validate(), c.Redis.Validate(), c.Store.Validate(), c.Match.Validate(), c.Keeper.Validate())
	if c.WatchBuffer < 1 {
		errs = append(errs, errors.New("watch buffer must be at least 1"))
	}
	return errors.Join(errs...)
}

// run is the whole program: config, dependencies, serving until ctx ends.
// ready, if not nil, is called with the server once it listens (tests).
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, ready func(*server.Server)) error {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("match", flag.ContinueOnError)
	if err := cfg.bind(fs, getenv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	level, _ := server.ParseLevel(cfg.Server.LogLevel)
	log := server.NewLogger(stdout, level, cfg.Server.ServiceName)

	srv, err := server.New(ctx, cfg.Server, log, server.Options{})
	if err != nil {
		return err
	}
	rdb, err := redisconn.New(ctx, cfg.Redis, srv.TracerProvider(), srv.MeterProvider())
	if err != nil {
		return err
	}
	defer rdb.Close()
	commits := redisbatch.New(rdb, redisbatch.DefaultConfig())
	defer commits.Close()
	st, err := store.New(rdb, cfg.Store, commits)
	if err != nil {
		return err
	}
	svc, err := match.New(st, cfg.Match, log, time.Now)
	if err != nil {
		return err
	}
	keeper, err := match.NewKeeper(svc, cfg.Keeper, log)
	if err != nil {
		return err
	}
	hub := fanout.New(st, log, cfg.WatchBuffer)
	defer hub.Close()

	api.New(svc, hub, log).Register(srv.GRPC())
	srv.Go("keeper", keeper.Run)
	// Closing the hub at the start of shutdown ends the watch streams
	// (UNAVAILABLE: reconnect elsewhere), so the graceful drain need not
	// wait for them.
	srv.Go("watch-hub", func(ctx context.Context) error {
		<-ctx.Done()
		return hub.Close()
	})
	if ready != nil {
		if err := srv.Listen(); err != nil {
			return err
		}
		ready(srv)
	}
	return srv.Serve(ctx)
}
