package main

import (
	"testing"

	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// TestPremoveLine: the board shows a queue's moves, or why it was dropped
// when the player must act, and nothing otherwise.
func TestPremoveLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		q    *matchv1.PremoveQueue
		want string
	}{
		{nil, ""},
		{&matchv1.PremoveQueue{Moves: []string{"m4-l4", "m5-l5"}, Change: matchv1.PremoveChange_PREMOVE_CHANGE_SET}, "premoves queued: m4-l4 m5-l5"},
		{&matchv1.PremoveQueue{Moves: []string{"m5-l5"}, Change: matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED, Move: "m4-l4"}, "premoves queued: m5-l5"},
		{&matchv1.PremoveQueue{Change: matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED, Move: "m4-l4"}, ""},
		{&matchv1.PremoveQueue{Change: matchv1.PremoveChange_PREMOVE_CHANGE_ILLEGAL, Move: "m4-l4"}, "your premove m4-l4 was not legal when your turn came: premoves dropped"},
		{&matchv1.PremoveQueue{Change: matchv1.PremoveChange_PREMOVE_CHANGE_NO_TIME}, "too little time left to play a premove: premoves dropped"},
		{&matchv1.PremoveQueue{Change: matchv1.PremoveChange_PREMOVE_CHANGE_CLEARED}, ""},
	} {
		if got := premoveLine(c.q); got != c.want {
			t.Errorf("premoveLine(%v) = %q, want %q", c.q, got, c.want)
		}
	}
}
