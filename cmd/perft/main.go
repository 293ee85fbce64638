// Command perft counts the leaf nodes of the legal move tree of a
// four-player chess position (docs/rules.md section 12) and reports the time
// and the speed, to check and measure the rules engine's move generator.
//
// Usage:
//
//	perft [--divide] [--rules NAME] <depth> [FEN4]
//
// depth is 0 to 12 (perft(0) = 1, the position itself). FEN4 defaults to the
// standard start of the rule set. Its colour letters are seats (r Red, b
// Blue, y Yellow, g Green), and the rule set's seating says which edge
// each seat plays from: under chesscom-ffa Blue sits west and Green east,
// as in the site's own FEN4, which perft reads as the site writes it (its
// {'enPassant':...,'resigned':...} block included). The first output line
// says which seating applies. --divide prints every root move with its
// count; castling is written with the king's squares ("O-O Kh1-j1"). The
// time is printed in seconds.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "perft:", err)
		os.Exit(2)
	}
}

const usage = "usage: perft [--divide] [--rules NAME] <depth 0..12> [FEN4]"

// errUsage marks a bad command line.
var errUsage = errors.New(usage)

func run(args []string, out io.Writer) error {
	var (
		positional []string
		divide     bool
		ruleName   = "fourkingdoms"
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--divide" || a == "-divide":
			divide = true
		case a == "--rules" || a == "-rules":
			if i+1 >= len(args) {
				return fmt.Errorf("--rules needs a name: %w", errUsage)
			}
			i++
			ruleName = args[i]
		case strings.HasPrefix(a, "--rules="):
			ruleName = strings.TrimPrefix(a, "--rules=")
		case a == "-h" || a == "--help":
			fmt.Fprintln(out, usage)
			fmt.Fprintln(out, "rule sets:", strings.Join(rules.RuleSetNames(), ", "))
			return nil
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-"):
			// A FEN4 never starts with '-', and a negative depth is no
			// depth: an unknown flag must not be taken for either.
			return fmt.Errorf("unknown flag %q: %w", a, errUsage)
		default:
			positional = append(positional, a)
		}
	}
	if len(positional) < 1 || len(positional) > 2 {
		return errUsage
	}
	depth, err := strconv.Atoi(positional[0])
	if err != nil || depth < 0 || depth > 12 {
		return fmt.Errorf("bad depth %q (0..12): %w", positional[0], errUsage)
	}
	rs, ok := rules.RuleSetByName(ruleName)
	if !ok {
		return fmt.Errorf("unknown rule set %q (known: %s)", ruleName, strings.Join(rules.RuleSetNames(), ", "))
	}
	pos := rules.NewPosition(rs)
	if len(positional) == 2 {
		if pos, err = rules.ParseFEN4(rs, positional[1]); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "rules %s: %s\n", rs.Name, seating(rs))
	start := time.Now()
	var nodes uint64
	if divide && depth > 0 {
		var l rules.MoveList
		s := pos.ToMove()
		pos.LegalMoves(s, &l)
		for _, m := range l.Moves[:l.N] {
			u := pos.Make(m)
			n := pos.Perft(depth - 1)
			pos.Unmake(m, u)
			nodes += n
			fmt.Fprintf(out, "%s %d\n", moveText(m), n)
		}
		fmt.Fprintf(out, "moves %d\n", l.N)
	} else {
		nodes = pos.Perft(depth)
	}
	el := time.Since(start)
	fmt.Fprintf(out, "perft(%d) = %d  time %s s  %s\n", depth, nodes, seconds(el), speed(nodes, el))
	return nil
}

// seating says which edge each FEN4 colour letter plays from under rs.
func seating(rs rules.RuleSet) string {
	edges := map[rules.Seating][rules.NumSeats]string{
		rules.SeatingCounterclockwise: {"south", "east", "north", "west"},
		rules.SeatingClockwise:        {"south", "west", "north", "east"},
	}
	e, ok := edges[rs.Seating]
	if !ok {
		return "unknown seating"
	}
	parts := make([]string, 0, rules.NumSeats)
	for s := rules.Seat(0); s < rules.NumSeats; s++ {
		parts = append(parts, fmt.Sprintf("%c = %s (%s)", s.Letter(), s, e[s]))
	}
	dir := "counterclockwise"
	if rs.Seating == rules.SeatingClockwise {
		dir = "clockwise, the largest site's seating: its own FEN4 reads as it is written"
	}
	return fmt.Sprintf("FEN4 letters %s; play passes %s", strings.Join(parts, ", "), dir)
}

// moveText is the move's text, with the king's squares for castling,
// which other generators write by squares.
func moveText(m rules.Move) string {
	if m.Castle() != 0 {
		return fmt.Sprintf("%s K%s-%s", m, m.From(), m.To())
	}
	return m.String()
}

// seconds prints a duration in seconds with microsecond resolution, so a
// short run never shows as 0.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}

// speed is the node rate, or why there is none.
func speed(nodes uint64, d time.Duration) string {
	if d < time.Millisecond {
		return "(too short to give a speed)"
	}
	return fmt.Sprintf("%.2f M nodes/s", float64(nodes)/d.Seconds()/1e6)
}
