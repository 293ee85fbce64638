package matchcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

// timed returns a 1+0 stream (lag gain 0.6 s, first quota 1.8 s) of one
// round and Red's second move, both of Red's moves charged and
// compensated as given, Red's clock as the server would show it.
func timed(t *testing.T, charged1, comp1, charged2, comp2 time.Duration) []*eventsv1.MatchEvent {
	t.Helper()
	evs, _ := streamOf(t, rules.FourKingdoms(), "", 1, "d2-d3", "m4-l4", "d13-d12", "b4-c4", "e2-e3")
	evs[0].GetMatchCreated().TimeControl = &gamev1.TimeControl{Name: "1+0"}
	red := time.Minute
	for _, x := range []struct {
		ev              *eventsv1.MatchEvent
		charged, comped time.Duration
	}{{evs[1], charged1, comp1}, {evs[5], charged2, comp2}} {
		m := x.ev.GetMoveApplied()
		m.TimeCharged = durationpb.New(x.charged)
		if x.comped != 0 {
			m.LagCompensation = durationpb.New(x.comped)
		}
		red -= x.charged
		m.Clocks = []*gamev1.Clock{{Seat: R, Remaining: durationpb.New(red)}, {Seat: B, Remaining: durationpb.New(time.Minute), Running: true}}
	}
	return evs
}

// TestClockChecks: lag compensation within the quota bound and clocks
// charged exactly what MoveApplied says pass; anything else is reported.
func TestClockChecks(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name    string
		evs     func(*testing.T) []*eventsv1.MatchEvent
		version uint64 // 0: valid
		want    string
	}{
		{"the first quota, then what the quota grew by", func(t *testing.T) []*eventsv1.MatchEvent { return timed(t, 100*ms, 1800*ms, 200*ms, 600*ms) }, 0, ""},
		{"no compensation", func(t *testing.T) []*eventsv1.MatchEvent { return timed(t, 100*ms, 0, 3000*ms, 0) }, 0, ""},
		{"more than the first quota", func(t *testing.T) []*eventsv1.MatchEvent { return timed(t, 100*ms, 1801*ms, 200*ms, 0) }, 2, "exceeds"},
		{"more than the quota grew by", func(t *testing.T) []*eventsv1.MatchEvent { return timed(t, 100*ms, 1800*ms, 200*ms, 601*ms) }, 6, "exceeds"},
		{"negative time charged", func(t *testing.T) []*eventsv1.MatchEvent { return timed(t, -100*ms, 0, 200*ms, 0) }, 2, "not valid"},
		{"clock not charged what the event says", func(t *testing.T) []*eventsv1.MatchEvent {
			evs := timed(t, 100*ms, 0, 200*ms, 0)
			evs[5].GetMoveApplied().Clocks[0].Remaining = durationpb.New(59800 * ms)
			return evs
		}, 6, "clock"},
		{"a zombie move charged", func(t *testing.T) []*eventsv1.MatchEvent {
			evs := opening(t)
			evs[3].GetMoveApplied().TimeCharged = durationpb.New(0)
			return evs
		}, 4, "zombie move"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := check(tt.evs(t))
			if tt.version == 0 {
				if err != nil {
					t.Fatalf("valid stream refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), fmt.Sprintf("version %d:", tt.version)) {
				t.Fatalf("got %v, want a violation at version %d with %q", err, tt.version, tt.want)
			}
		})
	}
}
