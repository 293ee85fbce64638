package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const header = `[Variant "FFA"]
[RuleVariants "DeadKingWalking EnPassant PromoteTo=D"]
[StartFen4 "4PC"]
[Red "a"]
[Blue "b"]
[Yellow "c"]
[Green "d"]
`

func record(result, termination, moves string) string {
	return header + `[Result "` + result + `"]` + "\n" + `[Termination "` + termination + `"]` + "\n\n" + moves + "\n"
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.pgn4", record("a: 0 - b: 0 - c: 0 - d: 60", "(Green +60)", "1. R .. R .. R"))
	wrongPoints := write("points.pgn4", record("a: 0 - b: 0 - c: 0 - d: 50", "(Green +60)", "1. R .. R .. R"))
	illegal := write("illegal.pgn4", record("a: 0 - b: 0 - c: 0 - d: 0", "Checkmate", "1. h2-h5 .. b7-c7"))
	badMark := write("mark.pgn4", record("a: 0 - b: 0 - c: 0 - d: 60", "(Green +60)", "1. h2-h3+ .. R .. R .. R"))
	tagEnd := write("tagend.pgn4", record("a: 0 - b: 0 - c: 0 - d: 60", "(Green +60)", "1. R .. R"))
	missing := filepath.Join(dir, "missing.pgn4")

	cases := []struct {
		name       string
		args       []string
		wantFailed bool
		want       []string
	}{
		{"ok", []string{good}, false, []string{"OK " + good + ": Red 0, Blue 0, Yellow 0, Green 60; last player standing (record: (Green +60))"}},
		{"points differ", []string{good, wrongPoints}, true, []string{"OK " + good, "MISMATCH " + wrongPoints + ": end of game (ply 0): points [0 0 0 60], record [0 0 0 50]"}},
		{"illegal move", []string{illegal}, true, []string{"MISMATCH " + illegal + `: ply 0, token 1 "h2-h5" (Red to move): illegal move`}},
		{"mark, all differences", []string{"-v", badMark}, true, []string{"MISMATCH " + badMark + `: ply 0, token 1 "h2-h3+" (Red to move): marks "+", engine ""`,
			"kings after the move: Blue a7 live by none;", "      position before: R-0,0,0,0-"}},
		{"missing file", []string{missing}, true, []string{"ERROR " + missing}},
		{"ending from the tag is not OK", []string{tagEnd, good}, false, []string{
			"TAG-END " + tagEnd + ": Red 0, Blue 0, Yellow 0, Green 60; last player standing (record: (Green +60)); applied from the Termination tag: Yellow left (not in the moves)",
			"2 records: 1 OK, 1 TAG-END"}},
		{"ending from the tag fails when strict", []string{"--strict", tagEnd}, true, []string{"TAG-END " + tagEnd}},
		{"rules flag", []string{"--rules", "chesscom-ffa", good}, false, []string{"OK " + good}},
		{"help", []string{"-h"}, false, []string{"usage: pgn4replay", "chesscom-ffa"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			failed, err := run(c.args, &out)
			if err != nil {
				t.Fatal(err)
			}
			if failed != c.wantFailed {
				t.Errorf("failed = %v, want %v", failed, c.wantFailed)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestRunBadUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"--rules"}, {"--rules", "nope", "x.pgn4"}, {"--frobnicate", "x.pgn4"}} {
		_, err := run(args, &bytes.Buffer{})
		if err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
		if len(args) != 3 && !errors.Is(err, errUsage) {
			t.Errorf("run(%q): %v, want the usage", args, err)
		}
	}
}

// TestRunCorpus replays the real records when they are beside the
// repository (the rules package's corpus test checks them in depth).
func TestRunCorpus(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("FK_PGN4_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "pgn4")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.pgn4"))
	if len(files) == 0 {
		t.Skipf("skipped: no PGN4 records at %s", dir)
	}
	var out bytes.Buffer
	failed, err := run(files, &out)
	if err != nil || failed {
		t.Fatalf("failed %v, err %v:\n%s", failed, err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(files)+1 {
		t.Fatalf("%d lines for %d files:\n%s", len(lines), len(files), out.String())
	}
	for _, l := range lines[:len(files)] {
		if !strings.HasPrefix(l, "OK ") && !strings.HasPrefix(l, "TAG-END ") {
			t.Errorf("not replayed: %s", l)
		}
	}
	if !strings.Contains(lines[len(files)], "0 MISMATCH, 0 ERROR") {
		t.Errorf("summary: %s", lines[len(files)])
	}
}
