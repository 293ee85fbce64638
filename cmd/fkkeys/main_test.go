package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
)

// fkkeys runs the command and returns its standard output.
func fkkeys(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(args, &out, &errOut); err != nil {
		t.Fatalf("fkkeys %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// The rotation's commands, as docs/operations.md gives them, make the sets
// each stage needs.
func TestRotationCommands(t *testing.T) {
	dir := t.TempDir()
	f := func(name string) string { return filepath.Join(dir, name) }
	fkkeys(t, "new", "-kid", "k1", "-out", f("k1.json"))
	fkkeys(t, "new", "-kid", "k2", "-out", f("k2.json"))
	fkkeys(t, "public", "-out", f("k2-public.json"), f("k2.json"))
	fkkeys(t, "public", "-out", f("k1-public.json"), f("k1.json"))
	fkkeys(t, "merge", "-out", f("signing-1.json"), f("k1.json"), f("k2-public.json"))
	fkkeys(t, "public", "-out", f("public-1.json"), f("signing-1.json"))
	fkkeys(t, "merge", "-out", f("signing-2.json"), f("k2.json"), f("k1-public.json"))

	tests := []struct {
		file, want string
	}{
		{"signing-1.json", "k1\tprivate, signs\nk2\tpublic\n"},
		{"public-1.json", "k1\tpublic\nk2\tpublic\n(public set: verifies only)\n"},
		{"signing-2.json", "k2\tprivate, signs\nk1\tpublic\n"},
	}
	for _, tt := range tests {
		if got := fkkeys(t, "show", f(tt.file)); got != tt.want {
			t.Errorf("show %s =\n%s\nwant\n%s", tt.file, got, tt.want)
		}
	}
	// The printed form parses back.
	if _, err := auth.ParseKeySet([]byte(fkkeys(t, "public", f("k1.json")))); err != nil {
		t.Errorf("printed set: %v", err)
	}
}

func TestBadUse(t *testing.T) {
	for _, args := range [][]string{{}, {"rotate"}, {"public"}, {"merge"}, {"new", "x.json"}, {"show", "/no/such/file"}} {
		if err := run(args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("fkkeys %v succeeded", args)
		}
	}
}
