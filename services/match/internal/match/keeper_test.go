package match

import (
	"slices"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestShare: the ranges are split as evenly as the member count allows,
// the shares add up to the number of ranges (none free, none wanted
// twice), and a member missing from the list (its announcement expired)
// aims at nothing.
func TestShare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ranges  int
		members []string
		want    []int // per member, in order
	}{
		{16, []string{"a"}, []int{16}},
		{16, []string{"a", "b"}, []int{8, 8}},
		{16, []string{"a", "b", "c"}, []int{6, 5, 5}},
		{16, []string{"a", "b", "c", "d", "e"}, []int{4, 3, 3, 3, 3}},
		{16, []string{"a", "b", "c", "d", "e", "f", "g"}, []int{3, 3, 2, 2, 2, 2, 2}},
		{16, []string{"m01", "m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11", "m12", "m13", "m14", "m15", "m16", "m17", "m18"},
			[]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}},
		{5, []string{"a", "b", "c"}, []int{2, 2, 1}},
	}
	for _, tt := range tests {
		var got []int
		sum := 0
		for _, m := range tt.members {
			n := share(tt.ranges, tt.members, m)
			got = append(got, n)
			sum += n
		}
		if !slices.Equal(got, tt.want) || sum != tt.ranges {
			t.Errorf("share(%d ranges, %d members) = %v (sum %d), want %v", tt.ranges, len(tt.members), got, sum, tt.want)
		}
	}
	if n := share(16, []string{"a", "c"}, "b"); n != 0 {
		t.Errorf("share of a non-member = %d, want 0", n)
	}
}

// TestFreeRanges: only free ranges are offered, each once, starting at a
// place that differs between members.
func TestFreeRanges(t *testing.T) {
	t.Parallel()
	m := store.Membership{Members: []string{"a", "b"}}
	m.Leases[3], m.Leases[9] = "1:a", "2:b"
	for _, owner := range m.Members {
		got := freeRanges(m, owner)
		sorted := slices.Sorted(slices.Values(got))
		if len(got) != store.KeeperRanges-2 || slices.Contains(got, 3) || slices.Contains(got, 9) || len(slices.Compact(sorted)) != len(got) {
			t.Errorf("freeRanges for %s = %v: want every range but 3 and 9, once", owner, got)
		}
	}
	if a, b := freeRanges(m, "a")[0], freeRanges(m, "b")[0]; a == b {
		t.Errorf("both members start at range %d", a)
	}
}
