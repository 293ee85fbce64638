package rules

import "testing"

// The largest site writes its FEN4 with its own colours (Blue west, Green
// east) and its own extension block; under chesscom-ffa, whose seating is
// the site's, its start position reads as the engine's start.
func TestSiteFEN4(t *testing.T) {
	t.Parallel()
	const siteStart = "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-" +
		"3,yR,yN,yB,yK,yQ,yB,yN,yR,3/3,yP,yP,yP,yP,yP,yP,yP,yP,3/14/" +
		"bR,bP,10,gP,gR/bN,bP,10,gP,gN/bB,bP,10,gP,gB/bQ,bP,10,gP,gK/" +
		"bK,bP,10,gP,gQ/bB,bP,10,gP,gB/bN,bP,10,gP,gN/bR,bP,10,gP,gR/" +
		"14/3,rP,rP,rP,rP,rP,rP,rP,rP,3/3,rR,rN,rB,rQ,rK,rB,rN,rR,3"
	rs := ChesscomFFA()
	p, err := ParseFEN4(rs, siteStart)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.FEN4(), NewPosition(rs).FEN4(); got != want {
		t.Fatalf("the site's start under %s:\n%s\nwant\n%s", rs.Name, got, want)
	}

	// Red's pawn j2-j4 skipped j3; Blue (west) has resigned, the site's
	// block says so as the site writes it, before the board.
	pieces := "rK:h1 rP:j4 bK:a7 yK:g14 gK:n8 gP:k4"
	board := fen(t, "G", "", pieces, "")
	withBlock := board[:len(board)-len(boardOf(board))] + "{'enPassant':('j3:j4','','',''),'resigned':(false,true,false,false),'uniquify':94403}-" + boardOf(board)
	p, err = ParseFEN4(rs, withBlock)
	if err != nil {
		t.Fatalf("%v\n%s", err, withBlock)
	}
	if p.Status(Blue) != Zombie {
		t.Errorf("Blue %s, want a zombie ('resigned')", p.Status(Blue))
	}
	var l MoveList
	p.LegalMoves(Green, &l)
	found := false
	for _, m := range l.Moves[:l.N] {
		found = found || (m.EnPassant() && m.To().String() == "j3")
	}
	if !found {
		t.Errorf("no en passant k4xj3 from the site's 'enPassant' in %s", p.FEN4())
	}
	for _, bad := range []string{"{'enPassant':('j3:j5','','','')}", "{'enPassant':('j3:j4','')}", "{'resigned':(maybe,false,false,false)}"} {
		text := board[:len(board)-len(boardOf(board))] + bad + "-" + boardOf(board)
		if _, err := ParseFEN4(rs, text); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// boardOf returns the board field of a FEN4 (after the sixth '-').
func boardOf(fen4 string) string {
	n := 0
	for i := range len(fen4) {
		if fen4[i] == '-' {
			n++
			if n == 6 {
				return fen4[i+1:]
			}
		}
	}
	return ""
}
