package rules

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// Two live players (Red, Green), Blue out, Yellow a zombie with a bare
// king: the position of a claim. Points are Red, Blue, Yellow, Green.
const claimPieces = "rK:h1 rQ:e4 bK:a5 yK:g14 gK:n8 gQ:e10"

func claimHeader(red, green int) string {
	return "0,1,0,0-0,0,0,0-0,0,0,0-" + strconv.Itoa(red) + ",0,5," + strconv.Itoa(green) + "-0"
}

func withClaim(rs RuleSet) RuleSet { rs.ClaimWin = true; return rs }

func withAutoClaim(rs RuleSet) RuleSet { rs.AutoClaimWin = true; return rs }

func TestSec8ClaimWin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		rs         RuleSet
		toMove     string
		red, green int
		ext        string // Yellow's zombie marker, or "" for three live players
		claimer    Seat
		allowed    bool
		wantResult [NumSeats]int // when allowed
	}{
		// Red leads by 21: Red gets 20 for Yellow's zombie king and 20 for Green's king.
		{"chesscom-ffa leader by 21", ChesscomFFA(), "R", 50, 29, "zombie:0,0,1,0", Red, true, [NumSeats]int{90, 0, 5, 29}},
		{"chesscom-ffa leader not on turn", ChesscomFFA(), "G", 50, 29, "zombie:0,0,1,0", Red, true, [NumSeats]int{90, 0, 5, 29}},
		{"chesscom-ffa lead of exactly 20", ChesscomFFA(), "R", 49, 29, "zombie:0,0,1,0", Red, false, [NumSeats]int{}},
		{"chesscom-ffa trailing player", ChesscomFFA(), "R", 50, 29, "zombie:0,0,1,0", Green, false, [NumSeats]int{}},
		{"chesscom-ffa out player", ChesscomFFA(), "R", 50, 29, "zombie:0,0,1,0", Blue, false, [NumSeats]int{}},
		{"chesscom-ffa zombie", ChesscomFFA(), "R", 50, 29, "zombie:0,0,1,0", Yellow, false, [NumSeats]int{}},
		{"chesscom-ffa three live players", ChesscomFFA(), "R", 50, 0, "", Red, false, [NumSeats]int{}},
		{"fourkingdoms default has no claim", FourKingdoms(), "R", 50, 29, "zombie:0,0,1,0", Red, false, [NumSeats]int{}},
		{"fourkingdoms with the option", withClaim(FourKingdoms()), "R", 50, 29, "zombie:0,0,1,0", Red, true, [NumSeats]int{90, 0, 5, 29}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := mustGame(t, c.rs, fen(t, c.toMove, claimHeader(c.red, c.green), claimPieces, c.ext))
			before := g.FEN4()
			if got := g.CanClaimWin(c.claimer); (got == nil) != c.allowed {
				t.Fatalf("CanClaimWin(%s) = %v, allowed %v", c.claimer, got, c.allowed)
			}
			eff, err := g.ClaimWin(c.claimer)
			if !c.allowed {
				if !errors.Is(err, ErrClaimNotAllowed) {
					t.Fatalf("ClaimWin(%s) = %v, want ErrClaimNotAllowed", c.claimer, err)
				}
				if g.Over() || g.FEN4() != before || len(g.History()) != 0 {
					t.Fatalf("a refused claim changed the game: over %v, %s", g.Over(), g.FEN4())
				}
				return
			}
			if err != nil {
				t.Fatalf("ClaimWin(%s): %v", c.claimer, err)
			}
			r := g.Result()
			if !g.Over() || !eff.GameOver || r.Termination != ClaimedWin || r.Points != c.wantResult || r.Ranking[0] != c.claimer {
				t.Fatalf("after the claim: over %v, %s, result %v, ranking %v; want claimed win %v", g.Over(), r.Termination, r.Points, r.Ranking, c.wantResult)
			}
			if !hasEventFor(eff, EventClaimedWin, c.claimer) || eff.Events[0].Auto {
				t.Errorf("events %+v: want a player's EventClaimedWin for %s", eff.Events, c.claimer)
			}
			if _, err := g.ClaimWin(c.claimer); !errors.Is(err, ErrGameOver) {
				t.Errorf("second claim: %v, want ErrGameOver", err)
			}
		})
	}
}

// TestSec8ClaimWinRecord: a claimed game writes its claim in PGN4 and in
// the binary encoding, and both read back to the same game.
func TestSec8ClaimWinRecord(t *testing.T) {
	t.Parallel()
	g := mustGame(t, ChesscomFFA(), fen(t, "R", claimHeader(40, 28), claimPieces, "zombie:0,0,1,0"))
	play(t, g, "Qe4xe10") // Red 49, Green to move: the claim comes off Red's turn
	if _, err := g.ClaimWin(Red); err != nil {
		t.Fatal(err)
	}
	text := g.PGN4(nil)
	if !strings.Contains(text, " .. Cr\n") && !strings.HasSuffix(strings.TrimSpace(text), "Cr") {
		t.Fatalf("PGN4 has no claim token Cr:\n%s", text)
	}
	rec, err := ParsePGN4(text, nil)
	if err != nil {
		t.Fatalf("ParsePGN4: %v\n%s", err, text)
	}
	if rec.Game.Result() != g.Result() || !rec.Game.Over() {
		t.Errorf("PGN4 read back: %+v, want %+v", rec.Game.Result(), g.Result())
	}
	rep, err := Replay(text, nil)
	if err != nil || !rep.OK() {
		t.Errorf("Replay: %v %+v", err, rep.Mismatches)
	}
	data, err := g.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back Game
	if err := back.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	h := back.History()
	if back.Result() != g.Result() || len(h) != len(g.History()) || h[len(h)-1] != (Action{Kind: ActionClaim, Seat: Red}) {
		t.Errorf("binary read back: %+v %v, want %+v", back.Result(), back.History(), g.Result())
	}
	// A claim token in a record where it is not allowed is refused.
	if _, err := ParsePGN4(strings.Replace(text, "Cr", "Cg", 1), nil); !errors.Is(err, ErrClaimNotAllowed) {
		t.Errorf("ParsePGN4 with the trailing player's claim: %v, want ErrClaimNotAllowed", err)
	}
}

func TestSec8MaxReachablePoints(t *testing.T) {
	t.Parallel()
	for _, rs := range []RuleSet{ChesscomFFA(), FourKingdoms()} {
		g := mustGame(t, rs, fen(t, "R", claimHeader(40, 3), claimPieces, "zombie:0,0,1,0"))
		// Green: its 3, Red's king 20 and queen 9, Yellow's zombie king
		// 20; Blue is out and pays nothing.
		if got, want := g.MaxReachablePoints(Green), 3+20+9+20; got != want {
			t.Errorf("%s: MaxReachablePoints(Green) = %d, want %d", rs.Name, got, want)
		}
		// Red: its 40, Green's king 20 and queen 9, Yellow's king 20.
		if got, want := g.MaxReachablePoints(Red), 40+20+9+20; got != want {
			t.Errorf("%s: MaxReachablePoints(Red) = %d, want %d", rs.Name, got, want)
		}
	}
}

func TestSec8AutoClaim(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		rs         RuleSet
		red, green int
		over       bool
		wantResult [NumSeats]int
	}{
		// Red takes the queen: Red 54, Green can reach 0+20+9+20 = 49.
		{"chesscom-ffa option, out of reach", withAutoClaim(ChesscomFFA()), 45, 0, true, [NumSeats]int{94, 0, 5, 0}},
		{"fourkingdoms option, out of reach", withAutoClaim(FourKingdoms()), 45, 0, true, [NumSeats]int{94, 0, 5, 0}},
		// Red 49, Green can reach 49 and wins the tie as the later seat.
		{"chesscom-ffa option, tie the trailing player would win", withAutoClaim(ChesscomFFA()), 40, 0, false, [NumSeats]int{}},
		{"fourkingdoms option, reachable", withAutoClaim(FourKingdoms()), 30, 0, false, [NumSeats]int{}},
		{"chesscom-ffa as played (no auto-claim)", ChesscomFFA(), 45, 0, false, [NumSeats]int{}},
		{"fourkingdoms default (no auto-claim)", FourKingdoms(), 45, 0, false, [NumSeats]int{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := mustGame(t, c.rs, fen(t, "R", claimHeader(c.red, c.green), claimPieces, "zombie:0,0,1,0"))
			if g.Over() {
				t.Fatalf("over before the move: %s", g.Result().Termination)
			}
			eff := play(t, g, "Qe4xe10")
			if g.Over() != c.over {
				t.Fatalf("over %v (%s), want %v; points %v, Green can reach %d", g.Over(), g.Result().Termination, c.over, g.Points(), g.MaxReachablePoints(Green))
			}
			if !c.over {
				return
			}
			r := g.Result()
			if r.Termination != ClaimedWin || r.Points != c.wantResult {
				t.Errorf("%s %v, want claimed win %v", r.Termination, r.Points, c.wantResult)
			}
			n := 0
			for _, e := range eff.Events {
				if e.Kind == EventClaimedWin {
					n++
					if !e.Auto || e.Seat != Red {
						t.Errorf("claim event %+v: want Red's, made by the server", e)
					}
				}
			}
			if n != 1 || len(g.History()) != 1 {
				t.Errorf("%d claim events, history %v: want one event and no claim action", n, g.History())
			}
		})
	}
}

// TestRuleOptionsStored: a game whose rule set turns its options
// (OptionNames) on or off keeps them through the binary encoding and its
// PGN4 record, so a stored auto-claimed game decodes claimed; any other
// change to a named rule set is refused.
func TestRuleOptionsStored(t *testing.T) {
	t.Parallel()
	noClaim := ChesscomFFA()
	noClaim.ClaimWin = false
	for _, c := range []struct {
		name    string
		rs      RuleSet
		tag     string // the RuleOptions tag, "" for none
		claimed bool   // the move ends the game by the server's claim
	}{
		{"named rule set", FourKingdoms(), "", false},
		{"fourkingdoms with auto-claim", withAutoClaim(FourKingdoms()), "AutoClaimWin", true},
		{"fourkingdoms with claims and auto-claim", withClaim(withAutoClaim(FourKingdoms())), "ClaimWin AutoClaimWin", true},
		{"chesscom-ffa without claims", noClaim, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := mustGame(t, c.rs, fen(t, "R", claimHeader(45, 0), claimPieces, "zombie:0,0,1,0"))
			play(t, g, "Qe4xe10")
			if g.Over() != c.claimed || (c.claimed && g.Result().Termination != ClaimedWin) {
				t.Fatalf("over %v (%s), want claimed %v", g.Over(), g.Result().Termination, c.claimed)
			}
			data, err := g.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var back Game
			if err := back.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			if back.Rules() != c.rs {
				t.Errorf("binary: rule set %+v, want %+v", back.Rules(), c.rs)
			}
			sameGame(t, "binary", g, &back)

			text := g.PGN4(nil)
			wantTag := c.tag != "" || c.rs.ClaimWin != mustRuleSet(t, c.rs.Name).ClaimWin
			if got := strings.Contains(text, `[RuleOptions "`+c.tag+`"]`); got != wantTag {
				t.Errorf("PGN4 RuleOptions tag %q present %v, want %v:\n%s", c.tag, got, wantTag, text)
			}
			rec, err := ParsePGN4(text, nil)
			if err != nil {
				t.Fatalf("ParsePGN4: %v\n%s", err, text)
			}
			if rec.Game.Rules() != c.rs {
				t.Errorf("PGN4: rule set %+v, want %+v", rec.Game.Rules(), c.rs)
			}
			sameGame(t, "PGN4", g, rec.Game)
		})
	}
	modified := FourKingdoms()
	modified.DrawPoints = 5
	if _, err := mustGame(t, modified, "").MarshalBinary(); err == nil {
		t.Error("MarshalBinary of a rule set changed beyond its options: no error")
	}
	if _, err := ParsePGN4("[RuleSet \"fourkingdoms\"]\n[RuleOptions \"Premoves\"]\n\n", nil); !errors.Is(err, ErrBadRecord) {
		t.Errorf("ParsePGN4 with an unknown option: %v, want ErrBadRecord", err)
	}
}

func mustRuleSet(t *testing.T, name string) RuleSet {
	t.Helper()
	rs, ok := RuleSetByName(name)
	if !ok {
		t.Fatalf("no rule set %q", name)
	}
	return rs
}
