package store

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

// readSection pages through a whole leaderboard section, pageSize entries
// at a time, and checks the ranks and the section size on every page.
func readSection(t *testing.T, s *Store, sec Section, pageSize int) []LeaderboardEntry {
	t.Helper()
	var all []LeaderboardEntry
	var sizes []int64
	cursor := ""
	for range 100 {
		page, err := s.Leaderboard(t.Context(), pool, sec, cursor, pageSize)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Entries...)
		sizes = append(sizes, page.Size)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	for i, e := range all {
		if e.Rank != int64(i+1) {
			t.Errorf("section %d: entry %s has rank %d, want %d", sec, e.Player.ID, e.Rank, i+1)
		}
	}
	for _, n := range sizes {
		if n != int64(len(all)) {
			t.Errorf("section %d: a page says the section has %d players, the pages hold %d", sec, n, len(all))
		}
	}
	return all
}

func ids(entries []LeaderboardEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Player.ID
	}
	return out
}

// wantSections computes both sections from a sequential replay of the
// applied matches: every human in the section the policy puts them in,
// ordered by display rating (highest first), then by the sequence number
// of their last match, then by their place in it.
func wantSections(t *testing.T, s *Store, results []ladder.Result) (ranked, provisional []string) {
	t.Helper()
	type entry struct {
		id           string
		display      int
		seq          int64
		place        int
		bot, settled bool
	}
	ordered := inApplyOrder(t, t.Context(), s, results)
	standings := replay(t, s.policy, ordered)
	last := map[string]entry{}
	for _, r := range ordered {
		seq, _, err := s.Applied(t.Context(), pool, r.MatchID)
		if err != nil {
			t.Fatal(err)
		}
		for place, p := range r.Places {
			last[p.PlayerID] = entry{id: p.PlayerID, seq: seq, place: place, bot: p.Bot}
		}
	}
	var es []entry
	for id, e := range last {
		e.display = ladder.Display(standings[id].Rating)
		e.settled = !s.policy.Provisional(standings[id])
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(b.display, a.display), cmp.Compare(a.seq, b.seq), cmp.Compare(a.place, b.place))
	})
	for _, e := range es {
		switch {
		case e.bot:
		case e.settled:
			ranked = append(ranked, e.id)
		default:
			provisional = append(provisional, e.id)
		}
	}
	return ranked, provisional
}

// TestProvisionalSection follows players from the provisional section to
// the ranked one as their games establish them (3 games in this policy),
// including a player established by the second match of one batch, and
// checks both sections, paged, against a sequential replay after each
// step. Bots are in neither.
func TestProvisionalSection(t *testing.T) {
	t.Parallel()
	steps := []struct {
		name    string
		matches [][]string // each a match's players, first to last
	}{
		{"first games: everyone provisional", [][]string{{"a", "b", "c", "d"}, {"bot1", "e", "f", "g"}}},
		{"a to d established by the second match of a batch", [][]string{{"d", "c", "b", "a"}, {"a", "c", "b", "d"}}},
		{"e to g established, h new, a moves within the ranked section", [][]string{{"e", "a", "f", "g"}, {"h", "e", "f", "g"}}},
		{"an established player's games change nothing in the provisional section", [][]string{{"d", "a", "b", "c"}}},
	}
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		s.policy.ProvisionalGames = 3
		s.policy.ProvisionalSigma = 100
		var applied []ladder.Result
		n := 0
		for _, step := range steps {
			var batch []ladder.Result
			for _, players := range step.matches {
				batch = append(batch, result(t, fmt.Sprintf("m%02d", n), pool, players...))
				n++
			}
			out, err := s.Apply(t.Context(), batch)
			if err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			for _, o := range out {
				if o.Status != Applied {
					t.Fatalf("%s: outcome %+v", step.name, o)
				}
			}
			applied = append(applied, batch...)
			wantRanked, wantProv := wantSections(t, s, applied)
			for _, size := range []int{1, 3, 100} {
				if got := ids(readSection(t, s, Ranked, size)); !slices.Equal(got, wantRanked) {
					t.Errorf("%s: ranked section (pages of %d) = %v, want %v", step.name, size, got, wantRanked)
				}
				prov := readSection(t, s, Provisional, size)
				if got := ids(prov); !slices.Equal(got, wantProv) {
					t.Errorf("%s: provisional section (pages of %d) = %v, want %v", step.name, size, got, wantProv)
				}
				for _, e := range prov {
					if e.Display != ladder.Display(e.Player.Standing.Rating) || e.Player.Name != "name-"+e.Player.ID {
						t.Errorf("%s: provisional entry %+v: display or name differ from the standing", step.name, e)
					}
				}
			}
		}
	})
}

// TestBackfill starts from data rated before the provisional section
// existed (the section deleted after the matches), fills it, and checks
// that the backfill adds every provisional human once, in display order
// with unique scores (players with equal ratings page correctly), is
// idempotent (with and without its marker), leaves alone a player whose
// standing changed after it read it, agrees with itself when several
// instances run it at once, and that a backfilled player moves to the
// ranked section with the match that establishes them.
func TestBackfill(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, rdb redis.UniversalClient) {
		ctx := t.Context()
		s.policy.ProvisionalGames = 3
		s.policy.ProvisionalSigma = 100
		k := newKeys(s.prefix, pool)
		var applied []ladder.Result
		apply := func(matches ...[]string) {
			t.Helper()
			var batch []ladder.Result
			for _, players := range matches {
				batch = append(batch, result(t, fmt.Sprintf("m%02d", len(applied)+len(batch)), pool, players...))
			}
			if _, err := s.Apply(ctx, batch); err != nil {
				t.Fatal(err)
			}
			applied = append(applied, batch...)
		}
		// a to d established; e to g and two disjoint groups with equal
		// results (equal display ratings) provisional; bot1 never listed.
		apply([]string{"a", "b", "c", "d"}, []string{"a", "b", "c", "d"}, []string{"a", "b", "c", "d"},
			[]string{"bot1", "e", "f", "g"}, []string{"p1", "p2", "p3", "p4"}, []string{"q1", "q2", "q3", "q4"})
		forget := func() {
			t.Helper()
			if err := rdb.Del(ctx, k.provisional(), k.backfilled()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		forget()
		wantRanked, wantProv := wantSections(t, s, applied)
		byDisplay := func(entries []LeaderboardEntry) []string {
			// Backfilled players of equal display ratings are in the
			// order of the backfill's scan: compare sets per rating.
			var out []string
			for _, e := range entries {
				out = append(out, fmt.Sprint(e.Display))
			}
			return out
		}
		displays := func(ids []string) []string {
			ps, err := s.Players(ctx, pool, ids)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, p := range ps {
				out = append(out, fmt.Sprint(ladder.Display(p.Standing.Rating)))
			}
			return out
		}
		check := func(what string) {
			t.Helper()
			prov := readSection(t, s, Provisional, 1)
			if got := ids(prov); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(wantProv))) ||
				!slices.Equal(byDisplay(prov), displays(wantProv)) {
				t.Errorf("%s: provisional section %v (displays %v), want %v (displays %v)", what, got, byDisplay(prov), wantProv, displays(wantProv))
			}
			if got := ids(readSection(t, s, Ranked, 2)); !slices.Equal(got, wantRanked) {
				t.Errorf("%s: ranked section %v, want %v", what, got, wantRanked)
			}
		}

		if n, err := s.Backfill(ctx, pool); err != nil || n != len(wantProv) {
			t.Fatalf("backfill added %d (%v), want %d", n, err, len(wantProv))
		}
		check("after the backfill")
		if n, err := s.Backfill(ctx, pool); err != nil || n != 0 {
			t.Errorf("second backfill added %d (%v), want 0 (marked done)", n, err)
		}
		if err := rdb.Del(ctx, k.backfilled()).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Backfill(ctx, pool); err != nil || n != 0 {
			t.Errorf("backfill without its marker added %d (%v), want 0 (everyone is there)", n, err)
		}
		check("after the backfill ran again")

		// A standing read before a match changed it is not listed from
		// the stale value: the match placed the player.
		forget()
		stale, err := rdb.HGet(ctx, k.standings(), "e").Result()
		if err != nil {
			t.Fatal(err)
		}
		apply([]string{"e", "h", "i", "j"})
		if n, err := s.backfillRun(ctx, pool, backfillKeys(k), []any{"e", stale, 1500}); err != nil || n != 0 {
			t.Errorf("backfill from a stale standing added %d (%v), want 0", n, err)
		}
		if sc, err := rdb.ZScore(ctx, k.provisional(), "e").Result(); err != nil {
			t.Errorf("e, placed by its match: score %v, %v", sc, err)
		}

		// Several instances at once.
		forget()
		wantRanked, wantProv = wantSections(t, s, applied)
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		for range 4 {
			wg.Go(func() {
				n, err := s.Backfill(ctx, pool)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			})
		}
		wg.Wait()
		if total != len(wantProv) {
			t.Errorf("four concurrent backfills added %d players, want %d", total, len(wantProv))
		}
		check("after concurrent backfills")

		// Backfilled players established by their third game move to the
		// ranked section.
		apply([]string{"f", "g", "e", "h"}, []string{"g", "f", "h", "e"})
		wantRanked, wantProv = wantSections(t, s, applied)
		for _, id := range []string{"e", "f", "g", "h"} {
			if !slices.Contains(wantRanked, id) || slices.Contains(wantProv, id) {
				t.Fatalf("the replay has %s provisional after three games", id)
			}
		}
		check("after e, f, g and h were established")
	})
}
