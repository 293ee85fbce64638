package store

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

// renamed returns results with player from renamed to to, as the store
// must rate them once from is linked to to.
func renamed(results []ladder.Result, from, to string) []ladder.Result {
	out := slices.Clone(results)
	for i := range out {
		for p := range out[i].Places {
			if out[i].Places[p].PlayerID == from {
				out[i].Places[p].PlayerID = to
			}
		}
	}
	return out
}

func matchIDs(h []HistoryEntry) []string {
	var ids []string
	for _, e := range h {
		ids = append(ids, e.MatchID)
	}
	return ids
}

// leaderboardIDs returns the players of both sections of pool's
// leaderboard.
func leaderboardIDs(t *testing.T, s *Store, pool string) []string {
	t.Helper()
	var ids []string
	for _, sec := range []Section{Ranked, Provisional} {
		page, err := s.Leaderboard(t.Context(), pool, sec, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			ids = append(ids, e.Player.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestLinkMovesTheGuestOnce links a guest with three rated games to an
// account without any: the standing, the history, the leaderboard entry
// and the other players' co-players move to the account; a redelivered
// link changes nothing; a match of the guest that finishes after the link
// counts for the account, exactly as if the account had played all four.
func TestLinkMovesTheGuestOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		s.policy.ProvisionalGames, s.policy.ProvisionalSigma = 2, 100
		var results []ladder.Result
		for i := range 3 {
			results = append(results, result(t, fmt.Sprintf("before-%d", i), pool, "g-guest", "bob", "cat", "dan"))
		}
		if _, err := s.Apply(ctx, results); err != nil {
			t.Fatal(err)
		}
		before, _, err := s.History(ctx, pool, "g-guest", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		pools := []string{pool, "chesscom-ffa"}
		link := Link{Guest: "g-guest", Account: "o-acct", AccountName: "Account"}
		got, err := s.Link(ctx, pools, link)
		if err != nil {
			t.Fatal(err)
		}
		if want := []LinkOutcome{LinkedMoved, LinkedNothing}; !slices.Equal(got, want) {
			t.Fatalf("Link = %v, want %v", got, want)
		}
		for range 2 { // redelivered
			if got, err := s.Link(ctx, pools, link); err != nil || !slices.Equal(got, []LinkOutcome{LinkedBefore, LinkedBefore}) {
				t.Fatalf("Link again = %v, %v; want LinkedBefore in both pools", got, err)
			}
		}
		checkStandings(t, ctx, s, pool, replay(t, s.policy, renamed(results, "g-guest", "o-acct")))
		players, err := s.Players(ctx, pool, []string{"o-acct", "g-guest"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range players {
			if p.ID != "o-acct" || p.Name != "Account" || p.Standing.Games != 3 {
				t.Errorf("Players read %+v, want the account with the guest's 3 games", p)
			}
		}
		after, _, err := s.History(ctx, pool, "o-acct", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(matchIDs(after), matchIDs(before)) || len(after) != 3 {
			t.Errorf("account's history %v, want the guest's %v", matchIDs(after), matchIDs(before))
		}
		if ids := leaderboardIDs(t, s, pool); slices.Contains(ids, "g-guest") || !slices.Contains(ids, "o-acct") {
			t.Errorf("leaderboard %v, want the account instead of the guest", ids)
		}
		bob, err := s.Players(ctx, pool, []string{"bob"})
		if err != nil {
			t.Fatal(err)
		}
		recent, err := s.Recent(ctx, pool, bob, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range recent[0] {
			if !slices.Contains(m.CoPlayers, "o-acct") || slices.Contains(m.CoPlayers, "g-guest") {
				t.Errorf("bob's co-players in %s: %v, want the account", m.MatchID, m.CoPlayers)
			}
		}

		// The guest's token still works until it expires: its next match
		// counts for the account.
		late := result(t, "after-link", pool, "bob", "g-guest", "cat", "dan")
		out, err := s.Apply(ctx, []ladder.Result{late})
		if err != nil || out[0].Status != Applied {
			t.Fatalf("Apply after the link = %+v, %v", out, err)
		}
		all := renamed(append(results, late), "g-guest", "o-acct")
		checkStandings(t, ctx, s, pool, replay(t, s.policy, all))
		if got, err := s.Link(ctx, pools, link); err != nil || got[0] != LinkedBefore {
			t.Fatalf("Link redelivered after a match = %v, %v", got, err)
		}
		checkStandings(t, ctx, s, pool, replay(t, s.policy, all))
		if h, _, err := s.History(ctx, pool, "g-guest", "", 10); err != nil || len(h) != 4 || h[0].MatchID != "after-link" {
			t.Errorf("history read by the guest's id = %v, %v; want the account's 4 games", matchIDs(h), err)
		}

		// The guest and its account in one match: one player, two seats.
		out, err = s.Apply(ctx, []ladder.Result{result(t, "both-seats", pool, "o-acct", "g-guest", "cat", "dan")})
		if err != nil || out[0].Status != Unratable {
			t.Fatalf("a match of the guest and its account = %+v, %v; want Unratable", out, err)
		}
		checkStandings(t, ctx, s, pool, replay(t, s.policy, all))
	})
}

// TestLinkAccountKeepsItsRating links a rated guest to an account rated
// in the same pool: the account keeps its own rating, the guest leaves
// the leaderboard and reads as the account.
func TestLinkAccountKeepsItsRating(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		s.policy.ProvisionalGames, s.policy.ProvisionalSigma = 1, 100
		results := []ladder.Result{
			result(t, "m-1", pool, "g-guest", "bob", "cat", "dan"),
			result(t, "m-22", pool, "bob", "cat", "dan", "o-acct"),
		}
		if _, err := s.Apply(ctx, results); err != nil {
			t.Fatal(err)
		}
		want := replay(t, s.policy, results)
		got, err := s.Link(ctx, []string{pool}, Link{Guest: "g-guest", Account: "o-acct", AccountName: "Account"})
		if err != nil || got[0] != LinkedKept {
			t.Fatalf("Link = %v, %v; want LinkedKept", got, err)
		}
		delete(want, "g-guest")
		checkStandings(t, ctx, s, pool, want)
		p, err := s.Players(ctx, pool, []string{"g-guest"})
		if err != nil || p[0].ID != "o-acct" || p[0].Standing.Games != 1 {
			t.Fatalf("the guest reads as %+v, %v; want the account's own standing", p, err)
		}
		if ids := leaderboardIDs(t, s, pool); slices.Contains(ids, "g-guest") || !slices.Contains(ids, "o-acct") {
			t.Errorf("leaderboard %v, want the account and not the guest", ids)
		}
	})
}

// TestLinkDuringMatches links a guest while its matches are being
// applied: whichever side wins each race, every match counts exactly
// once, and the account ends with the rating of all of them in apply
// order.
func TestLinkDuringMatches(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s *Store, _ redis.UniversalClient) {
		ctx := t.Context()
		var results []ladder.Result
		for i := range 12 {
			results = append(results, result(t, fmt.Sprintf("race-%02d", i), pool, "bob", "g-guest", "cat", "dan"))
		}
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		wg.Go(func() {
			for _, r := range results {
				if _, err := s.Apply(ctx, []ladder.Result{r}); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range 3 {
				if _, err := s.Link(ctx, []string{pool}, Link{Guest: "g-guest", Account: "o-acct", AccountName: "Account"}); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		all := renamed(results, "g-guest", "o-acct")
		checkStandings(t, ctx, s, pool, replay(t, s.policy, inApplyOrder(t, ctx, s, all)))
		h, _, err := s.History(ctx, pool, "o-acct", "", 20)
		if err != nil || len(h) != len(results) {
			t.Fatalf("account's history: %d entries, %v; want %d", len(h), err, len(results))
		}
	})
}
