package rules

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestFEN4StartPosition(t *testing.T) {
	t.Parallel()
	p := NewPosition(FourKingdoms())
	if got := p.FEN4(); got != StartFEN4 {
		t.Fatalf("start FEN4:\n got %s\nwant %s", got, StartFEN4)
	}
	q, err := ParseFEN4(FourKingdoms(), StartFEN4)
	if err != nil {
		t.Fatal(err)
	}
	if q.Hash() != p.Hash() {
		t.Fatalf("hash of parsed start differs")
	}
}

func TestFEN4TolerantInput(t *testing.T) {
	t.Parallel()
	// 'x' for corner squares, split numeric runs and whitespace.
	in := "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-\n x,x,x,yR,yN,yB,yK,yQ,yB,yN,yR,x,x,x /3,yP,yP,yP,yP,yP,yP,yP,yP,1,2/7,7/" +
		"gR,gP,10,bP,bR/gN,gP,10,bP,bN/gB,gP,10,bP,bB/gQ,gP,10,bP,bK/" +
		"gK,gP,10,bP,bQ/gB,gP,10,bP,bB/gN,gP,10,bP,bN/gR,gP,10,bP,bR/" +
		"14/3,rP,rP,rP,rP,rP,rP,rP,rP,3/3,rR,rN,rB,rQ,rK,rB,rN,rR,3\n"
	p, err := ParseFEN4(FourKingdoms(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.FEN4(); got != StartFEN4 {
		t.Fatalf("canonical form:\n got %s\nwant %s", got, StartFEN4)
	}
}

func TestFEN4Rejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, fen string }{
		{"empty", ""},
		{"short row", "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-13/14/14/14/14/14/14/14/14/14/14/14/14/14"},
		{"piece on corner", "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-rK,13/14/14/14/14/14/14/14/14/14/14/14/14/14"},
		{"bad seat", "Q-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-14/14/14/14/14/14/14/14/14/14/14/14/14/14"},
		{"bad piece", "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-3,rZ,10/14/14/14/14/14/14/14/14/14/14/14/14/14"},
		{"unknown extension", StartFEN4 + "-{foo:1}"},
	} {
		if _, err := ParseFEN4(FourKingdoms(), tc.fen); !errors.Is(err, ErrBadFEN4) {
			t.Errorf("%s: err = %v, want ErrBadFEN4", tc.name, err)
		}
	}
}

// TestRoundTripsOfRandomGames: for random games under both rule sets, the
// FEN4 of every reached position, the PGN4 record and the binary encoding
// all reproduce the game exactly.
func TestRoundTripsOfRandomGames(t *testing.T) {
	t.Parallel()
	for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
		t.Run(rs.Name, func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(12) {
				g := playRandom(t, rs, seed, 400)
				checkFENRoundTrip(t, rs, g.pos)
				// PGN4
				text := g.PGN4([]Tag{{"Event", "test"}})
				rec, err := ParsePGN4(text, nil)
				if err != nil {
					t.Fatalf("seed %d: reimport: %v\n%s", seed, err, text)
				}
				assertSameGame(t, g, rec.Game)
				if again := rec.Game.PGN4([]Tag{{"Event", "test"}}); again != text {
					t.Fatalf("seed %d: PGN4 export of the reimport differs", seed)
				}
				// binary
				data, err := g.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				var h Game
				if err := h.UnmarshalBinary(data); err != nil {
					t.Fatalf("seed %d: unmarshal: %v", seed, err)
				}
				assertSameGame(t, g, &h)
				data2, _ := h.MarshalBinary()
				if !bytes.Equal(data, data2) {
					t.Fatalf("seed %d: binary re-encoding differs", seed)
				}
			}
		})
	}
}

func checkFENRoundTrip(t *testing.T, rs RuleSet, p *Position) {
	t.Helper()
	f := p.FEN4()
	q, err := ParseFEN4(rs, f)
	if err != nil {
		t.Fatalf("parse own FEN4 %s: %v", f, err)
	}
	if q.FEN4() != f {
		t.Fatalf("FEN4 round trip:\n%s\n%s", f, q.FEN4())
	}
	if q.board != p.board || q.status != p.status || q.castle != p.castle || q.ep != p.ep ||
		q.points != p.points || q.frozen != p.frozen || q.resigned != p.resigned || q.halfmove != p.halfmove || q.hash != p.hash {
		t.Fatalf("FEN4 round trip lost state: %s", f)
	}
}

func assertSameGame(t *testing.T, want, got *Game) {
	t.Helper()
	if want.FEN4() != got.FEN4() {
		t.Fatalf("FEN4 differs:\n%s\n%s", want.FEN4(), got.FEN4())
	}
	if want.Result() != got.Result() || want.Over() != got.Over() || want.Ply() != got.Ply() {
		t.Fatalf("result differs: %+v over=%v ply=%d vs %+v over=%v ply=%d",
			want.Result(), want.Over(), want.Ply(), got.Result(), got.Over(), got.Ply())
	}
	wh, gh := want.History(), got.History()
	if !slices.EqualFunc(wh, gh, func(a, b Action) bool {
		return a.Kind == b.Kind && a.Seat == b.Seat && a.Move == b.Move && a.Text == b.Text
	}) {
		t.Fatalf("history differs")
	}
}

// TestBinarySize documents the size of a 200-ply game's encoding.
func TestBinarySize(t *testing.T) {
	t.Parallel()
	g, _ := NewGame(FourKingdoms(), 1, "")
	for g.Ply() < 200 && !g.Over() {
		ms := g.LegalMoves(g.ToMove())
		if _, err := g.Play(g.ToMove(), ms[(g.Ply()*7919)%len(ms)]); err != nil {
			t.Fatal(err)
		}
	}
	data, err := g.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d plies: %d bytes", g.Ply(), len(data))
	if len(data) > 2*g.Ply()+16 {
		t.Errorf("%d bytes for %d plies: more than 2 bytes a move", len(data), g.Ply())
	}
}

func TestFEN4RejectsArmiesBeyondMoveBuffer(t *testing.T) {
	t.Parallel()
	var pieces string
	n := 0
	for r := 4; r <= 11 && n < 21; r++ {
		for f := 'a'; f <= 'n' && n < 21; f++ {
			pieces += " rQ:" + string(f) + strconv.Itoa(r)
			n++
		}
	}
	if _, err := ParseFEN4(FourKingdoms(), fen(t, "R", "", pieces, "")); !errors.Is(err, ErrBadFEN4) {
		t.Fatalf("21 queens accepted: %v", err)
	}
	if _, err := ParseFEN4(FourKingdoms(), fen(t, "R", "", strings.Join([]string{"rK:h1", "rQ:e5", "rQ:e6"}, " "), "")); err != nil {
		t.Fatal(err)
	}
}

func TestCloneIsIndependentAndReplaysTheSame(t *testing.T) {
	t.Parallel()
	g := playRandom(t, FourKingdoms(), 11, 60)
	if g.Over() {
		t.Skip("game ended early")
	}
	if _, err := g.Resign(g.ToMove()); err != nil {
		t.Fatal(err)
	}
	c := g.Clone()
	for range 40 {
		if g.Over() {
			break
		}
		ms := g.LegalMoves(g.ToMove())
		if len(ms) == 0 {
			break
		}
		if _, err := g.Play(g.ToMove(), ms[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Play(c.ToMove(), ms[0]); err != nil {
			t.Fatal(err)
		}
	}
	assertSameGame(t, g, c)
	before := c.FEN4()
	if !g.Over() {
		ms := g.LegalMoves(g.ToMove())
		if _, err := g.Play(g.ToMove(), ms[len(ms)-1]); err != nil {
			t.Fatal(err)
		}
		if c.FEN4() != before {
			t.Fatal("playing on the original changed the clone")
		}
	}
}

// TestRoundTripsFromSetUpPositions: records and encodings of games that
// start from a FEN4 (with zombies, points and en passant state) reproduce.
func TestRoundTripsFromSetUpPositions(t *testing.T) {
	t.Parallel()
	starts := []string{
		perftCases[1].fen,
		perftCases[2].fen,
		"G-0,0,0,0-1,1,1,1-1,1,1,1-3,1,4,1-14-" + strings.SplitN(StartFEN4, "-", 7)[6] + "-{zombie:0,1,0,0;frozen:,1,,}",
	}
	for i, start := range starts {
		for _, rs := range []RuleSet{FourKingdoms(), ChesscomFFA()} {
			g, err := NewGame(rs, uint64(i), start)
			if err != nil {
				t.Fatalf("start %d: %v", i, err)
			}
			r := rand.New(rand.NewPCG(uint64(i), 8))
			for !g.Over() && g.Ply() < 150 {
				ms := g.LegalMoves(g.ToMove())
				if len(ms) == 0 {
					t.Fatalf("no moves for live %s", g.ToMove())
				}
				if _, err := g.Play(g.ToMove(), ms[r.IntN(len(ms))]); err != nil {
					t.Fatal(err)
				}
			}
			rec, err := ParsePGN4(g.PGN4(nil), nil)
			if err != nil {
				t.Fatalf("start %d %s: %v", i, rs.Name, err)
			}
			assertSameGame(t, g, rec.Game)
			data, err := g.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var h Game
			if err := h.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			assertSameGame(t, g, &h)
		}
	}
}

func TestUnmarshalBinaryRejectsGarbage(t *testing.T) {
	t.Parallel()
	g := playRandom(t, FourKingdoms(), 2, 50)
	data, _ := g.MarshalBinary()
	for _, bad := range [][]byte{nil, []byte("4K"), {'4', 'K', 9, 0, 0}, {'4', 'K', 1, 7, 0, 0}, data[:len(data)-1], append(slices.Clone(data), 0)} {
		var h Game
		if err := h.UnmarshalBinary(bad); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("UnmarshalBinary(%v) = %v, want ErrBadEncoding", bad, err)
		}
	}
}
