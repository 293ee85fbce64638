package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn/scripttest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

// TestScriptLayouts checks both scripts' Lua against their layouts, and
// the calls the store builds against them, running each once on real
// Redis: a batch that moves the watermark far enough to drop buckets, and
// a history page.
func TestScriptLayouts(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			rdb := b.client(t)
			s := New(rdb, ladder.DefaultPolicy(), Config{Prefix: redistest.Prefix(t), Retention: Retention{Markers: 2 * day, History: 4 * day}})
			k := newKeys(s.prefix, pool)
			// An earlier match sets the watermark, so the run below drops days.
			if _, err := s.Apply(t.Context(), []ladder.Result{resultAt(t, "old", t0, "ann", "bob", "cat", "dan")}); err != nil {
				t.Fatal(err)
			}
			wm, err := rdb.Get(t.Context(), k.watermark()).Int64()
			if err != nil {
				t.Fatal(err)
			}
			c := s.newCall(pool, 1)
			res := resultAt(t, "new", t0.Add(10*day), "fay", "gus", "hal", "ivy")
			players, err := s.Players(t.Context(), pool, []string{"fay", "gus", "hal", "ivy"})
			if err != nil {
				t.Fatal(err)
			}
			var prior [ladder.Seats]stored
			var before [ladder.Seats]ladder.Standing
			for i, p := range players {
				prior[i].player, before[i] = p, p.Standing
			}
			changes, err := s.policy.Rate(res, before, res.FinishedAt)
			if err != nil {
				t.Fatal(err)
			}
			s.appendMatch(c, &res, prior, changes)
			c.idx = append(c.idx, 0)
			s.finishCall(c, wm)
			if c.args[applyAMarkerDrops] == 0 || c.args[applyAHistoryDrops] == 0 {
				t.Fatalf("the run drops no buckets: args %v", c.args[:applyNArgs])
			}
			// ann, provisional after "old", as if rated before the
			// provisional section existed.
			raw, err := rdb.HGet(t.Context(), k.standings(), "ann").Result()
			if err != nil {
				t.Fatal(err)
			}
			ann, err := s.decodePlayer("ann", raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := rdb.ZRem(t.Context(), k.provisional(), "ann").Err(); err != nil {
				t.Fatal(err)
			}
			hk, ha := historyArgs(k, "ann", recordRef(dayOf(t0), "old"), dayOf(t0), 10, s.retention.History)
			// bob, linked to an account: his one record is of the day the
			// apply run drops, which the link then skips.
			bobRaw, err := rdb.HGet(t.Context(), k.standings(), "bob").Result()
			if err != nil {
				t.Fatal(err)
			}
			lk, la := linkArgs(k, Link{Guest: "bob", Account: "o-bob"}, bobRaw, "", bobRaw, []int64{dayOf(t0)}, []any{1, "old"})
			got := scripttest.Run(t, rdb,
				scripttest.Case{Name: "apply", Layout: applyLayout, Body: applySource, Script: s.apply, Keys: c.keys, Args: c.args},
				scripttest.Case{Name: "history", Layout: historyLayout, Body: historySource, Script: s.history, Keys: hk, Args: ha},
				scripttest.Case{Name: "backfill", Layout: backfillLayout, Body: backfillSource, Script: s.backfill,
					Keys: backfillKeys(k), Args: []any{"ann", raw, ladder.Display(ann.Standing.Rating)}},
				scripttest.Case{Name: "link", Layout: linkLayout, Body: linkSource, Script: s.link, Keys: lk, Args: la},
			)
			if fmt.Sprint(got[0]) != "[2]" {
				t.Errorf("apply: reply %v, want [2] (applied as the second match)", got[0])
			}
			if n, err := rdb.Exists(t.Context(), k.bucket(dayOf(t0)), k.history(dayOf(t0))).Result(); err != nil || n != 0 {
				t.Errorf("buckets of the old match's day: %d exist (%v), want them dropped", n, err)
			}
			if fmt.Sprint(got[2]) != "1" {
				t.Errorf("backfill: reply %v, want 1 (ann added)", got[2])
			}
			if fmt.Sprint(got[3]) != "1" {
				t.Errorf("link: reply %v, want 1 (linked)", got[3])
			}
		})
	}
}

// TestHistoryAcrossWindows reads a history whose records span many more
// days than one run of the history script reads.
func TestHistoryAcrossWindows(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		const games = 3*historyWindow + 2
		var want []string
		for g := range games {
			id := fmt.Sprintf("w%03d", g)
			at := t0.Add(time.Duration(g) * 3 * day / 2)
			if out, err := s.Apply(t.Context(), []ladder.Result{resultAt(t, id, at, "ann", "bob", "cat", "dan")}); err != nil || out[0].Status != Applied {
				t.Fatalf("match %s: %+v, %v", id, out, err)
			}
			want = append([]string{id}, want...)
		}
		for _, limit := range []int{games + 5, 7} {
			var got []string
			cursor := ""
			for page := 0; ; page++ {
				entries, next, err := s.History(t.Context(), pool, "ann", cursor, limit)
				if err != nil {
					t.Fatalf("limit %d, page %d: %v", limit, page, err)
				}
				if next != "" && len(entries) != limit {
					t.Errorf("limit %d, page %d: %d entries and more to come", limit, page, len(entries))
				}
				for _, e := range entries {
					got = append(got, e.MatchID)
				}
				if cursor = next; cursor == "" {
					break
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("limit %d: history %v, want %v", limit, got, want)
			}
		}
	})
}
