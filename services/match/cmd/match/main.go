// Command match runs the match service: match.v1.MatchService on the rules
// engine, with matches kept in Redis (standalone or cluster). Settings come
// from flags and environment variables: see README.md and docs/match.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisbatch"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/api"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
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
	cfg, err := envflag.Load("match", defaultConfig(), args, getenv, stdout)
	if err != nil {
		return err
	}
	log, err := cfg.Server.Logger(stdout)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}

	var (
		rdb     redis.UniversalClient
		commits *redisbatch.Batcher
		hub     *fanout.Hub
	)
	defer func() {
		// Reverse order of opening: the hub reads through the store, the
		// store commits through the batcher, which uses the client.
		if hub != nil {
			hub.Close()
		}
		if commits != nil {
			commits.Close()
		}
		if rdb != nil {
			rdb.Close()
		}
	}()
	return server.Run(ctx, cfg.Server, log, server.Options{Listening: listening}, func(srv *server.Server) error {
		rdb, err = redisconn.NewForServer(ctx, cfg.Redis, srv)
		if err != nil {
			return err
		}
		commits = redisbatch.New(rdb, redisbatch.DefaultConfig())
		st, err := store.New(rdb, cfg.Store, commits)
		if err != nil {
			return err
		}
		hub = fanout.New(st, log, cfg.WatchBuffer)
		svc, err := match.New(st, hub, cfg.Match, log, time.Now)
		if err != nil {
			return err
		}
		keeper, err := match.NewKeeper(svc, cfg.Keeper, log, srv.Report, srv.MeterProvider())
		if err != nil {
			return err
		}
		a, err := api.New(svc, log, srv.MeterProvider(), cfg.WatchSendTimeout)
		if err != nil {
			return err
		}
		a.Register(srv.GRPC())
		srv.Go("keeper", keeper.Run)
		srv.Go("presence", svc.RunPresence)
		// Closing the hub at the start of shutdown ends the watch streams
		// (UNAVAILABLE: reconnect elsewhere), so the graceful drain need not
		// wait for them.
		srv.Go("watch-hub", func(ctx context.Context) error {
			<-ctx.Done()
			return hub.Close()
		})
		return nil
	})
}
