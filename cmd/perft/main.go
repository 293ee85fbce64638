// Command perft counts the leaf nodes of the legal move tree of a
// four-player chess position (docs/rules.md section 12) and reports the time
// and the speed, to check and measure the rules engine's move generator.
//
// Usage:
//
//	perft <depth> [FEN4] [--divide] [--rules NAME]
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

const usage = "usage: perft <depth> [FEN4] [--divide] [--rules NAME]"

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
				return errors.New("--rules needs a name; " + usage)
			}
			i++
			ruleName = args[i]
		case strings.HasPrefix(a, "--rules="):
			ruleName = strings.TrimPrefix(a, "--rules=")
		case a == "-h" || a == "--help":
			fmt.Fprintln(out, usage)
			fmt.Fprintln(out, "rule sets:", strings.Join(rules.RuleSetNames(), ", "))
			return nil
		default:
			positional = append(positional, a)
		}
	}
	if len(positional) < 1 || len(positional) > 2 {
		return errors.New(usage)
	}
	depth, err := strconv.Atoi(positional[0])
	if err != nil || depth < 1 || depth > 12 {
		return fmt.Errorf("bad depth %q (1..12)", positional[0])
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
	start := time.Now()
	var nodes uint64
	if divide {
		var l rules.MoveList
		s := pos.ToMove()
		pos.LegalMoves(s, &l)
		for _, m := range l.Moves[:l.N] {
			u := pos.Make(m)
			n := pos.Perft(depth - 1)
			pos.Unmake(m, u)
			nodes += n
			fmt.Fprintf(out, "%s %d\n", m, n)
		}
		fmt.Fprintf(out, "moves %d\n", l.N)
	} else {
		nodes = pos.Perft(depth)
	}
	el := time.Since(start)
	nps := float64(nodes) / el.Seconds()
	fmt.Fprintf(out, "perft(%d) = %d  time %s  %.2f M nodes/s\n", depth, nodes, el.Round(time.Millisecond), nps/1e6)
	return nil
}
