package match

import (
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestOutageBookOnMove: the outage a move of match "m" in partition 1
// carries, from what failed moves and the keeper's scans showed.
func TestOutageBookOnMove(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_000_000)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	note := func(from, last, to time.Duration) store.OutageNote {
		n := store.NewOutageNote(at(from), at(last), time.Time{})
		if to != 0 {
			n.To = at(to)
		}
		return n
	}
	notMine := func(int) bool { return false }
	tests := []struct {
		name  string
		setup func(b *outageBook)
		now   time.Duration
		want  *window
	}{
		{name: "nothing known", setup: func(*outageBook) {}, now: time.Second},
		{name: "failed moves, not ended: the commit ends it", now: 2 * time.Second,
			setup: func(b *outageBook) { b.failing(1, at(0)); b.failing(1, at(time.Second)) },
			want:  &window{at(0), at(2 * time.Second), at(time.Second)}},
		{name: "too short to credit", now: 300 * time.Millisecond,
			setup: func(b *outageBook) { b.failing(1, at(0)) }},
		{name: "last failed move long ago: down until then only", now: time.Minute,
			setup: func(b *outageBook) { b.failing(1, at(0)); b.failing(1, at(2*time.Second)) },
			want:  &window{at(0), at(2 * time.Second), at(2 * time.Second)}},
		{name: "kept partition: from the keeper's last read", now: 2 * time.Second,
			setup: func(b *outageBook) {
				b.parts[1] = &partState{ok: at(-100 * time.Millisecond), kept: true}
				b.failing(1, at(0))
			},
			want: &window{at(-100 * time.Millisecond), at(2 * time.Second), at(0)}},
		{name: "ended by another match's commit, not credited yet", now: 3 * time.Second,
			setup: func(b *outageBook) { b.failing(1, at(0)); b.served(1, "other", at(time.Second)) },
			want:  &window{at(0), at(time.Second), at(0)}},
		{name: "ended, and the keeper listed the others: nothing pending for the match", now: 3 * time.Second,
			setup: func(b *outageBook) {
				b.failing(1, at(0))
				b.served(1, "m", at(time.Second))
				b.parts[1].resolved = nil // the keeper listed the others
			}},
		{name: "a keeper's note, outage not ended: the commit ends it", now: 2 * time.Second,
			setup: func(b *outageBook) { b.learn(map[int]store.OutageNote{1: note(0, time.Second, 0)}, notMine) },
			want:  &window{at(0), at(2 * time.Second), at(time.Second)}},
		{name: "a keeper's note, outage ended", now: 3 * time.Second,
			setup: func(b *outageBook) {
				b.learn(map[int]store.OutageNote{1: note(0, time.Second, 1500*time.Millisecond)}, notMine)
			},
			want: &window{at(0), at(1500 * time.Millisecond), at(time.Second)}},
		{name: "a keeper's note read again after a commit ended the outage: not failing again", now: 3 * time.Second,
			setup: func(b *outageBook) {
				n := map[int]store.OutageNote{1: note(0, time.Second, 0)}
				b.learn(n, notMine)
				b.served(1, "other", at(2*time.Second))
				b.learn(n, notMine)
			},
			want: &window{at(0), at(2 * time.Second), at(time.Second)}},
		{name: "a keeper's note gone: every credit committed", now: 2 * time.Second,
			setup: func(b *outageBook) {
				b.learn(map[int]store.OutageNote{1: note(0, time.Second, 0)}, notMine)
				b.learn(nil, notMine)
			}},
		{name: "another partition", now: 2 * time.Second,
			setup: func(b *outageBook) { b.failing(2, at(0)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newOutageBook()
			tt.setup(b)
			w, ok := b.onMove(1, "m", at(tt.now))
			switch {
			case tt.want == nil && ok:
				t.Errorf("outage %v, want none", w)
			case tt.want != nil && (!ok || w != *tt.want):
				t.Errorf("outage %v (%v), want %v", w, ok, *tt.want)
			}
		})
	}
}
