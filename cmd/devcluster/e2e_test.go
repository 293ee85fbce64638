package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/matchcheck"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/pty"
	"github.com/fourkingdoms/fourkingdoms/cmd/internal/workspace"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// TestMain stops the Redis servers the tests started and checks for
// leaked goroutines.
func TestMain(m *testing.M) { redistest.Main(m) }

// syncBuffer collects the launcher's output from its goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMakeRunPlaysAFullGameAgainstBots is the README quick start, end to
// end: the launcher starts the three services (embedded store, free ports)
// and three bots; a guest signs in with the terminal client and plays a
// whole game in its non-interactive mode; the game finishes with a result,
// the four players' ratings change, and Ctrl-C leaves no process behind.
func TestMakeRunPlaysAFullGameAgainstBots(t *testing.T) {
	l := launch(t, func(string) string { return "" })
	if !l.cl.Embedded {
		t.Fatal("without REDIS_ADDR the launcher did not start the embedded store")
	}
	if !strings.Contains(l.out.String(), "go run ./cmd/fk play") {
		t.Errorf("the banner has no guest command:\n%s", l.out.String())
	}
	l.checkIdle()
	if got := l.fk("login", "--name", "E2E Guest"); !strings.Contains(got, "signed in as E2E Guest") {
		t.Fatalf("login said %q", got)
	}
	l.checkExits()
	res := l.play()
	if pgn := l.fk("export", res.MatchID); !strings.Contains(pgn, "1.") {
		t.Errorf("export printed no moves:\n%s", pgn)
	}
	games := map[string]uint32{}
	for _, id := range res.Players {
		games[id] = 1
	}
	l.waitRatings(games)
	if got := l.fk("rating"); !strings.Contains(got, "1 games") {
		t.Errorf("fk rating said %q, want one game", got)
	}
	// A local run's leaderboard: nobody ranked yet, the guest listed in
	// the provisional section on request, with the games still needed;
	// bots never.
	if got := l.fk("leaderboard"); !strings.Contains(got, "nobody is ranked yet") || !strings.Contains(got, "1 provisional player not shown: fk leaderboard --provisional") {
		t.Errorf("fk leaderboard after one game said:\n%s", got)
	}
	if got := l.fk("leaderboard", "--provisional"); !strings.Contains(got, "provisional (1 player") || !regexp.MustCompile(`1\. E2E Guest +\d+  1 games, about \d+ more`).MatchString(got) {
		t.Errorf("fk leaderboard --provisional after one game said:\n%s", got)
	}
	// The history script runs on the embedded store too.
	hist, err := l.rating.GetRatingHistory(l.ctx, &ratingv1.GetRatingHistoryRequest{RuleSet: ruleSet, PlayerId: res.PlayerID})
	if err != nil {
		t.Fatalf("rating history: %v", err)
	}
	if e := hist.GetEntries(); len(e) != 1 || e[0].GetMatchId() != res.MatchID || hist.GetNextPageToken() != "" {
		t.Errorf("rating history of %s = %v (next %q), want one entry for match %s", res.PlayerID, e, hist.GetNextPageToken(), res.MatchID)
	}
	l = l.restart(res)
	l.playInteractive(true)
	l.playInteractive(false)
	l.checkEdge()
	l.shutdown()
}

// restart is Ctrl-C and `make run` again in the same directory: the
// embedded store's snapshot brings back the finished game (still
// exportable), the four ratings exactly as they were (no finished match is
// rated twice) and the guest's session (the same key set and token). It
// returns the new launcher.
func (l *launched) restart(res result) *launched {
	l.t.Helper()
	ids := slices.Sorted(maps.Values(res.Players))
	before := l.ratings(ids)
	l.shutdown()
	if out := l.out.String(); !strings.Contains(out, filepath.Join(l.dir, "run", snapshotFile)) || !strings.Contains(out, "make run-fresh") {
		l.t.Errorf("the banner does not say where the data is and how to start empty:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(l.dir, "run", snapshotFile)); err != nil {
		l.t.Fatalf("no snapshot after the stop: %v", err)
	}
	l2 := launchIn(l.t, l.dir, l.getenv)
	if !strings.Contains(l2.out.String(), "data                "+filepath.Join(l.dir, "run", snapshotFile)+" (loaded ") {
		l.t.Errorf("the banner after a restart does not say the data was loaded:\n%s", l2.out.String())
	}
	if pgn := l2.fk("export", res.MatchID); !strings.Contains(pgn, "1.") {
		l.t.Errorf("after a restart, export of %s printed no moves:\n%s", res.MatchID, pgn)
	}
	if got := l2.fk("rating"); !strings.Contains(got, "1 games") {
		l.t.Errorf("after a restart, fk rating (the token of before) said %q, want one game", got)
	}
	// Give the rating consumer time to (wrongly) rate the match again.
	time.Sleep(2 * time.Second)
	if diff := cmp.Diff(before, l2.ratings(ids), protocmp.Transform()); diff != "" {
		l.t.Errorf("ratings changed across the restart (-before +after):\n%s", diff)
	}
	return l2
}

// ratings returns the ratings of ids in the launcher's pool.
func (l *launched) ratings(ids []string) []*ratingv1.Rating {
	l.t.Helper()
	resp, err := l.rating.BatchGetRatings(l.ctx, &ratingv1.BatchGetRatingsRequest{PlayerIds: ids, RuleSet: ruleSet})
	if err != nil {
		l.t.Fatalf("ratings: %v", err)
	}
	return resp.GetRatings()
}

// checkIdle measures the CPU time the cluster uses while nobody plays
// (three bots waiting): the services' processes and this test process,
// which runs the launcher with the embedded store and the bots. A busy
// loop (a poll that never blocks, a scan that runs all the time) costs a
// large share of a core; an idle cluster needs about 2% (without the race
// detector). The bound is generous: a CPU-time bound, not a timing test.
func (l *launched) checkIdle() {
	l.t.Helper()
	time.Sleep(2 * time.Second) // the bots join their queue
	pids := append([]int{os.Getpid()}, l.cl.Pids...)
	before := cpuTime(l.t, pids)
	const window = 5 * time.Second
	time.Sleep(window)
	used := cpuTime(l.t, pids) - before
	share := float64(used) / float64(window)
	l.t.Logf("idle cluster: %v CPU in %v (%.1f%% of a core)", used, window, 100*share)
	if share > 0.25 {
		l.t.Errorf("an idle cluster used %.0f%% of a core (%v in %v): something polls without waiting", 100*share, used, window)
	}
}

// cpuTime is the user and system CPU time of the processes so far.
func cpuTime(t *testing.T, pids []int) time.Duration {
	t.Helper()
	var total time.Duration
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		// The fields after the command name (which may hold spaces):
		// utime and stime are fields 14 and 15, in clock ticks (100 a
		// second on Linux).
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		for _, s := range f[11:13] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/stat: %v", pid, err)
			}
			total += time.Duration(n) * 10 * time.Millisecond
		}
	}
	return total
}

// checkExits checks the terminal client's exit codes: leaving the queue
// with "quit" is a normal end (0); a service that cannot be reached is an
// error (1) that names it and says what to do.
func (l *launched) checkExits() {
	l.t.Helper()
	cmd := exec.CommandContext(l.ctx, l.fkBin, "play", "--queue", "fourkingdoms/1+0")
	cmd.Env = l.fkEnv
	cmd.Stdin = strings.NewReader("quit\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "left the queue") {
		l.t.Errorf("quit while queueing: %v, output:\n%s", err, out)
	}
	cmd = exec.CommandContext(l.ctx, l.fkBin, "rating", "--rating", "127.0.0.1:1")
	cmd.Env = l.fkEnv
	out, err = cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 ||
		!strings.Contains(string(out), "cannot reach rating at 127.0.0.1:1 — is `make run` running?") || strings.Contains(string(out), "rpc error") {
		l.t.Errorf("fk rating with nothing listening: %v, output:\n%s", err, out)
	}
}

// playInteractive plays a game on the interactive board as a person at a
// terminal does: fk runs on a pseudo-terminal of 120 columns and 50 rows
// (package pty), so it finds a terminal on its streams, what is typed is
// echoed, the Enter key sends "\r", and the screen gets "\r\n" line ends,
// exactly what a terminal emulator would be given. It waits for the
// board, resigns (confirming), and follows the zombie game to its end.
// The screens must show the match id, the legend and the moves; the final
// result is printed once in plain mode (colour mode redraws the screen in
// place). The capture is logged from the last board on; with
// FK_SCREEN_CAPTURES=DIR the whole byte stream is kept in DIR (play-plain.txt,
// play-colour.ansi: `cat` one in a terminal to see it as the player did).
func (l *launched) playInteractive(plain bool) {
	l.t.Helper()
	args := []string{"play", "--queue", "fourkingdoms/1+0"}
	if plain {
		args = append(args, "--plain") // a global flag after the command
	}
	env := slices.DeleteFunc(slices.Clone(l.fkEnv), func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") || strings.HasPrefix(kv, "TERM=") })
	cmd := exec.CommandContext(l.ctx, l.fkBin, args...)
	cmd.Env = append(env, "TERM=xterm-256color")
	term, err := pty.Start(cmd, pty.Size{Rows: 50, Cols: 120})
	if err != nil {
		l.t.Fatal(err)
	}
	defer term.Close()
	out := &syncBuffer{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, term) // ends with io.EOF when fk exits
	}()
	waitForWithin := func(what string, d time.Duration) {
		l.t.Helper()
		deadline := time.Now().Add(d)
		for !strings.Contains(out.String(), what) {
			if time.Now().After(deadline) {
				l.t.Fatalf("fk play (plain %v) never showed %q:\n%s", plain, what, out.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor := func(what string) { l.t.Helper(); waitForWithin(what, 2*time.Minute) }
	typeLine := func(line string) {
		l.t.Helper()
		if _, err := io.WriteString(term, line+"\r"); err != nil {
			l.t.Fatal(err)
		}
	}
	waitFor("legend:")
	typeLine("resign")
	waitFor("resign?")
	typeLine("resign")
	waitFor("you resigned")
	// The game goes on with the bots (a 1+0 game lasts at most about four
	// minutes); at its end fk offers a rematch, which the guest leaves.
	waitForWithin(`type "rematch" to offer`, 5*time.Minute)
	typeLine("quit")
	err = cmd.Wait()
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
		l.t.Errorf("the terminal stayed open after fk ended")
	}
	screen := out.String()
	if dir := os.Getenv("FK_SCREEN_CAPTURES"); dir != "" {
		name := map[bool]string{true: "play-plain.txt", false: "play-colour.ansi"}[plain]
		if err := os.WriteFile(filepath.Join(dir, name), []byte(screen), 0o644); err != nil {
			l.t.Error(err)
		}
	}
	if err != nil {
		l.t.Fatalf("fk play (plain %v): %v\n%s", plain, err, screen)
	}
	i := strings.Index(screen, "matched: match ")
	if i < 0 {
		l.t.Fatalf("no match id:\n%s", screen)
	}
	id := strings.Fields(screen[i+len("matched: match "):])[0]
	id = strings.TrimSuffix(id, ",")
	for _, want := range []string{"match " + id + " · ", "legend:", "moves since your last turn:", "game over (", "fk watch " + id, "fk export " + id,
		"resign\r\n", // the terminal echoed what was typed
	} {
		if !strings.Contains(screen, want) {
			l.t.Errorf("the screens (plain %v) lack %q:\n%s", plain, want, screen)
		}
	}
	if strings.Contains(strings.ReplaceAll(screen, "\r\n", ""), "\n") {
		l.t.Errorf("a line end reached the terminal without its carriage return (plain %v): not a terminal's output", plain)
	}
	hasANSI := strings.Contains(screen, "\x1b[")
	if plain == hasANSI {
		l.t.Errorf("plain %v, but ANSI escapes %v", plain, hasANSI)
	}
	if n := strings.Count(screen, "game over ("); plain && n != 1 {
		l.t.Errorf("the result was printed %d times:\n%s", n, screen)
	}
	l.t.Logf("last screen (plain %v):\n%s", plain, screen[max(0, strings.LastIndex(screen, "match "+id+" · ")):])
}

// TestFinishedGameMovesRatingsAndLeaderboard runs the launcher against real
// Redis, standalone and the 6-node cluster: the match service's
// MatchFinished event of a real game reaches the rating service through the
// stream, changes the four ratings, and changes the leaderboard.
//
// A new player is provisional for 30 games (and while σ > 4), so between
// two real games the test publishes finished matches to the same stream, as
// the match service would: first 200 among four rivals, who become
// established (σ about 2.3), then 28 of the guest's against three of them.
// The second real game is the guest's 30th and puts them on the
// leaderboard.
func TestFinishedGameMovesRatingsAndLeaderboard(t *testing.T) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			rdb, _ := kind.Client(t)
			name, value := kind.Env(t)
			// The services use their default key names: start from an
			// empty store (nothing else in this package uses it), so that
			// a repeated run (-count) sees no earlier players.
			flush := func(ctx context.Context, c *redis.Client) error { return c.FlushAll(ctx).Err() }
			var err error
			if cc, ok := rdb.(*redis.ClusterClient); ok {
				err = cc.ForEachMaster(t.Context(), flush)
			} else {
				err = flush(t.Context(), rdb.(*redis.Client))
			}
			if err != nil {
				t.Fatalf("flush the store: %v", err)
			}
			l := launch(t, func(k string) string {
				if k == name {
					return value
				}
				return ""
			})
			if l.cl.Embedded {
				t.Fatalf("the launcher started the embedded store although %s is set", name)
			}
			l.fk("login", "--name", "Leader")
			first := l.play()
			games := map[string]uint32{}
			for _, id := range first.Players {
				games[id] = 1
			}
			l.waitRatings(games)

			guest := first.PlayerID
			rivals := []string{"e2e-rival-1", "e2e-rival-2", "e2e-rival-3", "e2e-rival-4"}
			seeded := map[string]uint32{guest: games[guest]}
			for i := range 200 {
				order := slices.Clone(rivals)
				// Rotate the places so that the rivals stay close.
				slices.Reverse(order[:i%4])
				slices.Reverse(order[i%4:])
				publishFinished(t, l.ctx, rdb, fmt.Sprintf("e2e-rivals-%03d", i), order, seeded)
			}
			for i := range 28 {
				order := slices.Insert(slices.Clone(rivals[:3]), i%4, guest)
				publishFinished(t, l.ctx, rdb, fmt.Sprintf("e2e-guest-%02d", i), order, seeded)
			}
			l.waitRatings(seeded)
			if r := l.getRating(guest); !r.GetProvisional() || r.GetGamesPlayed() != 29 {
				t.Fatalf("after the seeded games the guest has %v, want 29 games, provisional", r)
			}
			before := l.leaderboard()
			if len(before) != len(rivals) || slices.ContainsFunc(before, func(e *ratingv1.LeaderboardEntry) bool {
				return e.GetPlayer().GetPlayerId() == guest
			}) {
				t.Fatalf("leaderboard before the deciding game = %v, want the four established rivals", before)
			}
			if prov := l.section(ratingv1.LeaderboardSection_LEADERBOARD_SECTION_PROVISIONAL); len(prov) != 1 || prov[0].GetPlayer().GetPlayerId() != guest || !prov[0].GetProvisional() {
				t.Fatalf("provisional section before the deciding game = %v, want the guest alone", prov)
			}

			// Bots only fill the seats of people who wait, so nobody else
			// plays meanwhile: the counts before the second game are those
			// of now.
			clear(games)
			for _, id := range first.Players {
				games[id] = l.getRating(id).GetGamesPlayed() + 1
			}
			second := l.play()
			if second.PlayerID != guest {
				t.Fatalf("second game played by %s, want the guest %s", second.PlayerID, guest)
			}
			for _, id := range second.Players {
				games[id] = max(games[id], 1) // a bot new to rated games has 1
			}
			l.waitRatings(games)

			r := l.getRating(guest)
			if r.GetProvisional() {
				t.Fatalf("after %d games the guest is still provisional: %v", r.GetGamesPlayed(), r)
			}
			// The guest joins the four rivals (the bots are rated but never
			// listed), after every rival with the same or a better display
			// rating: equal ratings list the earlier change first.
			after := l.leaderboard()
			rank := uint32(1)
			for _, e := range before {
				if e.GetDisplayRating() >= r.GetDisplayRating() {
					rank++
				}
			}
			i := slices.IndexFunc(after, func(e *ratingv1.LeaderboardEntry) bool { return e.GetPlayer().GetPlayerId() == guest })
			if len(after) != len(rivals)+1 || i < 0 || i+1 != int(rank) || after[i].GetRank() != rank ||
				after[i].GetDisplayRating() != r.GetDisplayRating() || after[i].GetMu() != r.GetMu() || after[i].GetGamesPlayed() != 30 {
				t.Fatalf("leaderboard after the guest's 30th game = %v, want the guest (%v) at rank %d among the rivals %v", after, r, rank, before)
			}
			if prov := l.section(ratingv1.LeaderboardSection_LEADERBOARD_SECTION_PROVISIONAL); len(prov) != 0 {
				t.Fatalf("provisional section after the guest's 30th game = %v, want it empty (the guest moved to the ranked section)", prov)
			}
			l.shutdown()
		})
	}
}

// ruleSet is the pool the launcher's queue plays.
const ruleSet = "fourkingdoms"

// launched is a running launcher, a terminal client and a rating client.
type launched struct {
	t      *testing.T
	dir    string
	getenv func(string) string
	ctx    context.Context
	cl     cluster
	out    *syncBuffer
	stop   context.CancelFunc
	runErr chan error
	fkEnv  []string
	fkBin  string
	rating ratingv1.RatingServiceClient
}

// launch starts the launcher as `make run` does, with one queue that bots
// join after a second, three bots and the environment getenv gives; t's
// end stops it.
func launch(t *testing.T, getenv func(string) string, flags ...string) *launched {
	t.Helper()
	return launchIn(t, t.TempDir(), getenv, flags...)
}

// launchIn is launch with the launcher's directory (-dir dir/run), the
// terminal client and its home in dir: a second launch in the same dir is a
// restart.
// Flags are added to the launcher's (a later flag wins).
func launchIn(t *testing.T, dir string, getenv func(string) string, flags ...string) *launched {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts the whole cluster")
	}
	repo, err := workspace.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range services {
		if _, err := os.Stat(filepath.Join(repo, "services", name, "cmd", name)); err != nil {
			// A service still under construction: say so, and fail on CI
			// where the whole tree must be complete.
			if os.Getenv("CI") == "true" {
				t.Fatalf("the %s service has no main package", name)
			}
			t.Skipf("the %s service has no main package yet", name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	runCtx, stop := context.WithCancel(ctx)
	l := &launched{t: t, dir: dir, getenv: getenv, ctx: ctx, out: &syncBuffer{}, stop: stop, runErr: make(chan error, 1)}
	ready := make(chan cluster, 1)
	go func() {
		l.runErr <- run(runCtx, append([]string{
			"-dir", filepath.Join(dir, "run"), "-base-port", "0", "-web-port", "0",
			"-queues", "fourkingdoms 1+0 bots=1s", "-bots", "3", "-bot-think", "0s", "-log-level", "warn",
		}, flags...), getenv, l.out, func(c cluster) { ready <- c })
	}()
	t.Cleanup(func() {
		stop()
		<-l.runErr
		// The bots check every game they play against the event contract
		// (matchcheck) and log a violation as a failed game: that is a
		// failure of the run, not a bot's bad luck.
		if out := l.out.String(); strings.Contains(out, matchcheck.ErrViolation.Error()) {
			t.Errorf("a bot saw the match event contract broken:\n%s", out)
		}
	})
	select {
	case l.cl = <-ready:
	case err := <-l.runErr:
		l.runErr <- err
		t.Fatalf("launcher stopped before it was ready: %v\n%s", err, l.out.String())
	case <-ctx.Done():
		t.Fatalf("launcher not ready: %v\n%s", ctx.Err(), l.out.String())
	}

	l.fkBin = filepath.Join(dir, "fk")
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", l.fkBin, "../fk").CombinedOutput(); err != nil {
		t.Fatalf("build fk: %v\n%s", err, b)
	}
	l.fkEnv = append(os.Environ(),
		"FK_HOME="+filepath.Join(dir, "home"), "NO_COLOR=1",
		"FK_MATCHMAKING_ADDR="+l.cl.Endpoints.Matchmaking, "FK_MATCH_ADDR="+l.cl.Endpoints.Match, "FK_RATING_ADDR="+l.cl.Endpoints.Rating)

	keys, err := auth.LoadFile(l.cl.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(l.cl.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tok, _, err := keys.Sign(auth.Identity{Subject: "e2e", Role: auth.RolePlayer}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.SetToken(tok)
	l.rating = c.Rating
	return l
}

// diagnostics is what a failed test prints of the cluster: the launcher's
// output and the end of each service's log (the services log at warn in
// these tests, so the tails hold every refusal and failure).
func (l *launched) diagnostics() string {
	var b strings.Builder
	fmt.Fprintf(&b, "launcher:\n%s", l.out.String())
	logs, _ := filepath.Glob(filepath.Join(l.dir, "run", "logs", "*.log"))
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "\n%s (last %d lines):\n%s\n", filepath.Base(f), min(len(lines), logTail), strings.Join(lines[max(len(lines)-logTail, 0):], "\n"))
	}
	return b.String()
}

// logTail is how many lines of each service log diagnostics shows.
const logTail = 60

// fk runs the terminal client and returns what it printed.
func (l *launched) fk(args ...string) string {
	l.t.Helper()
	cmd := exec.CommandContext(l.ctx, l.fkBin, args...)
	cmd.Env = l.fkEnv
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		l.t.Fatalf("fk %s: %v\n%s%s\n%s", strings.Join(args, " "), err, b, stderr.String(), l.diagnostics())
	}
	return string(b)
}

// play plays one whole game as the signed-in guest against the bots.
func (l *launched) play() result {
	l.t.Helper()
	var res result
	line := lastLine(l.fk("play", "--queue", "fourkingdoms/1+0", "--auto", "greedy", "--json"))
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		l.t.Fatalf("play printed %q: %v", line, err)
	}
	l.t.Logf("result: %+v", res)
	if res.Status != "MATCH_STATUS_FINISHED" || res.Termination == "" || len(res.Ranking) != 4 || res.Rank < 1 {
		l.t.Fatalf("the game did not finish with a result: %+v", res)
	}
	if len(res.Players) != 4 || res.Players[res.Seat] != res.PlayerID {
		l.t.Fatalf("players %v: want four, the guest %s in seat %s", res.Players, res.PlayerID, res.Seat)
	}
	return res
}

// waitRatings waits until every player of want has played that many
// rated games: the rating service consumes finished matches
// asynchronously.
func (l *launched) waitRatings(want map[string]uint32) {
	l.t.Helper()
	ids := slices.Collect(maps.Keys(want))
	deadline := time.After(time.Minute)
	for {
		resp, err := l.rating.BatchGetRatings(l.ctx, &ratingv1.BatchGetRatingsRequest{PlayerIds: ids, RuleSet: ruleSet})
		if err != nil {
			l.t.Fatalf("ratings: %v", err)
		}
		n := 0
		for _, r := range resp.GetRatings() {
			if !r.GetIsDefault() && r.GetGamesPlayed() == want[r.GetPlayerId()] {
				n++
			}
		}
		if n == len(ids) {
			return
		}
		select {
		case <-l.ctx.Done():
			l.t.Fatalf("%d of %d ratings as expected (%v): %v", n, len(ids), want, resp.GetRatings())
		case <-deadline:
			l.t.Fatalf("after a minute, %d of %d ratings as expected (%v): %v", n, len(ids), want, resp.GetRatings())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (l *launched) getRating(id string) *ratingv1.Rating {
	l.t.Helper()
	r, err := l.rating.GetRating(l.ctx, &ratingv1.GetRatingRequest{PlayerId: id, RuleSet: ruleSet})
	if err != nil {
		l.t.Fatalf("rating of %s: %v", id, err)
	}
	return r.GetRating()
}

// leaderboard returns the first page of the pool's leaderboard.
func (l *launched) leaderboard() []*ratingv1.LeaderboardEntry {
	l.t.Helper()
	return l.section(ratingv1.LeaderboardSection_LEADERBOARD_SECTION_UNSPECIFIED)
}

// section returns the first page of a section of the pool's leaderboard.
func (l *launched) section(sec ratingv1.LeaderboardSection) []*ratingv1.LeaderboardEntry {
	l.t.Helper()
	resp, err := l.rating.GetLeaderboard(l.ctx, &ratingv1.GetLeaderboardRequest{RuleSet: ruleSet, PageSize: 100, Section: sec})
	if err != nil {
		l.t.Fatalf("leaderboard section %v: %v", sec, err)
	}
	return resp.GetEntries()
}

// shutdown is Ctrl-C: everything stops and no service process is left.
func (l *launched) shutdown() {
	l.t.Helper()
	l.stop()
	err := <-l.runErr
	l.runErr <- nil // for the cleanup
	if err != nil {
		l.t.Fatalf("launcher: %v\n%s", err, l.out.String())
	}
	for _, pid := range l.cl.Pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			l.t.Errorf("service process %d still exists after shutdown (kill 0: %v)", pid, err)
		}
	}
}

// publishFinished adds a finished match of four players, first to last,
// to the rating service's stream (its default RATING_STREAM), as the match
// service does, and counts their games in games.
func publishFinished(t *testing.T, ctx context.Context, rdb redis.UniversalClient, matchID string, order []string, games map[string]uint32) {
	t.Helper()
	seats := []gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN}
	ev := &eventsv1.MatchFinished{
		MatchId:    matchID,
		RuleSet:    ruleSet,
		Result:     &gamev1.Result{Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING},
		FinishedAt: timestamppb.Now(),
		Plies:      100,
	}
	for i, id := range order {
		ev.Players = append(ev.Players, &gamev1.SeatPlayer{Seat: seats[i], Player: &gamev1.Player{PlayerId: id, DisplayName: id}})
		ev.Result.Points = append(ev.Result.Points, &gamev1.SeatPoints{Seat: seats[i], Points: int32(40 - 10*i)})
		ev.Result.Ranking = append(ev.Result.Ranking, seats[i])
		games[id]++
	}
	fin := eventstream.MatchFinished()
	values, err := fin.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: fin.Key(), Values: values}).Err(); err != nil {
		t.Fatalf("publish %s: %v", matchID, err)
	}
}

func lastLine(s string) string {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			last = sc.Text()
		}
	}
	return last
}

// result mirrors the JSON line of `fk play --json`.
type result struct {
	MatchID     string            `json:"match_id"`
	PlayerID    string            `json:"player_id"`
	Seat        string            `json:"seat"`
	Status      string            `json:"status"`
	Termination string            `json:"termination"`
	Rank        int               `json:"rank"`
	Ranking     []string          `json:"ranking"`
	Points      map[string]int32  `json:"points"`
	Players     map[string]string `json:"players"`
	Plies       uint32            `json:"plies"`
}
