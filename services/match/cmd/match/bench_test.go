package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// BenchmarkWatchStreamMemory reports the heap per open watch stream. Client
// and server share the process, so the figure is an upper bound of the
// server's share.
//
//	go test ./cmd/match -run '^$' -bench WatchStreamMemory -benchtime 1x
func BenchmarkWatchStreamMemory(b *testing.B) {
	for b.Loop() {
		t := b
		e := newEnv(t, standalone(t))
		inst := e.start(nil)
		const matches, perMatch = 50, 10
		var ids []string
		for range matches {
			ids = append(ids, e.create(inst.addr, nil).GetMatchId())
		}
		c := e.client(inst.addr, e.token("spectator", auth.RolePlayer))
		heap := func() uint64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapInuse + ms.StackInuse
		}
		before := heap()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		for _, id := range ids {
			for range perMatch {
				s, err := c.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Recv(); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
		after := heap()
		b.ReportMetric(float64(after-before)/(matches*perMatch), "bytes/watch-stream")
		cancel()
	}
}
