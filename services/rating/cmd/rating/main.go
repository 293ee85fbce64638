// Command rating is the rating service: it applies MatchFinished events from
// a Redis stream to per-rule-set ratings and serves them over gRPC
// (fourkingdoms.rating.v1.RatingService). Settings come from flags and
// environment variables: see README.md and docs/rating.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/api"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/consumer"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run is the whole program: config, dependencies, serving until ctx ends.
// listening, if not nil, is called once the server listens (tests learn
// its addresses from it).
//
// Everything opened while registering is closed by run's defers, after
// server.Run has returned, so in-flight calls drain first; on a
// registration error server.Run has already released the server.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, listening func(*server.Server)) error {
	cfg, err := envflag.Load("rating", defaultConfig(getenv), args, getenv, stdout)
	if err != nil {
		return err
	}
	log, err := cfg.Server.Logger(stdout)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}

	var rdb redis.UniversalClient
	defer func() {
		if rdb != nil {
			rdb.Close()
		}
	}()
	return server.Run(ctx, cfg.Server, log, server.Options{Listening: listening}, func(srv *server.Server) error {
		rdb, err = redisconn.NewForServer(ctx, cfg.Redis, srv)
		if err != nil {
			return err
		}
		policy := ladder.DefaultPolicy()
		st := store.New(rdb, policy, cfg.Store)
		api.New(st, policy, rules.RuleSetNames(), log).Register(srv.GRPC())
		c, err := consumer.New(rdb, st, cfg.Consumer, log, srv.MeterProvider(), srv.Report)
		if err != nil {
			return err
		}
		srv.Go("rating-consumer", c.Run)
		links, err := consumer.NewLinks(rdb, st, cfg.Consumer, log, srv.Report)
		if err != nil {
			return err
		}
		srv.Go("rating-link-consumer", links.Run)
		srv.Go("rating-backfill", func(ctx context.Context) error {
			return backfill(ctx, st, rules.RuleSetNames(), backoff.DefaultPolicy(), log)
		})
		log.InfoContext(ctx, "rating service starting",
			"stream", cfg.Consumer.Stream, "link_stream", cfg.Consumer.LinkStream, "group", cfg.Consumer.Group, "consumer", cfg.Consumer.Name,
			"workers", cfg.Consumer.Workers, "redis_cluster", cfg.Redis.Cluster())
		return nil
	})
}
