package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"

	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// view says how to draw a board.
type view struct {
	Color bool        // ANSI colours; otherwise plain text
	Me    gamev1.Seat // the viewer's seat, UNSPECIFIED for spectators
	Now   time.Time   // for the running clock
	// Fixed keeps Red at the bottom; otherwise the board turns so that the
	// viewer's army is at the bottom.
	Fixed bool
	// Moves are the moves to list under the board (the moves since the
	// viewer's last turn); empty lists the match's last move.
	Moves []*gamev1.MoveEffects
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

// edge is a side of the board: where an army starts.
type edge int

const (
	south edge = iota // ranks 1-2: the bottom of the fixed view
	east              // files m-n
	north             // ranks 13-14
	west              // files a-b
)

// seatEdge is where seat's army starts under the rule set's seating (Red
// is always south; the seating decides whether Blue is east or west).
func seatEdge(ruleSet string, seat gamev1.Seat) edge {
	rs, ok := rules.RuleSetByName(cmpOr(ruleSet, "fourkingdoms"))
	cw := ok && rs.Seating == rules.SeatingClockwise
	switch seat {
	case gamev1.Seat_SEAT_BLUE:
		if cw {
			return west
		}
		return east
	case gamev1.Seat_SEAT_YELLOW:
		return north
	case gamev1.Seat_SEAT_GREEN:
		if cw {
			return east
		}
		return west
	}
	return south
}

// side is where an edge appears on the screen when the viewer's edge is
// at the bottom.
func side(e, bottom edge) string {
	return [...]string{"bottom", "right", "top", "left"}[(e-bottom+4)%4]
}

// square maps a screen cell (column c from the left, row y from the bottom,
// both 1..14) to the board square (file f, rank r) for a viewer sitting at
// bottom: the board turns so that the viewer's army is at the bottom, as
// across a real table.
//
//	south: f = c,    r = y       (the fixed view)
//	east:  f = 15-y, r = c       (the viewer looks west; south is on the left)
//	north: f = 15-c, r = 15-y
//	west:  f = y,    r = 15-c
func square(bottom edge, c, y int) (f, r int) {
	switch bottom {
	case east:
		return 15 - y, c
	case north:
		return 15 - c, 15 - y
	case west:
		return y, 15 - c
	}
	return c, y
}

// bottomEdge is the edge drawn at the bottom in v.
func (v view) bottomEdge(m *matchv1.Match) edge {
	if v.Fixed || v.Me == gamev1.Seat_SEAT_UNSPECIFIED {
		return south
	}
	return seatEdge(m.GetRuleSet(), v.Me)
}

// render draws the match header, the board (turned to the viewer), the
// four seats, the recent moves and a legend.
//
// Cells are three characters wide. Plain mode writes the owner's letter and
// the piece letter ("rK"); a zombie's pieces (moved by the server) have a
// lower-case piece letter ("rk"), a dead army's pieces show "#" as owner,
// and "*" marks the last move's squares. Colour mode paints the piece in its
// army's colour on light and dark squares, greys dead pieces, dims zombie
// pieces and highlights the last move's squares. The legend under the
// board says so.
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
	bottom := v.bottomEdge(m)
	var b strings.Builder
	b.WriteString(header(m, v, bottom) + "\n\n")
	// Row labels are ranks (or files, when the board is turned a quarter),
	// column labels the other coordinate.
	label := func(f, r int, byFile bool) string {
		if byFile {
			return string(rune('a' + f - 1))
		}
		return strconv.Itoa(r)
	}
	quarter := bottom == east || bottom == west
	cols := "    "
	for c := 1; c <= 14; c++ {
		f, r := square(bottom, c, 1)
		cols += fmt.Sprintf("%2s ", label(f, r, !quarter))
	}
	b.WriteString(cols + "\n")
	for y := 14; y >= 1; y-- {
		f, r := square(bottom, 1, y)
		row := label(f, r, quarter)
		fmt.Fprintf(&b, "%3s ", row)
		for c := 1; c <= 14; c++ {
			f, r := square(bottom, c, y)
			if !playable(f, r) {
				b.WriteString("   ")
				continue
			}
			sq := fmt.Sprintf("%c%d", 'a'+f-1, r)
			b.WriteString(cell(pieces[sq], last[sq], (f+r)%2 == 1, v.Color))
		}
		fmt.Fprintf(&b, " %s\n", row)
	}
	b.WriteString(cols + "\n\n")
	writeSeats(&b, m, v, bottom)
	b.WriteString("\n" + legend(v.Color) + "\n")
	io.WriteString(w, b.String())
}

// header names the match and the viewer's seat, so the id needed by
// `fk watch` and `fk export` is always on screen.
func header(m *matchv1.Match, v view, bottom edge) string {
	h := "match " + m.GetMatchId()
	if rs := m.GetRuleSet(); rs != "" {
		h += " · " + rs
	}
	if v.Me != gamev1.Seat_SEAT_UNSPECIFIED {
		h += fmt.Sprintf(" · you play %s, at the %s", seatName(v.Me), side(seatEdge(m.GetRuleSet(), v.Me), bottom))
	}
	return h
}

// legend explains the marks of the board and the seat list.
func legend(color bool) string {
	if color {
		return "legend: bright = live army, dim lower case = zombie (its moves are the server's), grey = dead army,\n" +
			"        blue squares = last move, > = to move, * = running clock"
	}
	return "legend: rK = Red king (r b y g: Red Blue Yellow Green; K Q R B N P), lower case = zombie (its moves\n" +
		"        are the server's), # = dead army, * after a piece = last move, > = to move, * = running clock"
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

// writeSeats lists the seats (player, where they sit on the screen,
// status, points, clock, turn) and the recent moves.
func writeSeats(b *strings.Builder, m *matchv1.Match, v view, bottom edge) {
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
		default:
			// A disconnected player's countdown: their seat runs out of
			// time when it reaches 0:00 (docs/match.md "Disconnects").
			if g := s.GetDisconnectGraceEndsAt(); g != nil {
				left := max(g.AsTime().Sub(v.Now), 0).Truncate(time.Second)
				state = fmt.Sprintf("disconnected %d:%02d", int(left.Minutes()), int(left.Seconds())%60)
			}
		}
		points := fmt.Sprintf("%3d pts", s.GetResultPoints())
		if s.GetPoints() != s.GetResultPoints() {
			points += fmt.Sprintf(" (board %d)", s.GetPoints())
		}
		fmt.Fprintf(b, "%s%s %-6s %-28s %-22s %s  %s\n", turn, name, side(seatEdge(m.GetRuleSet(), s.GetSeat()), bottom),
			who, state, points, clockText(m, clocks[s.GetSeat()], v.Now))
	}
	moves := v.Moves
	title := "moves since your last turn:"
	if v.Me == gamev1.Seat_SEAT_UNSPECIFIED || len(moves) == 0 {
		title = "last moves:"
	}
	if len(moves) == 0 && m.GetLastMove() != nil {
		moves = []*gamev1.MoveEffects{m.GetLastMove()}
		title = "last move:"
	}
	if len(moves) > 0 {
		b.WriteString("\n" + title + "\n")
		for _, e := range moves {
			b.WriteString("  " + moveText(e) + "\n")
		}
	}
	if r := m.GetResult(); r != nil && len(r.GetRanking()) > 0 {
		b.WriteString("\n" + resultText(m) + "\n")
	}
}

// moveText is one move with what it took and scored: "Blue  Qg1xh14
// takes Red's knight, +3".
func moveText(e *gamev1.MoveEffects) string {
	var what []string
	if c := e.GetCaptured(); c != nil {
		piece := strings.ToLower(strings.TrimPrefix(c.GetKind().String(), "PIECE_KIND_"))
		switch {
		case c.GetDead():
			what = append(what, "takes a dead "+piece)
		case c.GetPromoted():
			what = append(what, "takes "+seatName(c.GetOwner())+"'s promoted queen")
		default:
			what = append(what, "takes "+seatName(c.GetOwner())+"'s "+piece)
		}
	}
	for _, s := range e.GetMatedSeats() {
		what = append(what, "mates "+seatName(s))
	}
	if s := e.GetKingCapturedSeat(); s != gamev1.Seat_SEAT_UNSPECIFIED {
		what = append(what, "captures "+seatName(s)+"'s king")
	}
	if len(e.GetCheckedSeats()) > 0 {
		var names []string
		for _, s := range e.GetCheckedSeats() {
			names = append(names, seatName(s))
		}
		what = append(what, "checks "+strings.Join(names, " and "))
	}
	if e.GetIsZombieMove() {
		what = append(what, "zombie move")
	}
	if p := e.GetPointsGained(); p > 0 {
		what = append(what, fmt.Sprintf("+%d", p))
	}
	line := fmt.Sprintf("%-6s %-10s", seatName(e.GetSeat()), e.GetMove())
	if len(what) > 0 {
		line += " " + strings.Join(what, ", ")
	}
	return strings.TrimRight(line, " ")
}

func exitText(r gamev1.ExitReason) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(r.String(), "EXIT_REASON_")), "_", " ")
}

// firstMoveLimit is the time a seat has for its first move (the server
// flags it after that, whatever its clock says).
const firstMoveLimit = 30 * time.Second

// clockText is the clock's time left: for a running clock, counted down to
// its deadline (the server is the clock authority). "*" marks the running
// clock. During a seat's first move the deadline is the first-move limit,
// not the clock, and the label says so.
func clockText(m *matchv1.Match, c *gamev1.Clock, now time.Time) string {
	if c == nil {
		return ""
	}
	left := c.GetRemaining().AsDuration()
	label := ""
	if c.GetRunning() && c.GetTurnDeadline() != nil {
		left = max(c.GetTurnDeadline().AsTime().Sub(now), 0)
		// Each seat's first move comes in the first round; its deadline
		// is the limit when that is shorter than the clock.
		if m.GetPly() < 4 && left <= firstMoveLimit && c.GetRemaining().AsDuration() > firstMoveLimit {
			label = " to make a first move"
		}
	}
	mark := " "
	if c.GetRunning() {
		mark = "*"
	}
	left = left.Truncate(time.Second)
	return fmt.Sprintf("%s%d:%02d%s", mark, int(left.Minutes()), int(left.Seconds())%60, label)
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
