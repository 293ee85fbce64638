package match

import (
	"errors"
	"slices"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
)

// TestWatchEndsWhenDropped: once the hub drops a watcher (its buffer
// overflowed while a send to its client was blocked), the stream sends
// nothing more and ends with ErrSlowConsumer, even when what it still holds
// would take it to the end of the match (it ended with OK, and a dropped
// watcher kept reading the store to catch up).
func TestWatchEndsWhenDropped(t *testing.T) {
	t.Parallel()
	// One change: a move and the end of the match.
	change := &fanout.Item{Events: []fanout.Event{
		{Version: 2, Ply: 1, Kind: fanout.KindMoveApplied},
		{Version: 3, Ply: 1, Kind: fanout.KindGameOver},
	}}
	tests := []struct {
		name string
		// dropDuring is the version whose send is blocked while the hub
		// drops the watcher (0: dropped before the stream takes the item).
		dropDuring uint64
		sent       []uint64
	}{
		{"dropped while a send is blocked", 2, []uint64{2}},
		{"dropped with an item still buffered", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lost := make(chan struct{})
			if tt.dropDuring == 0 {
				close(lost)
			}
			var sent []uint64
			ws := &watchState{svc: &Service{}, id: "m", last: 1, lost: lost, send: func(it WatchItem) error {
				sent = append(sent, it.Version)
				if it.Version == tt.dropDuring {
					close(lost) // the send returns only after the drop
				}
				return nil
			}}
			items := make(chan *fanout.Item, 1)
			items <- change
			err := ws.follow(t.Context(), items, nil)
			if !errors.Is(err, ErrSlowConsumer) {
				t.Errorf("follow = %v, want ErrSlowConsumer", err)
			}
			if !slices.Equal(sent, tt.sent) {
				t.Errorf("sent versions %v, want %v", sent, tt.sent)
			}
		})
	}
}
