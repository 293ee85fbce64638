package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// BenchmarkIdleGameMemory reports the Redis memory of one idle match
// (MEMORY USAGE of its keys) fresh and after 40 plies.
//
//	go test ./cmd/match -run '^$' -bench IdleGameMemory -benchtime 1x
func BenchmarkIdleGameMemory(b *testing.B) {
	for b.Loop() {
		t := b
		e := newEnv(t, standalone(t))
		inst := e.start(nil)
		const games = 20
		var fresh, played int64
		rng := rand.New(rand.NewPCG(1, 1))
		cs := e.seatClients(inst.addr)
		for range games {
			m := e.create(inst.addr, nil)
			n, err := memoryUsage(t.Context(), e.rdb(), e.prefix, m.GetMatchId())
			if err != nil {
				t.Fatal(err)
			}
			fresh += n
			playMoves(t, cs, m.GetMatchId(), 40, rng)
			n, err = memoryUsage(t.Context(), e.rdb(), e.prefix, m.GetMatchId())
			if err != nil {
				t.Fatal(err)
			}
			played += n
		}
		b.ReportMetric(float64(fresh)/games, "bytes/fresh-game")
		b.ReportMetric(float64(played)/games, "bytes/game-at-40-plies")
	}
}

// memoryUsage returns the bytes Redis uses for a match's own keys (its
// state hash, event stream and move replies: "<prefix>{tag}:m:<id>" and
// the keys that start so), by MEMORY USAGE.
func memoryUsage(ctx context.Context, rdb redis.UniversalClient, prefix, id string) (int64, error) {
	keys, err := rdb.Keys(ctx, prefix+"*:m:"+id+"*").Result()
	if err != nil {
		return 0, err
	}
	if len(keys) == 0 {
		return 0, fmt.Errorf("no keys of match %s", id)
	}
	var total int64
	for _, k := range keys {
		n, err := rdb.MemoryUsage(ctx, k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// BenchmarkWatchStreamMemory reports what open, idle watch streams cost
// the service, in Go heap (HeapInuse) and goroutine stacks (StackInuse)
// after a GC. The streams come from separate client processes (this test
// binary run again, watchClient), so the clients' memory is not counted.
// Per watched match: the first stream of each of 50 matches, which also
// subscribes the match's channel and opens its partition's pub/sub
// connection (two bufio buffers of go-redis's default size; at most one
// per partition and instance). Per stream: eight more streams on each of
// those matches, the cost that grows with the number of watchers.
//
//	go test ./cmd/match -run '^$' -bench WatchStreamMemory -benchtime 1x -count 3
func BenchmarkWatchStreamMemory(b *testing.B) {
	for b.Loop() {
		t := b
		e := newEnv(t, standalone(t))
		// One caller holds every stream here.
		inst := e.start(map[string]string{"GRPC_MAX_STREAMS_PER_CALLER": "1000"})
		const matches, perMatch = 50, 8
		var ids []string
		for range matches {
			ids = append(ids, e.create(inst.addr, nil).GetMatchId())
		}
		mem := func(profile string) (heap, stack, live uint64) {
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if dir := os.Getenv("FK_BENCH_HEAP_PROFILES"); dir != "" {
				writeHeapProfile(t, filepath.Join(dir, profile+".pb.gz"))
			}
			return ms.HeapInuse, ms.StackInuse, ms.HeapAlloc
		}
		tok := e.token("spectator", auth.RolePlayer)
		// The clients' connections are opened and used once first, so
		// their transport (not per stream) is outside the differences.
		first := startWatchClient(t, inst.addr, tok, ids[:1], 1)
		more := startWatchClient(t, inst.addr, tok, ids[:1], 1)
		first.wait(t)
		more.wait(t)
		h0, _, l0 := mem("base")
		first.watch(t, ids[1:], 1)
		h1, s1, l1 := mem("matches")
		more.watch(t, ids, perMatch)
		h2, s2, l2 := mem("streams")
		first.stop(t)
		more.stop(t)
		n := float64(matches * perMatch)
		b.ReportMetric((float64(h1)-float64(h0))/(matches-1), "heap-bytes/watched-match")
		b.ReportMetric((float64(l1)-float64(l0))/(matches-1), "live-bytes/watched-match")
		b.ReportMetric((float64(l2)-float64(l1))/n, "live-bytes/stream")
		b.ReportMetric((float64(h2)-float64(h1))/n, "heap-bytes/stream")
		b.ReportMetric((float64(s2)-float64(s1))/n, "stack-bytes/stream")
	}
}

func writeHeapProfile(t testing.TB, file string) {
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Fatal(err)
	}
}

// The environment of the test binary run as a watch client
// (BenchmarkWatchStreamMemory): TestMain runs watchClient instead of the
// tests when watchClientAddr is set.
const (
	watchClientAddr  = "FK_BENCH_WATCH_ADDR"
	watchClientToken = "FK_BENCH_WATCH_TOKEN"
	watchClientIDs   = "FK_BENCH_WATCH_IDS"
	watchClientPer   = "FK_BENCH_WATCH_PER_MATCH"
)

// watchClient opens the streams its environment asks for and reads the
// first item of each, then, for each line "<ids> <n>" on its stdin, opens
// n more streams on each of the comma-separated ids; after each round it
// prints "ready". It holds its streams until its stdin closes.
func watchClient() int {
	conn, err := grpc.NewClient(os.Getenv(watchClientAddr), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.BearerToken(os.Getenv(watchClientToken), true)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer conn.Close()
	c := matchv1.NewMatchServiceClient(conn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(ids string, per int) error {
		for _, id := range strings.Split(ids, ",") {
			for range per {
				s, err := c.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id})
				if err == nil {
					_, err = s.Recv()
				}
				if err != nil {
					return err
				}
			}
		}
		fmt.Println("ready")
		return nil
	}
	per, _ := strconv.Atoi(os.Getenv(watchClientPer))
	if err := open(os.Getenv(watchClientIDs), per); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		ids, n, _ := strings.Cut(in.Text(), " ")
		per, _ := strconv.Atoi(n)
		if err := open(ids, per); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

type watchClientProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ready *bufio.Reader
}

func startWatchClient(t testing.TB, addr, token string, ids []string, per int) *watchClientProc {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), watchClientAddr+"="+addr, watchClientToken+"="+token,
		watchClientIDs+"="+strings.Join(ids, ","), watchClientPer+"="+strconv.Itoa(per))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &watchClientProc{cmd: cmd, stdin: stdin, ready: bufio.NewReader(out)}
}

// wait waits for the client's streams to be open.
func (p *watchClientProc) wait(t testing.TB) {
	t.Helper()
	if line, err := p.ready.ReadString('\n'); err != nil || line != "ready\n" {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		t.Fatalf("watch client: %q, %v", line, err)
	}
}

// watch has the client open per more streams on each of ids.
func (p *watchClientProc) watch(t testing.TB, ids []string, per int) {
	t.Helper()
	if _, err := fmt.Fprintf(p.stdin, "%s %d\n", strings.Join(ids, ","), per); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
}

// stop closes the client's streams and waits for it to exit.
func (p *watchClientProc) stop(t testing.TB) {
	t.Helper()
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("watch client: %v", err)
	}
}
