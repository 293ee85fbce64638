package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn/scripttest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// TestScriptLayouts checks, for every script, that its Lua refers only to
// the slots its layout declares, that the Go builder fills exactly those,
// and that one run on real Redis accepts what the builder passes.
func TestScriptLayouts(t *testing.T) {
	s, _ := redistest.Standalone(t)
	c, _ := redistest.Cluster(t)
	for name, rdb := range map[string]redis.UniversalClient{"standalone": s, "cluster": c} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tag := redistest.Prefix(t) + "{fk:p00}:"
			ktag := redistest.Prefix(t) + "{fk:keeper}:"
			stamp := NewStamp()
			commit := func() ([]string, []any) {
				cmd := (&commitCall{
					match: tag + "m", events: tag + "e", moves: tag + "r", deadlines: tag + "d",
					outbox: tag + "o", channel: tag + "ch", id: "m1", expected: "1:" + stamp,
					game: []byte("g2"), clock: []byte("c2"), moveKey: "mk", reply: []byte("ok"),
					deadline: 0, finished: "1", retention: 60000, outboxData: []byte("fin"),
					outboxType: "t", typeField: "type", dataField: "data", logLen: 100, stamp: NewStamp(),
					evs: [][]byte{[]byte("e2"), []byte("e3")},
				}).appendTo(commitScript.Args(commitNKeys, 0))
				keys := make([]string, commitNKeys)
				for i := range keys {
					keys[i] = cmd[3+i].(string)
				}
				return keys, cmd[3+commitNKeys:]
			}
			steps := []struct {
				name   string
				layout redisconn.Layout
				body   string
				script *redisconn.Script
				call   func() ([]string, []any)
				want   any
			}{
				{"create", createLayout, createLua, createScript, func() ([]string, []any) {
					return (&createCall{
						request: tag + "req", match: tag + "m", events: tag + "e", deadlines: tag + "d",
						id: "m1", game: []byte("g"), clock: []byte("c"), meta: []byte("meta"), event: []byte("e1"),
						deadline: 1000, requestTTL: 60000, logLen: 100, stamp: stamp,
					}).keysArgs()
				}, []any{int64(1), "m1"}},
				{"commit", commitLayout, commitLua, commitScript, commit, []any{int64(0), int64(3)}},
				{"keeper-heartbeat", heartbeatLayout, heartbeatLua, heartbeatScript, func() ([]string, []any) {
					leases, held := make([]string, KeeperRanges), make([]string, KeeperRanges)
					for r := range leases {
						leases[r] = fmt.Sprintf("%slease%d", ktag, r)
					}
					return heartbeatArgs(ktag+"members", leases, "me", 60000, held)
				}, nil},
				{"keeper-acquire", acquireLayout, acquireLua, acquireScript, func() ([]string, []any) {
					return acquireArgs(ktag+"fence", []string{ktag + "lease0", ktag + "lease1"}, "me", 60000, 1)
				}, []any{"1:me", ""}},
				{"presence", presenceLayout, presenceLua, presenceScript, func() ([]string, []any) {
					// A touch on a running match (no TTL) whose seat 2 was
					// shown disconnected: it is back.
					if err := rdb.HSet(ctx, tag+"running", "v", "1").Err(); err != nil {
						t.Fatal(err)
					}
					if err := rdb.HSet(ctx, tag+"pr", "s2", "1000", "g2", "5000").Err(); err != nil {
						t.Fatal(err)
					}
					k := make([]string, presenceNKeys)
					k[presenceKPresence], k[presenceKDue], k[presenceKMatch] = tag+"pr", tag+"pd", tag+"running"
					a := make([]any, presenceNArgs)
					a[presenceAID], a[presenceAOp], a[presenceANow], a[presenceAValue] = "m1", opTouch, 0, 2000
					return k, append(a, 1, 2)
				}, []any{"2"}},
				{"keeper-release", releaseLayout, releaseLua, releaseScript, func() ([]string, []any) {
					return releaseArgs(ktag+"members", []string{ktag + "lease0", ktag + "lease1"}, "me", true, []string{"1:me", "1:me"})
				}, int64(1)},
			}
			for _, st := range steps {
				if err := scripttest.CheckSource(st.layout, st.body); err != nil {
					t.Errorf("%s: Lua and layout disagree:\n%v", st.name, err)
				}
				keys, args := st.call()
				if err := scripttest.CheckCall(st.layout, keys, args); err != nil {
					t.Errorf("%s: Go and layout disagree:\n%v", st.name, err)
				}
				got, err := st.script.Run(ctx, rdb, keys, args...).Result()
				if err != nil {
					t.Fatalf("%s: run: %v", st.name, err)
				}
				if st.want != nil && !equalReply(got, st.want) {
					t.Errorf("%s: reply %v, want %v", st.name, got, st.want)
				}
			}
		})
	}
}

func equalReply(got, want any) bool {
	g, gok := got.([]any)
	w, wok := want.([]any)
	if gok != wok {
		return false
	}
	if !gok {
		return got == want
	}
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		if g[i] != w[i] {
			return false
		}
	}
	return true
}
