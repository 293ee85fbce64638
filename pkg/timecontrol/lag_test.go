package timecontrol

import (
	"testing"
	"time"
)

// TestLagGain: the per-move gain follows Lichess's scale on the estimated
// length initial + 40 × increment (or delay).
func TestLagGain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tc   string
		want time.Duration
	}{
		{"0.25+0", 350 * time.Millisecond}, // 15 s: the floor
		{"0.5+0", 500 * time.Millisecond},  // 30 s: 0.4 + 30/300
		{"1+0", 600 * time.Millisecond},    // 60 s
		{"2+0", 800 * time.Millisecond},    // 120 s
		{"1+2", 866 * time.Millisecond},    // 140 s: 0.4 + 0.4667, truncated to ms
		{"1|2 d", 866 * time.Millisecond},  // a delay counts like an increment
		{"3+0", time.Second},               // 180 s: the cap
		{"15+10", time.Second},
	}
	for _, tt := range tests {
		tc, err := Parse(tt.tc)
		if err != nil {
			t.Fatal(err)
		}
		if got := tc.LagGain(); got != tt.want {
			t.Errorf("%s: LagGain() = %v, want %v", tt.tc, got, tt.want)
		}
	}
}
