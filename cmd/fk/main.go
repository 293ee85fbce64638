// Command fk is the Four Kingdoms terminal client: sign in as a guest, play
// a four-player match on an interactive board (or let a bot brain play it
// for scripts and tests), watch any match, export it as PGN4, and read
// ratings and the leaderboard.
//
// Usage:
//
//	fk [global flags] login [--name NAME]
//	fk [global flags] logout
//	fk [global flags] rename NAME
//	fk [global flags] link [--token TOKEN | --token-file FILE]
//	fk [global flags] play [--queue NAME] [--fixed] [--auto random|greedy] [--json]
//	fk [global flags] table create [--time TC] [--rated] [--seat SEAT] [--bot SEAT=LEVEL]...
//	fk [global flags] table join|leave CODE
//	fk [global flags] table start CODE [--bots LEVEL]
//	fk [global flags] table play CODE [--auto LEVEL] [--json]
//	fk [global flags] watch MATCH
//	fk [global flags] export MATCH
//	fk [global flags] rating [PLAYER] [--rule-set NAME]
//	fk [global flags] leaderboard [--rule-set NAME] [--size N] [--provisional]
//
// After an interactive match that finished, fk offers a rematch: typing
// "rematch" offers (or accepts) it, "no" declines; once every human
// accepted, fk plays the new match.
//
// Global flags (and their environment variables): --home (FK_HOME, where the
// session tokens are kept; an expired player token is renewed with the
// refresh token there, so the player stays the same), --matchmaking, --match, --rating (FK_MATCHMAKING_ADDR,
// FK_MATCH_ADDR, FK_RATING_ADDR; the defaults are those of `make run`),
// --plain (also NO_COLOR) for a board without colours. Global flags may
// also follow the command ("fk play --plain"). Leaving with "quit" or
// Ctrl-C is a normal end (exit status 0); errors exit with 1.
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
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return
	}
	fmt.Fprintln(os.Stderr, "fk:", explain(err))
	os.Exit(1)
}

// explain turns an error into a sentence for a person: a service that
// cannot be reached is named with its address and the likely cause, a
// gRPC status shows its message without the "rpc error: code = ... desc ="
// wrapping, and a message repeated by two layers is shown once.
func explain(err error) string {
	var ue *client.UnreachableError
	if errors.As(err, &ue) {
		return fmt.Sprintf("cannot reach %s at %s — is `make run` running? (set --%s or FK_%s_ADDR for another address)",
			ue.Service, ue.Addr, ue.Service, strings.ToUpper(ue.Service))
	}
	msg := err.Error()
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		st := se.GRPCStatus()
		msg = strings.Replace(msg, st.Err().Error(), st.Message(), 1)
		if st.Code() == codes.Unauthenticated {
			msg += " — run `fk login` to sign in again"
		}
	}
	return dedupe(msg)
}

// dedupe drops a ": "-separated part that repeats the part before it
// ("malformed token: malformed token: no kid" → "malformed token: no kid"),
// as when a server wraps an error whose text already names its kind.
func dedupe(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:1]
	for _, p := range parts[1:] {
		if p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ": ")
}

const usage = `usage: fk [global flags] COMMAND [flags]

commands:
  login [--name NAME]                           sign in as a new guest (the session is kept in --home;
                                                an expired token is renewed for the same player)
  logout                                        end the session (its refresh token stops working)
  rename NAME                                   change your display name (from your next match on)
  link [--token TOKEN | --token-file FILE]      link this guest to your account at the identity provider
                                                (its access token; also FK_OIDC_TOKEN): ratings carry over
  play [--queue NAME] [--fixed] [--auto LEVEL] [--json]
                                                find a match and play it (LEVEL random|greedy lets a bot brain play;
                                                the board turns to your seat unless --fixed; after the game,
                                                "rematch" offers or accepts a rematch with the same players, seats
                                                rotated, and follows into it once everyone accepted)
  table create|join|leave|start|play ...        play with friends at a private table: create prints an
                                                invite code and link, play joins, waits for the start and
                                                plays (see "fk table help")
  watch MATCH                                   follow a match live
  export MATCH                                  print a match as PGN4
  rating [PLAYER] [--rule-set NAME]             a player's rating (default: you)
  leaderboard [--rule-set NAME] [--size N] [--provisional]
                                                the best rated players (--provisional: also those
                                                whose rating is still provisional, in their own section)

global flags (before or after the command):`

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
	if getenv("NO_COLOR") != "" {
		g.Plain = true
	}
	// The global flags before the command; the command's own flag set
	// accepts them too (see app.flags), so they work anywhere.
	if err := fs.Parse(args); err != nil {
		return err
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
	case "logout":
		return a.logout(ctx, rest)
	case "rename":
		return a.rename(ctx, rest)
	case "table":
		return a.table(ctx, rest)
	case "link":
		return a.link(ctx, rest)
	case "help":
		fs.Usage()
		return nil
	}
	fs.Usage()
	return fmt.Errorf("unknown command %q", cmd)
}

// flags returns the flag set of a command. It holds the global flags as
// well, bound to the values parsed so far, so `fk play --plain` means what
// `fk --plain play` does.
func (a *app) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("fk "+name, flag.ContinueOnError)
	fs.SetOutput(a.stdout)
	fs.StringVar(&a.Home, "home", a.Home, "directory holding the session token (global)")
	fs.StringVar(&a.Endpoints.Matchmaking, "matchmaking", a.Endpoints.Matchmaking, "matchmaking (and auth) service address (global)")
	fs.StringVar(&a.Endpoints.Match, "match", a.Endpoints.Match, "match service address (global)")
	fs.StringVar(&a.Endpoints.Rating, "rating", a.Endpoints.Rating, "rating service address (global)")
	fs.BoolVar(&a.Plain, "plain", a.Plain, "no colours (global)")
	return fs
}

// parse parses a command's arguments with flags and operands in any order
// ("fk watch MATCH --plain"); everything after "--" is an operand.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return operands, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(operands, rest...), nil
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
}

// dial connects with the stored session's token. A token that has
// expired (or is about to) is renewed first with the session's refresh
// token, and the session file rewritten, so the player stays the same.
func (a *app) dial(ctx context.Context) (*client.Client, session, error) {
	s, err := loadSession(a.Home)
	if err != nil {
		return nil, session{}, err
	}
	c, err := client.Dial(a.Endpoints)
	if err != nil {
		return nil, session{}, err
	}
	c.SetToken(s.Token)
	if !s.stale(time.Now()) || !s.refreshable(time.Now()) {
		return c, s, nil
	}
	if s, err = a.refresh(ctx, c, s); err != nil {
		c.Close()
		return nil, session{}, err
	}
	return c, s, nil
}

// refresh renews s's player token and saves the result.
func (a *app) refresh(ctx context.Context, c *client.Client, s session) (session, error) {
	resp, err := c.Refresh(ctx, s.RefreshToken)
	switch status.Code(errors.Unwrap(err)) {
	case codes.OK:
	case codes.Aborted:
		// Another fk renewed this session a moment ago and saved it:
		// use what it saved.
		if saved, lerr := loadSession(a.Home); lerr == nil && !saved.stale(time.Now()) {
			c.SetToken(saved.Token)
			return saved, nil
		}
		return session{}, err
	case codes.Unauthenticated, codes.InvalidArgument:
		return session{}, fmt.Errorf("the session ended (%s): run `fk login` again", status.Convert(errors.Unwrap(err)).Message())
	default:
		return session{}, err
	}
	s = session{
		PlayerID: resp.GetPlayerId(), DisplayName: resp.GetDisplayName(),
		Token: resp.GetToken(), ExpiresAt: resp.GetExpiresAt().AsTime(),
		RefreshToken: resp.GetRefreshToken(), RefreshExpiresAt: resp.GetRefreshExpiresAt().AsTime(),
	}
	if err := saveSession(a.Home, s); err != nil {
		return session{}, fmt.Errorf("save the renewed session: %w", err)
	}
	return s, nil
}
