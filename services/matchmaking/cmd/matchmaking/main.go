// Command matchmaking serves fourkingdoms.matchmaking.v1.MatchmakingService
// and fourkingdoms.auth.v1.AuthService (guest login), and runs the
// formation rounds that group waiting players into matches. Settings come
// from flags and environment variables: see docs/matchmaking.md.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/api"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/config"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/matchmaker"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/remote"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run loads the configuration, wires the service and serves until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("matchmaking", flag.ContinueOnError)
	srvCfg := server.DefaultConfig("matchmaking")
	srvCfg.GRPCAddr, srvCfg.AdminAddr = ":8082", ":9092"
	redisCfg := redisconn.DefaultConfig()
	cfg := config.Default()
	if err := errors.Join(srvCfg.Bind(fs, getenv), redisCfg.Bind(fs, getenv), cfg.Bind(fs, getenv)); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := errors.Join(srvCfg.Validate(), redisCfg.Validate(), cfg.Validate()); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	level, _ := server.ParseLevel(srvCfg.LogLevel)
	log := server.NewLogger(stdout, level, srvCfg.ServiceName)

	qs := cfg.QueueList()
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name()
	}
	// Connections opened while registering are closed after the server
	// has stopped, in reverse order.
	var closers []io.Closer
	defer func() {
		for _, c := range slices.Backward(closers) {
			c.Close()
		}
	}()
	opts := server.Options{PublicMethods: []string{authv1.AuthService_GuestLogin_FullMethodName}}
	return server.Run(ctx, srvCfg, log, opts, func(s *server.Server) error {
		creds, err := auth.ServiceCredentials(s.Keys(), srvCfg.ServiceName, cfg.ServiceTokenTTL, cfg.Plaintext, time.Now)
		if err != nil {
			return err
		}
		transport := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
		if cfg.Plaintext {
			transport = insecure.NewCredentials()
		}
		matchConn, err := grpc.NewClient(cfg.MatchAddr, grpc.WithTransportCredentials(transport), grpc.WithPerRPCCredentials(creds))
		if err != nil {
			return fmt.Errorf("match service client: %w", err)
		}
		closers = append(closers, matchConn)
		ratingConn, err := grpc.NewClient(cfg.RatingAddr, grpc.WithTransportCredentials(transport), grpc.WithPerRPCCredentials(creds))
		if err != nil {
			return fmt.Errorf("rating service client: %w", err)
		}
		closers = append(closers, ratingConn)
		rdb, err := redisconn.New(ctx, redisCfg, s.TracerProvider(), s.MeterProvider())
		if err != nil {
			return err
		}
		closers = append(closers, rdb)

		st := store.New(rdb, cfg.KeyPrefix, names, cfg.Store())
		mm := matchmaker.New(cfg.Matchmaker(), st,
			remote.Ratings{Client: ratingv1.NewRatingServiceClient(ratingConn)},
			remote.Matches{Client: matchv1.NewMatchServiceClient(matchConn)},
			nil, // no bot provider: bots already waiting in a queue fill its seats
			s.MeterProvider().Meter("github.com/fourkingdoms/fourkingdoms/services/matchmaking"), log)
		guests, err := api.NewAuth(s.Keys(), cfg.GuestTokenTTL)
		if err != nil {
			return err
		}
		authv1.RegisterAuthServiceServer(s.GRPC(), guests)
		events := api.NewEvents()
		matchmakingv1.RegisterMatchmakingServiceServer(s.GRPC(), api.NewMatchmaking(cfg.API(), st, qs, events, log))
		s.Go("ticket-events", func(ctx context.Context) error { return events.Run(ctx, st, names) })
		s.Go("matchmaker", func(ctx context.Context) error { return mm.Run(ctx, qs) })
		return nil
	})
}
