package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// startMatch is the start position with Red to move, as GetMatch returns
// it to Red: fen4, pieces and Red's legal moves.
func startMatch(t *testing.T) *matchv1.Match {
	t.Helper()
	g, err := rules.NewGame(rules.FourKingdoms(), 1, "")
	if err != nil {
		t.Fatal(err)
	}
	m := &matchv1.Match{MatchId: "m1", Status: matchv1.MatchStatus_MATCH_STATUS_ACTIVE, RuleSet: "fourkingdoms", Fen4: g.FEN4(), ToMove: gamev1.Seat_SEAT_RED}
	for _, mv := range g.LegalMoves(rules.Red) {
		m.LegalMoves = append(m.LegalMoves, g.MoveText(mv))
	}
	for _, sq := range g.Squares() {
		m.Pieces = append(m.Pieces, &matchv1.PlacedPiece{Square: sq.Name, Seat: gamev1.Seat(sq.Seat + 1), Kind: gamev1.PieceKind(sq.Kind)})
	}
	for s := gamev1.Seat_SEAT_RED; s <= gamev1.Seat_SEAT_GREEN; s++ {
		m.Seats = append(m.Seats, &matchv1.SeatState{Seat: s, Status: gamev1.SeatStatus_SEAT_STATUS_LIVE, Player: &gamev1.Player{DisplayName: "P" + s.String()}})
	}
	return m
}

func TestCheckMove(t *testing.T) {
	t.Parallel()
	m := startMatch(t)
	tests := []struct {
		text     string
		wantMove string
		wantWhy  []string // fragments of the explanation
	}{
		{text: "h2-h4", wantMove: "h2-h4"},
		{text: "h2h3", wantMove: "h2-h3"},
		{text: "Nj1-i3", wantMove: "Nj1-i3"},
		{text: "h2-h5", wantWhy: []string{"not a legal move", "h2 can play", "h2-h3", "h2-h4"}},
		{text: "h1-h2", wantWhy: []string{"nothing of yours on h1 can move"}},
		{text: "hello", wantWhy: []string{"cannot read"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			move, why := checkMove(m, tt.text)
			if tt.wantMove != "" {
				if why != "" || !strings.HasSuffix(move, strings.TrimLeft(tt.wantMove, "KQRBNP")) || !slices.Contains(m.LegalMoves, move) {
					t.Fatalf("checkMove(%q) = %q, %q; want the legal move %q", tt.text, move, why, tt.wantMove)
				}
				return
			}
			if move != "" {
				t.Fatalf("checkMove(%q) accepted %q", tt.text, move)
			}
			for _, f := range tt.wantWhy {
				if !strings.Contains(why, f) {
					t.Errorf("checkMove(%q) says %q, want it to mention %q", tt.text, why, f)
				}
			}
		})
	}
}

func TestSquarePrefix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"h2-h4": "h2", "Qg1xh14": "g1", "n11-m11": "n11", "O-O": "", "x": "", "a": ""} {
		if got := squarePrefix(in); got != want {
			t.Errorf("squarePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderPlainBoard(t *testing.T) {
	t.Parallel()
	m := startMatch(t)
	m.LastMove = &gamev1.MoveEffects{Move: "h2-h4", Seat: gamev1.Seat_SEAT_RED, From: &gamev1.Square{Name: "h2"}, To: &gamev1.Square{Name: "h4"}}
	m.Seats[1].Status = gamev1.SeatStatus_SEAT_STATUS_ZOMBIE
	m.Seats[1].ExitReason = gamev1.ExitReason_EXIT_REASON_RESIGNED
	m.Pieces[0].Zombie = true
	var b bytes.Buffer
	render(&b, m, view{Me: gamev1.Seat_SEAT_RED})
	out := b.String()
	if strings.Contains(out, "\x1b[") {
		t.Fatal("plain mode wrote ANSI escapes")
	}
	lines := strings.Split(out, "\n")
	// Rank 1: three unplayable corner cells, then Red's back rank; the
	// rook on d1 was marked a zombie piece (lower-case letter).
	if want := "  1          rr rN rB rQ rK rB rN rR           1"; lines[14] != want {
		t.Errorf("rank 1 =\n%q, want\n%q", lines[14], want)
	}
	for _, want := range []string{"a  b  c", "yK", "gQ", "bK", "> Red", "(you)", "zombie, resigned", "last move: Red h2-h4", ".* "} {
		if !strings.Contains(out, want) {
			t.Errorf("board lacks %q:\n%s", want, out)
		}
	}
}

func TestCommandsNeedASession(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	env := func(k string) string {
		if k == "FK_HOME" {
			return t.TempDir()
		}
		return ""
	}
	err := run(context.Background(), []string{"rating"}, env, strings.NewReader(""), &out)
	if err == nil || !strings.Contains(err.Error(), "fk login") {
		t.Fatalf("rating without a session: %v, want a hint to log in", err)
	}
}
