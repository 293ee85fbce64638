package store_test

import (
	"bytes"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisbatch"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// BenchmarkCommit measures the hot-path write of one move: one EVALSHA with
// a 400-byte game, a 60-byte record, one 300-byte event, a move id and a
// 400-byte reply, from 50 concurrent writers on their own matches
// (standalone Redis), each in a round trip of its own (direct) or sharing
// round trips (batched, as the service runs).
//
//	go test ./internal/store -run '^$' -bench Commit
func BenchmarkCommit(b *testing.B) {
	rdb, _ := redistest.Standalone(b)
	b.Run("direct", func(b *testing.B) { benchCommit(b, rdb, nil) })
	b.Run("batched", func(b *testing.B) {
		bt := redisbatch.New(rdb, redisbatch.DefaultConfig())
		defer bt.Close()
		benchCommit(b, rdb, bt)
	})
}

func benchCommit(b *testing.B, rdb redis.UniversalClient, via redisconn.Processor) {
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(b)
	s, err := store.New(rdb, cfg, via)
	if err != nil {
		b.Fatal(err)
	}
	game, clock, event, reply := bytes.Repeat([]byte("g"), 400), bytes.Repeat([]byte("c"), 60),
		bytes.Repeat([]byte("e"), 300), bytes.Repeat([]byte("r"), 400)
	b.ReportAllocs()
	b.SetParallelism(25) // 50 writers on 2 CPUs
	var seq atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		req := fmt.Sprintf("%s-%d", b.Name(), seq.Add(1))
		id := store.NewIDFor(req)
		if _, _, err := s.Create(b.Context(), id, store.NewMatch{RequestID: req, Game: game, Clock: clock, Meta: event, Event: event}); err != nil {
			b.Error(err)
			return
		}
		st, err := s.Load(b.Context(), id)
		if err != nil {
			b.Error(err)
			return
		}
		v, stamp, n := st.Version, st.Stamp, 0
		for pb.Next() {
			n++
			res, err := s.Commit(b.Context(), id, store.Change{Expected: v, ExpectedStamp: stamp, Game: game, Clock: clock,
				Events: [][]byte{event}, MoveKey: strconv.Itoa(n), Reply: reply})
			if err != nil || res.Outcome != store.Applied {
				b.Errorf("commit: %+v %v", res, err)
				return
			}
			v, stamp = res.Version, res.Stamp
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
