package rules

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// StartFEN4 is the standard starting position of the fourkingdoms seating.
const StartFEN4 = "R-0,0,0,0-1,1,1,1-1,1,1,1-0,0,0,0-0-" +
	"3,yR,yN,yB,yK,yQ,yB,yN,yR,3/3,yP,yP,yP,yP,yP,yP,yP,yP,3/14/" +
	"gR,gP,10,bP,bR/gN,gP,10,bP,bN/gB,gP,10,bP,bB/gQ,gP,10,bP,bK/" +
	"gK,gP,10,bP,bQ/gB,gP,10,bP,bB/gN,gP,10,bP,bN/gR,gP,10,bP,bR/" +
	"14/3,rP,rP,rP,rP,rP,rP,rP,rP,3/3,rR,rN,rB,rQ,rK,rB,rN,rR,3"

// ErrBadFEN4 is returned (wrapped) for text that is not a valid FEN4.
var ErrBadFEN4 = errors.New("bad FEN4")

func fenErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadFEN4, fmt.Sprintf(format, args...))
}

// ParseFEN4 reads a position in FEN4 (docs/rules.md section 11.3) for rule set rs.
//
// Header fields: seat to move (R, B, Y, G), seats out of play, short and
// long castling rights, points, the no-progress ply clock; then the 14 rows
// from rank 14 down to rank 1, squares separated by commas, empty runs as
// numbers (corner squares included) or 'x'. Whitespace is ignored. An
// optional trailing block "{zombie:0,1,0,0;frozen:,12,,;promoted:g8,h7;
// ep:e3,,,}" carries what FEN4 has no field for: zombie seats, the frozen
// result points of seats that resigned or ran out of time (empty for the
// others), promoted queens and en passant squares. A zombie seat without a
// frozen entry has its current points frozen.
func ParseFEN4(rs RuleSet, text string) (*Position, error) {
	text = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '\r':
			return -1
		}
		return r
	}, text)
	var ext string
	if i := strings.IndexByte(text, '{'); i >= 0 {
		j := strings.LastIndexByte(text, '}')
		if j < i {
			return nil, fenErr("unclosed {")
		}
		ext = text[i+1 : j]
		text = strings.TrimSuffix(text[:i], "-") + text[j+1:]
	}
	fields := strings.Split(text, "-")
	if len(fields) != 7 {
		return nil, fenErr("want 7 fields separated by '-', got %d", len(fields))
	}
	p := newEmptyPosition(rs)
	switch fields[0] {
	case "R", "r":
		p.toMove = Red
	case "B", "b":
		p.toMove = Blue
	case "Y", "y":
		p.toMove = Yellow
	case "G", "g":
		p.toMove = Green
	default:
		return nil, fenErr("bad seat to move %q", fields[0])
	}
	out, err := parseFour(fields[1])
	if err != nil {
		return nil, fenErr("seats out: %v", err)
	}
	short, err := parseFour(fields[2])
	if err != nil {
		return nil, fenErr("short castling: %v", err)
	}
	long, err := parseFour(fields[3])
	if err != nil {
		return nil, fenErr("long castling: %v", err)
	}
	points, err := parseFour(fields[4])
	if err != nil {
		return nil, fenErr("points: %v", err)
	}
	hm, err := strconv.Atoi(fields[5])
	if err != nil || hm < 0 || hm > 1<<20 {
		return nil, fenErr("bad ply clock %q", fields[5])
	}
	p.halfmove = hm
	p.points = points
	for s := range NumSeats {
		if out[s] != 0 {
			p.status[s] = Out
		}
		if short[s] != 0 {
			p.castle |= castleBit(Seat(s), false)
		}
		if long[s] != 0 {
			p.castle |= castleBit(Seat(s), true)
		}
	}
	if err := p.parseBoard(fields[6]); err != nil {
		return nil, err
	}
	if err := p.parseExt(ext); err != nil {
		return nil, err
	}
	for s := Seat(0); s < NumSeats; s++ {
		bound := 0
		for _, q := range p.list[s][:p.count[s]] {
			bound += mobilityBound[pieceKind(p.board[q])]
		}
		if bound > MaxMoves {
			return nil, fenErr("%s has too many pieces", s)
		}
	}
	for s := range NumSeats {
		if p.status[s] == Zombie && !p.resigned[s] {
			p.resigned[s], p.frozen[s] = true, p.points[s]
		}
	}
	if p.status[p.toMove] == Out {
		return nil, fenErr("seat to move %s is out of play", p.toMove)
	}
	// An army whose king stands on the square of its queen in the
	// standard start (the largest site's old "4PCo" layout) castles in
	// the mirrored way: two squares toward each rook.
	var mirror uint8
	for s := Seat(0); s < NumSeats; s++ {
		if m := rs.Seating.mirroredGeometry(1 << s); p.king[s] != NoSquare && p.king[s] == m.castle[s][0].kingFrom {
			mirror |= 1 << s
		}
	}
	p.geo = rs.Seating.mirroredGeometry(mirror)
	// Drop castling rights the placement cannot honour.
	for s := Seat(0); s < NumSeats; s++ {
		for side := range 2 {
			c := &p.geo.castle[s][side]
			if p.board[c.kingFrom] != makePiece(s, King) || p.board[c.rookFrom] != makePiece(s, Rook) {
				p.castle &^= castleBit(s, side == 1)
			}
		}
	}
	p.refresh()
	return p, nil
}

func parseFour(f string) ([NumSeats]int, error) {
	var v [NumSeats]int
	parts := strings.Split(f, ",")
	if len(parts) != NumSeats {
		return v, fmt.Errorf("want 4 values, got %q", f)
	}
	for i, s := range parts {
		n, err := strconv.Atoi(s)
		if err != nil || n < -1<<20 || n > 1<<20 {
			return v, fmt.Errorf("bad number %q", s)
		}
		v[i] = n
	}
	return v, nil
}

func (p *Position) parseBoard(f string) error {
	rows := strings.Split(f, "/")
	if len(rows) != BoardSize {
		return fenErr("want 14 rows, got %d", len(rows))
	}
	for i, row := range rows {
		rank := BoardSize - 1 - i
		file := 0
		for tok := range strings.SplitSeq(row, ",") {
			switch {
			case tok == "":
				return fenErr("empty square token in row %d", i+1)
			case tok == "x" || tok == "X":
				file++
			case tok[0] >= '0' && tok[0] <= '9':
				n, err := strconv.Atoi(tok)
				if err != nil || n < 1 || n > BoardSize {
					return fenErr("bad empty run %q", tok)
				}
				file += n
			default:
				if file >= BoardSize {
					return fenErr("row %d too long", i+1)
				}
				pc, err := parsePieceToken(tok)
				if err != nil {
					return err
				}
				q := SquareAt(file, rank)
				if q == NoSquare {
					return fenErr("piece %q on unplayable square", tok)
				}
				s := pieceSeat(pc)
				if pieceKind(pc) == King && p.king[s] != NoSquare {
					return fenErr("two %s kings", s)
				}
				if p.count[s] >= maxArmy {
					return fenErr("too many %s pieces", s)
				}
				p.put(q, pc)
				file++
			}
			if file > BoardSize {
				return fenErr("row %d too long", i+1)
			}
		}
		if file != BoardSize {
			return fenErr("row %d has %d squares, want 14", i+1, file)
		}
	}
	return nil
}

func parsePieceToken(tok string) (uint8, error) {
	if len(tok) != 2 {
		return 0, fenErr("bad piece %q", tok)
	}
	var s Seat
	switch tok[0] {
	case 'r':
		s = Red
	case 'b':
		s = Blue
	case 'y':
		s = Yellow
	case 'g':
		s = Green
	default:
		return 0, fenErr("bad piece colour %q", tok)
	}
	k := kindFromLetter(tok[1])
	if k == NoPiece || tok[1] >= 'a' {
		return 0, fenErr("bad piece letter %q", tok)
	}
	pc := makePiece(s, k)
	if tok[1] == 'D' {
		pc |= promotedBit // the site writes promoted queens as D
	}
	return pc, nil
}

// parseSiteExt reads the largest site's own extension block, as the site
// writes it: {'key':value,...} with quoted keys, values that are numbers,
// quoted strings, true/false or tuples of four in seat order. It takes
// 'enPassant' (per seat "skipped:pawn", such as 'j3:j4' for Red's j2-j4,
// empty strings for the others) and
// 'resigned' / 'flagged' (the seats whose king walks: zombies); every other
// key is ignored.
func (p *Position) parseSiteExt(ext string) error {
	var items []string
	depth, start := 0, 0
	for i := 0; i <= len(ext); i++ {
		if i == len(ext) || (ext[i] == ',' && depth == 0) {
			items = append(items, ext[start:i])
			start = i + 1
			continue
		}
		switch ext[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
	}
	for _, item := range items {
		key, val, ok := strings.Cut(item, ":")
		if !ok {
			return fenErr("bad extension item %q", item)
		}
		tuple := func() ([]string, error) {
			v, ok := strings.CutPrefix(val, "(")
			v, ok2 := strings.CutSuffix(v, ")")
			parts := strings.Split(v, ",")
			if !ok || !ok2 || len(parts) != NumSeats {
				return nil, fenErr("%s: want a tuple of 4 values, got %q", key, val)
			}
			for i := range parts {
				parts[i] = strings.Trim(parts[i], "'")
			}
			return parts, nil
		}
		switch key {
		case "'enPassant'":
			parts, err := tuple()
			if err != nil {
				return err
			}
			for s, v := range parts {
				if v == "" {
					continue
				}
				skipped, pawnSq, ok := strings.Cut(v, ":")
				q, err1 := ParseSquare(skipped)
				pawn, err2 := ParseSquare(pawnSq)
				if !ok || err1 != nil || err2 != nil || int(pawn) != int(q)+p.geo.fwd[s] ||
					p.board[q] != empty || p.board[pawn] != makePiece(Seat(s), Pawn) {
					return fenErr("'enPassant': no %s pawn on %q beyond its skipped square", Seat(s), v)
				}
				p.ep[s], p.epPawn[s] = q, pawn
			}
		case "'resigned'", "'flagged'":
			parts, err := tuple()
			if err != nil {
				return err
			}
			for s, v := range parts {
				switch v {
				case "true":
					if p.status[s] != Out {
						p.status[s] = Zombie
					}
				case "false":
				default:
					return fenErr("%s: bad value %q", key, v)
				}
			}
		}
	}
	return nil
}

func (p *Position) parseExt(ext string) error {
	if ext == "" {
		return nil
	}
	if strings.HasPrefix(ext, "'") {
		return p.parseSiteExt(ext)
	}
	for item := range strings.SplitSeq(ext, ";") {
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, ":")
		if !ok {
			return fenErr("bad extension item %q", item)
		}
		switch key {
		case "zombie":
			z, err := parseFour(val)
			if err != nil {
				return fenErr("zombie: %v", err)
			}
			for s := range NumSeats {
				if z[s] != 0 {
					if p.status[s] == Out {
						return fenErr("seat %s both out and zombie", Seat(s))
					}
					p.status[s] = Zombie
				}
			}
		case "frozen":
			parts := strings.Split(val, ",")
			if len(parts) != NumSeats {
				return fenErr("frozen: want 4 values")
			}
			for s, v := range parts {
				if v == "" {
					continue
				}
				n, err := strconv.Atoi(v)
				if err != nil || n < -1<<20 || n > 1<<20 {
					return fenErr("frozen: bad number %q", v)
				}
				p.frozen[s], p.resigned[s] = n, true
			}
		case "promoted":
			for name := range strings.SplitSeq(val, ",") {
				if name == "" {
					continue
				}
				q, err := ParseSquare(name)
				if err != nil {
					return fenErr("promoted: %v", err)
				}
				if pieceKind(p.board[q]) != Queen || p.board[q] == offCell {
					return fenErr("promoted: no queen on %s", name)
				}
				p.board[q] |= promotedBit
			}
		case "ep":
			parts := strings.Split(val, ",")
			if len(parts) != NumSeats {
				return fenErr("ep: want 4 values")
			}
			for s, name := range parts {
				if name == "" {
					continue
				}
				q, err := ParseSquare(name)
				if err != nil {
					return fenErr("ep: %v", err)
				}
				pawn := Square(int(q) + p.geo.fwd[s])
				if p.board[q] != empty || p.board[pawn] != makePiece(Seat(s), Pawn) {
					return fenErr("ep: no %s pawn beyond %s", Seat(s), name)
				}
				p.ep[s], p.epPawn[s] = q, pawn
			}
		default:
			return fenErr("unknown extension %q", key)
		}
	}
	return nil
}

// FEN4 writes the position in the canonical FEN4 form that ParseFEN4 reads:
// no whitespace, empty runs (corners included) as numbers, and the
// extension block only when something needs it.
func (p *Position) FEN4() string {
	var b strings.Builder
	b.Grow(400)
	b.WriteByte("RBYG"[p.toMove])
	writeFour := func(f func(s Seat) int) {
		b.WriteByte('-')
		for s := Seat(0); s < NumSeats; s++ {
			if s > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(f(s)))
		}
	}
	b01 := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	writeFour(func(s Seat) int { return b01(p.status[s] == Out) })
	writeFour(func(s Seat) int { return b01(p.castle&castleBit(s, false) != 0) })
	writeFour(func(s Seat) int { return b01(p.castle&castleBit(s, true) != 0) })
	writeFour(func(s Seat) int { return p.points[s] })
	b.WriteByte('-')
	b.WriteString(strconv.Itoa(p.halfmove))
	b.WriteByte('-')
	var promoted []string
	for r := BoardSize - 1; r >= 0; r-- {
		if r < BoardSize-1 {
			b.WriteByte('/')
		}
		run := 0
		first := true
		sep := func() {
			if !first {
				b.WriteByte(',')
			}
			first = false
		}
		for f := range BoardSize {
			q := SquareAt(f, r)
			pc := empty
			if q != NoSquare {
				pc = p.board[q]
			}
			if pc == empty {
				run++
				continue
			}
			if run > 0 {
				sep()
				b.WriteString(strconv.Itoa(run))
				run = 0
			}
			sep()
			b.WriteByte(pieceSeat(pc).Letter())
			b.WriteByte(pieceKind(pc).Letter())
			if pc&promotedBit != 0 {
				promoted = append(promoted, q.String())
			}
		}
		if run > 0 {
			sep()
			b.WriteString(strconv.Itoa(run))
		}
	}
	var ext []string
	var zombie, frozen bool
	for s := range NumSeats {
		zombie = zombie || p.status[s] == Zombie
		frozen = frozen || p.resigned[s]
	}
	if zombie {
		var z [NumSeats]string
		for s := range NumSeats {
			z[s] = strconv.Itoa(b01(p.status[s] == Zombie))
		}
		ext = append(ext, "zombie:"+strings.Join(z[:], ","))
	}
	if frozen {
		var z [NumSeats]string
		for s := range NumSeats {
			if p.resigned[s] {
				z[s] = strconv.Itoa(p.frozen[s])
			}
		}
		ext = append(ext, "frozen:"+strings.Join(z[:], ","))
	}
	if len(promoted) > 0 {
		ext = append(ext, "promoted:"+strings.Join(promoted, ","))
	}
	if p.ep != [NumSeats]Square{} {
		var z [NumSeats]string
		for s := range NumSeats {
			if p.ep[s] != NoSquare {
				z[s] = p.ep[s].String()
			}
		}
		ext = append(ext, "ep:"+strings.Join(z[:], ","))
	}
	if len(ext) > 0 {
		b.WriteString("-{")
		b.WriteString(strings.Join(ext, ";"))
		b.WriteByte('}')
	}
	return b.String()
}
