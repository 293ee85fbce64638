package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusalsDocumented: every ErrorInfo reason of the refusals table is
// in docs/api.md's table of the fourkingdoms.match.v1 domain, so a client
// developer reading the docs meets every reason the service sends.
func TestRefusalsDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows strings.Builder
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| `fourkingdoms.match.v1` |"):
			in = true
		case in && !strings.HasPrefix(line, "| |"):
			in = false
		}
		if in {
			rows.WriteString(line)
		}
	}
	if rows.Len() == 0 {
		t.Fatal("docs/api.md has no table rows for the fourkingdoms.match.v1 domain")
	}
	for _, r := range refusals {
		if !strings.Contains(rows.String(), "`"+r.reason+"`") {
			t.Errorf("reason %s (%v) is not in docs/api.md's fourkingdoms.match.v1 rows", r.reason, r.err)
		}
	}
}
