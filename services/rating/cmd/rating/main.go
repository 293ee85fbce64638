// Command rating is the rating service: it applies MatchFinished events from
// a Redis stream to per-rule-set ratings and serves them over gRPC
// (fourkingdoms.rating.v1.RatingService). See docs/rating.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/api"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/consumer"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run is the whole service: it returns after ctx is done and the server
// has shut down, or on a setup error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg := defaultConfig(getenv)
	fs := flag.NewFlagSet("rating", flag.ContinueOnError)
	fs.SetOutput(stdout)
	if err := cfg.bind(fs, getenv); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	level, err := server.ParseLevel(cfg.Server.LogLevel)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	log := server.NewLogger(stdout, level, cfg.Server.ServiceName)

	// The Redis client outlives the server: in-flight calls drain before
	// Run returns, and only then is the client closed.
	var rdb redis.UniversalClient
	defer func() {
		if rdb != nil {
			rdb.Close()
		}
	}()
	return server.Run(ctx, cfg.Server, log, server.Options{}, func(srv *server.Server) error {
		var err error
		rdb, err = redisconn.New(ctx, cfg.Redis, srv.TracerProvider(), srv.MeterProvider())
		if err != nil {
			return err
		}
		policy := ladder.DefaultPolicy()
		st := store.New(rdb, policy, cfg.Store)
		api.New(st, policy, rules.RuleSetNames(), log).Register(srv.GRPC())
		c, err := consumer.New(rdb, st, cfg.Consumer, log, srv.MeterProvider())
		if err != nil {
			return err
		}
		srv.Go("rating-consumer", c.Run)
		log.InfoContext(ctx, "rating service starting",
			"stream", cfg.Consumer.Stream, "group", cfg.Consumer.Group, "consumer", cfg.Consumer.Name,
			"workers", cfg.Consumer.Workers, "redis_cluster", cfg.Redis.Cluster())
		return nil
	})
}
