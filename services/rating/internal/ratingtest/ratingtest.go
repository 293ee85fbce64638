// Package ratingtest holds checks shared by the rating service's tests.
package ratingtest

import (
	"slices"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// CheckReplay checks that st applied every match exactly once, under the
// sequence numbers 1 to len(matches) of their pool (all matches must be of
// one pool), and that the stored standings equal a sequential replay of
// the matches in that order.
func CheckReplay(t testing.TB, st *store.Store, policy ladder.Policy, matches []ladder.Result) {
	t.Helper()
	if len(matches) == 0 {
		return
	}
	ctx := t.Context()
	pool := matches[0].Pool
	seqs := map[string]int64{}
	for _, r := range matches {
		seq, ok, err := st.Applied(ctx, r.Pool, r.MatchID)
		if err != nil || !ok {
			t.Fatalf("match %s: applied %v, err %v", r.MatchID, ok, err)
		}
		seqs[r.MatchID] = seq
	}
	ordered := slices.Clone(matches)
	slices.SortFunc(ordered, func(a, b ladder.Result) int { return int(seqs[a.MatchID] - seqs[b.MatchID]) })
	for i, r := range ordered {
		if seqs[r.MatchID] != int64(i+1) {
			t.Fatalf("sequence numbers are not 1..%d: %s has %d at position %d", len(ordered), r.MatchID, seqs[r.MatchID], i)
		}
	}
	want, err := policy.Replay(ordered)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	got, err := st.Players(ctx, pool, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		w := want[ids[i]]
		if p.Standing.Rating != w.Rating || p.Standing.Games != w.Games || p.Standing.Version != w.Version {
			t.Errorf("player %s: stored %+v, replay %+v", ids[i], p.Standing, w)
		}
	}
}
