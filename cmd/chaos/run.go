package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/brain"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/workspace"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
)

// Timeouts the run gives the services, so that a SIGSTOP of -pause (8 s by
// default) outlasts each of them: the keeper's lease (MATCH_KEEPER_LEASE_TTL,
// 800 ms default), the rating consumers' claim (RATING_CLAIM_MIN_IDLE) and
// the matchmaker's formation takeover (MM_FORMATION_TIMEOUT).
const (
	ratingClaimIdle  = 5 * time.Second
	formationTimeout = 6 * time.Second
	createTimeout    = 3 * time.Second
)

// cluster is the running system of one chaos run.
type cluster struct {
	redis     *redisCluster
	instances map[string][]*instance // by service
	lbs       map[string]*balancer
	ep        client.Endpoints
	ns        *netns
	nsSkipped string // why network faults are skipped ("" when they run)
	stopLBs   context.CancelFunc
	lbsDone   sync.WaitGroup
}

// faultLog is what the faults did.
type faultLog struct {
	mu      sync.Mutex
	counts  map[faultKind]int
	failed  map[faultKind]int
	lines   []string
	windows []window
}

func (l *faultLog) note(f fault, from time.Time, detail string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	took := time.Since(from)
	l.windows = append(l.windows, window{kind: f.kind, from: from, to: time.Now()})
	if err != nil {
		l.failed[f.kind]++
		l.lines = append(l.lines, fmt.Sprintf("%s (%s): FAILED after %v: %v", f, from.Format(time.TimeOnly), took.Round(time.Millisecond), err))
		return
	}
	l.counts[f.kind]++
	l.lines = append(l.lines, fmt.Sprintf("%s (%s): done in %v%s", f, from.Format(time.TimeOnly), took.Round(time.Millisecond), detail))
}

// run is the whole chaos run: it starts the system, plays with faults,
// stops the players, checks and prints the report.
func run(ctx context.Context, cfg config, out io.Writer) (verdict, error) {
	if cfg.Games < 1 || cfg.Duration <= 0 || cfg.Pause <= 0 || cfg.Abandon < 0 || cfg.Abandon > 1 {
		return verdict{}, errors.New("need -games >= 1, -duration > 0, -pause > 0 and -abandon from 0 to 1")
	}
	level, err := brain.ParseLevel(cfg.Level)
	if err != nil {
		return verdict{}, err
	}
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			return verdict{}, fmt.Errorf("%s not found: scripts/ensure-redis.sh installs it", bin)
		}
	}
	progress := func(format string, args ...any) {
		if !cfg.Quiet {
			fmt.Fprintf(out, "chaos: "+format+"\n", args...)
		}
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "chaos-")
		if err != nil {
			return verdict{}, err
		}
		dir = d
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return verdict{}, err
	}
	bin := cfg.Bin
	if bin == "" {
		bin = filepath.Join(dir, "bin")
		progress("building the services into %s", bin)
		if err := build(ctx, bin); err != nil {
			return verdict{}, err
		}
	}
	ks, err := auth.GenerateKeySet("chaos")
	if err != nil {
		return verdict{}, err
	}
	keysFile, pubFile := filepath.Join(dir, "keys.json"), filepath.Join(dir, "public-keys.json")
	if err := errors.Join(ks.WriteFile(keysFile), ks.PublicOnly().WriteFile(pubFile)); err != nil {
		return verdict{}, err
	}

	cl := &cluster{instances: map[string][]*instance{}, lbs: map[string]*balancer{}}
	host := "127.0.0.1"
	if cfg.Netns {
		if cl.ns, err = setupNetns(ctx); err != nil {
			cl.nsSkipped = err.Error()
		} else {
			host = cl.ns.hostAddr
			defer cl.ns.teardown()
		}
	} else {
		cl.nsSkipped = "turned off (-netns=false)"
	}
	if cl.nsSkipped != "" {
		progress("network faults skipped: %s", cl.nsSkipped)
	}
	progress("starting a 6-node Redis Cluster on %s", host)
	cl.redis, err = startRedisCluster(ctx, host, dir, 2*time.Second)
	if err != nil {
		return verdict{}, err
	}
	defer cl.redis.stop()

	if err := cl.startServices(ctx, cfg, bin, dir, keysFile, pubFile); err != nil {
		cl.stopServices()
		return verdict{}, err
	}
	defer cl.stopServices()
	progress("services ready: match %s, matchmaking %s, rating %s (balancers)", cl.ep.Match, cl.ep.Matchmaking, cl.ep.Rating)

	// Play.
	rec := newRecorder()
	playCtx, stopPlay := context.WithCancel(ctx)
	var players sync.WaitGroup
	queue := "fourkingdoms/" + cfg.TimeControl
	for i := range cfg.Games * 4 {
		p, err := newPlayer(ks, cl.ep, queue, level, cfg.Think, cfg.Abandon, rec, cfg.Seed, i)
		if err != nil {
			stopPlay()
			return verdict{}, err
		}
		players.Go(func() { p.run(playCtx) })
	}
	start := time.Now()
	kinds := allKinds
	if cl.ns == nil {
		kinds = kinds[:len(kinds)-1]
	}
	faults := plan(cfg.Seed, kinds, min(10*time.Second, cfg.Duration/6), cfg.Duration-cfg.Pause-5*time.Second, cfg.Every)
	flog := &faultLog{counts: map[faultKind]int{}, failed: map[faultKind]int{}}
	samples := &gameSamples{}
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		for _, f := range faults {
			if !sleepUntil(playCtx, start.Add(f.at)) {
				return
			}
			t0 := time.Now()
			detail, err := cl.inject(playCtx, cfg, f)
			flog.note(f, t0, detail, err)
			progress("%s (%d players seated)", flog.lines[len(flog.lines)-1], rec.playing.Load())
		}
	}()
	go samples.run(playCtx, rec, start.Add(min(20*time.Second, cfg.Duration/3)))
	sleepUntil(ctx, start.Add(cfg.Duration))
	stopPlay()
	<-faultsDone
	progress("play over after %v: stopping the players", time.Since(start).Round(time.Second))
	players.Wait()
	if ctx.Err() != nil {
		return verdict{}, ctx.Err()
	}

	// Every instance runs again before the checks (a fault cut short by
	// the end may have left one down).
	if err := cl.heal(ctx); err != nil {
		return verdict{}, fmt.Errorf("restore the system before the checks: %w", err)
	}
	progress("checking")
	w, err := cl.collect(ctx, ks, rec)
	if err != nil {
		return verdict{}, err
	}
	w.windows = flog.windows
	v := verify(w)
	report(out, cfg, cl, flog, samples, rec, v)
	if v.losses() > 0 || cfg.Keep {
		fmt.Fprintf(out, "logs and data kept in %s\n", dir)
	} else if cfg.Dir == "" {
		defer os.RemoveAll(dir)
	}
	return v, nil
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	sleepCtx(ctx, time.Until(t))
	return ctx.Err() == nil
}

// build compiles the three services into bin, as devcluster does.
func build(ctx context.Context, bin string) error {
	repo, err := workspace.Root(".")
	if err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-o", bin + string(filepath.Separator)}
	for _, s := range serviceNames {
		args = append(args, "./services/"+s+"/cmd/"+s)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// startServices starts two instances of each service (match-1 and
// rating-1 in the namespace when there is one) behind their balancers.
func (cl *cluster) startServices(ctx context.Context, cfg config, bin, dir, keysFile, pubFile string) error {
	// Addresses first: the balancers need them, and matchmaking needs the
	// balancers.
	nsPort := 20000
	lbCtx, stopLBs := context.WithCancel(context.WithoutCancel(ctx))
	cl.stopLBs = stopLBs
	for _, s := range []string{"rating", "match", "matchmaking"} {
		var addrs []string
		for i := range 2 {
			in := &instance{name: fmt.Sprintf("%s-%d", s, i), service: s, bin: filepath.Join(bin, s),
				logPath: filepath.Join(dir, "logs", fmt.Sprintf("%s-%d.log", s, i))}
			var grpcAddr, adminAddr string
			if cl.ns != nil && i == 1 && s != "matchmaking" {
				// Inside the namespace nothing else listens: any port is free.
				in.netns = cl.ns.name
				grpcAddr, adminAddr = fmt.Sprintf("%s:%d", cl.ns.nsAddr, nsPort), fmt.Sprintf("%s:%d", cl.ns.nsAddr, nsPort+1)
				nsPort += 2
			} else {
				gp, err := freePort("127.0.0.1")
				if err != nil {
					return err
				}
				ap, err := freePort("127.0.0.1")
				if err != nil {
					return err
				}
				grpcAddr, adminAddr = "127.0.0.1:"+strconv.Itoa(gp), "127.0.0.1:"+strconv.Itoa(ap)
			}
			in.addr = grpcAddr
			in.env = append(os.Environ(),
				"REDIS_ADDR=", "REDIS_CLUSTER_ADDRS="+strings.Join(cl.redis.addrs(), ","),
				"GRPC_ADDR="+grpcAddr, "ADMIN_ADDR="+adminAddr, "INTERNAL_PLAINTEXT=true",
				"AUTH_KEYS_FILE="+pubFile, "LOG_LEVEL=warn", "SERVICE_NAME="+s, "HOSTNAME="+in.name)
			addrs = append(addrs, grpcAddr)
			cl.instances[s] = append(cl.instances[s], in)
		}
		lb, err := newBalancer(addrs)
		if err != nil {
			return err
		}
		cl.lbs[s] = lb
		cl.lbsDone.Go(func() { lb.run(lbCtx) })
	}
	cl.ep = client.Endpoints{Match: cl.lbs["match"].addr(), Matchmaking: cl.lbs["matchmaking"].addr(), Rating: cl.lbs["rating"].addr()}
	wait := "0"
	if cfg.WaitReplicas {
		wait = "1"
	}
	for _, in := range cl.instances["match"] {
		in.env = append(in.env, "MATCH_WAIT_REPLICAS="+wait, "MATCH_EVENT_LOG_LEN=1000000")
	}
	for _, in := range cl.instances["rating"] {
		in.env = append(in.env, "RATING_WAIT_REPLICAS="+wait, "RATING_CONSUMER="+in.name,
			"RATING_CLAIM_MIN_IDLE="+ratingClaimIdle.String(), "RATING_CLAIM_INTERVAL=1s")
	}
	for _, in := range cl.instances["matchmaking"] {
		in.env = append(in.env, "AUTH_KEYS_FILE="+keysFile, "MM_WAIT_REPLICAS="+wait,
			"MATCH_ADDR="+cl.ep.Match, "RATING_ADDR="+cl.ep.Rating,
			"MM_QUEUES=fourkingdoms "+cfg.TimeControl+" apart=0",
			"MM_FORMATION_TIMEOUT="+formationTimeout.String(), "MM_CREATE_TIMEOUT="+createTimeout.String())
	}
	for _, s := range []string{"rating", "match", "matchmaking"} {
		for _, in := range cl.instances[s] {
			if err := in.start(); err != nil {
				return err
			}
		}
		for _, in := range cl.instances[s] {
			if err := in.waitReady(ctx, 60*time.Second); err != nil {
				return err
			}
		}
	}
	return nil
}

func (cl *cluster) stopServices() {
	for _, s := range []string{"matchmaking", "match", "rating"} {
		for _, in := range cl.instances[s] {
			in.stopGracefully(10 * time.Second)
		}
	}
	if cl.stopLBs != nil {
		cl.stopLBs()
	}
	for _, lb := range cl.lbs {
		lb.lis.Close()
	}
	cl.lbsDone.Wait()
}

// inject carries out one fault and waits until the system is whole again.
// It returns what the fault log should add (the failover time of a
// master kill).
func (cl *cluster) inject(ctx context.Context, cfg config, f fault) (string, error) {
	switch f.kind {
	case faultKill:
		in := cl.instances[f.service][f.instance]
		in.kill()
		sleepCtx(ctx, time.Second)
		if err := in.start(); err != nil {
			return "", err
		}
		return "", in.waitReady(context.WithoutCancel(ctx), 60*time.Second)
	case faultPause:
		in := cl.instances[f.service][f.instance]
		in.signal(syscall.SIGSTOP)
		sleepCtx(context.WithoutCancel(ctx), cfg.Pause)
		in.signal(syscall.SIGCONT)
		return "", nil
	case faultRedisKill, faultRedisFailover:
		masters := cl.redis.masters(ctx)
		if len(masters) == 0 {
			return "", errors.New("no master found")
		}
		victim := masters[f.master%len(masters)]
		if f.kind == faultRedisKill {
			took, err := cl.redis.killMaster(context.WithoutCancel(ctx), victim, 2*time.Second)
			return fmt.Sprintf(" (replica serving %v after the kill)", took.Round(time.Millisecond)), err
		}
		return "", cl.redis.manualFailover(context.WithoutCancel(ctx), victim)
	case faultNetem:
		if err := cl.ns.degrade(ctx); err != nil {
			return "", err
		}
		sleepCtx(context.WithoutCancel(ctx), cfg.Pause)
		return "", cl.ns.heal(context.WithoutCancel(ctx))
	}
	return "", fmt.Errorf("unknown fault kind %q", f.kind)
}

// heal restarts any instance that is down and waits for a healthy Redis.
func (cl *cluster) heal(ctx context.Context) error {
	for _, s := range serviceNames {
		for _, in := range cl.instances[s] {
			in.signal(syscall.SIGCONT)
			if !in.alive() {
				if err := in.start(); err != nil {
					return err
				}
			}
			if err := in.waitReady(ctx, 60*time.Second); err != nil {
				return err
			}
		}
	}
	return cl.redis.waitHealthy(ctx, 60*time.Second)
}

// collect reads what the checks need.
func (cl *cluster) collect(ctx context.Context, ks *auth.KeySet, rec *recorder) (world, error) {
	rdb := cl.redis.client()
	defer rdb.Close()
	w := world{acks: rec.acks, tickets: rec.tickets}
	var err error
	if w.games, err = readGames(ctx, rdb); err != nil {
		return w, err
	}
	w.checkAt = time.Now()
	if w.running, err = readRunning(ctx, ks, cl.ep, w.games); err != nil {
		return w, err
	}
	// A game that ended between the two reads: read the logs again.
	if w.games, err = readGames(ctx, rdb); err != nil {
		return w, err
	}
	if err := readTickets(ctx, ks, cl.ep, w.tickets); err != nil {
		return w, err
	}
	if w.ratings, err = readRatings(ctx, ks, cl.ep, w.games, 90*time.Second); err != nil {
		return w, err
	}
	// The running games' clocks ran on while the ratings were read: a
	// game that ended meanwhile may be rated in a history read after its
	// end; the logs read now tell it from a rating of a game that did not
	// end (world.ended).
	w.ended, err = readGames(ctx, rdb)
	return w, err
}

// gameSamples tracks how many games ran at once during play, sampled
// every second after the warm-up.
type gameSamples struct {
	mu            sync.Mutex
	n, min, total int
}

func (g *gameSamples) run(ctx context.Context, rec *recorder, from time.Time) {
	if !sleepUntil(ctx, from) {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		games := int(rec.playing.Load() / 4)
		g.mu.Lock()
		if g.n == 0 || games < g.min {
			g.min = games
		}
		g.n++
		g.total += games
		g.mu.Unlock()
	}
}
