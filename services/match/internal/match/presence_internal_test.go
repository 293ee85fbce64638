package match

import (
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
)

func TestDisconnectGrace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tc    string
		moved bool
		want  time.Duration
	}{
		{"1+0", true, 15 * time.Second}, // E = 60 s: a fifth, under the floor of a quarter
		{"2+0", true, 24 * time.Second},
		{"3+0", true, 36 * time.Second},
		{"1+2", true, 28 * time.Second}, // E = 60 + 80 s
		{"5+0", true, time.Minute},
		{"10+5", true, time.Minute},
		{"10+5", false, 30 * time.Second},
		{"1+0", false, 7500 * time.Millisecond},
	}
	for _, tt := range tests {
		tc, err := timecontrol.Parse(tt.tc)
		if err != nil {
			t.Fatal(err)
		}
		if got := disconnectGrace(time.Minute, tc, tt.moved); got != tt.want {
			t.Errorf("%s (moved %v): grace %v, want %v", tt.tc, tt.moved, got, tt.want)
		}
	}
}

// TestPresenceHold: the streams of a seat are counted, a match is touched
// at once when a seat opens its first stream, and forgotten when its last
// stream closes.
func TestPresenceHold(t *testing.T) {
	t.Parallel()
	p := newPresence()
	r1 := p.hold("m", []rules.Seat{0})
	if got := p.touches(false); len(got) != 1 || got[0].ID != "m" || len(got[0].Seats) != 1 || got[0].Seats[0] != 0 {
		t.Fatalf("first stream: touches %v, want m seat 0", got)
	}
	r2 := p.hold("m", []rules.Seat{0})
	if got := p.touches(false); len(got) != 0 {
		t.Errorf("second stream of the same seat: touches %v, want none until the round", got)
	}
	r1()
	if got := p.touches(true); len(got) != 1 {
		t.Errorf("one stream left: touches %v, want m", got)
	}
	r2()
	if got := p.touches(true); len(got) != 0 || len(p.open) != 0 {
		t.Errorf("all closed: touches %v, open %v; want none", got, p.open)
	}
}

// TestPresenceTouchesAShortStream: a stream that closed before the first
// touch (a player moved and dropped within milliseconds) is still touched
// once, so its lease exists and the keeper can show the seat disconnected;
// the next round forgets it.
func TestPresenceTouchesAShortStream(t *testing.T) {
	t.Parallel()
	p := newPresence()
	p.hold("m", []rules.Seat{1})()
	keep := p.hold("n", []rules.Seat{2})
	defer keep()
	got := p.touches(false)
	if len(got) != 2 {
		t.Fatalf("touches %v, want m seat 1 and n seat 2", got)
	}
	for _, tc := range got {
		want := map[string]int{"m": 1, "n": 2}[tc.ID]
		if len(tc.Seats) != 1 || tc.Seats[0] != want {
			t.Errorf("touch of %s: seats %v, want [%d]", tc.ID, tc.Seats, want)
		}
	}
	if got := p.touches(true); len(got) != 1 || got[0].ID != "n" {
		t.Errorf("next round: touches %v, want only n (m's stream is closed)", got)
	}
}
