package timecontrol

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want TimeControl
		name string // canonical name; "" = refused
	}{
		{"5+5", TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}, "5+5"},
		{"1+0", TimeControl{Initial: time.Minute}, "1+0"},
		{"3|2 d", TimeControl{Initial: 3 * time.Minute, Delay: 2 * time.Second}, "3|2 d"},
		{"1|15 d", TimeControl{Initial: time.Minute, Delay: 15 * time.Second}, "1|15 d"},
		{"0.5+0", TimeControl{Initial: 30 * time.Second}, "0.5+0"},
		{"0.02+0", TimeControl{Initial: 1200 * time.Millisecond}, "0.02+0"},
		{"0.001+0.001", TimeControl{Initial: 60 * time.Millisecond, Increment: time.Millisecond}, "0.001+0.001"},
		{"05+5.0", TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}, "5+5"},
		{"1440+3600", TimeControl{Initial: 24 * time.Hour, Increment: time.Hour}, "1440+3600"},
		{"2.50|0.5 d", TimeControl{Initial: 150 * time.Second, Delay: 500 * time.Millisecond}, "2.5|0.5 d"},
		{"0+5", TimeControl{}, ""},
		{"1441+0", TimeControl{}, ""},
		{"1+3601", TimeControl{}, ""},
		{"1|0 d", TimeControl{}, ""},
		{"1|5", TimeControl{}, ""},
		{"1+5 d", TimeControl{}, ""},
		{"5", TimeControl{}, ""},
		{"", TimeControl{}, ""},
		{"+", TimeControl{}, ""},
		{"|  d", TimeControl{}, ""},
		{" 5+5", TimeControl{}, ""},
		{"5 + 5", TimeControl{}, ""},
		{"5.+5", TimeControl{}, ""},
		{".5+5", TimeControl{}, ""},
		{"0.0001+0", TimeControl{}, ""},
		{"-1+0", TimeControl{}, ""},
		{"1e3+0", TimeControl{}, ""},
		{"NaN+1", TimeControl{}, ""},
		{"5+x", TimeControl{}, ""},
		{"99999999999999+0", TimeControl{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			if tt.name == "" {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Parse(%q) = %+v, %v; want ErrInvalid", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want || got.Name() != tt.name {
				t.Fatalf("Parse(%q) = %+v (%q), %v; want %+v (%q)", tt.in, got, got.Name(), err, tt.want, tt.name)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tc   TimeControl
		ok   bool
	}{
		{"increment", TimeControl{Initial: time.Minute, Increment: time.Second}, true},
		{"delay", TimeControl{Initial: time.Minute, Delay: time.Second}, true},
		{"sudden death", TimeControl{Initial: time.Minute}, true},
		{"no initial time", TimeControl{Increment: time.Second}, false},
		{"both", TimeControl{Initial: time.Minute, Increment: time.Second, Delay: time.Second}, false},
		{"negative increment", TimeControl{Initial: time.Minute, Increment: -time.Second}, false},
		{"negative delay", TimeControl{Initial: time.Minute, Delay: -time.Second}, false},
		{"initial too long", TimeControl{Initial: MaxInitial + initialStep}, false},
		{"increment too long", TimeControl{Initial: time.Minute, Increment: MaxExtra + time.Second}, false},
		{"initial not nameable", TimeControl{Initial: 10 * time.Second}, false},
		{"increment finer than a millisecond", TimeControl{Initial: time.Minute, Increment: time.Microsecond}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.tc.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Fatalf("Validate(%+v) = %v, want ok=%v", tt.tc, err, tt.ok)
			}
		})
	}
}

// wire is a stand-in for fourkingdoms.game.v1.TimeControl.
type wire struct {
	initial, increment, delay *durationpb.Duration
	name                      string
}

func (w *wire) GetInitial() *durationpb.Duration {
	if w == nil {
		return nil
	}
	return w.initial
}

func (w *wire) GetIncrement() *durationpb.Duration {
	if w == nil {
		return nil
	}
	return w.increment
}

func (w *wire) GetDelay() *durationpb.Duration {
	if w == nil {
		return nil
	}
	return w.delay
}

func (w *wire) GetName() string {
	if w == nil {
		return ""
	}
	return w.name
}

func TestFromMessage(t *testing.T) {
	t.Parallel()
	d := durationpb.New
	tests := []struct {
		name string
		in   Message
		want TimeControl
		ok   bool
	}{
		{"by name", &wire{name: "5+5"}, TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}, true},
		{"by fields", &wire{initial: d(time.Minute), increment: d(time.Second)}, TimeControl{Initial: time.Minute, Increment: time.Second}, true},
		{"delay by fields", &wire{initial: d(time.Minute), delay: d(15 * time.Second)}, TimeControl{Initial: time.Minute, Delay: 15 * time.Second}, true},
		// The name is derived from the fields, so a message with fields is
		// read from them alone.
		{"fields win over the name", &wire{initial: d(time.Minute), name: "5+5"}, TimeControl{Initial: time.Minute}, true},
		{"bad fields", &wire{initial: d(time.Minute), increment: d(time.Second), delay: d(time.Second)}, TimeControl{}, false},
		{"bad name", &wire{name: "fast"}, TimeControl{}, false},
		{"empty", &wire{}, TimeControl{}, false},
		{"nil message", (*wire)(nil), TimeControl{}, false},
		{"nil", nil, TimeControl{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := FromMessage(tt.in)
			if !tt.ok {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("FromMessage = %+v, %v; want ErrInvalid", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("FromMessage = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// FuzzParse checks the round trips: a name that parses has a canonical name
// that parses to the same time control and is its own canonical name.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"5+5", "3|2 d", "0.5+0", "05+5.0", "+", "|", " d", "1e9+1", "-1+0", "NaN+1", "0.001+0.001", "1440+3600"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tc, err := Parse(s)
		if err != nil {
			return
		}
		if err := tc.Validate(); err != nil {
			t.Fatalf("%q parsed to %+v, which is invalid: %v", s, tc, err)
		}
		name := tc.Name()
		back, err := Parse(name)
		if err != nil || back != tc || back.Name() != name {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, tc, name, back, err)
		}
	})
}

// FuzzName checks that every valid time control has a name that parses back
// to it.
func FuzzName(f *testing.F) {
	f.Add(int64(5*time.Minute), int64(5*time.Second), int64(0))
	f.Add(int64(time.Minute), int64(0), int64(15*time.Second))
	f.Fuzz(func(t *testing.T, initial, increment, delay int64) {
		tc := TimeControl{Initial: time.Duration(initial), Increment: time.Duration(increment), Delay: time.Duration(delay)}
		if tc.Validate() != nil {
			return
		}
		back, err := Parse(tc.Name())
		if err != nil || back != tc {
			t.Fatalf("%+v -> %q -> %+v, %v", tc, tc.Name(), back, err)
		}
	})
}
