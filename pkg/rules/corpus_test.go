package rules

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// corpusDir holds real PGN4 records beside the repository (never copied
// into it); the test skips when they are absent.
const corpusDir = "../../../shared/pgn4"

var resultRe = regexp.MustCompile(`([^:\s][^:]*?):\s*(-?\d+)`)

// recordPoints reads the Result tag "name: 54 - name: 28 - ..." and maps
// the points to seats through the Red/Blue/Yellow/Green name tags.
func recordPoints(rec *Record) ([4]int, bool) {
	var pts [4]int
	v, _ := rec.Tag("Result")
	m := resultRe.FindAllStringSubmatch(v, -1)
	if len(m) != 4 {
		return pts, false
	}
	found := 0
	for _, e := range m {
		name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(e[1]), "-"))
		n, _ := strconv.Atoi(e[2])
		for s := Seat(0); s < NumSeats; s++ {
			if tag, _ := rec.Tag(s.String()); tag == name {
				pts[s] = n
				found++
			}
		}
	}
	return pts, found == 4
}

// TestPGN4Corpus replays the real records of the largest site under
// chesscom-ffa and compares the final points with the Result tag; once as
// RULES.md states the zombie-king stalemate (+10 each), once with the
// split that the records fit better (ZombieKingStalemateSplit).
func TestPGN4Corpus(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.pgn4"))
	if len(files) == 0 {
		t.Skip("no PGN4 corpus at " + corpusDir)
	}
	split := ChesscomFFA()
	split.ZombieKingStalemateSplit = true
	for _, c := range []struct {
		name  string
		rs    *RuleSet
		floor int
	}{{"from tags", nil, 78}, {"stalemate split", &split, 81}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			replayCorpus(t, files, c.rs, c.floor)
		})
	}
}

func replayCorpus(t *testing.T, files []string, rs *RuleSet, floor int) {
	var ok, mismatch, failed, skipped int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ParsePGN4(string(data), rs)
		if err != nil {
			if testing.Verbose() {
				t.Logf("%s: %v", filepath.Base(f), err)
			}
			failed++
			continue
		}
		want, found := recordPoints(rec)
		if !found {
			skipped++
			continue
		}
		got := rec.Game.ResultPoints()
		if got != want {
			mismatch++
			if testing.Verbose() {
				term, _ := rec.Tag("Termination")
				t.Logf("%s: points %v, record %v (%s; over=%v ply=%d)", filepath.Base(f), got, want, term, rec.Game.Over(), rec.Game.Ply())
			}
			continue
		}
		ok++
	}
	t.Logf("corpus: %d match, %d points differ, %d fail to replay, %d without result", ok, mismatch, failed, skipped)
	// Regression floor: the known differences are records that end by a
	// resignation or flag the record does not contain, the old "4PCo"
	// start, and scoring details of the site not yet reproduced (see
	// docs/rules-engine.md). More exact matches are welcome; fewer are a
	// regression.
	if ok < floor {
		t.Errorf("only %d records replay to the recorded points, want at least %d", ok, floor)
	}
}
