package main

import (
	"bytes"
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
		{"start", []string{"3"}, []string{"perft(3) = 7800"}},
		{"divide", []string{"2", "--divide"}, []string{"Nj1-i3 ", "moves 20", "perft(2) = 395"}},
		{"rules flag", []string{"2", "--rules", "chesscom-ffa"}, []string{"perft(2) = 395"}},
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
	for _, bad := range [][]string{{}, {"0"}, {"x"}, {"2", "--rules", "nope"}, {"2", "not-a-fen"}, {"1", "2", "3"}} {
		if err := run(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) succeeded", bad)
		}
	}
}
