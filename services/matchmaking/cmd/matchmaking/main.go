// Command matchmaking serves fourkingdoms.matchmaking.v1.MatchmakingService
// and fourkingdoms.auth.v1.AuthService (guest login), and runs the
// formation rounds that group waiting players into matches. Settings come
// from flags and environment variables: see README.md and
// docs/matchmaking.md.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/api"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/matchmaker"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/rematch"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/remote"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/requeue"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/sessions"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
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
// linkStreamLen caps the link stream (approximately): links are rare, and
// the rating service reads them within seconds, so the cap only bounds
// memory should it not run for a long time.
const linkStreamLen = 1_000_000

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, listening func(*server.Server)) error {
	cfg, err := envflag.Load("matchmaking", defaultConfig(), args, getenv, stdout)
	if err != nil {
		return err
	}
	log, err := cfg.Server.Logger(stdout)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}

	qs := cfg.queueList()
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name()
	}
	// Connections are closed in reverse order of opening.
	var closers []io.Closer
	defer func() {
		for _, c := range slices.Backward(closers) {
			c.Close()
		}
	}()
	// Matchmaking is the one service that mints tokens: guest logins and
	// its own calls to the match and rating services.
	opts := server.Options{PublicMethods: api.PublicAuthMethods(), MintsTokens: true, Listening: listening}
	return server.Run(ctx, cfg.Server, log, opts, func(s *server.Server) error {
		creds, err := auth.ServiceCredentials(s.Keys(), cfg.Server.ServiceName, cfg.ServiceTokenTTL, cfg.Server.TLS.Plaintext, time.Now)
		if err != nil {
			return err
		}
		// The same TLS settings as the server's own port: TLS verified
		// against TLS_CA_FILE unless INTERNAL_PLAINTEXT=true.
		transport, err := cfg.Server.TLS.ClientCredentials()
		if err != nil {
			return err
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
		rdb, err := redisconn.NewForServer(ctx, cfg.Redis, s)
		if err != nil {
			return err
		}
		closers = append(closers, rdb)

		st := store.New(rdb, cfg.KeyPrefix, names, cfg.storeSettings())
		// Bots are ordinary clients waiting in the queues that fill with
		// bots (cmd/internal/botpool); the matchmaker only seats them.
		ratings := remote.Ratings{Client: ratingv1.NewRatingServiceClient(ratingConn)}
		matches := remote.Matches{Client: matchv1.NewMatchServiceClient(matchConn)}
		mm := matchmaker.New(cfg.matchmakerConfig(), st, ratings, matches,
			s.MeterProvider().Meter("github.com/fourkingdoms/fourkingdoms/services/matchmaking"), log)
		sessSet := cfg.sessionSettings()
		links := sessions.NewLinkStream(rdb, cfg.KeyPrefix+cfg.LinkStream, linkStreamLen, sessSet.Wait)
		guests, err := api.NewAuth(s.Keys(), cfg.GuestTokenTTL, sessions.New(rdb, cfg.KeyPrefix, sessSet), links, log)
		if err != nil {
			return err
		}
		authv1.RegisterAuthServiceServer(s.GRPC(), guests)
		events := api.NewEvents(log, s.Report)
		apiSet := cfg.apiSettings(ratings, matches)
		// Rematches read finished matches and create new ones through the
		// match service, as this service.
		apiSet.Matches = matches
		apiSet.Rematches = rematch.New(rdb, cfg.KeyPrefix, cfg.RematchWindow)
		apiSet.RematchPoll = cfg.RematchPoll
		apiSet.Meter = s.MeterProvider().Meter("github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/api")
		mmAPI, err := api.NewMatchmaking(apiSet, st, qs, events, log)
		if err != nil {
			return err
		}
		matchmakingv1.RegisterMatchmakingServiceServer(s.GRPC(), mmAPI)
		// The bot lobbies' tickets are woken like the queues'.
		lobbies := make([]string, 0, len(names)+len(cfg.botLevels()))
		lobbies = append(lobbies, names...)
		for _, l := range cfg.botLevels() {
			lobbies = append(lobbies, store.LobbyQueue(l))
		}
		s.Go("ticket-events", func(ctx context.Context) error { return events.Run(ctx, st, lobbies) })
		s.Go("bot-lobbies", func(ctx context.Context) error { return expireLobbies(ctx, st, cfg.Interval, log) })
		// Formation rounds are not a health component: they fail mostly
		// when the match service does, which must not take matchmaking
		// (and guest login) out of rotation; they retry every interval.
		s.Go("matchmaker", func(ctx context.Context) error { return mm.Run(ctx, qs) })
		// Players of matches aborted for someone else's missed first move
		// go back to their queue (docs/matchmaking.md "Requeue").
		rq := requeue.DefaultConfig(cfg.KeyPrefix+cfg.AbandonedStream, consumerName())
		abandoned, err := requeue.New(rdb, st, rq, log,
			s.MeterProvider().Meter("github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/requeue"), s.Report)
		if err != nil {
			return err
		}
		s.Go("requeue", abandoned.Run)
		return nil
	})
}

// expireLobbies expires stale bot lobby tickets every interval until ctx
// ends (nothing forms matches in a lobby, so no formation round does it).
func expireLobbies(ctx context.Context, st *store.Store, every time.Duration, log *slog.Logger) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := st.ExpireLobbies(ctx, time.Now()); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "expiring bot lobby tickets failed", "err", err)
		}
	}
}

// consumerName names this instance in the requeue consumer group: unique
// among live instances (host and process id).
func consumerName() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}
