package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusalsDocumented: every ErrorInfo reason this service sends (the
// refusals table and the reasons built outside it) is in docs/api.md's
// table of the fourkingdoms.matchmaking.v1 domain.
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
		case strings.HasPrefix(line, "| `fourkingdoms.matchmaking.v1` |"):
			in = true
		case in && !strings.HasPrefix(line, "| |"):
			in = false
		}
		if in {
			rows.WriteString(line)
		}
	}
	if rows.Len() == 0 {
		t.Fatal("docs/api.md has no table rows for the fourkingdoms.matchmaking.v1 domain")
	}
	reasons := []string{reasonInvalid, reasonNoQueue, reasonSlow, reasonGuesses, reasonNoBots, reasonNoMatches,
		reasonMatchNotFound, reasonNotAPlayer, reasonNotFinished, reasonDeclined, reasonExpired, reasonStarted,
		reasonAlreadySeated, reasonRematchNotFound, reasonUnimplemented}
	for _, r := range refusals {
		reasons = append(reasons, r.reason)
	}
	for _, r := range reasons {
		if !strings.Contains(rows.String(), "`"+r+"`") {
			t.Errorf("reason %s is not in docs/api.md's fourkingdoms.matchmaking.v1 rows", r)
		}
	}
}
