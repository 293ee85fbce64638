package scripttest

import (
	"strings"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
)

var fixed = redisconn.Layout{Name: "t", Keys: []string{"K_A"}, Args: []string{"A_X", "A_Y"}}

var tailed = redisconn.Layout{Name: "t", Keys: []string{"K_A"}, Args: []string{"A_X"},
	ArgTail: redisconn.Tail{Name: "A_REST", Width: 2}}

func TestCheckSource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		layout redisconn.Layout
		body   string
		want   string // substring of the error; "" = none
	}{
		{"names", fixed, "return {KEYS[K_A], ARGV[A_X], ARGV[ A_Y ]}", ""},
		{"element length", fixed, "return #ARGV[A_X] + #KEYS[K_A] + #ARGV[A_Y]", ""},
		{"comment and string ignored", fixed, "-- ARGV[3] is old\nreturn {KEYS[K_A], ARGV[A_X], ARGV[A_Y], 'ARGV[9]'}", ""},
		{"number", fixed, "return {KEYS[1], ARGV[A_X], ARGV[A_Y]}", "not a number"},
		{"undeclared", fixed, "return {KEYS[K_A], ARGV[A_X], ARGV[A_Y], ARGV[A_Z]}", "A_Z is not a declared"},
		{"wrong table", fixed, "return {KEYS[A_X], ARGV[A_Y]}", "not a declared KEYS slot"},
		{"unused", fixed, "return {KEYS[K_A], ARGV[A_X]}", "A_Y is declared but never used"},
		{"arithmetic without tail", fixed, "return {KEYS[K_A], ARGV[A_X + 1], ARGV[A_Y]}", "no ARGV tail"},
		{"count without tail", fixed, "return {KEYS[K_A], ARGV[A_X], ARGV[A_Y], #ARGV}", "#ARGV"},
		{"bare table", fixed, "return {KEYS[K_A], ARGV[A_X], ARGV[A_Y], unpack(ARGV)}", "other than indexed"},
		{"tail", tailed, "local r = {KEYS[K_A], ARGV[A_X]}\nfor i = A_REST, #ARGV, 2 do r[#r+1] = ARGV[i] .. ARGV[i + 1] end\nreturn r", ""},
		{"tail unused", tailed, "return {KEYS[K_A], ARGV[A_X]}", "A_REST is declared but never used"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckSource(tc.layout, tc.body)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		layout redisconn.Layout
		keys   []string
		args   []any
		want   string
	}{
		{"exact", fixed, []string{"k"}, []any{1, "y"}, ""},
		{"one argument more", fixed, []string{"k"}, []any{1, "y", "z"}, "3 arguments passed"},
		{"one key less", fixed, nil, []any{1, "y"}, "0 keys passed"},
		{"unfilled slot", fixed, []string{"k"}, []any{1, nil}, "(A_Y) is nil"},
		{"empty key", fixed, []string{""}, []any{1, 2}, "(K_A) is empty"},
		{"tail records", tailed, []string{"k"}, []any{1, "a", "b", "c", "d"}, ""},
		{"half a record", tailed, []string{"k"}, []any{1, "a", "b", "c"}, "plus records of 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckCall(tc.layout, tc.keys, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestHeader(t *testing.T) {
	t.Parallel()
	got := tailed.Header()
	for _, want := range []string{"local K_A = 1\n", "local A_X = 1\n", "local A_REST = 2\n",
		"#KEYS ~= 1 or #ARGV < 1 or (#ARGV - 1) % 2 ~= 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("header %q lacks %q", got, want)
		}
	}
}
