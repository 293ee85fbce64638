package rules

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// corpusDir returns the folder of real PGN4 records of the largest site:
// $FK_PGN4_DIR, else ../shared/pgn4 beside the repository (the folder
// holding go.work). The records are other people's games and are never
// copied into the repository.
func corpusDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("FK_PGN4_DIR"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, "..", "shared", "pgn4")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Join("..", "..", "..", "shared", "pgn4")
		}
		dir = parent
	}
}

// corpusFiles lists the records; it skips the test when the folder is
// absent, except under CI=true, where that is a failure.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	dir := corpusDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.pgn4"))
	if err == nil && len(files) == 0 {
		_, err = os.Stat(dir)
		if err == nil {
			err = fs.ErrNotExist
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no PGN4 records at %s (set FK_PGN4_DIR): %v", dir, err)
		}
		t.Skipf("skipped: no PGN4 records at %s (set FK_PGN4_DIR to the folder of real game records): %v", dir, err)
	}
	return files
}

// TestPGN4Corpus replays every real record under chesscom-ffa (selected by
// the records' RuleVariants tag): every move must be legal, its marks and
// captures must match, the final points must equal the Result tag and the
// ending must agree with the Termination tag. Then the replayed game is
// exported to PGN4 and re-imported, and encoded in binary and decoded:
// both must give the same game.
func TestPGN4Corpus(t *testing.T) {
	t.Parallel()
	for _, f := range corpusFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Replay(string(data), nil)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if rs := rep.Record.Game.Rules(); rs.Name != "chesscom-ffa" {
				t.Fatalf("rule set %q, want chesscom-ffa", rs.Name)
			}
			for _, m := range rep.Mismatches {
				t.Errorf("%s [Termination %q]", m, rep.RecordedTermination)
			}
			// A leave or a claim that Replay applied from the tag is one
			// the record leaves out: the site's CurrentMove tag counts
			// one action more than the record's tokens.
			claimed := strings.HasSuffix(rep.TagEnding, "claimed the win (not in the moves)")
			if claimed != (rep.Record.Game.Result().Termination == ClaimedWin) {
				t.Errorf("termination %s, but the ending from the tag is %q", rep.Record.Game.Result().Termination, rep.TagEnding)
			}
			if claimed || strings.HasSuffix(rep.TagEnding, "left (not in the moves)") {
				_, toks, _ := readPGN4(string(data), nil)
				if cm, ok := rep.Record.Tag("CurrentMove"); ok && cm != strconv.Itoa(len(toks)+1) {
					t.Errorf("ending from the tag (%s), but CurrentMove %s for %d tokens", rep.TagEnding, cm, len(toks))
				}
			}
			g := rep.Record.Game

			text := g.PGN4(rep.Record.Tags)
			back, err := ParsePGN4(text, nil)
			if err != nil {
				t.Fatalf("re-import of the export: %v\n%s", err, text)
			}
			sameGame(t, "PGN4 export", g, back.Game)

			enc, err := g.MarshalBinary()
			if err != nil {
				t.Fatalf("binary: %v", err)
			}
			var dec Game
			if err := dec.UnmarshalBinary(enc); err != nil {
				t.Fatalf("binary decode: %v", err)
			}
			sameGame(t, "binary", g, &dec)
		})
	}
}

func sameGame(t *testing.T, how string, want, got *Game) {
	t.Helper()
	if !slices.Equal(want.History(), got.History()) {
		t.Errorf("%s: history differs", how)
	}
	if want.FEN4() != got.FEN4() || want.Over() != got.Over() || want.Result() != got.Result() || want.Points() != got.Points() {
		t.Errorf("%s: FEN4 %q over %v result %+v points %v, want %q %v %+v %v", how,
			got.FEN4(), got.Over(), got.Result(), got.Points(), want.FEN4(), want.Over(), want.Result(), want.Points())
	}
}

// TestReplayReportsMismatches checks that Replay finds a disagreement
// rather than passing anything: a wrong mark, a wrong capture, a wrong
// result, an illegal move.
func TestReplayReportsMismatches(t *testing.T) {
	t.Parallel()
	head := `[Variant "FFA"]
[RuleVariants "DeadKingWalking EnPassant PromoteTo=D"]
[StartFen4 "4PC"]
[Red "a"]
[Blue "b"]
[Yellow "c"]
[Green "d"]
`
	cases := []struct {
		name, result, term, moves, want string
	}{
		{"agrees", "a: 0 - b: 0 - c: 0 - d: 60", "(Green +60)", "1. R .. R .. R", ""},
		{"points differ", "a: 0 - b: 0 - c: 0 - d: 61", "(Green +60)", "1. R .. R .. R", "end of game (ply 0): points [0 0 0 60], record [0 0 0 61]"},
		{"check mark the engine does not find", "a: 0 - b: 0 - c: 0 - d: 0", "Checkmate", "1. h2-h3+",
			`ply 0, token 1 "h2-h3+" (Red to move): marks "+", engine ""`},
		{"capture the engine does not find", "a: 0 - b: 0 - c: 0 - d: 0", "Checkmate", "1. h2xh3",
			`ply 0, token 1 "h2xh3" (Red to move): the record captures, the engine's move captures nothing`},
		{"piece letter the engine does not find", "a: 0 - b: 0 - c: 0 - d: 0", "Checkmate", "1. Bj1-i3",
			`ply 0, token 1 "Bj1-i3" (Red to move): the record moves a bishop, the engine a knight`},
		{"illegal move", "a: 0 - b: 0 - c: 0 - d: 0", "Checkmate", "1. h2-h5",
			`ply 0, token 1 "h2-h5" (Red to move): illegal move`},
		{"unknown ending", "a: 0 - b: 0 - c: 0 - d: 0", "abandoned", "1. h2-h3",
			"end of game (ply 1): unknown Termination tag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			text := head + `[Result "` + c.result + `"]` + "\n" + `[Termination "` + c.term + `"]` + "\n\n" + c.moves + "\n"
			rep, err := Replay(text, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if !rep.OK() {
					t.Fatalf("mismatches %v", rep.Mismatches)
				}
				return
			}
			if rep.OK() {
				t.Fatalf("no mismatch, want %q", c.want)
			}
			if got := rep.Mismatches[0].String(); len(got) < len(c.want) || got[:len(c.want)] != c.want {
				t.Fatalf("first mismatch %q, want prefix %q", got, c.want)
			}
		})
	}
}

// A check mark the engine cannot explain is reported with the position
// before the move and, for every king but the mover's, the pieces that
// attack it after the move, dead ones named so: what a reader of the
// record needs to find the rule the site followed (issue 23). Here Red's
// knight opens a dead rook's line onto Green's walking king; the engine
// counts no check, the record marks one.
func TestReplayExplainsMarks(t *testing.T) {
	t.Parallel()
	start := fen(t, "R", "0,1,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0", "rK:h1 rN:n6 bK:a7 bR:n4 yK:g14 gK:n8", "zombie:0,0,0,1")
	text := "[RuleVariants \"DeadKingWalking EnPassant PromoteTo=D\"]\n[StartFen4 \"" + start + "\"]\n" +
		"[Result \"Red: 0 - Blue: 0 - Yellow: 0 - Green: 0\"]\n\n1. Nn6-l5+\n"
	for _, rs := range []RuleSet{ChesscomFFA(), FourKingdoms()} {
		t.Run(rs.Name, func(t *testing.T) {
			t.Parallel()
			rep, err := Replay(text, &rs)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Mismatches) == 0 {
				t.Fatal("no mismatch")
			}
			m := rep.Mismatches[0]
			want := `marks "+", engine "" (checks [], newly [], out []; kings after the move: Blue a7 out by none; Yellow g14 live by none; Green n8 zombie by bRn4(dead))`
			if m.What != want {
				t.Errorf("what %q\nwant %q", m.What, want)
			}
			g, err := NewGame(rs, 0, start)
			if err != nil {
				t.Fatal(err)
			}
			if m.Position != g.FEN4() {
				t.Errorf("position %q, want the start %q", m.Position, g.FEN4())
			}
		})
	}
}

func TestReplayUnreadableRecord(t *testing.T) {
	t.Parallel()
	_, err := Replay("[RuleSet \"chess960\"]\n\n1. h2-h3\n", nil)
	if !errors.Is(err, ErrBadRecord) || !errors.Is(err, ErrUnknownRules) {
		t.Fatalf("err %v, want ErrBadRecord and ErrUnknownRules", err)
	}
}

// FuzzReplay feeds Replay arbitrary move text after a valid header: it
// must never panic, and a record it accepts must export and re-import.
func FuzzReplay(f *testing.F) {
	head := "[RuleVariants \"DeadKingWalking\"]\n[Result \"Red: 0 - Blue: 0 - Yellow: 0 - Green: 60\"]\n[Termination \"(Green +60)\"]\n\n"
	for _, s := range []string{
		"1. R .. R .. R",
		"1. h2-h3+ .. b7-c7 .. i13-i12 .. m8-l8\n2. Qg1-j4 .. Qa8-b7 .. S .. Rg",
		"1. h2-h4 .. Kb7-c7T .. R .. Kn8-m8R",
		"1. e2-e4 .. b7xc7 .. O-O .. O-O-O#S",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, moves string) {
		rep, err := Replay(head+moves, nil)
		if err != nil {
			return
		}
		g := rep.Record.Game
		back, err := ParsePGN4(g.PGN4(rep.Record.Tags), nil)
		if err != nil {
			t.Fatalf("re-import: %v", err)
		}
		sameGame(t, "PGN4 export", g, back.Game)
	})
}

// TestReplayOfEngineExports replays the engine's own PGN4 exports of
// random games, finished or not, under both rule sets: no mismatch.
func TestReplayOfEngineExports(t *testing.T) {
	t.Parallel()
	for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
		t.Run(rs.Name, func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(12) {
				g := playRandom(t, rs, seed, 40+int(seed)*60)
				rep, err := Replay(g.PGN4([]Tag{{Name: "Event", Value: "test"}}), nil)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				for _, m := range rep.Mismatches {
					t.Errorf("seed %d: %s", seed, m)
				}
				if rep.Points != g.ResultPoints() {
					t.Errorf("seed %d: points %v, game %v", seed, rep.Points, g.ResultPoints())
				}
			}
		})
	}
}

// TestPGN4CorpusClaims: the site's records of a claimed win (docs/rules.md
// 8.3 and 13.4: two live players, the winner named by the Termination tag
// ahead by more than 20) replay as the winner's claim, point for point. It
// names them so that the corpus test cannot pass without any claim.
func TestPGN4CorpusClaims(t *testing.T) {
	t.Parallel()
	files := corpusFiles(t)
	for _, name := range []string{"cc_game_0240.pgn4", "cc_game_0250.pgn4"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := filepath.Join(filepath.Dir(files[0]), name)
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Replay(string(data), nil)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			end := parseSiteEnd(rep.RecordedTermination)
			r := rep.Record.Game.Result()
			if !rep.OK() || end.kind != siteEndWinner || r.Termination != ClaimedWin || r.Ranking[0] != end.winner {
				t.Errorf("%s, ranking %v, mismatches %v: want the claimed win of the tag %q", r.Termination, r.Ranking, rep.Mismatches, rep.RecordedTermination)
			}
			h := rep.Record.Game.History()
			if last := h[len(h)-1]; last.Kind != ActionClaim || last.Seat != end.winner {
				t.Errorf("last action %+v, want %s's claim", last, end.winner)
			}
		})
	}
}
