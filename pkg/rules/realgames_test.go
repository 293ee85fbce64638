package rules

import (
	"strings"
	"testing"
)

// The rules the largest site's records taught (docs/rules-engine.md, "Rules
// the corpus taught us"), one scenario each, so that they stay checked
// where the records are absent.

func TestCorpusRuleCheckMarks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, pieces, move string
		chesscom, fk       string
	}{
		// Red's knight opens Yellow's queen line to Blue's king: the site
		// marks the check, though Red gives none.
		{"third player's line opened", "rK:h1 rN:h8 bK:d8 yQ:k8 yK:g14 gK:n11", "Nh8-g6", "Nh8-g6+", "Nh8-g6"},
		// Blue is in check by Red's queen already: another Red move does
		// not check it again on the site.
		{"check already given", "rK:h1 rQ:d4 bK:d8 yK:g14 gK:n11", "Kh1-i1", "Kh1-i1", "Kh1-i1+"},
		// Capturing a king puts its owner out: "#" on the site.
		{"king captured", "rK:h1 rQ:d4 bK:d8 yK:g14 gK:n11", "Qd4xd8", "Qd4xKd8#", "Qd4xKd8"},
	}
	for _, c := range cases {
		for _, rs := range []RuleSet{ChesscomFFA(), FourKingdoms()} {
			t.Run(c.name+"/"+rs.Name, func(t *testing.T) {
				t.Parallel()
				g := mustGame(t, rs, fen(t, "R", "", c.pieces, ""))
				eff := play(t, g, c.move)
				want := c.fk
				if rs.Name == "chesscom-ffa" {
					want = c.chesscom
				}
				if got := eff.Moves[0].Text; got != want {
					t.Fatalf("text %q, want %q (checks %v, marked %v)", got, want, eff.Moves[0].Checks, eff.Moves[0].MarkedChecks)
				}
			})
		}
	}
}

// A record's "Kh1xNh2T" is a time loss on the seat's turn followed by its
// walking king's move in the same turn: the capture scores nothing for the
// result, and the turn then passes.
func TestCorpusRuleMoveAfterTimeLossIsTheZombies(t *testing.T) {
	t.Parallel()
	start := fen(t, "R", "", "rK:h1 rR:d1 bN:h2 bK:b8 yK:g14 yR:k14 gK:m8 gR:n4", "")
	record := func(moves string) string {
		return "[RuleSet \"chesscom-ffa\"]\n[StartFen4 \"" + start + "\"]\n\n" + moves + "\n"
	}
	rec, err := ParsePGN4(record("1. Kh1xNh2T .. Kb8-b9"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := rec.Game
	if g.Status(Red) != Zombie || g.ResultPoints()[Red] != 0 || g.Points()[Red] != 3 || g.ToMove() != Yellow {
		t.Fatalf("Red %s result %v points %v, %s to move", g.Status(Red), g.ResultPoints(), g.Points(), g.ToMove())
	}
	h := g.History()
	if len(h) != 3 || h[0].Kind != ActionTimeOut || !h[0].KeepTurn || h[1].Seat != Red || !h[1].Zombie {
		t.Fatalf("history %+v", h)
	}
	text := g.PGN4(nil)
	if !strings.Contains(text, "1. Kh1xNh2T .. Kb8-b9") {
		t.Fatalf("export:\n%s", text)
	}
	back, err := ParsePGN4(text, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameGame(t, "PGN4", g, back.Game)
	data, err := g.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var dec Game
	if err := dec.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	sameGame(t, "binary", g, &dec)

	// A lone "T" passes the turn without a move.
	rec, err = ParsePGN4(record("1. T .. Kb8-b9"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := rec.Game; g.Status(Red) != Zombie || g.Points()[Red] != 0 || g.ToMove() != Yellow {
		t.Fatalf("lone T: Red %s points %v, %s to move", g.Status(Red), g.Points(), g.ToMove())
	}
	// The move must be the zombie's: a rook cannot move after the loss,
	// and a failed token changes nothing.
	g2 := mustGame(t, ChesscomFFA(), start)
	g2.manualZombies = true
	if err := applyToken(g2, "Rd1-d5T"); err == nil {
		t.Fatal("a dead rook moved after the time loss")
	}
	if g2.Status(Red) != Live || len(g2.History()) != 0 {
		t.Fatalf("failed token changed the game: Red %s, history %v", g2.Status(Red), g2.History())
	}
}

// The old "4PCo" layout: Blue's and Green's kings stand where their queens
// stand in the standard start, and castle two squares toward each rook.
func TestCorpusRuleOldLayoutCastling(t *testing.T) {
	t.Parallel()
	fen4, ok := namedStart("4PCo")
	if !ok {
		t.Fatal("4PCo unknown")
	}
	g := mustGame(t, ChesscomFFA(), fen4)
	for _, sq := range []struct {
		name string
		seat Seat
		kind PieceKind
	}{{"a8", Blue, King}, {"a7", Blue, Queen}, {"n7", Green, King}, {"n8", Green, Queen}, {"g14", Yellow, King}, {"h1", Red, King}} {
		q, _ := ParseSquare(sq.name)
		if s, k, _, ok := g.pos.PieceAt(q); !ok || s != sq.seat || k != sq.kind {
			t.Errorf("%s: %s %s, want %s %s", sq.name, s, k, sq.seat, sq.kind)
		}
	}
	header := "0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0"
	pieces := "rK:h1 bK:a8 bR:a4 bR:a11 yK:g14 gK:n7 gR:n4 gR:n11"
	cases := []struct {
		seat                       string
		move, king, rook, kingFrom string
	}{
		{"B", "O-O", "a10", "a9", "a8"},
		{"B", "O-O-O", "a6", "a7", "a8"},
		{"G", "O-O", "n5", "n6", "n7"},
		{"G", "O-O-O", "n9", "n8", "n7"},
	}
	for _, c := range cases {
		t.Run(c.seat+" "+c.move, func(t *testing.T) {
			t.Parallel()
			g := mustGame(t, ChesscomFFA(), fen(t, c.seat, header, pieces, ""))
			s := g.ToMove()
			play(t, g, c.move)
			for _, want := range []struct {
				sq   string
				kind PieceKind
			}{{c.king, King}, {c.rook, Rook}} {
				q, _ := ParseSquare(want.sq)
				if ps, k, _, ok := g.pos.PieceAt(q); !ok || ps != s || k != want.kind {
					t.Errorf("%s after %s: %s %s, want %s %s", want.sq, c.move, ps, k, s, want.kind)
				}
			}
			if q, _ := ParseSquare(c.kingFrom); g.pos.board[q] != empty {
				t.Errorf("%s not empty", c.kingFrom)
			}
		})
	}
}

// The site's 50-move rule counts moves of live players only, reset by a
// pawn move or a capture that scores, and ends the game when a live
// player's turn comes; a draw pays each live player 10 and shares the
// zombie kings' 20 points.
func TestCorpusRuleNoProgressCountsLiveMoves(t *testing.T) {
	t.Parallel()
	rs := ChesscomFFA()
	rs.NoProgressLiveMoves = 6
	g := mustGame(t, rs, fen(t, "R", "", "rK:e4 rR:d1 bK:b8 yK:g11 gK:k7 gR:n11", "zombie:0,1,0,0"))
	moves := []string{"Ke4-e5", "Kg11-g10", "Kk7-k6", "Ke5-e6", "Kg10-g9", "Kk6-k5"}
	for i, m := range moves {
		if g.Over() {
			t.Fatalf("over after %d live moves", i)
		}
		play(t, g, m)
	}
	if !g.Over() || g.Result().Termination != NoProgress {
		t.Fatalf("over %v %s after %d live moves and %d plies", g.Over(), g.Result().Termination, len(moves), g.Ply())
	}
	if g.Ply() <= len(moves) {
		t.Fatalf("ply %d: the zombie's moves did not happen in between", g.Ply())
	}
	// 10 for the draw and a third of the zombie king's 20, rounded.
	if got := g.Points(); got[Red] != 17 || got[Yellow] != 17 || got[Green] != 17 {
		t.Fatalf("points %v, want 17 for each live player", got)
	}
}

func TestCorpusRuleDrawSharesZombieKings(t *testing.T) {
	t.Parallel()
	pieces := "rK:h1 bK:b8 yK:g14 gK:m8"
	header := "0,0,1,0-0,0,0,0-0,0,0,0-0,0,0,0-0"
	for _, c := range []struct {
		rs   RuleSet
		want [NumSeats]int
	}{{ChesscomFFA(), [NumSeats]int{20, 0, 0, 20}}, {FourKingdoms(), [NumSeats]int{10, 0, 0, 10}}} {
		g := mustGame(t, c.rs, fen(t, "R", header, pieces, "zombie:0,1,0,0"))
		if !g.Over() || g.Result().Termination != BareKings || g.Points() != c.want {
			t.Errorf("%s: over %v %s points %v, want bare kings %v", c.rs.Name, g.Over(), g.Result().Termination, g.Points(), c.want)
		}
	}
}

// The site's endings that have no move in the record come from the
// Termination tag.
func TestReplaySiteEndings(t *testing.T) {
	t.Parallel()
	head := "[RuleVariants \"DeadKingWalking\"]\n"
	cases := []struct {
		name, start, result, term, moves string
		wantTerm                         Termination
		fromTag                          bool // the ending needs the tag
	}{
		{"last resignation left out", "", "Red: 0 - Blue: 0 - Yellow: 0 - Green: 60", "(Green +60)", "1. R .. R", LastPlayerStanding, true},
		{"mating move left out",
			"rK:h1 rR:b4 rQ:c4 bK:a5 bP:b6 yK:g14 gK:n8", "Red: 20 - Blue: 0 - Yellow: 0 - Green: 0", "Checkmate", "", LastPlayerStanding, true},
		// Red resigns against a bare king: a draw by insufficient
		// material, from the moves alone.
		{"insufficient material after a resignation", "rK:h1 rQ:e4 bK:a5 yK:g14 gK:n8",
			"Red: 10 - Blue: 0 - Yellow: 0 - Green: 10", "(insuff. material; Red +10, Green +10)", "1. Qe4-e5 .. Kn8-n9\n2. R", BareKings, false},
		{"insufficient material, resignation left out", "rK:h1 rQ:e4 bK:a5 yK:g14 gK:n8",
			"Red: 10 - Blue: 0 - Yellow: 0 - Green: 10", "(insuff. material; Red +10, Green +10)", "1. Qe4-e5 .. Kn8-n9", BareKings, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			start := "4PC"
			if c.start != "" {
				out := "0,0,1,1"
				if strings.HasPrefix(c.name, "insufficient") {
					out = "0,1,1,0"
				}
				start = fen(t, "R", out+"-0,0,0,0-0,0,0,0-0,0,0,0-0", c.start, "")
			}
			text := head + "[StartFen4 \"" + start + "\"]\n[Result \"" + c.result + "\"]\n[Termination \"" + c.term + "\"]\n\n" + c.moves + "\n"
			rep, err := Replay(text, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.Termination != c.wantTerm {
				t.Fatalf("mismatches %v, termination %s, want %s", rep.Mismatches, rep.Termination, c.wantTerm)
			}
			if (rep.TagEnding != "") != c.fromTag {
				t.Fatalf("TagEnding %q, want one: %v", rep.TagEnding, c.fromTag)
			}
			// The same record with other points is a mismatch.
			wrong := strings.Replace(text, ": 0 - Yellow", ": 1 - Yellow", 1)
			if rep, err := Replay(wrong, nil); err != nil || rep.OK() {
				t.Fatalf("wrong points accepted: %v %v", err, rep)
			}
		})
	}
	if e := parseSiteEnd("Game over. (Red +20)"); e.kind != siteEndWinner || e.winner != Red || e.bonus != 20 {
		t.Errorf("\"Game over. (Red +20)\" read as %+v", e)
	}
}
