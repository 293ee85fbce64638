// Package queues describes the matchmaking queues: one per rule set and time
// control, written in configuration as "<rule set> <time control>" with
// optional settings, for example
//
//	fourkingdoms 5+5
//	fourkingdoms 1|15 d bots=20s
//
// A queue's name is "<rule set>/<time control>" ("fourkingdoms/5+5").
package queues

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TimeControl is a clock setting (docs/rules.md section 10): an initial time and
// either a Fischer increment ("M+S") or a simple delay ("M|S d").
type TimeControl struct {
	Initial   time.Duration
	Increment time.Duration
	Delay     time.Duration
}

// ParseTimeControl reads "M+S" or "M|S d" (M minutes, S seconds).
func ParseTimeControl(s string) (TimeControl, error) {
	bad := func(why string) (TimeControl, error) {
		return TimeControl{}, fmt.Errorf("time control %q: %s (want \"M+S\" or \"M|S d\")", s, why)
	}
	var tc TimeControl
	var mins, secs string
	if m, rest, ok := strings.Cut(s, "|"); ok {
		d, found := strings.CutSuffix(rest, " d")
		if !found {
			return bad(`delay form must end in " d"`)
		}
		mins, secs = m, d
	} else if m, inc, ok := strings.Cut(s, "+"); ok {
		mins, secs = m, inc
	} else {
		return bad("no + or |")
	}
	m, err := strconv.Atoi(mins)
	if err != nil || m <= 0 || m > 24*60 {
		return bad("minutes must be a whole number from 1 to 1440")
	}
	sec, err := strconv.Atoi(secs)
	if err != nil || sec < 0 || sec > 3600 {
		return bad("seconds must be a whole number from 0 to 3600")
	}
	tc.Initial = time.Duration(m) * time.Minute
	if strings.Contains(s, "|") {
		tc.Delay = time.Duration(sec) * time.Second
	} else {
		tc.Increment = time.Duration(sec) * time.Second
	}
	return tc, nil
}

// Name returns the canonical name ("5+5", "1|15 d").
func (tc TimeControl) Name() string {
	m := int(tc.Initial / time.Minute)
	if tc.Delay > 0 {
		return fmt.Sprintf("%d|%d d", m, int(tc.Delay/time.Second))
	}
	return fmt.Sprintf("%d+%d", m, int(tc.Increment/time.Second))
}

// Queue is one configured queue.
type Queue struct {
	RuleSet     string
	TimeControl TimeControl
	// BotFillAfter is the wait after which bots fill a player's empty
	// seats; zero means the queue never uses bots.
	BotFillAfter time.Duration
}

// Name returns "<rule set>/<time control name>".
func (q Queue) Name() string { return q.RuleSet + "/" + q.TimeControl.Name() }

// Parse reads a queue spec: "<rule set> <time control>[ bots=<duration>]".
func Parse(spec string) (Queue, error) {
	fields := strings.Fields(spec)
	if len(fields) < 2 {
		return Queue{}, fmt.Errorf("queue %q: want \"<rule set> <time control>[ bots=<duration>]\"", spec)
	}
	q := Queue{RuleSet: fields[0]}
	rest := fields[1:]
	tcText := rest[0]
	rest = rest[1:]
	if len(rest) > 0 && rest[0] == "d" { // "1|15 d"
		tcText += " d"
		rest = rest[1:]
	}
	tc, err := ParseTimeControl(tcText)
	if err != nil {
		return Queue{}, fmt.Errorf("queue %q: %w", spec, err)
	}
	q.TimeControl = tc
	for _, opt := range rest {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "bots":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Queue{}, fmt.Errorf("queue %q: bots=%q: want a positive duration such as 30s", spec, v)
			}
			q.BotFillAfter = d
		default:
			return Queue{}, fmt.Errorf("queue %q: unknown setting %q", spec, k)
		}
	}
	return q, nil
}

// ParseList reads queue specs separated by ";" or newlines and rejects
// duplicates.
func ParseList(specs string) ([]Queue, error) {
	var out []Queue
	seen := map[string]bool{}
	for spec := range strings.FieldsFuncSeq(specs, func(r rune) bool { return r == ';' || r == '\n' }) {
		if strings.TrimSpace(spec) == "" {
			continue
		}
		q, err := Parse(spec)
		if err != nil {
			return nil, err
		}
		if seen[q.Name()] {
			return nil, fmt.Errorf("queue %q configured twice", q.Name())
		}
		seen[q.Name()] = true
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, errors.New("no queues configured")
	}
	return out, nil
}
