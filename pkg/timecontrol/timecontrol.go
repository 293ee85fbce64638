// Package timecontrol parses and names the clock settings of matches
// (RULES.md section 10). It is the one place where a time control's name is
// read or written: the matchmaking queue list, matchmaking requests and the
// match service all go through it, so they accept exactly the same names.
//
// A name is "M+S" (Fischer increment: S seconds added after each move) or
// "M|S d" (simple delay: the first S seconds of each turn are free), M the
// initial time in minutes, S in seconds, both decimal numbers with at most
// three decimals ("5+5", "0.5+0", "3|2 d"). The canonical name is derived
// from the durations ("05+5.0" names the same setting as "5+5", whose
// canonical name is "5+5"), so every TimeControl that Validate accepts has a
// name and Parse(tc.Name()) gives tc back.
//
// On the wire (fourkingdoms.game.v1.TimeControl) the durations are the
// truth; the name is derived from them and read only from a message that
// has no initial time (FromMessage).
package timecontrol

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
)

// TimeControl is a clock setting: an initial time and either a Fischer
// increment or a simple delay (never both).
type TimeControl struct {
	// Initial is the time on each clock at the start.
	Initial time.Duration
	// Increment is added to the mover's clock after each of their moves.
	Increment time.Duration
	// Delay is the free time at the start of each turn.
	Delay time.Duration
}

// Limits of a valid time control. The steps are the precision a name can
// write: three decimals of a minute and of a second.
const (
	MaxInitial  = 24 * time.Hour
	MaxExtra    = time.Hour // of the increment and of the delay
	initialStep = time.Minute / 1000
	extraStep   = time.Second / 1000
)

// ErrInvalid is wrapped by every error of this package.
var ErrInvalid = errors.New("invalid time control")

// IsDelay reports whether the clock runs in delay mode.
func (tc TimeControl) IsDelay() bool { return tc.Delay > 0 }

// Validate reports a time control that is out of range, sets both an
// increment and a delay, or cannot be named exactly.
func (tc TimeControl) Validate() error {
	switch {
	case tc.Initial <= 0 || tc.Initial > MaxInitial:
		return fmt.Errorf("%w: initial time %v not in (0, %v]", ErrInvalid, tc.Initial, MaxInitial)
	case tc.Increment < 0 || tc.Increment > MaxExtra:
		return fmt.Errorf("%w: increment %v not in [0, %v]", ErrInvalid, tc.Increment, MaxExtra)
	case tc.Delay < 0 || tc.Delay > MaxExtra:
		return fmt.Errorf("%w: delay %v not in [0, %v]", ErrInvalid, tc.Delay, MaxExtra)
	case tc.Increment > 0 && tc.Delay > 0:
		return fmt.Errorf("%w: both an increment and a delay", ErrInvalid)
	case tc.Initial%initialStep != 0:
		return fmt.Errorf("%w: initial time %v is not a whole number of thousandths of a minute", ErrInvalid, tc.Initial)
	case tc.Increment%extraStep != 0 || tc.Delay%extraStep != 0:
		return fmt.Errorf("%w: increment or delay is not a whole number of milliseconds", ErrInvalid)
	}
	return nil
}

// Name returns the canonical name of a valid time control ("5+5",
// "3|2 d", "0.5+0").
func (tc TimeControl) Name() string {
	m := decimal(int64(tc.Initial / initialStep))
	if tc.IsDelay() {
		return m + "|" + decimal(int64(tc.Delay/extraStep)) + " d"
	}
	return m + "+" + decimal(int64(tc.Increment/extraStep))
}

// String returns the name.
func (tc TimeControl) String() string { return tc.Name() }

// decimal writes n thousandths without trailing zeros ("1500" -> "1.5").
func decimal(n int64) string {
	s := strconv.FormatInt(n/1000, 10)
	if f := n % 1000; f != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%03d", f), "0")
	}
	return s
}

// Parse reads a name ("M+S" or "M|S d") and returns the valid time control
// it names.
func Parse(name string) (TimeControl, error) {
	bad := func(why string) (TimeControl, error) {
		return TimeControl{}, fmt.Errorf("%w: name %q: %s (want \"M+S\" or \"M|S d\", M minutes, S seconds)", ErrInvalid, name, why)
	}
	m, s, delay := "", "", false
	if before, ok := strings.CutSuffix(name, " d"); ok {
		var found bool
		if m, s, found = strings.Cut(before, "|"); !found {
			return bad(`delay form without "|"`)
		}
		delay = true
	} else {
		var found bool
		if m, s, found = strings.Cut(name, "+"); !found {
			return bad(`no "+" or "|... d"`)
		}
	}
	mins, ok1 := thousandths(m)
	secs, ok2 := thousandths(s)
	if !ok1 || !ok2 {
		return bad("not a number with at most three decimals")
	}
	// Bounds before multiplying, so nothing overflows.
	if mins > int64(MaxInitial/initialStep) || secs > int64(MaxExtra/extraStep) {
		return bad("out of range")
	}
	tc := TimeControl{Initial: time.Duration(mins) * initialStep}
	if delay {
		tc.Delay = time.Duration(secs) * extraStep
	} else {
		tc.Increment = time.Duration(secs) * extraStep
	}
	if delay && tc.Delay == 0 {
		return bad("a delay of zero")
	}
	if err := tc.Validate(); err != nil {
		return TimeControl{}, fmt.Errorf("name %q: %w", name, err)
	}
	return tc, nil
}

// thousandths reads digits with an optional "." and up to three more digits
// as a count of thousandths.
func thousandths(s string) (int64, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(whole) > 9 || len(frac) > 3 || (strings.Contains(s, ".") && frac == "") {
		return 0, false
	}
	var n int64
	for _, c := range whole + frac + strings.Repeat("0", 3-len(frac)) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// Message is the wire form of a time control,
// fourkingdoms.game.v1.TimeControl, as far as this package reads it. (An
// interface so that this package needs the protobuf runtime only, not the
// generated code.)
type Message interface {
	GetInitial() *durationpb.Duration
	GetIncrement() *durationpb.Duration
	GetDelay() *durationpb.Duration
	GetName() string
}

// FromMessage returns the valid time control a wire message gives: its
// durations when it has an initial time (its name and mode are then derived
// values and not read), otherwise the time control its name names.
func FromMessage(m Message) (TimeControl, error) {
	if m == nil || m.GetInitial() == nil {
		if m == nil || m.GetName() == "" {
			return TimeControl{}, fmt.Errorf("%w: give a name or an initial time", ErrInvalid)
		}
		return Parse(m.GetName())
	}
	tc := TimeControl{Initial: m.GetInitial().AsDuration(), Increment: m.GetIncrement().AsDuration(), Delay: m.GetDelay().AsDuration()}
	if err := tc.Validate(); err != nil {
		return TimeControl{}, err
	}
	return tc, nil
}
