package rules

import (
	"fmt"
	"strconv"
)

// Seat is a player's place at the board: 0 Red, 1 Blue, 2 Yellow, 3 Green.
// Seats move in index order, skipping seats that are out of the game. Which
// edge of the board each seat sits on depends on the rule set's Seating.
type Seat uint8

// The four seats, named by their colour (docs/rules.md section 2).
const (
	Red Seat = iota
	Blue
	Yellow
	Green
)

// NumSeats is the number of seats at the board.
const NumSeats = 4

var seatNames = [NumSeats]string{"Red", "Blue", "Yellow", "Green"}

// String returns the colour name of the seat ("Red", "Blue", ...).
func (s Seat) String() string {
	if s < NumSeats {
		return seatNames[s]
	}
	return "Seat(" + strconv.Itoa(int(s)) + ")"
}

// Letter returns the lower-case colour letter used by FEN4: r, b, y or g.
func (s Seat) Letter() byte { return "rbyg"[s&3] }

// PieceKind is the kind of a chess piece.
type PieceKind uint8

// Piece kinds. NoPiece is the zero value.
const (
	NoPiece PieceKind = iota
	Pawn
	Knight
	Bishop
	Rook
	Queen
	King
)

// Letter returns the upper-case piece letter (P N B R Q K), or 0 for NoPiece.
func (k PieceKind) Letter() byte {
	if k > King {
		return 0
	}
	return " PNBRQK"[k]
}

// String returns the English name of the kind.
func (k PieceKind) String() string {
	switch k {
	case Pawn:
		return "pawn"
	case Knight:
		return "knight"
	case Bishop:
		return "bishop"
	case Rook:
		return "rook"
	case Queen:
		return "queen"
	case King:
		return "king"
	}
	return "none"
}

func kindFromLetter(c byte) PieceKind {
	switch c {
	case 'P', 'p':
		return Pawn
	case 'N', 'n':
		return Knight
	case 'B', 'b':
		return Bishop
	case 'R', 'r':
		return Rook
	case 'Q', 'q', 'D', 'd':
		return Queen
	case 'K', 'k':
		return King
	}
	return NoPiece
}

// Board geometry of the padded mailbox (see the package documentation).
const (
	boardCols = 16
	boardRows = 20
	numCells  = boardCols * boardRows
	rowBias   = 3
	// BoardSize is the width and height of the playable board.
	BoardSize = 14
	// NumSquares is the number of playable squares.
	NumSquares = 160
)

// Cell contents that are not pieces.
const (
	empty   uint8 = 0
	offCell uint8 = 0xFF
)

// piece byte layout.
const (
	kindMask     = 0x07
	promotedBit  = 0x08
	seatShift    = 4
	maxPieceByte = 0x40
)

func makePiece(s Seat, k PieceKind) uint8 { return uint8(s)<<seatShift | uint8(k) }
func pieceSeat(p uint8) Seat              { return Seat(p>>seatShift) & 3 }
func pieceKind(p uint8) PieceKind         { return PieceKind(p & kindMask) }

// Square is a square of the board. The zero value is NoSquare. Squares are
// compact indices of the padded mailbox; use File, Rank and String to read
// them and ParseSquare or SquareAt to make them.
type Square uint16

// NoSquare is the zero Square: no square.
const NoSquare Square = 0

// SquareAt returns the square on file (0 = a) and rank (0 = rank 1), or
// NoSquare when that square is not playable.
func SquareAt(file, rank int) Square {
	if !playable(file, rank) {
		return NoSquare
	}
	return Square((rank+rowBias)*boardCols + file)
}

func playable(file, rank int) bool {
	if file < 0 || file >= BoardSize || rank < 0 || rank >= BoardSize {
		return false
	}
	edgeF := file < 3 || file > 10
	edgeR := rank < 3 || rank > 10
	return !(edgeF && edgeR)
}

// File returns the file index, 0 for a through 13 for n.
func (q Square) File() int { return int(q) % boardCols }

// Rank returns the rank index, 0 for rank 1 through 13 for rank 14.
func (q Square) Rank() int { return int(q)/boardCols - rowBias }

// Valid reports whether q is a playable square.
func (q Square) Valid() bool {
	if int(q) >= numCells {
		return false
	}
	return playable(q.File(), q.Rank())
}

// String returns the square name, such as "h1" or "n11".
func (q Square) String() string {
	if !q.Valid() {
		return "-"
	}
	return string(rune('a'+q.File())) + strconv.Itoa(q.Rank()+1)
}

// ParseSquare reads a square name such as "a4" or "n11".
func ParseSquare(name string) (Square, error) {
	q, n := scanSquare(name)
	if n == 0 || n != len(name) {
		return NoSquare, fmt.Errorf("bad square %q", name)
	}
	return q, nil
}

// scanSquare reads a square name at the start of s and returns it with the
// number of bytes used (0 when there is none).
func scanSquare(s string) (Square, int) {
	if len(s) < 2 || s[0] < 'a' || s[0] > 'n' {
		return NoSquare, 0
	}
	file := int(s[0] - 'a')
	n := 1
	rank := 0
	for n < len(s) && n < 3 && s[n] >= '0' && s[n] <= '9' {
		rank = rank*10 + int(s[n]-'0')
		n++
	}
	if n == 1 || rank < 1 {
		return NoSquare, 0
	}
	q := SquareAt(file, rank-1)
	if q == NoSquare {
		return NoSquare, 0
	}
	return q, n
}

// squareIndex maps a square to 0..159 (row-major from a1 upwards) and back;
// the binary encoding and Zobrist keys use the dense form.
type denseTables struct {
	toDense   [numCells]uint8
	fromDense [NumSquares]Square
}

var dense = func() denseTables {
	var t denseTables
	n := 0
	for r := range BoardSize {
		for f := range BoardSize {
			if q := SquareAt(f, r); q != NoSquare {
				t.toDense[q] = uint8(n)
				t.fromDense[n] = q
				n++
			}
		}
	}
	return t
}()

// Direction offsets in the mailbox.
const (
	dN = boardCols
	dS = -boardCols
	dE = 1
	dW = -1
)

var (
	knightOffsets = [8]int{2*dN + dE, 2*dN + dW, 2*dS + dE, 2*dS + dW, dN + 2*dE, dN + 2*dW, dS + 2*dE, dS + 2*dW}
	kingOffsets   = [8]int{dN, dS, dE, dW, dN + dE, dN + dW, dS + dE, dS + dW}
	diagDirs      = [4]int{dN + dE, dN + dW, dS + dE, dS + dW}
	orthoDirs     = [4]int{dN, dS, dE, dW}
)

// edge is the side of the board an army starts on.
type edge uint8

// The four edges.
const (
	edgeSouth edge = iota
	edgeEast
	edgeNorth
	edgeWest
)

// transform maps a square given in Red's frame (south edge) to the board
// square of the army on edge e: each army is Red's rotated to its edge.
func (e edge) transform(file, rank int) (int, int) {
	switch e {
	case edgeEast:
		return 13 - rank, file
	case edgeNorth:
		return 13 - file, 13 - rank
	case edgeWest:
		return rank, 13 - file
	}
	return file, rank
}

// forward returns the mailbox offset of one step away from the edge.
func (e edge) forward() int {
	switch e {
	case edgeEast:
		return dW
	case edgeNorth:
		return dS
	case edgeWest:
		return dE
	}
	return dN
}

// geometry holds the per-seat tables derived from a seating: pawn
// directions, start and promotion squares, castling squares.
type geometry struct {
	edge      [NumSeats]edge
	fwd       [NumSeats]int
	pawnCap   [NumSeats][2]int
	pawnStart [NumSeats][numCells]bool
	promo     [NumSeats][numCells]bool
	castle    [NumSeats][2]castleGeom // [seat][short=0,long=1]
	// castleMask[q] has the castling bits lost when a move leaves or enters q.
	castleMask [numCells]uint8
	start      [numCells]uint8
}

type castleGeom struct {
	kingFrom, kingTo, rookFrom, rookTo, pass Square
	between                                  [3]Square // squares that must be empty (0 = unused)
}

func castleBit(s Seat, long bool) uint8 {
	if long {
		return 1 << (4 + s)
	}
	return 1 << s
}

// redBackRank is Red's back rank from file d to k.
var redBackRank = [8]PieceKind{Rook, Knight, Bishop, Queen, King, Bishop, Knight, Rook}

// newGeometry computes the tables of a seating. mirror has bit s set when
// seat s's army is Red's army mirrored (king and queen swapped, as two
// armies of the largest site's old layout) before it is rotated to its
// edge; castling then follows the king: two squares toward the rook.
func newGeometry(edges [NumSeats]edge, mirror uint8) *geometry {
	g := &geometry{edge: edges}
	for i := range g.start {
		g.start[i] = offCell
	}
	for r := range BoardSize {
		for f := range BoardSize {
			if q := SquareAt(f, r); q != NoSquare {
				g.start[q] = empty
			}
		}
	}
	for s := Seat(0); s < NumSeats; s++ {
		e := edges[s]
		at := func(e edge, f, r int) Square {
			if mirror&(1<<s) != 0 {
				f = BoardSize - 1 - f
			}
			tf, tr := e.transform(f, r)
			return SquareAt(tf, tr)
		}
		g.fwd[s] = e.forward()
		// Sideways offsets: Red's east/west rotated.
		ef, er := e.transform(8, 0)
		bf, br := e.transform(7, 0)
		side := (er-br)*boardCols + (ef - bf)
		g.pawnCap[s] = [2]int{g.fwd[s] + side, g.fwd[s] - side}
		for f := 3; f <= 10; f++ {
			g.pawnStart[s][at(e, f, 1)] = true
			g.start[at(e, f, 0)] = makePiece(s, redBackRank[f-3])
			g.start[at(e, f, 1)] = makePiece(s, Pawn)
		}
		for f := range BoardSize {
			if q := at(e, f, 7); q != NoSquare {
				g.promo[s][q] = true
			}
		}
		// Red: short h1-j1 with k1-i1, long h1-f1 with d1-g1.
		g.castle[s][0] = castleGeom{
			kingFrom: at(e, 7, 0), kingTo: at(e, 9, 0), rookFrom: at(e, 10, 0), rookTo: at(e, 8, 0), pass: at(e, 8, 0),
			between: [3]Square{at(e, 8, 0), at(e, 9, 0)},
		}
		g.castle[s][1] = castleGeom{
			kingFrom: at(e, 7, 0), kingTo: at(e, 5, 0), rookFrom: at(e, 3, 0), rookTo: at(e, 6, 0), pass: at(e, 6, 0),
			between: [3]Square{at(e, 6, 0), at(e, 5, 0), at(e, 4, 0)},
		}
		g.castleMask[at(e, 7, 0)] |= castleBit(s, false) | castleBit(s, true)
		g.castleMask[at(e, 10, 0)] |= castleBit(s, false)
		g.castleMask[at(e, 3, 0)] |= castleBit(s, true)
	}
	return g
}

// Seating says on which edge each seat's army stands.
type Seating uint8

// The two seatings (docs/rules.md section 2).
const (
	// SeatingCounterclockwise: Red south, Blue east, Yellow north, Green
	// west; play passes counterclockwise (the fourkingdoms default).
	SeatingCounterclockwise Seating = iota
	// SeatingClockwise: Red south, Blue west, Yellow north, Green east;
	// play passes clockwise (the largest four-player site).
	SeatingClockwise
)

// geometries holds every seating with every set of mirrored armies
// (index: seating, mirror bits); computed once, never written.
var geometries = func() (t [2][1 << NumSeats]*geometry) {
	for m := range 1 << NumSeats {
		t[0][m] = newGeometry([NumSeats]edge{edgeSouth, edgeEast, edgeNorth, edgeWest}, uint8(m))
		t[1][m] = newGeometry([NumSeats]edge{edgeSouth, edgeWest, edgeNorth, edgeEast}, uint8(m))
	}
	return t
}()

func (s Seating) geometry() *geometry { return s.mirroredGeometry(0) }

// mirroredGeometry returns the geometry with the armies of the seats in
// mirror (bit per seat) mirrored.
func (s Seating) mirroredGeometry(mirror uint8) *geometry {
	i := 0
	if s == SeatingClockwise {
		i = 1
	}
	return geometries[i][mirror&(1<<NumSeats-1)]
}
