// Command bots runs a pool of computer players against a Four Kingdoms
// deployment. Each bot is an ordinary client of the public API: it waits in
// a queue, plays the match it is given and enqueues again.
//
// Bots need bot identities so the matchmaker uses them only to fill the
// seats of people who waited (queues with "bots=<wait>"): with --keys-file
// (AUTH_KEYS_FILE, the deployment's signing key set, which only an operator
// holds) the pool mints them; without it the bots sign in as guests and are
// matched like people.
//
// Like the services, the bots dial with TLS unless INTERNAL_PLAINTEXT=true
// (--internal-plaintext): against `make run`, or any cluster on loopback,
// set it; in a deployment, TLS_CA_FILE names the services' authority.
//
// Usage:
//
//	bots [--size 6] [--level greedy] [--queues fourkingdoms/5+5,...] [--keys-file FILE] [--games N] [--internal-plaintext | --tls-ca-file FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/botpool"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	"github.com/fourkingdoms/fourkingdoms/pkg/servicetls"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bots:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, logOut io.Writer) error {
	cfg := botpool.Config{
		Endpoints: client.Endpoints{Matchmaking: "localhost:8082", Match: "localhost:8081", Rating: "localhost:8083"},
		Size:      6,
		Queues:    []string{"fourkingdoms/5+5"},
		Level:     brain.Greedy,
		Think:     300 * time.Millisecond,
	}
	var keysFile, level string
	var transport servicetls.Config
	level = string(cfg.Level)
	fs := flag.NewFlagSet("bots", flag.ContinueOnError)
	b := envflag.New(fs, getenv)
	b.String(&cfg.Endpoints.Matchmaking, "matchmaking", "FK_MATCHMAKING_ADDR", "matchmaking (and auth) service address")
	b.String(&cfg.Endpoints.Match, "match", "FK_MATCH_ADDR", "match service address")
	b.String(&cfg.Endpoints.Rating, "rating", "FK_RATING_ADDR", "rating service address")
	b.Int(&cfg.Size, "size", "BOTS_SIZE", "number of bots")
	b.StringList(&cfg.Queues, "queues", "BOTS_QUEUES", "queues to wait in, comma separated (round robin)")
	b.String(&level, "level", "BOTS_LEVEL", "strength: random or greedy")
	b.Duration(&cfg.Think, "think", "BOTS_THINK", "least time per move")
	b.Int(&cfg.Games, "games", "BOTS_GAMES", "games per bot before it stops (0: no limit)")
	b.String(&keysFile, "keys-file", "AUTH_KEYS_FILE", "signing key set to mint bot identities (empty: guest logins)")
	b.String(&transport.CAFile, "tls-ca-file", "TLS_CA_FILE", "PEM authorities of the services' certificates (empty: system roots)")
	b.Bool(&transport.Plaintext, "internal-plaintext", "INTERNAL_PLAINTEXT", "dial the services without TLS (loopback only)")
	if err := b.Err(); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	tlsCfg, err := transport.ClientConfig()
	if err != nil {
		return err
	}
	cfg.Endpoints.TLS = tlsCfg
	cfg.Level = brain.Level(level)
	cfg.Tokens = botpool.GuestTokens()
	if keysFile != "" {
		keys, err := auth.LoadFile(keysFile)
		if err != nil {
			return err
		}
		cfg.Tokens = botpool.MintTokens(keys, 24*time.Hour)
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	return botpool.Run(ctx, cfg, log)
}
