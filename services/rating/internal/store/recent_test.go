package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

// Recent follows each player's chain of history records: the latest
// matches newest first, each with the other three players, at most as
// many as asked, ending at the player's first game or at a record the
// retention deleted.
func TestRecent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, rdb redis.UniversalClient) {
		ctx := t.Context()
		results := []ladder.Result{
			resultAt(t, "m0", t0, "a", "b", "c", "d"),
			resultAt(t, "m1", t0.Add(time.Minute), "e", "f", "a", "g"),
			resultAt(t, "m2", t0.Add(2*time.Minute), "h", "a", "b", "i"),
		}
		if _, err := s.Apply(ctx, results); err != nil {
			t.Fatal(err)
		}
		type match struct {
			id       string
			finished time.Time
			co       []string
		}
		// The matches as a and b see them (the others, in seat order).
		m0a := match{"m0", t0, []string{"b", "c", "d"}}
		m0b := match{"m0", t0, []string{"a", "c", "d"}}
		m1a := match{"m1", t0.Add(time.Minute), []string{"e", "f", "g"}}
		m2a := match{"m2", t0.Add(2 * time.Minute), []string{"h", "b", "i"}}
		m2b := match{"m2", t0.Add(2 * time.Minute), []string{"h", "a", "i"}}
		check := func(name string, n int, ids []string, want [][]match) {
			t.Helper()
			players, err := s.Players(ctx, pool, ids)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Recent(ctx, pool, players, n)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(got) != len(ids) {
				t.Fatalf("%s: %d answers for %d players", name, len(got), len(ids))
			}
			for i := range ids {
				var g []match
				for _, m := range got[i] {
					co := slices.Clone(m.CoPlayers)
					g = append(g, match{m.MatchID, m.FinishedAt, co})
				}
				w := want[i]
				if fmt.Sprint(g) != fmt.Sprint(w) {
					t.Errorf("%s: player %s: recent = %v, want %v", name, ids[i], g, w)
				}
			}
		}
		check("newest first, capped", 2, []string{"a", "b", "nobody", "i"}, [][]match{{m2a, m1a}, {m2b, m0b}, nil, {{"m2", t0.Add(2 * time.Minute), []string{"h", "a", "b"}}}})
		check("every game", 10, []string{"a"}, [][]match{{m2a, m1a, m0a}})
		check("none asked", 0, []string{"a"}, [][]match{nil})

		// A record deleted by the history retention ends the chain.
		if err := rdb.HDel(ctx, newKeys(s.prefix, pool).history(dayOf(t0)), "m1").Err(); err != nil {
			t.Fatal(err)
		}
		check("retention", 3, []string{"a", "b"}, [][]match{{m2a}, {m2b, m0b}})

		players, err := s.Players(ctx, pool, []string{"a"})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{-1, MaxRecent + 1} {
			if _, err := s.Recent(ctx, pool, players, n); err == nil {
				t.Errorf("Recent(n=%d) succeeded", n)
			}
		}
	})
}
