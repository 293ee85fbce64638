// Command devcluster is `make run`: the whole Four Kingdoms backend on one
// machine, for playing and developing.
//
// It builds the three services with `go build` into <dir>/bin (the same
// binaries production runs; `make run` builds them beforehand together with
// the launcher and fk, and passes -build=false), generates a development signing key set on the
// first run (<dir>/keys.json, never committed; matchmaking, which mints tokens, reads it, the
// match and rating services read its public keys from <dir>/public-keys.json), starts an embedded
// Redis-compatible store unless REDIS_ADDR or REDIS_CLUSTER_ADDRS names a
// real one (its data is loaded from <dir>/store.snapshot and saved there
// every 30 s and on stop; -fresh deletes it first), starts the rating, match and matchmaking services as separate
// processes, waits until each reports SERVING, serves the edge (one
// origin, port 8080 by default: the web app from web/dist and every public
// RPC, see pkg/edge), and runs a pool of bots that fill the empty seats of
// people who wait. It prints the addresses and the commands to play, the
// browser's first, then runs until Ctrl-C, when it stops everything it
// started: the edge and the bots first, then each service (SIGTERM to its
// process group, graceful drain, SIGKILL after a grace period), then the
// store.
//
// Usage (from the repository; every flag also reads the environment
// variable shown by -h):
//
//	go run ./cmd/devcluster [-dir .run] [-web-port 8080] [-base-port 8081] [-bots 6] [-bot-level greedy] [-build=false] [-fresh]
//
// Ctrl-C is the normal way to stop it and ends it with status 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/botpool"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/devredis"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/workspace"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/edge"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		if ctx.Err() != nil {
			// Ctrl-C during the build or the start is a stop like any
			// other: what was started is stopped already, and the
			// interrupted step's error says nothing new.
			return
		}
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

// config is the launcher's configuration.
type config struct {
	// Dir holds binaries, logs and the key set; relative to the repository.
	Dir string
	// BasePort is the match service's gRPC port; matchmaking and rating
	// take the next two, their admin listeners BasePort+1010 and up. 0
	// picks free ports (tests).
	BasePort int
	// WebPort is the edge's port: the web app and every public RPC on one
	// origin. 0 picks a free port (tests).
	WebPort int
	// WebDir is the built web app the edge serves; relative to the
	// repository.
	WebDir string
	// RedisAddr / RedisClusterAddrs select a real Redis; with neither the
	// launcher serves an embedded store.
	RedisAddr         string
	RedisClusterAddrs string
	// Queues is the matchmaker's queue list (MM_QUEUES syntax).
	Queues string
	// Bots is the bot pool size; BotLevel and BotThink its strength and
	// least time per move.
	Bots int
	// LobbyBots are more bots of BotLevel that wait in the bot lobby for
	// private tables' bot seats (StartTable) instead of in the queues.
	LobbyBots int
	BotLevel  string
	BotThink  time.Duration
	// LogLevel is the services' log level.
	LogLevel string
	// Grace bounds each service's graceful shutdown.
	Grace time.Duration
	// Build compiles the services into Dir/bin before starting them; off
	// when scripts/run.sh built them already.
	Build bool
	// SnapshotEvery is how often the embedded store is saved to
	// Dir/store.snapshot while running (it is saved on stop too); 0 saves
	// on stop only.
	SnapshotEvery time.Duration
	// Fresh deletes the embedded store's snapshot before starting: an
	// empty store (`make run-fresh`).
	Fresh bool
}

func defaultConfig() config {
	return config{
		Dir:       ".run",
		BasePort:  8081,
		WebPort:   8080,
		WebDir:    filepath.Join("web", "dist"),
		Queues:    "fourkingdoms 5+5 bots=5s;fourkingdoms 1+0 bots=3s",
		Bots:      6,
		LobbyBots: 3,
		BotLevel:  string(brain.Greedy),
		BotThink:  300 * time.Millisecond,
		LogLevel:  "info",
		Grace:     15 * time.Second,
		Build:     true,

		SnapshotEvery: 30 * time.Second,
	}
}

func (c *config) bind(fs *flag.FlagSet, getenv func(string) string) error {
	b := envflag.New(fs, getenv)
	b.String(&c.Dir, "dir", "DEV_DIR", "directory for binaries, logs and the dev key set (git-ignored)")
	b.Int(&c.BasePort, "base-port", "DEV_BASE_PORT", "match gRPC port; matchmaking +1, rating +2, admin ports +1010 (0: free ports)")
	b.Int(&c.WebPort, "web-port", "DEV_WEB_PORT", "the edge's port: the web app and every public RPC on one origin (0: a free port)")
	b.String(&c.WebDir, "web-dir", "DEV_WEB_DIR", "the built web app the edge serves, relative to the repository")
	b.String(&c.RedisAddr, "redis-addr", "REDIS_ADDR", "real standalone Redis (default: embedded store)")
	b.String(&c.RedisClusterAddrs, "redis-cluster-addrs", "REDIS_CLUSTER_ADDRS", "real Redis Cluster seed nodes, comma separated")
	b.String(&c.Queues, "queues", "MM_QUEUES", `matchmaking queues, ";"-separated "<rule set> <time control> bots=<wait>"`)
	b.Int(&c.Bots, "bots", "DEV_BOTS", "bots in the pool (0: none)")
	b.Int(&c.LobbyBots, "lobby-bots", "DEV_LOBBY_BOTS", "more bots, waiting for private tables' bot seats (0: none)")
	b.String(&c.BotLevel, "bot-level", "DEV_BOT_LEVEL", "bot strength: random or greedy")
	b.Duration(&c.BotThink, "bot-think", "DEV_BOT_THINK", "least time a bot takes per move")
	b.String(&c.LogLevel, "log-level", "LOG_LEVEL", "services' log level")
	b.Duration(&c.Grace, "grace", "DEV_GRACE", "graceful shutdown limit per service")
	b.Bool(&c.Build, "build", "DEV_BUILD", "build the services into <dir>/bin first (false: they are built already)")
	b.Duration(&c.SnapshotEvery, "snapshot-every", "DEV_SNAPSHOT_EVERY", "save the embedded store to <dir>/store.snapshot this often, and on stop (0: on stop only)")
	b.Bool(&c.Fresh, "fresh", "DEV_FRESH", "delete the embedded store's snapshot and start empty (make run-fresh)")
	return b.Err()
}

func (c config) validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("dir is empty"))
	}
	if c.BasePort < 0 || c.BasePort > 65535-1015 {
		errs = append(errs, fmt.Errorf("base port %d out of range", c.BasePort))
	}
	if c.WebPort < 0 || c.WebPort > 65535 {
		errs = append(errs, fmt.Errorf("web port %d out of range", c.WebPort))
	}
	if c.Bots < 0 {
		errs = append(errs, fmt.Errorf("bots must be >= 0, got %d", c.Bots))
	}
	if c.LobbyBots < 0 {
		errs = append(errs, fmt.Errorf("lobby bots must be >= 0, got %d", c.LobbyBots))
	}
	if _, err := brain.ParseLevel(c.BotLevel); err != nil {
		errs = append(errs, err)
	}
	if c.SnapshotEvery < 0 {
		errs = append(errs, fmt.Errorf("snapshot-every must be >= 0, got %v", c.SnapshotEvery))
	}
	if c.Grace <= 0 {
		errs = append(errs, fmt.Errorf("grace must be positive, got %v", c.Grace))
	}
	return errors.Join(errs...)
}

// cluster is what a running local cluster offers (for the banner and tests).
type cluster struct {
	// Web is the edge's URL ("http://localhost:8080"): the web app and
	// every public RPC.
	Web string
	// WebBuilt says whether the edge has a web app to serve.
	WebBuilt  bool
	Endpoints client.Endpoints
	// Admin are the admin HTTP addresses by service name.
	Admin map[string]string
	// KeysFile is the development key set.
	KeysFile string
	// Embedded is set when the embedded store serves Redis.
	Embedded bool
	// Snapshot is the embedded store's snapshot file; Restored says what
	// was loaded from it at the start ("" when the store started empty).
	Snapshot string
	Restored string
	// BotQueues are the queues the bots wait in.
	BotQueues []string
	// Pids are the service processes' ids (each leads its process group).
	Pids []int
}

// defaultQueue is the queue `fk play` joins without --queue.
const defaultQueue = "fourkingdoms/5+5"

// services in start order: the matchmaker calls the other two.
var services = []string{"rating", "match", "matchmaking"}

// run is the whole program. ready, if not nil, is called once every
// service is serving (tests); run then keeps going until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, ready func(cluster)) error {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("devcluster", flag.ContinueOnError)
	if err := cfg.bind(fs, getenv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: slog.LevelWarn}))

	repo, err := workspace.Root(".")
	if err != nil {
		return err
	}
	dir := cfg.Dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(repo, dir)
	}
	for _, d := range []string{"bin", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}

	keysFile := filepath.Join(dir, "keys.json")
	keys, err := devKeys(keysFile)
	if err != nil {
		return err
	}
	// Only matchmaking mints tokens; the others refuse private keys.
	publicKeysFile := filepath.Join(dir, "public-keys.json")
	if err := keys.PublicOnly().WriteFile(publicKeysFile); err != nil {
		return err
	}

	if cfg.Build {
		fmt.Fprintln(stdout, "building the services ...")
		if err := build(ctx, repo, filepath.Join(dir, "bin")); err != nil {
			return err
		}
	}

	cl := cluster{KeysFile: keysFile, Admin: map[string]string{}}
	redisEnv := []string{"REDIS_ADDR=" + cfg.RedisAddr, "REDIS_CLUSTER_ADDRS=" + cfg.RedisClusterAddrs}
	if cfg.RedisAddr == "" && cfg.RedisClusterAddrs == "" {
		store, err := devredis.Start("127.0.0.1:0")
		if err != nil {
			return err
		}
		cl.Embedded = true
		cl.Snapshot = filepath.Join(dir, snapshotFile)
		cl.Restored, err = loadSnapshot(ctx, store, cl.Snapshot, cfg.Fresh, stdout)
		if err != nil {
			store.Close()
			return err
		}
		// Deferred before the services' stop, so run here after it: the
		// last snapshot sees every write the services made.
		stopSaving := keepSaving(store.Addr(), cl.Snapshot, cfg.SnapshotEvery, stdout)
		defer func() {
			stopSaving()
			store.Close()
		}()
		redisEnv = []string{"REDIS_ADDR=" + store.Addr(), "REDIS_CLUSTER_ADDRS="}
	}

	ports, err := pickPorts(cfg.BasePort)
	if err != nil {
		return err
	}
	addr := func(name string) string { return "localhost:" + strconv.Itoa(ports[name]) }
	admin := func(name string) string { return "localhost:" + strconv.Itoa(ports[name+"-admin"]) }
	cl.Endpoints = client.Endpoints{Match: addr("match"), Matchmaking: addr("matchmaking"), Rating: addr("rating")}

	// The edge's port is bound before any service starts: a port in use
	// (another `make run`?) stops the launcher at once.
	webDir := cfg.WebDir
	if !filepath.IsAbs(webDir) {
		webDir = filepath.Join(repo, webDir)
	}
	edgeLis, err := net.Listen("tcp", "localhost:"+strconv.Itoa(cfg.WebPort))
	if err != nil {
		return fmt.Errorf("the web port: %w\nis another `make run` running? Stop it, or pick another port with -web-port (DEV_WEB_PORT)", err)
	}
	edgeServing := false
	defer func() {
		if !edgeServing {
			edgeLis.Close()
		}
	}()
	cl.Web = "http://localhost:" + strconv.Itoa(edgeLis.Addr().(*net.TCPAddr).Port)

	var procs []*proc
	defer func() {
		if err := stopAll(procs, cfg.Grace); err != nil {
			fmt.Fprintln(stdout, "shutdown:", err)
		}
	}()
	for _, name := range services {
		env := append(os.Environ(), redisEnv...)
		serviceKeys := publicKeysFile
		if name == "matchmaking" {
			serviceKeys = keysFile
		}
		// Plaintext is an explicit setting (TLS is the services' default):
		// everything here talks over loopback.
		env = append(env,
			"GRPC_ADDR="+addr(name), "ADMIN_ADDR="+admin(name), "INTERNAL_PLAINTEXT=true",
			"AUTH_KEYS_FILE="+serviceKeys, "LOG_LEVEL="+cfg.LogLevel, "SERVICE_NAME="+name)
		if name == "match" {
			// One match instance on one machine: its keeper (clock flags,
			// outbox relay) scans every partition, so scan once a second
			// rather than five times (production's default), which keeps
			// an idle cluster idle. The price: a player whose clock runs
			// out is flagged up to a second late. The environment wins.
			for _, kv := range [][2]string{{"MATCH_KEEPER_INTERVAL", "1s"}, {"MATCH_KEEPER_LEASE_TTL", "5s"}} {
				if getenv(kv[0]) == "" {
					env = append(env, kv[0]+"="+kv[1])
				}
			}
		}
		if name == "matchmaking" {
			env = append(env, "MATCH_ADDR="+addr("match"), "RATING_ADDR="+addr("rating"), "MM_QUEUES="+cfg.Queues)
		}
		p, err := start(name, filepath.Join(dir, "bin", name), env, addr(name), admin(name), filepath.Join(dir, "logs", name+".log"))
		if err != nil {
			return err
		}
		procs = append(procs, p)
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err = p.waitReady(rctx)
		cancel()
		if err != nil {
			return err
		}
		cl.Admin[name] = admin(name)
		cl.Pids = append(cl.Pids, p.cmd.Process.Pid)
	}

	front, err := edge.New(edge.Config{
		Services: map[edge.Backend]string{edge.Match: addr("match"), edge.Matchmaking: addr("matchmaking"), edge.Rating: addr("rating")},
		WebDir:   webDir,
		Log:      log,
	})
	if err != nil {
		return err
	}
	// Deferred after the services' stop, so run before it: browsers lose
	// their streams first, and no call reaches a stopping service.
	edgeCtx, stopEdge := context.WithCancel(context.WithoutCancel(ctx))
	edgeDone := make(chan error, 1)
	edgeServing = true
	go func() { edgeDone <- edge.Serve(edgeCtx, edgeLis, front) }()
	defer func() {
		stopEdge()
		if err := <-edgeDone; err != nil {
			fmt.Fprintln(stdout, "edge:", err)
		}
	}()
	_, err = os.Stat(filepath.Join(webDir, "index.html"))
	cl.WebBuilt = err == nil

	botCtx, stopBots := context.WithCancel(ctx)
	botsDone := make(chan struct{})
	defer func() { stopBots(); <-botsDone }()
	if cfg.Bots > 0 {
		cl.BotQueues, err = botQueues(ctx, cl.Endpoints, keys)
		if err != nil {
			close(botsDone)
			return err
		}
	}
	queueBots := cfg.Bots
	if len(cl.BotQueues) == 0 {
		queueBots = 0
	}
	if queueBots+cfg.LobbyBots > 0 {
		pool := botpool.Config{
			Endpoints: cl.Endpoints, Size: queueBots + cfg.LobbyBots, Lobby: cfg.LobbyBots, Queues: cl.BotQueues,
			Level: brain.Level(cfg.BotLevel), Think: cfg.BotThink, Tokens: botpool.MintTokens(keys, 24*time.Hour),
		}
		go func() {
			defer close(botsDone)
			if err := botpool.Run(botCtx, pool, log); err != nil {
				fmt.Fprintln(stdout, "bots:", err)
			}
		}()
	} else {
		close(botsDone)
	}

	banner(stdout, cfg, cl)
	if ready != nil {
		ready(cl)
	}

	// Run until Ctrl-C, or until a service dies (then stop the rest).
	died := make(chan *proc, len(procs))
	for _, p := range procs {
		go func() {
			select {
			case <-p.exited:
				died <- p
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(stdout, "\nstopping ...")
		return nil
	case p := <-died:
		return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, tail(p.logPath, 15))
	}
}

// snapshotFile is the embedded store's snapshot, in the launcher's dir.
const snapshotFile = "store.snapshot"

// loadSnapshot fills the new embedded store from the snapshot at path, or
// deletes the snapshot first when fresh. It returns what it loaded for the
// banner ("" when the store starts empty). A snapshot it cannot load stops
// the launcher: starting empty would overwrite the user's data at the first
// save.
func loadSnapshot(ctx context.Context, store *miniredis.Miniredis, path string, fresh bool, stdout io.Writer) (string, error) {
	if fresh {
		err := os.Remove(path)
		if err == nil {
			fmt.Fprintf(stdout, "deleted %s: starting with an empty store\n", path)
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("start fresh: %w", err)
		}
		return "", nil
	}
	n, taken, err := devredis.Load(ctx, store, path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case errors.Is(err, devredis.ErrBadSnapshot):
		return "", fmt.Errorf("%w\nthe embedded store's data cannot be loaded, so the launcher stops rather than start empty and overwrite it;\n"+
			"move the file away to keep it, or start with an empty store: `make run-fresh` (devcluster -fresh) deletes it", err)
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("%d keys saved %s", n, taken.Local().Format("2006-01-02 15:04:05")), nil
}

// keepSaving saves the store at addr to path every interval (not at all
// when 0) until the returned function is called, which saves once more and
// waits for the saves to end. A failed save is reported and retried at the
// next one; the store keeps running.
func keepSaving(addr, path string, every time.Duration, stdout io.Writer) (stop func()) {
	save := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := devredis.Save(ctx, addr, path); err != nil {
			fmt.Fprintln(stdout, "devcluster:", err)
		}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		if every <= 0 {
			<-done
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				save()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-exited
		save()
	}
}

// devKeys loads the development key set, generating it on the first run.
func devKeys(path string) (*auth.KeySet, error) {
	ks, err := auth.LoadFile(path)
	if err == nil {
		return ks, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ks, err = auth.GenerateKeySet("dev-" + time.Now().UTC().Format("20060102"))
	if err != nil {
		return nil, err
	}
	if err := ks.WriteFile(path); err != nil {
		return nil, err
	}
	return ks, nil
}

// build compiles the services into bin, from the repository's workspace,
// as the container images hold them (scripts/images.sh): static
// (CGO_ENABLED=0) and with -trimpath. Besides running what production runs,
// that lets `make image-test` reuse the packages the end-to-end test
// compiled here instead of compiling them all again.
func build(ctx context.Context, repo, bin string) error {
	args := []string{"build", "-trimpath", "-o", bin + string(filepath.Separator)}
	for _, name := range services {
		pkg := "./services/" + name + "/cmd/" + name
		if _, err := os.Stat(filepath.Join(repo, pkg)); err != nil {
			return fmt.Errorf("the %s service has no main package (%s): it cannot be started yet", name, pkg)
		}
		args = append(args, pkg)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// pickPorts returns the gRPC and admin ports of every service: fixed ones
// from base, or free loopback ports when base is 0.
func pickPorts(base int) (map[string]int, error) {
	ports := map[string]int{}
	for i, name := range []string{"match", "matchmaking", "rating"} {
		if base > 0 {
			ports[name] = base + i
			ports[name+"-admin"] = base + 1010 + i
			continue
		}
		for _, key := range []string{name, name + "-admin"} {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, fmt.Errorf("free port: %w", err)
			}
			ports[key] = l.Addr().(*net.TCPAddr).Port
			l.Close()
		}
	}
	return ports, nil
}

// botQueues lists the queues that fill with bots, asking the matchmaker
// like any client would.
func botQueues(ctx context.Context, ep client.Endpoints, keys *auth.KeySet) ([]string, error) {
	c, err := client.Dial(ep)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	tok, _, err := keys.Sign(auth.Identity{Subject: "devcluster", Role: auth.RolePlayer, DisplayName: "devcluster", Bot: true}, time.Now(), time.Minute)
	if err != nil {
		return nil, err
	}
	c.SetToken(tok)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.Matchmaking.ListQueues(cctx, &matchmakingv1.ListQueuesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	var out []string
	for _, q := range resp.GetQueues() {
		if q.GetBotFill() {
			out = append(out, q.GetName())
		}
	}
	return out, nil
}

// banner tells the user what runs where and what to type next.
func banner(w io.Writer, cfg config, cl cluster) {
	store := "embedded store (set REDIS_ADDR or REDIS_CLUSTER_ADDRS for a real Redis)"
	if !cl.Embedded {
		store = "Redis " + cfg.RedisAddr + cfg.RedisClusterAddrs
	}
	ep := cl.Endpoints
	// The browser first: it is what a newcomer opens.
	fmt.Fprintf(w, "\nPlay in your browser: %s\n", cl.Web)
	if !cl.WebBuilt {
		fmt.Fprintf(w, "  (the web app is not built: %s has no index.html; `make web` builds it)\n", cfg.WebDir)
	}
	fmt.Fprintf(w, "\nFour Kingdoms is running on %s.\n", store)
	fmt.Fprintf(w, "  web app + all RPCs  %-16s gRPC, gRPC-Web and Connect by path (docs/web.md)\n", strings.TrimPrefix(cl.Web, "http://"))
	fmt.Fprintf(w, "  matchmaking + auth  %-16s admin http://%s/metrics\n", ep.Matchmaking, cl.Admin["matchmaking"])
	fmt.Fprintf(w, "  match               %-16s admin http://%s/metrics\n", ep.Match, cl.Admin["match"])
	fmt.Fprintf(w, "  rating              %-16s admin http://%s/metrics\n", ep.Rating, cl.Admin["rating"])
	if cfg.Bots > 0 {
		fmt.Fprintf(w, "  bots                %d %s bots waiting in %s\n", cfg.Bots, cfg.BotLevel, strings.Join(cl.BotQueues, ", "))
	}
	if cfg.LobbyBots > 0 {
		fmt.Fprintf(w, "  table bots          %d %s bots for private tables' bot seats (fk table start --bots %s)\n", cfg.LobbyBots, cfg.BotLevel, cfg.BotLevel)
	}
	fmt.Fprintf(w, "  logs                %s\n", filepath.Join(cfg.Dir, "logs"))
	if cl.Embedded {
		from := "started empty"
		if cl.Restored != "" {
			from = "loaded " + cl.Restored
		}
		every := "on stop"
		if cfg.SnapshotEvery > 0 {
			every = fmt.Sprintf("every %v and on stop", cfg.SnapshotEvery)
		}
		fmt.Fprintf(w, "  data                %s (%s; saved %s)\n", filepath.Join(cfg.Dir, snapshotFile), from, every)
		fmt.Fprintln(w, "                      start empty with `make run-fresh` (devcluster -fresh)")
	}
	fmt.Fprintln(w, "\nPlay from a second terminal (a guest against three bots):")
	env := ""
	if cfg.BasePort != defaultConfig().BasePort {
		env = fmt.Sprintf("FK_MATCHMAKING_ADDR=%s FK_MATCH_ADDR=%s FK_RATING_ADDR=%s ", ep.Matchmaking, ep.Match, ep.Rating)
	}
	// The README gives the same two commands.
	fk := "go run ./cmd/fk"
	fmt.Fprintf(w, "  %s%s login\n", env, fk)
	// `fk play` joins fourkingdoms/5+5; name the queue only when that one
	// is not filled with bots here.
	play := fk + " play"
	if len(cl.BotQueues) > 0 && !slices.Contains(cl.BotQueues, defaultQueue) {
		play += " --queue " + cl.BotQueues[0]
	}
	fmt.Fprintf(w, "  %s%s\n", env, play)
	fmt.Fprintln(w, "\nPoint grpcurl at the services (reflection is on):")
	fmt.Fprintf(w, "  grpcurl -plaintext -d '{}' %s fourkingdoms.auth.v1.AuthService/GuestLogin\n", ep.Matchmaking)
	fmt.Fprintf(w, "  grpcurl -plaintext -H \"authorization: Bearer $TOKEN\" %s list\n", ep.Match)
	fmt.Fprintln(w, "\nStop everything with Ctrl-C.")
}
