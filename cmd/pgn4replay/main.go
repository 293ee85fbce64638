// Command pgn4replay replays four-player chess game records (PGN4) with the
// rules engine and checks them move by move: every move must be legal, its
// check, mate and capture marks must match what the engine finds, and the
// final points and the ending must agree with the Result and Termination
// tags. Records of the largest four-player site are replayed under its
// free-for-all rules ("chesscom-ffa", chosen from their RuleVariants tag).
//
// Usage:
//
//	pgn4replay [--rules NAME] [-v] [--strict] FILE...
//
// For each file it prints one line: "OK" with the final points per seat and
// the ending, when the moves alone replay to the record's points and
// ending; "TAG-END" with the same, when they agree only after the engine
// applied what the record's Termination tag says and its moves leave out
// (the site writes no token for a claimed win, which the engine applies as
// a claim where its rule allows one and otherwise as the other live
// players leaving, and omits the last resignation of a declared draw or a
// final mating move), followed by what was applied; "MISMATCH"
// with the ply, the move and what differs (-v lists every difference, not
// only the first); or "ERROR" for a file it cannot read. With more than
// one file a summary line follows. The exit status is 1 when any file
// fails (MISMATCH or ERROR; with --strict also TAG-END), 2 for bad usage.
// With -v each difference found at a token is followed by the FEN4 of the
// position before that token, and a difference in check or mate marks
// lists every other king with the pieces attacking it after the move,
// dead ones included and named so, to study what the site counted.
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

const usage = "usage: pgn4replay [--rules NAME] [-v] [--strict] FILE [FILE ...]"

// errUsage marks a bad command line.
var errUsage = errors.New(usage)

// run replays the files named in args and reports to out. failed is set
// when any file does not replay cleanly; err only for a bad command line.
func run(args []string, out io.Writer) (failed bool, err error) {
	var (
		files    []string
		verbose  bool
		strict   bool
		ruleName string
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-v" || a == "--verbose":
			verbose = true
		case a == "--strict" || a == "-strict":
			strict = true
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
	var count [numOutcomes]int
	for _, f := range files {
		o := replayFile(out, f, rs, verbose)
		count[o]++
		if o == outcomeMismatch || o == outcomeError || (o == outcomeTagEnd && strict) {
			failed = true
		}
	}
	if len(files) > 1 {
		fmt.Fprintf(out, "%d records: %d OK, %d TAG-END (ending applied from the Termination tag), %d MISMATCH, %d ERROR\n",
			len(files), count[outcomeOK], count[outcomeTagEnd], count[outcomeMismatch], count[outcomeError])
	}
	return failed, nil
}

// outcome is what replaying one file gave.
type outcome int

const (
	outcomeOK outcome = iota
	outcomeTagEnd
	outcomeMismatch
	outcomeError
	numOutcomes
)

// replayFile replays one file and prints its line.
func replayFile(out io.Writer, name string, rs *rules.RuleSet, verbose bool) outcome {
	data, err := os.ReadFile(name)
	if err != nil {
		fmt.Fprintf(out, "ERROR %s: %v\n", name, err)
		return outcomeError
	}
	rep, err := rules.Replay(string(data), rs)
	if err != nil {
		fmt.Fprintf(out, "ERROR %s: %v\n", name, err)
		return outcomeError
	}
	if rep.OK() && rep.TagEnding != "" {
		fmt.Fprintf(out, "TAG-END %s: %s; %s; applied from the Termination tag: %s\n", name, points(rep.Points), ending(rep), rep.TagEnding)
		return outcomeTagEnd
	}
	if rep.OK() {
		fmt.Fprintf(out, "OK %s: %s; %s\n", name, points(rep.Points), ending(rep))
		return outcomeOK
	}
	fmt.Fprintf(out, "MISMATCH %s: %s\n", name, rep.Mismatches[0])
	if verbose {
		position := func(m rules.Mismatch) {
			if m.Position != "" {
				fmt.Fprintf(out, "      position before: %s\n", m.Position)
			}
		}
		position(rep.Mismatches[0])
		for _, m := range rep.Mismatches[1:] {
			fmt.Fprintf(out, "    %s\n", m)
			position(m)
		}
	} else if n := len(rep.Mismatches) - 1; n > 0 {
		fmt.Fprintf(out, "    (%d more; -v lists them)\n", n)
	}
	return outcomeMismatch
}

func points(p [rules.NumSeats]int) string {
	parts := make([]string, 0, rules.NumSeats)
	for s := rules.Seat(0); s < rules.NumSeats; s++ {
		parts = append(parts, fmt.Sprintf("%s %d", s, p[s]))
	}
	return strings.Join(parts, ", ")
}

// ending describes how the game ended: the engine's termination, and the
// record's Termination tag when there is one.
func ending(rep *rules.Report) string {
	term := rep.Termination.String()
	if rep.Termination == rules.BareKings {
		term = "insufficient material (bare kings)"
	}
	if rep.RecordedTermination == "" {
		return term
	}
	return fmt.Sprintf("%s (record: %s)", term, rep.RecordedTermination)
}
