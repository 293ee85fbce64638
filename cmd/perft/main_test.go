package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"start", []string{"3"}, []string{"perft(3) = 7800", "b = Blue (east)"}},
		{"depth 0 is the position itself", []string{"0"}, []string{"perft(0) = 1 "}},
		{"divide", []string{"2", "--divide"}, []string{"Nj1-i3 ", "moves 20", "perft(2) = 395"}},
		// castle_all of docs/perft.md: all eight castlings are legal.
		{"divide writes castling with the king's squares", []string{"--divide", "1", castleAll}, []string{"\nO-O Kh1-j1 1\n", "\nO-O-O Kh1-f1 1\n", "perft(1) = 46"}},
		{"rules flag", []string{"2", "--rules", "chesscom-ffa"}, []string{"perft(2) = 395", "b = Blue (west)", "g = Green (east)", "clockwise"}},
		// The site's own FEN4 (Blue west, its block before the board) is
		// its start under its seating.
		{"site FEN4", []string{"--rules", "chesscom-ffa", "3", siteStart}, []string{"perft(3) = 7800"}},
		{"fen", []string{"1", "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-3,yR,2,yK,3,yR,3/3,yP,yP,yP,yP,yP,yP,yP,yP,3/8,yB,5/gR,gP,10,bP,bR/1,gP,gN,8,bN,bP,1/1,gP,10,bP,1/1,gP,gN,9,bP,bK/gK,gP,10,bP,1/1,gP,10,bP,1/11,yN,bB,1/gR,gP,10,bP,bR/8,rN,5/3,rP,rB,rP,rP,rP,rP,1,rP,3/3,rR,3,rK,2,rR,3"}, []string{"perft(1) = 35"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := run(c.args, &out); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	for _, bad := range [][]string{{}, {"-1"}, {"13"}, {"x"}, {"2", "--rules", "nope"}, {"2", "not-a-fen"}, {"1", "2", "3"},
		{"2", "--devide"}, {"--depth", "2"}} {
		if err := run(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) succeeded", bad)
		}
	}
	// An unknown flag is reported as one, not read as a FEN4.
	if err := run([]string{"2", "--devide"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `unknown flag "--devide"`) {
		t.Errorf("unknown flag: %v", err)
	}
}

// The time is one number of seconds, never "0s" beside a speed.
func TestRunTimeInSeconds(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run([]string{"1"}, &out); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`perft\(1\) = 20  time \d+\.\d{6} s  (\d+\.\d\d M nodes/s|\(too short to give a speed\))\n$`).MatchString(out.String()) {
		t.Errorf("output %q", out.String())
	}
}

const castleAll = "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-3,yR,2,yK,3,yR,3/3,yP,1,yP,yP,yQ,yP,yP,yP,3/4,yP,yN,yB,yP,yN,yB,4/gR,gP,10,bP,bR/1,gP,gB,8,bP,2/1,gP,gN,8,bN,bP,1/1,gQ,gP,8,bB,bP,bK/gK,gP,gB,8,bP,bQ,1/1,gP,gN,8,bN,bP,1/2,gP,8,bB,bP,1/gR,gP,10,bP,bR/4,rB,rN,rP,rB,rN,rP,4/3,rP,rP,rP,rQ,rP,rP,1,rP,3/3,rR,3,rK,2,rR,3"

const siteStart = "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-{'uniquify':1}-" +
	"3,yR,yN,yB,yK,yQ,yB,yN,yR,3/3,yP,yP,yP,yP,yP,yP,yP,yP,3/14/" +
	"bR,bP,10,gP,gR/bN,bP,10,gP,gN/bB,bP,10,gP,gB/bQ,bP,10,gP,gK/" +
	"bK,bP,10,gP,gQ/bB,bP,10,gP,gB/bN,bP,10,gP,gN/bR,bP,10,gP,gR/" +
	"14/3,rP,rP,rP,rP,rP,rP,rP,rP,3/3,rR,rN,rB,rQ,rK,rB,rN,rR,3"
