package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// view says how to draw a board.
type view struct {
	Color bool        // ANSI colours; otherwise plain text
	Me    gamev1.Seat // the viewer's seat, UNSPECIFIED for spectators
	Now   time.Time   // for the running clock
}

const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[1m"
	ansiDim   = "\x1b[2m"
	ansiGrey  = "\x1b[90m"
	// Square backgrounds: light and dark squares, the last move's squares.
	bgLight = "\x1b[48;5;180m"
	bgDark  = "\x1b[48;5;137m"
	bgLast  = "\x1b[48;5;110m"
)

// seatColor is each army's foreground colour.
var seatColor = map[gamev1.Seat]string{
	gamev1.Seat_SEAT_RED:    "\x1b[38;5;160m",
	gamev1.Seat_SEAT_BLUE:   "\x1b[38;5;21m",
	gamev1.Seat_SEAT_YELLOW: "\x1b[38;5;226m",
	gamev1.Seat_SEAT_GREEN:  "\x1b[38;5;28m",
}

var seatLetter = map[gamev1.Seat]string{
	gamev1.Seat_SEAT_RED: "r", gamev1.Seat_SEAT_BLUE: "b", gamev1.Seat_SEAT_YELLOW: "y", gamev1.Seat_SEAT_GREEN: "g",
}

var pieceLetter = map[gamev1.PieceKind]string{
	gamev1.PieceKind_PIECE_KIND_PAWN: "P", gamev1.PieceKind_PIECE_KIND_KNIGHT: "N", gamev1.PieceKind_PIECE_KIND_BISHOP: "B",
	gamev1.PieceKind_PIECE_KIND_ROOK: "R", gamev1.PieceKind_PIECE_KIND_QUEEN: "Q", gamev1.PieceKind_PIECE_KIND_KING: "K",
}

// seatName is "Red", "Blue", ...
func seatName(s gamev1.Seat) string {
	n := strings.TrimPrefix(s.String(), "SEAT_")
	if len(n) < 2 {
		return n
	}
	return n[:1] + strings.ToLower(n[1:])
}

// playable reports whether file f and rank r (1-based) are on the board:
// the 14x14 square without its 3x3 corners.
func playable(f, r int) bool {
	edge := func(x int) bool { return x <= 3 || x >= 12 }
	return f >= 1 && f <= 14 && r >= 1 && r <= 14 && !(edge(f) && edge(r))
}

// render draws the board, the four seats and the last move.
//
// Cells are three characters wide. Plain mode writes the owner's letter and
// the piece letter ("rK"); a zombie's pieces (moved by the server) have a
// lower-case piece letter ("rk"), a dead army's pieces show "#" as owner,
// and "*" marks the last move's squares. Colour mode paints the piece in its
// army's colour on light and dark squares, greys dead pieces, dims zombie
// pieces and highlights the last move's squares.
func render(w io.Writer, m *matchv1.Match, v view) {
	pieces := map[string]*matchv1.PlacedPiece{}
	for _, p := range m.GetPieces() {
		pieces[p.GetSquare()] = p
	}
	last := map[string]bool{}
	if lm := m.GetLastMove(); lm != nil {
		last[lm.GetFrom().GetName()] = true
		last[lm.GetTo().GetName()] = true
	}
	var b strings.Builder
	files := "    "
	for f := range 14 {
		files += fmt.Sprintf(" %c ", 'a'+f)
	}
	b.WriteString(files + "\n")
	for r := 14; r >= 1; r-- {
		fmt.Fprintf(&b, "%3d ", r)
		for f := 1; f <= 14; f++ {
			if !playable(f, r) {
				b.WriteString("   ")
				continue
			}
			sq := fmt.Sprintf("%c%d", 'a'+f-1, r)
			b.WriteString(cell(pieces[sq], last[sq], (f+r)%2 == 1, v.Color))
		}
		fmt.Fprintf(&b, " %d\n", r)
	}
	b.WriteString(files + "\n\n")
	writeSeats(&b, m, v)
	io.WriteString(w, b.String())
}

func cell(p *matchv1.PlacedPiece, last, light, color bool) string {
	if !color {
		mark := " "
		if last {
			mark = "*"
		}
		if p == nil {
			return "." + mark + " "
		}
		owner, kind := seatLetter[p.GetSeat()], pieceLetter[p.GetKind()]
		switch {
		case p.GetDead():
			owner = "#"
		case p.GetZombie():
			kind = strings.ToLower(kind)
		}
		return owner + kind + mark
	}
	bg := bgDark
	if light {
		bg = bgLight
	}
	if last {
		bg = bgLast
	}
	if p == nil {
		return bg + "   " + ansiReset
	}
	fg := ansiBold + seatColor[p.GetSeat()]
	kind := pieceLetter[p.GetKind()]
	switch {
	case p.GetDead():
		fg = ansiGrey
	case p.GetZombie():
		fg = ansiDim + seatColor[p.GetSeat()]
		kind = strings.ToLower(kind)
	}
	return bg + fg + " " + kind + " " + ansiReset
}

// writeSeats lists the seats: player, status, points, clock, turn.
func writeSeats(b *strings.Builder, m *matchv1.Match, v view) {
	clocks := map[gamev1.Seat]*gamev1.Clock{}
	for _, c := range m.GetClocks() {
		clocks[c.GetSeat()] = c
	}
	for _, s := range m.GetSeats() {
		turn := "  "
		if s.GetSeat() == m.GetToMove() {
			turn = "> "
		}
		name := seatName(s.GetSeat())
		if v.Color {
			name = ansiBold + seatColor[s.GetSeat()] + fmt.Sprintf("%-6s", name) + ansiReset
		} else {
			name = fmt.Sprintf("%-6s", name)
		}
		who := s.GetPlayer().GetDisplayName()
		if s.GetPlayer().GetIsBot() {
			who += " (bot)"
		}
		if s.GetSeat() == v.Me {
			who += " (you)"
		}
		state := "live"
		switch s.GetStatus() {
		case gamev1.SeatStatus_SEAT_STATUS_ZOMBIE:
			state = "zombie, " + exitText(s.GetExitReason())
		case gamev1.SeatStatus_SEAT_STATUS_OUT:
			state = "out, " + exitText(s.GetExitReason())
		}
		points := fmt.Sprintf("%3d pts", s.GetResultPoints())
		if s.GetPoints() != s.GetResultPoints() {
			points += fmt.Sprintf(" (board %d)", s.GetPoints())
		}
		fmt.Fprintf(b, "%s%s %-28s %-22s %s  %s\n", turn, name, who, state, points, clockText(clocks[s.GetSeat()], v.Now))
	}
	if lm := m.GetLastMove(); lm != nil {
		how := ""
		if lm.GetIsZombieMove() {
			how = " (zombie)"
		}
		fmt.Fprintf(b, "\nlast move: %s %s%s", seatName(lm.GetSeat()), lm.GetMove(), how)
		if lm.GetPointsGained() > 0 {
			fmt.Fprintf(b, "  +%d", lm.GetPointsGained())
		}
		b.WriteString("\n")
	}
	if r := m.GetResult(); r != nil && len(r.GetRanking()) > 0 {
		b.WriteString("\n" + resultText(m) + "\n")
	}
}

func exitText(r gamev1.ExitReason) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(r.String(), "EXIT_REASON_")), "_", " ")
}

// clockText is the clock's time left: for a running clock, counted down to
// its deadline (the server is the clock authority).
func clockText(c *gamev1.Clock, now time.Time) string {
	if c == nil {
		return ""
	}
	left := c.GetRemaining().AsDuration()
	if c.GetRunning() && c.GetTurnDeadline() != nil {
		left = max(c.GetTurnDeadline().AsTime().Sub(now), 0)
	}
	mark := " "
	if c.GetRunning() {
		mark = "*"
	}
	left = left.Truncate(time.Second)
	return fmt.Sprintf("%s%d:%02d", mark, int(left.Minutes()), int(left.Seconds())%60)
}

// resultText is one line with the ranking and result points.
func resultText(m *matchv1.Match) string {
	if m.GetStatus() == matchv1.MatchStatus_MATCH_STATUS_ABORTED {
		return "match aborted: no result"
	}
	r := m.GetResult()
	points := map[gamev1.Seat]int32{}
	for _, p := range r.GetPoints() {
		points[p.GetSeat()] = p.GetPoints()
	}
	var parts []string
	for i, s := range r.GetRanking() {
		parts = append(parts, fmt.Sprintf("%d. %s %d", i+1, seatName(s), points[s]))
	}
	term := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(r.GetTermination().String(), "TERMINATION_")), "_", " ")
	return "game over (" + term + "): " + strings.Join(parts, ", ")
}
