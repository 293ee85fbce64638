// Command pgn4replay replays four-player chess game records (PGN4) with the
// rules engine and checks them move by move: every move must be legal, its
// check, mate and capture marks must match what the engine finds, and the
// final points and the ending must agree with the Result and Termination
// tags. Records of the largest four-player site are replayed under its
// free-for-all rules ("chesscom-ffa", chosen from their RuleVariants tag).
//
// Usage:
//
//	pgn4replay [--rules NAME] [-v] FILE...
//
// For each file it prints one line: "OK" with the final points per seat and
// the ending, or "MISMATCH" with the ply, the move and what differs (-v
// lists every difference, not only the first), or "ERROR" for a file it
// cannot read. The exit status is 1 when any file fails, 2 for bad usage.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
)

func main() {
	failed, err := run(os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgn4replay:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

const usage = "usage: pgn4replay [--rules NAME] [-v] FILE [FILE ...]"

// errUsage marks a bad command line.
var errUsage = errors.New(usage)

// run replays the files named in args and reports to out. failed is set
// when any file does not replay cleanly; err only for a bad command line.
func run(args []string, out io.Writer) (failed bool, err error) {
	var (
		files    []string
		verbose  bool
		ruleName string
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-v" || a == "--verbose":
			verbose = true
		case a == "--rules" || a == "-rules":
			if i+1 >= len(args) {
				return false, fmt.Errorf("--rules needs a name: %w", errUsage)
			}
			i++
			ruleName = args[i]
		case strings.HasPrefix(a, "--rules="):
			ruleName = strings.TrimPrefix(a, "--rules=")
		case a == "-h" || a == "--help":
			fmt.Fprintln(out, usage)
			fmt.Fprintln(out, "rule sets:", strings.Join(rules.RuleSetNames(), ", "), "(default: from the record's tags)")
			return false, nil
		case a == "--":
			files = append(files, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			return false, fmt.Errorf("unknown flag %q: %w", a, errUsage)
		default:
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		return false, errUsage
	}
	var rs *rules.RuleSet
	if ruleName != "" {
		r, ok := rules.RuleSetByName(ruleName)
		if !ok {
			return false, fmt.Errorf("unknown rule set %q (known: %s)", ruleName, strings.Join(rules.RuleSetNames(), ", "))
		}
		rs = &r
	}
	for _, f := range files {
		if !replayFile(out, f, rs, verbose) {
			failed = true
		}
	}
	return failed, nil
}

// replayFile replays one file and prints its line; it reports success.
func replayFile(out io.Writer, name string, rs *rules.RuleSet, verbose bool) bool {
	data, err := os.ReadFile(name)
	if err != nil {
		fmt.Fprintf(out, "ERROR %s: %v\n", name, err)
		return false
	}
	rep, err := rules.Replay(string(data), rs)
	if err != nil {
		fmt.Fprintf(out, "ERROR %s: %v\n", name, err)
		return false
	}
	if rep.OK() {
		fmt.Fprintf(out, "OK %s: %s; %s\n", name, points(rep.Points), ending(rep))
		return true
	}
	fmt.Fprintf(out, "MISMATCH %s: %s\n", name, rep.Mismatches[0])
	if verbose {
		for _, m := range rep.Mismatches[1:] {
			fmt.Fprintf(out, "    %s\n", m)
		}
	} else if n := len(rep.Mismatches) - 1; n > 0 {
		fmt.Fprintf(out, "    (%d more; -v lists them)\n", n)
	}
	return false
}

func points(p [rules.NumSeats]int) string {
	parts := make([]string, 0, rules.NumSeats)
	for s := rules.Seat(0); s < rules.NumSeats; s++ {
		parts = append(parts, fmt.Sprintf("%s %d", s, p[s]))
	}
	return strings.Join(parts, ", ")
}

// ending describes how the game ended: the engine's termination, and the
// record's Termination tag when it says more (or when the record's ending
// has no move, such as the site's declared draws).
func ending(rep *rules.Report) string {
	switch {
	case rep.RecordedTermination == "":
		return rep.Termination.String()
	case rep.Termination == rules.NotOver:
		return fmt.Sprintf("ended by the site: %s", rep.RecordedTermination)
	}
	return fmt.Sprintf("%s (record: %s)", rep.Termination, rep.RecordedTermination)
}
