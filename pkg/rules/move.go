package rules

import "strings"

// Move is a move in a compact form: origin and destination squares, the
// moving and captured piece kinds and a flag for special moves. The zero
// Move is NoMove. A Move is only meaningful in the position it was
// generated for; Game.ParseMove turns text into a Move.
//
// Layout: bits 0-8 from, 9-17 to, 18-20 moving kind, 21-23 captured kind,
// 24-26 special (double step, castling, en passant), bit 27 promotion.
type Move uint32

// NoMove is the zero Move.
const NoMove Move = 0

const (
	flagNone      = 0
	flagDouble    = 1
	flagCastleK   = 2
	flagCastleQ   = 3
	flagEnPassant = 4
	promoBit      = 1 << 27
)

func newMove(from, to Square, kind, captured PieceKind, flag uint32) Move {
	return Move(uint32(from) | uint32(to)<<9 | uint32(kind)<<18 | uint32(captured)<<21 | flag<<24)
}

// From returns the origin square.
func (m Move) From() Square { return Square(m & 0x1FF) }

// To returns the destination square (for castling, the king's).
func (m Move) To() Square { return Square(m >> 9 & 0x1FF) }

// Piece returns the kind of the moving piece.
func (m Move) Piece() PieceKind { return PieceKind(m >> 18 & 7) }

// Captured returns the kind of the captured piece, or NoPiece.
func (m Move) Captured() PieceKind { return PieceKind(m >> 21 & 7) }

// Promotion reports whether a pawn promotes (always to a queen).
func (m Move) Promotion() bool { return m&promoBit != 0 }

// Castle returns 1 for short castling, 2 for long castling, 0 otherwise.
func (m Move) Castle() int {
	switch m.flag() {
	case flagCastleK:
		return 1
	case flagCastleQ:
		return 2
	}
	return 0
}

// EnPassant reports whether the move captures a pawn en passant.
func (m Move) EnPassant() bool { return m.flag() == flagEnPassant }

func (m Move) flag() uint32 { return uint32(m) >> 24 & 7 }

// String returns the move in long algebraic form: "h2-h4", "Qg1xQh14",
// "O-O", "O-O-O", "k7-k8=Q". Check and mate marks need the position and are
// added by Game (see AppliedMove.Text).
func (m Move) String() string { return m.text('Q') }

func (m Move) text(promo byte) string {
	if m == NoMove {
		return "-"
	}
	switch m.flag() {
	case flagCastleK:
		return "O-O"
	case flagCastleQ:
		return "O-O-O"
	}
	var b strings.Builder
	b.Grow(12)
	if k := m.Piece(); k != Pawn {
		b.WriteByte(k.Letter())
	}
	b.WriteString(m.From().String())
	if c := m.Captured(); c != NoPiece {
		b.WriteByte('x')
		if c != Pawn && !m.EnPassant() {
			b.WriteByte(c.Letter())
		}
	} else {
		b.WriteByte('-')
	}
	b.WriteString(m.To().String())
	if m.Promotion() {
		b.WriteByte('=')
		b.WriteByte(promo)
	}
	return b.String()
}
