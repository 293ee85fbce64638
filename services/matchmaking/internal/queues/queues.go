// Package queues describes the matchmaking queues: one per rule set and time
// control, written in configuration as "<rule set> <time control>" with
// optional settings, for example
//
//	fourkingdoms 5+5
//	fourkingdoms 1|15 d bots=20s
//
// A queue's name is "<rule set>/<time control name>" ("fourkingdoms/5+5"),
// the time control read and named by package timecontrol.
//
// Anti-teaming settings (docs/matchmaking.md): "apart=<duration>" keeps
// players who played together in one of their latest "apart-games=<n>"
// games out of the same group until that long after the game ended
// (defaults [DefaultApart] and [DefaultApartGames]; apart=0 turns it off).
package queues

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
)

// Queue is one configured queue.
type Queue struct {
	RuleSet     string
	TimeControl timecontrol.TimeControl
	// BotFillAfter is the wait after which bots fill a player's empty
	// seats; zero means the queue never uses bots.
	BotFillAfter time.Duration
	// Apart is how long after a game its players are kept out of one
	// group; zero turns anti-teaming off.
	Apart time.Duration
	// ApartGames is how many of a player's latest games count.
	ApartGames int
}

// Anti-teaming defaults. Free-for-all invites collusion: two players who
// keep meeting can agree to spare each other and gang up on the other two.
// Ten minutes separates players who leave a game together (the usual case:
// four players finish at once and queue again at once, with close ratings,
// so the tightest new group would be the old one) without making anyone
// wait once their window is fully open; three games cover a player who
// plays short games in a row.
const (
	DefaultApart      = 10 * time.Minute
	DefaultApartGames = 3
	// MaxApartGames is the most games the rating service reports per player.
	MaxApartGames = 10
)

// Name returns "<rule set>/<time control name>".
func (q Queue) Name() string { return q.RuleSet + "/" + q.TimeControl.Name() }

// Parse reads a queue spec: "<rule set> <time control>[ bots=<duration>]
// [ apart=<duration>][ apart-games=<n>]".
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
	tc, err := timecontrol.Parse(tcText)
	if err != nil {
		return Queue{}, fmt.Errorf("queue %q: %w", spec, err)
	}
	q.TimeControl = tc
	q.Apart, q.ApartGames = DefaultApart, DefaultApartGames
	for _, opt := range rest {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "bots":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Queue{}, fmt.Errorf("queue %q: bots=%q: want a positive duration such as 30s", spec, v)
			}
			q.BotFillAfter = d
		case "apart":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return Queue{}, fmt.Errorf("queue %q: apart=%q: want a duration such as 10m (0 turns anti-teaming off)", spec, v)
			}
			q.Apart = d
		case "apart-games":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxApartGames {
				return Queue{}, fmt.Errorf("queue %q: apart-games=%q: want 1 to %d", spec, v, MaxApartGames)
			}
			q.ApartGames = n
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
