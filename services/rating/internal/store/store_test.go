package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

const pool = "fourkingdoms"

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// result returns a valid result of match with the players finishing in the
// given order.
func result(t testing.TB, match, pool string, order ...string) ladder.Result {
	t.Helper()
	players := make([]ladder.Participant, ladder.Seats)
	ranking := make([]ladder.Seat, ladder.Seats)
	for p, id := range order {
		players[p] = ladder.Participant{PlayerID: id, Name: "name-" + id, Seat: ladder.Seat(p), Points: 40 - 10*p, Bot: strings.HasPrefix(id, "bot")}
		ranking[p] = ladder.Seat(p)
	}
	res, err := ladder.NewResult(match, pool, t0.Add(time.Duration(len(match))*time.Second), players, ranking)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// replay is policy.Replay, failing t on error.
func replay(t testing.TB, policy ladder.Policy, results []ladder.Result) map[string]ladder.Standing {
	t.Helper()
	st, err := policy.Replay(results)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// inApplyOrder returns results sorted by the sequence number the store gave
// them; every result must have been applied.
func inApplyOrder(t testing.TB, ctx context.Context, s *Store, results []ladder.Result) []ladder.Result {
	t.Helper()
	seqs := map[string]int64{}
	for _, r := range results {
		seq, ok, err := s.Applied(ctx, r.Pool, r.MatchID)
		if err != nil || !ok {
			t.Fatalf("match %s: applied=%v err=%v", r.MatchID, ok, err)
		}
		seqs[r.MatchID] = seq
	}
	out := slices.Clone(results)
	slices.SortFunc(out, func(a, b ladder.Result) int { return int(seqs[a.MatchID] - seqs[b.MatchID]) })
	for i := 1; i < len(out); i++ {
		if seqs[out[i].MatchID] == seqs[out[i-1].MatchID] {
			t.Fatalf("matches %s and %s share sequence number %d", out[i-1].MatchID, out[i].MatchID, seqs[out[i].MatchID])
		}
	}
	return out
}

// checkStandings compares the stored standings with want, exactly.
func checkStandings(t testing.TB, ctx context.Context, s *Store, pool string, want map[string]ladder.Standing) {
	t.Helper()
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	got, err := s.Players(ctx, pool, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		w := want[ids[i]]
		if !p.Known || p.Standing.Rating != w.Rating || p.Standing.Games != w.Games || p.Standing.Version != w.Version || !p.Standing.UpdatedAt.Equal(w.UpdatedAt) {
			t.Errorf("player %s: stored %+v (known %v), want %+v", ids[i], p.Standing, p.Known, w)
		}
	}
}

type backend struct {
	name   string
	client func(t testing.TB) redis.UniversalClient
}

func TestMain(m *testing.M) { redistest.Main(m) }

// backends are the Redis deployments every store test runs against.
func backends() []backend {
	return []backend{
		{"standalone", func(t testing.TB) redis.UniversalClient { c, _ := redistest.Standalone(t); return c }},
		{"cluster", func(t testing.TB) redis.UniversalClient { c, _ := redistest.Cluster(t); return c }},
	}
}

func forEachBackend(t *testing.T, f func(t *testing.T, s *Store, rdb redis.UniversalClient)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			rdb := b.client(t)
			f(t, New(rdb, ladder.DefaultPolicy(), Config{Prefix: redistest.Prefix(t), Retention: DefaultRetention()}), rdb)
		})
	}
}

func TestApplyOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		res := result(t, "m1", pool, "ann", "bob", "cat", "dan")
		out, err := s.Apply(ctx, []ladder.Result{res})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Status != Applied || out[0].Seq != 1 {
			t.Fatalf("outcome %+v, want Applied with seq 1", out[0])
		}
		want := replay(t, s.policy, []ladder.Result{res})
		checkStandings(t, ctx, s, pool, want)
		if want["ann"].Rating.Mu <= 25 || want["dan"].Rating.Mu >= 25 {
			t.Errorf("winner/loser moved the wrong way: %+v", want)
		}

		// Redelivery: in a later call and twice within one call.
		for _, batch := range [][]ladder.Result{{res}, {res, res}} {
			out, err := s.Apply(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range out {
				if o.Status != Duplicate {
					t.Errorf("redelivery %d: status %v, want Duplicate", i, o.Status)
				}
			}
		}
		checkStandings(t, ctx, s, pool, want)
		h, _, err := s.History(ctx, pool, "ann", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 1 || h[0].MatchID != "m1" || h[0].Place != 1 || h[0].Game != 1 || h[0].DisplayBefore != 1500 {
			t.Errorf("history of ann = %+v", h)
		}
	})
}

func TestApplyBatchEqualsSequential(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		rng := rand.New(rand.NewPCG(1, 2))
		ids := []string{"p0", "p1", "p2", "p3", "p4", "p5", "bot0"}
		var results []ladder.Result
		for i := range 60 {
			pick := rng.Perm(len(ids))[:4]
			order := make([]string, 4)
			for j, k := range pick {
				order[j] = ids[k]
			}
			pl := pool
			if i%3 == 0 {
				pl = "chesscom-ffa"
			}
			results = append(results, result(t, fmt.Sprintf("m%02d", i), pl, order...))
		}
		// Apply in batches of varied sizes, mixing pools within a batch.
		for i := 0; i < len(results); {
			n := min(1+i%7, len(results)-i)
			out, err := s.Apply(ctx, results[i:i+n])
			if err != nil {
				t.Fatal(err)
			}
			for j, o := range out {
				if o.Status != Applied {
					t.Fatalf("match %s: status %v", results[i+j].MatchID, o.Status)
				}
			}
			i += n
		}
		checkAppliedInOrder(t, ctx, s, results, pool, "chesscom-ffa")
	})
}

// Concurrent appliers on shared players serialize: every match applied once
// and the result equals a replay in the store's order.
func TestApplyConcurrent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		s.maxAttempts = 1000 // heavy contention on purpose
		rng := rand.New(rand.NewPCG(3, 4))
		const players, matches, workers = 12, 400, 6
		results := make([]ladder.Result, matches)
		for i := range results {
			pick := rng.Perm(players)[:4]
			order := make([]string, 4)
			for j, k := range pick {
				order[j] = fmt.Sprintf("p%d", k)
			}
			results[i] = result(t, fmt.Sprintf("m%03d", i), pool, order...)
		}
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				// Every worker applies every match, in its own order and
				// batch size: all but one delivery must be duplicates.
				mine := slices.Clone(results)
				r := rand.New(rand.NewPCG(uint64(w), 9))
				r.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
				for i := 0; i < len(mine); {
					n := min(1+w, len(mine)-i)
					if _, err := s.Apply(ctx, mine[i:i+n]); err != nil {
						errs <- err
						return
					}
					i += n
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		ordered := inApplyOrder(t, ctx, s, results)
		checkStandings(t, ctx, s, pool, replay(t, s.policy, ordered))
		for p := range players {
			h, _, err := s.History(ctx, pool, fmt.Sprintf("p%d", p), "", matches)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range h {
				if e.Game != int64(len(h)-i) {
					t.Fatalf("p%d history entry %d is game %d, want %d", p, i, e.Game, len(h)-i)
				}
			}
		}
	})
}

func TestLeaderboard(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		s.policy.ProvisionalGames = 3
		s.policy.ProvisionalSigma = 100
		// a beats b beats c beats d, except the bot, which always wins.
		var results []ladder.Result
		for i := range 3 {
			results = append(results, result(t, fmt.Sprintf("g%d", i), pool, "a", "b", "c", "d"))
		}
		results = append(results, result(t, "x1", pool, "bot1", "e", "f", "g"))
		if _, err := s.Apply(ctx, results); err != nil {
			t.Fatal(err)
		}
		// e, f, g and bot1 have one game: provisional, not listed.
		var all []LeaderboardEntry
		cursor := ""
		for range 10 {
			page, err := s.Leaderboard(ctx, pool, Ranked, cursor, 1)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page.Entries...)
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		var got []string
		for i, e := range all {
			got = append(got, e.Player.ID)
			if e.Rank != int64(i+1) {
				t.Errorf("entry %s has rank %d, want %d", e.Player.ID, e.Rank, i+1)
			}
			if e.Display != ladder.Display(e.Player.Standing.Rating) {
				t.Errorf("entry %s shows %d, standing says %d", e.Player.ID, e.Display, ladder.Display(e.Player.Standing.Rating))
			}
			if e.Player.Name != "name-"+e.Player.ID {
				t.Errorf("entry %s has name %q", e.Player.ID, e.Player.Name)
			}
		}
		if want := []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
			t.Errorf("leaderboard = %v, want %v", got, want)
		}
		if _, err := s.Leaderboard(ctx, pool, Ranked, "x", 10); err == nil {
			t.Error("Leaderboard accepted a bad cursor")
		}
	})
}

// Equal display ratings: the player who reached the rating earlier ranks first.
func TestLeaderboardTies(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		s.policy.ProvisionalGames = 1
		s.policy.ProvisionalSigma = 100
		// Two disjoint groups with identical games: equal ratings.
		r1 := result(t, "m1", pool, "z1", "z2", "z3", "z4")
		r2 := result(t, "m2", pool, "a1", "a2", "a3", "a4")
		r2.FinishedAt = r1.FinishedAt
		if _, err := s.Apply(ctx, []ladder.Result{r1, r2}); err != nil {
			t.Fatal(err)
		}
		page, err := s.Leaderboard(ctx, pool, Ranked, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range page.Entries {
			got = append(got, e.Player.ID)
		}
		if want := []string{"z1", "a1", "z2", "a2", "z3", "a3", "z4", "a4"}; !slices.Equal(got, want) {
			t.Errorf("leaderboard = %v, want %v", got, want)
		}
	})
}

func TestHistoryPaging(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		var results []ladder.Result
		for i := range 7 {
			order := []string{"a", "b", "c", "d"}
			if i%2 == 1 {
				slices.Reverse(order)
			}
			results = append(results, result(t, fmt.Sprintf("m%d", i), pool, order...))
		}
		if _, err := s.Apply(ctx, results); err != nil {
			t.Fatal(err)
		}
		var games []int64
		var cursor string
		for range 10 {
			page, next, err := s.History(ctx, pool, "a", cursor, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				games = append(games, e.Game)
				if want := fmt.Sprintf("m%d", e.Game-1); e.MatchID != want {
					t.Errorf("game %d is match %s, want %s", e.Game, e.MatchID, want)
				}
			}
			// A new game arriving between pages must not disturb paging.
			if cursor == "" {
				if _, err := s.Apply(ctx, []ladder.Result{result(t, "m7", pool, "a", "b", "c", "d")}); err != nil {
					t.Fatal(err)
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if want := []int64{7, 6, 5, 4, 3, 2, 1}; !slices.Equal(games, want) {
			t.Errorf("games = %v, want %v", games, want)
		}
		h, _, err := s.History(ctx, pool, "nobody", "", 5)
		if err != nil || len(h) != 0 {
			t.Errorf("history of an unknown player = %v, %v", h, err)
		}
		// A cursor must be a record of this player's: another player's
		// record, a record that does not exist (within the history
		// retention: TestHistoryRetention has those past it) and a
		// malformed reference are all refused.
		_, bNext, err := s.History(ctx, pool, "b", "", 1)
		if err != nil || bNext == "" {
			t.Fatalf("first page of b: next %q, %v", bNext, err)
		}
		today := strconv.FormatInt(dayOf(t0), 10)
		for _, bad := range []string{today + ":2:m0", "1:x:m0", today + ":2:zz", "-3", "5:9:m0"} {
			if _, _, err := s.History(ctx, pool, "nobody", bad, 5); !errors.Is(err, ErrInvalidCursor) {
				t.Errorf("History(nobody, %q) = %v, want ErrInvalidCursor", bad, err)
			}
		}
		if _, _, err := s.History(ctx, pool, "nobody", bNext, 5); !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("History(nobody, b's cursor) = %v, want ErrInvalidCursor", err)
		}
	})
}

func TestPlayersUnknown(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		got, err := s.Players(t.Context(), pool, []string{"ghost"})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Known || got[0].Standing != s.policy.New() {
			t.Errorf("unknown player = %+v", got[0])
		}
	})
}

// A history bucket of the wrong type fails the script run before anything
// else is written: the markers and records it wrote are removed again, so
// none of its matches counts as applied, the other keys are untouched, and
// once the key is repaired every match applies exactly once.
func TestApplyFailingBucket(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, rdb redis.UniversalClient) {
		ctx := t.Context()
		k := newKeys(s.prefix, pool)
		m1 := result(t, "m1", pool, "ann", "bob", "cat", "dan")
		m2 := result(t, "m2", pool, "ann", "eve", "fay", "gus")
		broken := k.history(dayOf(m2.FinishedAt))
		if err := rdb.Set(ctx, broken, "not a hash", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Apply(ctx, []ladder.Result{m1, m2}); err == nil {
			t.Fatal("Apply succeeded with a broken history bucket")
		}
		for _, m := range []string{"m1", "m2"} {
			if _, ok, err := s.Applied(ctx, pool, m); err != nil || ok {
				t.Fatalf("%s applied = %v, %v after the failed run; want not applied", m, ok, err)
			}
		}
		if n, err := rdb.Exists(ctx, k.seq(), k.leaderboard()).Result(); err != nil || n != 0 {
			t.Fatalf("%d of sequence counter and leaderboard exist after the failed run (%v), want none", n, err)
		}
		if got, err := s.Players(ctx, pool, []string{"ann"}); err != nil || got[0].Known {
			t.Fatalf("ann after the failed run = %+v, %v; want unknown", got, err)
		}
		if err := rdb.Del(ctx, broken).Err(); err != nil {
			t.Fatal(err)
		}
		out, err := s.Apply(ctx, []ladder.Result{m1, m2, m1})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Status != Applied || out[1].Status != Applied || out[2].Status != Duplicate {
			t.Errorf("after the repair: %v %v %v, want Applied Applied Duplicate", out[0].Status, out[1].Status, out[2].Status)
		}
		ann, err := s.Players(ctx, pool, []string{"ann"})
		if err != nil {
			t.Fatal(err)
		}
		if ann[0].Standing.Games != 2 {
			t.Errorf("ann played %d games, want 2 (m1 and m2 once each)", ann[0].Standing.Games)
		}
		h, _, err := s.History(ctx, pool, "ann", "", 5)
		if err != nil || len(h) != 2 || h[0].MatchID != "m2" || h[1].MatchID != "m1" {
			t.Errorf("history of ann = %+v, %v; want m2, m1", h, err)
		}
	})
}

// A batch larger than one script run is split into several runs (one
// pipeline); the matches of a later run build on those of the earlier ones
// and all are applied in batch order.
func TestApplyLargeBatch(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, rdb redis.UniversalClient) {
		ctx := t.Context()
		// Every run then meets NOSCRIPT first and is sent whole.
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		ids := []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "bot0"}
		n := 2*maxScriptMatches + 77
		var results []ladder.Result
		for i := range n {
			pick := rng.Perm(len(ids))[:4]
			order := make([]string, 4)
			for j, k := range pick {
				order[j] = ids[k]
			}
			pl := pool
			if i%5 == 0 {
				pl = "chesscom-ffa"
			}
			results = append(results, result(t, fmt.Sprintf("m%04d", i), pl, order...))
		}
		// A redelivery inside the batch, in a later run than the original.
		batch := append(slices.Clone(results), results[3])
		out, err := s.Apply(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range out[:n] {
			if o.Status != Applied {
				t.Fatalf("match %s: status %v, want Applied", results[i].MatchID, o.Status)
			}
		}
		if out[n].Status != Duplicate {
			t.Errorf("redelivered match: status %v, want Duplicate", out[n].Status)
		}
		checkAppliedInOrder(t, ctx, s, results, pool, "chesscom-ffa")
	})
}

// resultAt is result with the given finish time.
func resultAt(t testing.TB, match string, at time.Time, order ...string) ladder.Result {
	t.Helper()
	res := result(t, match, pool, order...)
	res.FinishedAt = at
	return res
}

// The applied markers cover a window of event time: inside it a
// redelivery changes nothing; a match that finished more than the
// retention before the pool's newest applied match is Expired and changes
// nothing either; the marker buckets the window has left behind are gone.
func TestMarkerWindow(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, rdb redis.UniversalClient) {
		ctx := t.Context()
		keep := s.MarkerRetention()
		k := newKeys(s.prefix, pool)
		start := t0.Truncate(day)
		old := resultAt(t, "old", start.Add(time.Hour), "ann", "bob", "cat", "dan")
		if out, err := s.Apply(ctx, []ladder.Result{old}); err != nil || out[0].Status != Applied {
			t.Fatalf("first match: %+v, %v", out, err)
		}
		// Matches of every later day, up to a retention and three days
		// past the first: the watermark moves on day by day.
		var later []ladder.Result
		for d := 1; d <= int(keep/day)+3; d++ {
			later = append(later, resultAt(t, fmt.Sprintf("day%02d", d), start.Add(time.Duration(d)*day+time.Hour), "eve", "fay", "gus", "hal"))
		}
		for i, res := range later {
			if i == 1 {
				// Still inside the window: a redelivery is a duplicate.
				out, err := s.Apply(ctx, []ladder.Result{old})
				if err != nil || out[0].Status != Duplicate {
					t.Fatalf("redelivery inside the window: %+v, %v; want Duplicate", out, err)
				}
			}
			if out, err := s.Apply(ctx, []ladder.Result{res}); err != nil || out[0].Status != Applied {
				t.Fatalf("match %s: %+v, %v", res.MatchID, out, err)
			}
		}
		newest := later[len(later)-1].FinishedAt
		before, err := s.Players(ctx, pool, []string{"ann", "bob", "cat", "dan"})
		if err != nil {
			t.Fatal(err)
		}

		// Out of the window: expired, whether applied before or not.
		stale := resultAt(t, "stale", newest.Add(-keep-time.Minute), "ann", "bob", "cat", "dan")
		out, err := s.Apply(ctx, []ladder.Result{old, stale})
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range out {
			if o.Status != Expired {
				t.Errorf("match %d beyond the window: %v, want Expired", i, o.Status)
			}
		}
		after, err := s.Players(ctx, pool, []string{"ann", "bob", "cat", "dan"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after, cmp.AllowUnexported(Player{})); diff != "" {
			t.Errorf("expired matches changed standings (-before +after):\n%s", diff)
		}
		if _, ok, err := s.Applied(ctx, pool, "stale"); err != nil || ok {
			t.Errorf("stale match marked applied: %v, %v", ok, err)
		}

		// Late but inside the window (out of order): applied once.
		late := resultAt(t, "late", newest.Add(-keep+time.Hour), "ann", "bob", "cat", "dan")
		for i, want := range []Status{Applied, Duplicate} {
			out, err := s.Apply(ctx, []ladder.Result{late})
			if err != nil || out[0].Status != want {
				t.Fatalf("late match, delivery %d: %+v, %v; want %v", i+1, out, err, want)
			}
		}

		// Only the buckets the window still needs exist.
		first := dayOf(newest.Add(-keep))
		for d := dayOf(start); d <= dayOf(newest); d++ {
			n, err := rdb.Exists(ctx, k.bucket(d)).Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := d >= first; (n == 1) != want {
				t.Errorf("marker bucket of day %d (window from day %d): exists %v, want %v", d-dayOf(start), first-dayOf(start), n == 1, want)
			}
		}
	})
}

// Within one batch, a match that advances the watermark makes an earlier
// match of the batch that is older than the window expire too.
func TestMarkerWindowWithinBatch(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		keep := s.MarkerRetention()
		recent := resultAt(t, "recent", t0.Add(keep+time.Hour), "ann", "bob", "cat", "dan")
		ancient := resultAt(t, "ancient", t0, "eve", "fay", "gus", "hal")
		out, err := s.Apply(ctx, []ladder.Result{recent, ancient})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Status != Applied || out[1].Status != Expired {
			t.Errorf("statuses %v, %v; want Applied, Expired", out[0].Status, out[1].Status)
		}
		players, err := s.Players(ctx, pool, []string{"eve"})
		if err != nil {
			t.Fatal(err)
		}
		if players[0].Known {
			t.Errorf("expired match rated eve: %+v", players[0])
		}
	})
}

// checkAppliedInOrder checks, per pool, that the store applied the pool's
// results in their order and that its standings equal a sequential replay
// of them.
func checkAppliedInOrder(t testing.TB, ctx context.Context, s *Store, results []ladder.Result, pools ...string) {
	t.Helper()
	for _, pl := range pools {
		var mine []ladder.Result
		for _, r := range results {
			if r.Pool == pl {
				mine = append(mine, r)
			}
		}
		ordered := inApplyOrder(t, ctx, s, mine)
		for i := range ordered {
			if ordered[i].MatchID != mine[i].MatchID {
				t.Fatalf("pool %s: apply order %s at %d, want %s", pl, ordered[i].MatchID, i, mine[i].MatchID)
			}
		}
		checkStandings(t, ctx, s, pl, replay(t, s.policy, mine))
	}
}

// History records are deleted a history retention after their day (in
// event time), the walk ends quietly where they are gone, and the first
// watermark of a pool also deletes the buckets of its own old matches.
func TestHistoryRetention(t *testing.T) {
	t.Parallel()
	const days = 10
	for _, b := range backends() {
		for _, keepHistory := range []time.Duration{4 * day, 0} {
			t.Run(fmt.Sprintf("%s/history=%v", b.name, keepHistory), func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				rdb := b.client(t)
				s := New(rdb, ladder.DefaultPolicy(), Config{Prefix: redistest.Prefix(t), Retention: Retention{Markers: 2 * day, History: keepHistory}})
				k := newKeys(s.prefix, pool)
				start := t0.Truncate(day)
				// One match a day; zed plays only the first.
				for d := range days {
					last := "dan"
					if d == 0 {
						last = "zed"
					}
					res := resultAt(t, fmt.Sprintf("h%02d", d), start.Add(time.Duration(d)*day+time.Hour), "ann", "bob", "cat", last)
					if out, err := s.Apply(ctx, []ladder.Result{res}); err != nil || out[0].Status != Applied {
						t.Fatalf("match of day %d: %+v, %v", d, out, err)
					}
				}
				// The watermark is day 9 + 1h: with 4 days, days 0 to 4 are gone.
				kept := days
				if keepHistory > 0 {
					kept = 5
				}
				for d := range days {
					n, err := rdb.Exists(ctx, k.history(dayOf(start)+int64(d))).Result()
					if err != nil {
						t.Fatal(err)
					}
					if want := d >= days-kept; (n == 1) != want {
						t.Errorf("history bucket of day %d: exists %v, want %v", d, n == 1, want)
					}
				}

				// Paging by two stops at the last record kept.
				var got []string
				cursor := ""
				for page := 0; ; page++ {
					entries, next, err := s.History(ctx, pool, "ann", cursor, 2)
					if err != nil {
						t.Fatalf("page %d: %v", page, err)
					}
					for _, e := range entries {
						got = append(got, e.MatchID)
					}
					if next == "" {
						break
					}
					if page > days {
						t.Fatalf("history does not end: %v", got)
					}
					cursor = next
				}
				var want []string
				for d := days - 1; d >= days-kept; d-- {
					want = append(want, fmt.Sprintf("h%02d", d))
				}
				if !slices.Equal(got, want) {
					t.Errorf("ann's history = %v, want %v", got, want)
				}

				// zed's only record, and a cursor to any record of day 3.
				wantZed := 1
				if keepHistory > 0 {
					wantZed = 0
				}
				if zed, next, err := s.History(ctx, pool, "zed", "", 10); err != nil || len(zed) != wantZed || next != "" {
					t.Errorf("zed's history = %v, next %q, %v; want %d entries", zed, next, err, wantZed)
				}
				old, next, err := s.History(ctx, pool, "ann", recordRef(dayOf(start)+3, "h03"), 10)
				if keepHistory > 0 && (err != nil || len(old) != 0 || next != "") {
					t.Errorf("cursor past the retention: %v, next %q, %v; want an empty last page", old, next, err)
				}
				if keepHistory == 0 && (err != nil || len(old) != 4 || next != "") {
					t.Errorf("cursor to day 3, records kept for good: %v, next %q, %v; want 4 entries", old, next, err)
				}
				if _, _, err := s.History(ctx, pool, "ann", recordRef(dayOf(start)+7, "h03"), 10); !errors.Is(err, ErrInvalidCursor) {
					t.Errorf("cursor to a record that never existed within the retention: %v, want ErrInvalidCursor", err)
				}
			})
		}
	}
}

// The pool's first script run deletes the marker buckets of its own
// matches that the first watermark leaves behind.
func TestFirstWatermarkDropsOldBuckets(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, rdb redis.UniversalClient) {
		ctx := t.Context()
		k := newKeys(s.prefix, pool)
		start := t0.Truncate(day)
		keep := s.MarkerRetention()
		old := resultAt(t, "old", start.Add(time.Hour), "ann", "bob", "cat", "dan")
		recent := resultAt(t, "recent", start.Add(keep+day+time.Hour), "eve", "fay", "gus", "hal")
		if out, err := s.Apply(ctx, []ladder.Result{old, recent}); err != nil || out[0].Status != Applied || out[1].Status != Applied {
			t.Fatalf("first batch: %+v, %v", out, err)
		}
		for _, c := range []struct {
			day  int64
			want int64
		}{{dayOf(old.FinishedAt), 0}, {dayOf(recent.FinishedAt), 1}} {
			if n, err := rdb.Exists(ctx, k.bucket(c.day)).Result(); err != nil || n != c.want {
				t.Errorf("marker bucket of day %d: exists %d, %v; want %d", c.day-dayOf(start), n, err, c.want)
			}
		}
	})
}

// With WaitReplicas, an apply step counts only once the replicas confirmed
// it: on the cluster (a replica per master) matches are Applied and then
// Duplicate; on the standalone server (no replica) they are written but
// stay Pending with ErrNotReplicated, and so does their redelivery.
func TestApplyWaitsForReplicas(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			rdb := b.client(t)
			cfg := DefaultConfig()
			cfg.Prefix, cfg.WaitReplicas, cfg.WaitTimeout = redistest.Prefix(t), 1, 2*time.Second
			_, standalone := rdb.(*redis.Client)
			if standalone {
				cfg.WaitTimeout = 50 * time.Millisecond
			}
			s := New(rdb, ladder.DefaultPolicy(), cfg)
			res := []ladder.Result{result(t, "w1", pool, "ann", "bob", "cat", "dan"), result(t, "w2", pool, "bob", "ann", "dan", "cat")}
			// The first step meets NOSCRIPT on the master: its runs go
			// again as EVAL, followed by another WAIT.
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			for i, want := range []Status{Applied, Duplicate} {
				out, err := s.Apply(ctx, res)
				if standalone {
					want = Pending
					if !errors.Is(err, ErrNotReplicated) {
						t.Errorf("delivery %d without a replica: %v, want ErrNotReplicated", i+1, err)
					}
				} else if err != nil {
					t.Fatalf("delivery %d: %v", i+1, err)
				}
				for j, o := range out {
					if o.Status != want {
						t.Errorf("delivery %d, match %d: %v, want %v", i+1, j, o.Status, want)
					}
				}
			}
			// Written all the same (only unconfirmed), exactly once.
			checkStandings(t, ctx, s, pool, replay(t, s.policy, res))
		})
	}
}

// The master holding the pool is killed between apply steps and its
// replica takes over: with WaitReplicas the store recovers without a
// restart, and every match it reported applied is there afterwards, once.
func TestApplyFailoverWithWait(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and fails over a private cluster")
	}
	t.Parallel()
	lc := redistest.NewCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cfg := DefaultConfig()
	cfg.Prefix, cfg.WaitReplicas, cfg.WaitTimeout = redistest.Prefix(t), 1, 300*time.Millisecond
	s := New(lc.Client(t), ladder.DefaultPolicy(), cfg)
	rng := rand.New(rand.NewPCG(5, 5))
	var all []ladder.Result
	failures := 0
	for batch := 0; batch < 30 && ctx.Err() == nil; batch++ {
		if batch == 10 {
			// With WAIT 1 the promoted master needs a replica before it
			// confirms anything: the killed node rejoins as one.
			addr := lc.KillMasterOf(t, newKeys(s.prefix, pool).standings())
			lc.Restart(t, addr)
		}
		var res []ladder.Result
		for m := range 4 {
			order := rng.Perm(12)[:4]
			ids := make([]string, 4)
			for i, p := range order {
				ids[i] = fmt.Sprintf("p%02d", p)
			}
			res = append(res, result(t, fmt.Sprintf("f%02d-%d", batch, m), pool, ids...))
		}
		// Until confirmed: a step that failed may or may not have been
		// written; repeating it is safe.
		for {
			out, err := s.Apply(ctx, res)
			if err == nil {
				for i, o := range out {
					if o.Status != Applied && o.Status != Duplicate {
						t.Fatalf("batch %d match %d: %v without an error", batch, i, o.Status)
					}
				}
				break
			}
			if failures++; failures > 200 || ctx.Err() != nil {
				t.Fatalf("batch %d: still failing after %d errors: %v", batch, failures, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		all = append(all, res...)
	}
	t.Logf("%d matches applied, %d failed attempts around the failover", len(all), failures)
	checkStandings(t, ctx, s, pool, replay(t, s.policy, all))
	for _, r := range all {
		if _, ok, err := s.Applied(ctx, pool, r.MatchID); err != nil || !ok {
			t.Errorf("match %s confirmed but not marked applied: %v, %v", r.MatchID, ok, err)
		}
	}
}
