package match

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

func TestParseTimeControl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       *gamev1.TimeControl
		want     timecontrol.TimeControl
		wantName string
		bad      bool
	}{
		{"increment by name", &gamev1.TimeControl{Name: "5+5"}, timecontrol.TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}, "5+5", false},
		{"delay by name", &gamev1.TimeControl{Name: "3|2 d"}, timecontrol.TimeControl{Initial: 3 * time.Minute, Delay: 2 * time.Second}, "3|2 d", false},
		{"fractional minutes", &gamev1.TimeControl{Name: "0.5+0"}, timecontrol.TimeControl{Initial: 30 * time.Second}, "0.5+0", false},
		{"by fields", &gamev1.TimeControl{Initial: durationpb.New(time.Minute), Increment: durationpb.New(time.Second),
			Mode: gamev1.TimeControlMode_TIME_CONTROL_MODE_INCREMENT}, timecontrol.TimeControl{Initial: time.Minute, Increment: time.Second}, "1+1", false},
		{"by delay fields", &gamev1.TimeControl{Initial: durationpb.New(time.Minute), Delay: durationpb.New(15 * time.Second)},
			timecontrol.TimeControl{Initial: time.Minute, Delay: 15 * time.Second}, "1|15 d", false},
		// The name and the mode are derived from the durations: a request
		// that has durations is read from them alone.
		{"durations win over name and mode", &gamev1.TimeControl{Name: "1+2", Initial: durationpb.New(time.Minute),
			Mode: gamev1.TimeControlMode_TIME_CONTROL_MODE_DELAY}, timecontrol.TimeControl{Initial: time.Minute}, "1+0", false},
		{"both increment and delay", &gamev1.TimeControl{Initial: durationpb.New(time.Minute), Increment: durationpb.New(time.Second),
			Delay: durationpb.New(time.Second)}, timecontrol.TimeControl{}, "", true},
		{"an initial time no name can write", &gamev1.TimeControl{Initial: durationpb.New(10 * time.Second)}, timecontrol.TimeControl{}, "", true},
		{"missing", nil, timecontrol.TimeControl{}, "", true},
		{"empty", &gamev1.TimeControl{}, timecontrol.TimeControl{}, "", true},
		{"garbage name", &gamev1.TimeControl{Name: "fast"}, timecontrol.TimeControl{}, "", true},
		{"zero initial", &gamev1.TimeControl{Name: "0+5"}, timecontrol.TimeControl{}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, pb, err := parseTimeControl(tc.in)
			if tc.bad {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("error %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil || got != tc.want || pb.GetName() != tc.wantName {
				t.Fatalf("got %+v %q %v, want %+v %q", got, pb.GetName(), err, tc.want, tc.wantName)
			}
		})
	}
}

func TestClocks(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_000_000)
	limit := 30 * time.Second
	t.Run("first move limit comes first", func(t *testing.T) {
		c := newClocks(timecontrol.TimeControl{Initial: 5 * time.Minute}, rules.Red, t0)
		d, first := c.Deadline(timecontrol.TimeControl{Initial: 5 * time.Minute}, limit)
		if !d.Equal(t0.Add(limit)) || !first {
			t.Fatalf("deadline %v first %v, want t0+30s from the first-move limit", d.Sub(t0), first)
		}
	})
	t.Run("short clock before the first move limit", func(t *testing.T) {
		tc := timecontrol.TimeControl{Initial: 10 * time.Second}
		c := newClocks(tc, rules.Red, t0)
		if d, first := c.Deadline(tc, limit); !d.Equal(t0.Add(10*time.Second)) || first {
			t.Fatalf("deadline %v first %v", d.Sub(t0), first)
		}
	})
	t.Run("increment after a move", func(t *testing.T) {
		tc := timecontrol.TimeControl{Initial: time.Minute, Increment: 2 * time.Second}
		c := newClocks(tc, rules.Red, t0)
		c.charge(tc, t0.Add(5*time.Second), true)
		if c.Remaining[rules.Red] != 57*time.Second || !c.Moved[rules.Red] || c.Running != noSeat {
			t.Fatalf("clocks %+v", c)
		}
	})
	t.Run("delay is free", func(t *testing.T) {
		tc := timecontrol.TimeControl{Initial: time.Minute, Delay: 3 * time.Second}
		c := newClocks(tc, rules.Red, t0)
		c.Moved[rules.Red] = true
		if d, _ := c.Deadline(tc, limit); !d.Equal(t0.Add(63 * time.Second)) {
			t.Fatalf("deadline %v, want t0+63s", d.Sub(t0))
		}
		c.charge(tc, t0.Add(2*time.Second), true)
		if c.Remaining[rules.Red] != time.Minute {
			t.Fatalf("remaining %v after a move within the delay", c.Remaining[rules.Red])
		}
	})
	t.Run("record round trip", func(t *testing.T) {
		tc := timecontrol.TimeControl{Initial: time.Minute}
		r := record{Status: StatusFinished, Exit: [4]uint8{0, 1, 3, 0}, Clocks: newClocks(tc, rules.Yellow, t0),
			FinishedAt: t0.Add(time.Hour), LastMove: []byte("last")}
		r.Clocks.Moved[rules.Blue] = true
		var got record
		if err := got.unmarshal(r.marshal()); err != nil {
			t.Fatal(err)
		}
		if got.Status != r.Status || got.Exit != r.Exit || got.Clocks != r.Clocks || !got.FinishedAt.Equal(r.FinishedAt) || string(got.LastMove) != "last" {
			t.Fatalf("round trip: got %+v, want %+v", got, r)
		}
		if err := got.unmarshal([]byte{9}); err == nil {
			t.Fatal("unmarshal accepted garbage")
		}
	})
}
