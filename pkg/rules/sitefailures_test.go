package rules

import (
	"strings"
	"testing"
)

// The rules below came from real records of the largest site that the
// engine could not replay (issue 23). Each test runs the same position
// under both rule sets; docs/rules.md section 13.3 states each rule.

// Blue's king a4 is already in check from Red's rook a11 when Red's queen
// takes its last squares while checking it too: the mate is given with
// check, which the site writes "+#" (section 13.3.11).
func TestSec13MateMarkedAsCheck(t *testing.T) {
	t.Parallel()
	const pieces = "rK:h1 rR:a11 rN:d6 rQ:g7 bK:a4 yK:k14 gK:n8"
	variant := ChesscomFFA()
	variant.MateMarkedAsCheck = false
	for _, c := range []struct {
		rs   RuleSet
		want string
	}{
		{ChesscomFFA(), "Qg7-d4+#"},
		// The default marks every king its mover attacks: "+#" by its
		// own rule.
		{FourKingdoms(), "Qg7-d4+#"},
		// Without the option the site's marks count only new checks.
		{variant, "Qg7-d4#"},
	} {
		g := mustGame(t, c.rs, fen(t, "R", "", pieces, ""))
		if !g.pos.InCheck(Blue) {
			t.Fatal("setup: Blue must be in check before the move")
		}
		eff := play(t, g, "Qg7-d4")
		am := eff.Moves[0]
		if am.Text != c.want || len(am.Mated) != 1 || am.Mated[0] != Blue {
			t.Errorf("%s (MateMarkedAsCheck %v): %q mated %v, want %q mating Blue", c.rs.Name, c.rs.MateMarkedAsCheck, am.Text, am.Mated, c.want)
		}
	}
}

// Blue, to move, is in check from Red's rook a11; only its bishop can
// block. When Blue resigns, its army dies and its king alone has no way
// out: under chesscom-ffa it is mated at once, by nobody, and the record
// writes "R#" (section 13.3.12). Under fourkingdoms the whole army keeps
// moving, so the zombie blocks.
func TestSec13LeaveMate(t *testing.T) {
	t.Parallel()
	const pieces = "rK:h1 rR:a11 rR:b11 bK:a4 bB:c7 yK:k14 gK:n8"
	for _, rs := range []RuleSet{ChesscomFFA(), FourKingdoms()} {
		g := mustGame(t, rs, fen(t, "B", "", pieces, ""))
		for _, m := range g.LegalMoves(Blue) {
			if m.Piece() == King || !g.pos.InCheck(Blue) {
				t.Fatalf("%s: setup: Blue in check %v, moves %v; want only blocks", rs.Name, g.pos.InCheck(Blue), moveTexts(g, Blue))
			}
		}
		eff, err := g.Resign(Blue)
		if err != nil {
			t.Fatal(err)
		}
		mated := hasEventFor(eff, EventMatedOnTurn, Blue)
		switch rs.LeaveMate {
		case true:
			if !mated || g.Status(Blue) != Out || g.ToMove() != Yellow || g.Points() != [NumSeats]int{} {
				t.Errorf("%s: mated %v, Blue %s, %s to move, points %v; want mated at once, out, Yellow to move, nobody scoring",
					rs.Name, mated, g.Status(Blue), g.ToMove(), g.Points())
			}
			if h := g.History(); !h[len(h)-1].Mated {
				t.Errorf("%s: the resignation is not recorded as mating", rs.Name)
			}
			if pgn := g.PGN4(nil); !strings.Contains(pgn, "1. R#\n") {
				t.Errorf("%s: PGN4 does not write R#:\n%s", rs.Name, pgn)
			}
		default:
			if mated || g.Status(Blue) != Zombie || len(eff.Moves) != 1 || eff.Moves[0].Move.Piece() != Bishop {
				t.Errorf("%s: mated %v, Blue %s, moves %+v; want the zombie to block", rs.Name, mated, g.Status(Blue), eff.Moves)
			}
		}
	}
}

// A record's "R#" must be a leave the engine finds mating, and a plain "R"
// one it does not; export and import keep it.
func TestReplayLeaveMate(t *testing.T) {
	t.Parallel()
	start := fen(t, "B", "", "rK:h1 rR:a11 rR:b11 bK:a4 bB:c7 yK:k14 gK:n8", "")
	record := func(leave string) string {
		return "[RuleVariants \"DeadKingWalking EnPassant PromoteTo=D\"]\n[StartFen4 \"" + start + "\"]\n" +
			"[Result \"Red: 0 - Blue: 0 - Yellow: 0 - Green: 0\"]\n\n1. " + leave + " .. Kk14-j14\n"
	}
	for _, c := range []struct {
		leave string
		ok    bool
	}{{"R#", true}, {"T#", true}, {"R", false}} {
		rep, err := Replay(record(c.leave), nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() != c.ok {
			t.Errorf("%q: OK %v, want %v: %v", c.leave, rep.OK(), c.ok, rep.Mismatches)
		}
		if !c.ok {
			continue
		}
		g := rep.Record.Game
		back, err := ParsePGN4(g.PGN4(nil), nil)
		if err != nil {
			t.Fatalf("%q: re-import: %v\n%s", c.leave, err, g.PGN4(nil))
		}
		if back.Game.FEN4() != g.FEN4() || back.Game.Status(Blue) != Out {
			t.Errorf("%q: re-imported game differs", c.leave)
		}
	}
}

// Red's queen checks Blue's and Yellow's kings (both live) from g9 and g10
// in turn, the kings step back and forth: the board repeats, but every
// double check pays Red +1 under chesscom-ffa, and the site's position
// counts the points, so the game goes on (section 13.3.13). Under
// fourkingdoms (no check bonus) and under chesscom-ffa without the option
// it ends by repetition.
func TestSec13RepetitionCountsPoints(t *testing.T) {
	t.Parallel()
	const pieces = "rK:h1 rQ:g10 bK:e9 yK:j9 gK:n8"
	cycle := []string{"Qg10-g9", "Ke9-e10", "Kj9-j10", "Kn8-n7", "Qg9-g10", "Ke10-e9", "Kj10-j9", "Kn7-n8"}
	variant := ChesscomFFA()
	variant.RepetitionCountsPoints = false
	for _, c := range []struct {
		rs       RuleSet
		wantOver bool
	}{{ChesscomFFA(), false}, {FourKingdoms(), true}, {variant, true}} {
		g := mustGame(t, c.rs, fen(t, "R", "", pieces, ""))
		for round := 0; round < 3 && !g.Over(); round++ {
			for _, m := range cycle {
				if g.Over() {
					break
				}
				play(t, g, m)
			}
		}
		if g.Over() != c.wantOver || (c.wantOver && g.Result().Termination != Repetition) {
			t.Errorf("%s (RepetitionCountsPoints %v): over %v (%s) after %d plies, points %v; want over by repetition: %v",
				c.rs.Name, c.rs.RepetitionCountsPoints, g.Over(), g.Result().Termination, g.Ply(), g.Points(), c.wantOver)
		}
		if !c.wantOver && g.Points()[Red] != 6 {
			t.Errorf("%s: Red has %d points after six double checks, want 6", c.rs.Name, g.Points()[Red])
		}
	}
}

// Two live players are left, Red with a queen and Green with a bare king;
// Yellow is a zombie. Red resigns: Green cannot mate anyone, so under
// chesscom-ffa the game is drawn by insufficient material: 10 each, and
// Green also gets 20 for Yellow's zombie king (the site's "Blue +30, Green
// +10" in cc_game_0111). Under fourkingdoms Green is the last player
// standing with 20 per zombie king. A last player with more than a king
// is the last player standing under both (docs/rules.md section 13.3.14).
func TestSec13InsufficientMaterialAfterLeave(t *testing.T) {
	t.Parallel()
	const header = "0,1,0,0-0,0,0,0-0,0,0,0-30,0,5,40-0"
	for _, c := range []struct {
		name, pieces string
		rs           RuleSet
		term         Termination
		result       [NumSeats]int
	}{
		{"bare king, chesscom-ffa", "rK:h1 rQ:e4 bK:a5 yK:g14 gK:n8", ChesscomFFA(), BareKings, [NumSeats]int{40, 0, 5, 70}},
		{"bare king, fourkingdoms", "rK:h1 rQ:e4 bK:a5 yK:g14 gK:n8", FourKingdoms(), LastPlayerStanding, [NumSeats]int{30, 0, 5, 80}},
		{"king and pawn, chesscom-ffa", "rK:h1 rQ:e4 bK:a5 yK:g14 gK:n8 gP:m4", ChesscomFFA(), LastPlayerStanding, [NumSeats]int{30, 0, 5, 80}},
	} {
		g := mustGame(t, c.rs, fen(t, "R", header, c.pieces, "zombie:0,0,1,0"))
		if _, err := g.Resign(Red); err != nil {
			t.Fatal(err)
		}
		if r := g.Result(); !g.Over() || r.Termination != c.term || r.Points != c.result {
			t.Errorf("%s: over %v, %s, result %v; want %s, %v", c.name, g.Over(), r.Termination, r.Points, c.term, c.result)
		}
	}
}
