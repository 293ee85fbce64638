// Command fk is the Four Kingdoms terminal client: sign in as a guest, play
// a four-player match on an interactive board (or let a bot brain play it
// for scripts and tests), watch any match, export it as PGN4, and read
// ratings and the leaderboard.
//
// Usage:
//
//	fk [global flags] login [--name NAME]
//	fk [global flags] play [--queue NAME] [--auto random|greedy] [--json]
//	fk [global flags] watch MATCH
//	fk [global flags] export MATCH
//	fk [global flags] rating [PLAYER] [--rule-set NAME]
//	fk [global flags] leaderboard [--rule-set NAME] [--size N]
//
// Global flags (and their environment variables): --home (FK_HOME, where the
// session token is kept), --matchmaking, --match, --rating (FK_MATCHMAKING_ADDR,
// FK_MATCH_ADDR, FK_RATING_ADDR; the defaults are those of `make run`),
// --plain (also NO_COLOR) for a board without colours.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fk:", err)
		os.Exit(1)
	}
}

const usage = `usage: fk [global flags] COMMAND [flags]

commands:
  login [--name NAME]                           sign in as a new guest (the token is kept in --home)
  play [--queue NAME] [--auto LEVEL] [--json]   find a match and play it (LEVEL random|greedy lets a bot brain play)
  watch MATCH                                   follow a match live
  export MATCH                                  print a match as PGN4
  rating [PLAYER] [--rule-set NAME]             a player's rating (default: you)
  leaderboard [--rule-set NAME] [--size N]      the best rated players

global flags:`

// globals are the settings every command shares.
type globals struct {
	Home      string
	Endpoints client.Endpoints
	Plain     bool
}

// app is one invocation: settings and I/O.
type app struct {
	globals
	stdin  io.Reader
	stdout io.Writer
	getenv func(string) string
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	g := globals{Endpoints: client.Endpoints{Matchmaking: "localhost:8082", Match: "localhost:8081", Rating: "localhost:8083"}}
	if dir, err := os.UserConfigDir(); err == nil {
		g.Home = filepath.Join(dir, "fourkingdoms")
	}
	fs := flag.NewFlagSet("fk", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintln(stdout, usage)
		fs.PrintDefaults()
	}
	b := envflag.New(fs, getenv)
	b.String(&g.Home, "home", "FK_HOME", "directory holding the session token")
	b.String(&g.Endpoints.Matchmaking, "matchmaking", "FK_MATCHMAKING_ADDR", "matchmaking (and auth) service address")
	b.String(&g.Endpoints.Match, "match", "FK_MATCH_ADDR", "match service address")
	b.String(&g.Endpoints.Rating, "rating", "FK_RATING_ADDR", "rating service address")
	b.Bool(&g.Plain, "plain", "FK_PLAIN", "no colours (also when NO_COLOR is set)")
	if err := b.Err(); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if getenv("NO_COLOR") != "" {
		g.Plain = true
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no command")
	}
	a := &app{globals: g, stdin: stdin, stdout: stdout, getenv: getenv}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	switch cmd {
	case "login":
		return a.login(ctx, rest)
	case "play":
		return a.play(ctx, rest)
	case "watch":
		return a.watch(ctx, rest)
	case "export":
		return a.export(ctx, rest)
	case "rating":
		return a.rating(ctx, rest)
	case "leaderboard":
		return a.leaderboard(ctx, rest)
	case "help":
		fs.Usage()
		return nil
	}
	fs.Usage()
	return fmt.Errorf("unknown command %q", cmd)
}

// dial connects with the stored session's token.
func (a *app) dial() (*client.Client, session, error) {
	s, err := loadSession(a.Home)
	if err != nil {
		return nil, session{}, err
	}
	c, err := client.Dial(a.Endpoints)
	if err != nil {
		return nil, session{}, err
	}
	c.SetToken(s.Token)
	return c, s, nil
}
