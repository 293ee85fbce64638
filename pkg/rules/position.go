package rules

// SeatStatus is where a seat stands in the game.
type SeatStatus uint8

const (
	// Live: the player is in the game and moves for themselves.
	Live SeatStatus = iota
	// Zombie: the player resigned or ran out of time; the server plays
	// random moves for the army (or its king only, per RuleSet.Zombie).
	Zombie
	// Out: mated, stalemated or king captured; the army is dead.
	Out
)

// String returns "live", "zombie" or "out".
func (s SeatStatus) String() string {
	switch s {
	case Live:
		return "live"
	case Zombie:
		return "zombie"
	case Out:
		return "out"
	}
	return "unknown"
}

// Attack capability flags per piece byte (see Position.atk).
const (
	atkPawn   = 1 << 0
	atkKnight = 1 << 1
	atkDiag   = 1 << 2
	atkOrtho  = 1 << 3
	atkKing   = 1 << 4
)

const maxArmy = 48 // pieces per seat; a real game has at most 16

// MaxMoves bounds the number of pseudo-legal moves of one seat. ParseFEN4
// rejects armies whose mobility bound (mobilityBound) exceeds it; a game
// never adds pieces, so the bound then holds for every later position.
const MaxMoves = 1024

// mobilityBound is the most pseudo-legal moves a piece of each kind can
// have on this board: a queen's lines cover at most 26+26 squares, a
// pawn has a step, a double step and two captures, a king 8 steps and two
// castlings.
var mobilityBound = [King + 1]int{Pawn: 4, Knight: 8, Bishop: 26, Rook: 26, Queen: 52, King: 10}

// MoveList is a fixed-size move buffer, so that generation never allocates.
type MoveList struct {
	Moves [MaxMoves]Move
	N     int
}

func (l *MoveList) add(m Move) {
	l.Moves[l.N] = m
	l.N++
}

// Position is a board position: piece placement, the seat to move, seat
// statuses, castling rights, en passant squares and the no-progress ply
// clock, with an incrementally updated Zobrist hash. Its methods generate
// moves for any seat and make and unmake moves without allocating.
type Position struct {
	board   [numCells]uint8
	geo     *geometry
	enPass  bool
	ownDead bool
	zombie  ZombieArmy
	// kingCaptureKills: a move that captures a king is judged with the
	// victim's army already dead (the victim leaves the game at once, so
	// its pieces no longer attack). Game positions set it; perft trees
	// have no eliminations and leave it off.
	kingCaptureKills bool

	list  [NumSeats][maxArmy]Square
	count [NumSeats]uint8
	idx   [numCells]uint8

	king   [NumSeats]Square
	castle uint8
	ep     [NumSeats]Square // square a seat's pawn skipped on its last move
	epPawn [NumSeats]Square // where that pawn stands
	toMove Seat
	status [NumSeats]SeatStatus
	// atk maps a piece byte to what it attacks: zero for empty and
	// off-board cells and for dead pieces, so the attack scan needs one
	// table lookup per cell.
	atk      [256]uint8
	hash     uint64
	halfmove int

	// points and frozen are game data carried through FEN4: each seat's
	// points, and the frozen result points of zombie seats. Make and
	// Unmake do not touch them.
	points   [NumSeats]int
	frozen   [NumSeats]int
	resigned [NumSeats]bool
}

// NewPosition returns the standard starting position for the rule set.
func NewPosition(rs RuleSet) *Position {
	p := newEmptyPosition(rs)
	g := p.geo
	for q := range numCells {
		if pc := g.start[q]; pc != offCell && pc != empty {
			p.put(Square(q), pc)
		}
	}
	p.castle = 0xFF
	p.refresh()
	return p
}

func newEmptyPosition(rs RuleSet) *Position {
	p := &Position{geo: rs.Seating.geometry(), enPass: rs.EnPassant, ownDead: rs.CaptureOwnDeadPieces, zombie: rs.Zombie}
	for q := range numCells {
		if p.geo.start[q] == offCell {
			p.board[q] = offCell
		}
	}
	return p
}

// refresh recomputes the derived state (attack table, hash) from scratch.
func (p *Position) refresh() {
	p.refreshAttack()
	p.hash = p.computeHash()
}

func (p *Position) refreshAttack() {
	p.atk = [256]uint8{}
	for s := Seat(0); s < NumSeats; s++ {
		for k := Pawn; k <= King; k++ {
			var f uint8
			switch k {
			case Pawn:
				f = atkPawn
			case Knight:
				f = atkKnight
			case Bishop:
				f = atkDiag
			case Rook:
				f = atkOrtho
			case Queen:
				f = atkDiag | atkOrtho
			case King:
				f = atkKing
			}
			if !p.pieceActive(s, k) {
				f = 0
			}
			p.atk[makePiece(s, k)] = f
			p.atk[makePiece(s, k)|promotedBit] = f
		}
	}
}

// pieceActive reports whether pieces of kind k of seat s can move and
// attack: dead pieces (of a seat out of the game, or of a king-only
// zombie apart from its king) cannot.
func (p *Position) pieceActive(s Seat, k PieceKind) bool {
	switch p.status[s] {
	case Out:
		return false
	case Zombie:
		return p.zombie == ZombieWholeArmy || k == King
	}
	return true
}

func (p *Position) put(q Square, pc uint8) {
	s := pieceSeat(pc)
	p.board[q] = pc
	p.idx[q] = p.count[s]
	p.list[s][p.count[s]] = q
	p.count[s]++
	if pieceKind(pc) == King {
		p.king[s] = q
	}
}

func (p *Position) remove(q Square) {
	pc := p.board[q]
	s := pieceSeat(pc)
	i := p.idx[q]
	p.count[s]--
	last := p.list[s][p.count[s]]
	p.list[s][i] = last
	p.idx[last] = i
	p.board[q] = empty
	if pieceKind(pc) == King && p.king[s] == q {
		p.king[s] = NoSquare
	}
}

func (p *Position) relocate(from, to Square) {
	pc := p.board[from]
	s := pieceSeat(pc)
	i := p.idx[from]
	p.list[s][i] = to
	p.idx[to] = i
	p.board[to] = pc
	p.board[from] = empty
}

// ToMove returns the seat to move.
func (p *Position) ToMove() Seat { return p.toMove }

// Hash returns the Zobrist hash of the placement, the seat to move, the
// castling rights and the en passant squares.
func (p *Position) Hash() uint64 { return p.hash }

// Status returns the status of seat s recorded in the position.
func (p *Position) Status(s Seat) SeatStatus { return p.status[s&3] }

// PieceAt returns the owner and kind of the piece on q, with ok false on an
// empty or unplayable square.
func (p *Position) PieceAt(q Square) (s Seat, k PieceKind, promoted, ok bool) {
	if int(q) >= numCells {
		return 0, NoPiece, false, false
	}
	pc := p.board[q]
	if pc == empty || pc == offCell {
		return 0, NoPiece, false, false
	}
	return pieceSeat(pc), pieceKind(pc), pc&promotedBit != 0, true
}

// KingSquare returns the square of seat s's king, or NoSquare.
func (p *Position) KingSquare(s Seat) Square { return p.king[s&3] }

// nextSeat returns the seat after s in turn order that is not out.
func (p *Position) nextSeat(s Seat) Seat {
	for i := Seat(1); i <= NumSeats; i++ {
		t := (s + i) & 3
		if p.status[t] != Out {
			return t
		}
	}
	return s
}

// Attacked reports whether square q is attacked by a piece, not dead, of
// any seat other than s.
func (p *Position) Attacked(q Square, s Seat) bool { return p.attacked(int(q), s) }

func (p *Position) attacked(q int, s Seat) bool {
	b := &p.board
	for _, o := range knightOffsets {
		if pc := b[q+o]; p.atk[pc]&atkKnight != 0 && pieceSeat(pc) != s {
			return true
		}
	}
	for _, o := range kingOffsets {
		if pc := b[q+o]; p.atk[pc]&atkKing != 0 && pieceSeat(pc) != s {
			return true
		}
	}
	g := p.geo
	for o := Seat(0); o < NumSeats; o++ {
		if o == s {
			continue
		}
		pawn := makePiece(o, Pawn)
		if p.atk[pawn] == 0 {
			continue
		}
		if b[q-g.pawnCap[o][0]] == pawn || b[q-g.pawnCap[o][1]] == pawn {
			return true
		}
	}
	for _, d := range diagDirs {
		t := q + d
		for b[t] == empty {
			t += d
		}
		if pc := b[t]; p.atk[pc]&atkDiag != 0 && pieceSeat(pc) != s {
			return true
		}
	}
	for _, d := range orthoDirs {
		t := q + d
		for b[t] == empty {
			t += d
		}
		if pc := b[t]; p.atk[pc]&atkOrtho != 0 && pieceSeat(pc) != s {
			return true
		}
	}
	return false
}

// InCheck reports whether seat s has a king and it is attacked.
func (p *Position) InCheck(s Seat) bool {
	k := p.king[s&3]
	return k != NoSquare && p.attacked(int(k), s)
}

// GenerateMoves appends the pseudo-legal moves of seat s to l (moves that
// may leave s's own king attacked). Dead pieces do not move.
func (p *Position) GenerateMoves(s Seat, l *MoveList) {
	b := &p.board
	n := int(p.count[s])
	for i := 0; i < n; i++ {
		from := p.list[s][i]
		pc := b[from]
		k := pieceKind(pc)
		if p.atk[pc] == 0 {
			continue // dead piece
		}
		f := int(from)
		switch k {
		case Pawn:
			p.genPawn(s, from, l)
		case Knight:
			for _, o := range knightOffsets {
				p.addStep(s, from, Square(f+o), Knight, l)
			}
		case King:
			for _, o := range kingOffsets {
				p.addStep(s, from, Square(f+o), King, l)
			}
			p.genCastles(s, l)
		default:
			if k != Rook {
				for _, d := range diagDirs {
					p.addRay(s, from, d, k, l)
				}
			}
			if k != Bishop {
				for _, d := range orthoDirs {
					p.addRay(s, from, d, k, l)
				}
			}
		}
	}
}

func (p *Position) addStep(s Seat, from, to Square, k PieceKind, l *MoveList) {
	pc := p.board[to]
	if pc == empty {
		l.add(newMove(from, to, k, NoPiece, flagNone))
	} else if p.capturable(pc, s) {
		l.add(newMove(from, to, k, pieceKind(pc), flagNone))
	}
}

// capturable reports whether seat s may capture the piece pc (which may
// also be offCell): pieces of other colours, and with
// RuleSet.CaptureOwnDeadPieces also s's own dead pieces.
func (p *Position) capturable(pc uint8, s Seat) bool {
	if pc == offCell {
		return false
	}
	return pieceSeat(pc) != s || (p.ownDead && p.atk[pc] == 0)
}

func (p *Position) addRay(s Seat, from Square, d int, k PieceKind, l *MoveList) {
	b := &p.board
	t := int(from) + d
	for b[t] == empty {
		l.add(newMove(from, Square(t), k, NoPiece, flagNone))
		t += d
	}
	if pc := b[t]; p.capturable(pc, s) {
		l.add(newMove(from, Square(t), k, pieceKind(pc), flagNone))
	}
}

func (p *Position) genPawn(s Seat, from Square, l *MoveList) {
	b := &p.board
	g := p.geo
	fw := g.fwd[s]
	t := Square(int(from) + fw)
	if b[t] == empty {
		m := newMove(from, t, Pawn, NoPiece, flagNone)
		if g.promo[s][t] {
			m |= promoBit
		}
		l.add(m)
		if g.pawnStart[s][from] {
			if t2 := Square(int(t) + fw); b[t2] == empty {
				l.add(newMove(from, t2, Pawn, NoPiece, flagDouble))
			}
		}
	}
	for _, c := range g.pawnCap[s] {
		t := Square(int(from) + c)
		pc := b[t]
		if pc == empty {
			if p.enPass {
				p.genEnPassant(s, from, t, l)
			}
			continue
		}
		if p.capturable(pc, s) {
			m := newMove(from, t, Pawn, pieceKind(pc), flagNone)
			if g.promo[s][t] {
				m |= promoBit
			}
			l.add(m)
		}
	}
}

func (p *Position) genEnPassant(s Seat, from, t Square, l *MoveList) {
	for o := Seat(0); o < NumSeats; o++ {
		if o == s || p.ep[o] != t {
			continue
		}
		if p.board[p.epPawn[o]] != makePiece(o, Pawn) {
			continue
		}
		m := newMove(from, t, Pawn, Pawn, flagEnPassant)
		if p.geo.promo[s][t] {
			m |= promoBit
		}
		l.add(m)
		return
	}
}

func (p *Position) genCastles(s Seat, l *MoveList) {
	for side := range 2 {
		if p.castle&castleBit(s, side == 1) == 0 {
			continue
		}
		c := &p.geo.castle[s][side]
		if p.king[s] != c.kingFrom || p.board[c.rookFrom] != makePiece(s, Rook) {
			continue
		}
		clear := true
		for _, q := range c.between {
			if q != NoSquare && p.board[q] != empty {
				clear = false
			}
		}
		if !clear {
			continue
		}
		if p.attacked(int(c.kingFrom), s) || p.attacked(int(c.pass), s) || p.attacked(int(c.kingTo), s) {
			continue
		}
		flag := uint32(flagCastleK)
		if side == 1 {
			flag = flagCastleQ
		}
		l.add(newMove(c.kingFrom, c.kingTo, King, NoPiece, flag))
	}
}

// Legal reports whether the pseudo-legal move m of seat s leaves s's king
// unattacked. Castling is fully checked at generation.
func (p *Position) Legal(s Seat, m Move) bool {
	ksq := p.king[s]
	if ksq == NoSquare || m.Castle() != 0 {
		return true
	}
	b := &p.board
	from, to := m.From(), m.To()
	pc := b[from]
	if pieceKind(pc) == King {
		ksq = to
	}
	savedTo := b[to]
	b[to] = pc
	b[from] = empty
	if m.EnPassant() {
		cap := p.epVictimSquare(s, to)
		savedCap := b[cap]
		b[cap] = empty
		ok := !p.attacked(int(ksq), s)
		b[cap] = savedCap
		b[from] = pc
		b[to] = savedTo
		return ok
	}
	var ok bool
	if pieceKind(savedTo) == King && p.kingCaptureKills {
		ok = p.notAttackedWithout(int(ksq), s, pieceSeat(savedTo))
	} else {
		ok = !p.attacked(int(ksq), s)
	}
	b[from] = pc
	b[to] = savedTo
	return ok
}

// notAttackedWithout reports whether q is free of attacks by seats other
// than s, with the pieces of seat dead treated as dead.
func (p *Position) notAttackedWithout(q int, s, dead Seat) bool {
	var saved [King + 1][2]uint8
	for k := Pawn; k <= King; k++ {
		pc := makePiece(dead, k)
		saved[k] = [2]uint8{p.atk[pc], p.atk[pc|promotedBit]}
		p.atk[pc], p.atk[pc|promotedBit] = 0, 0
	}
	ok := !p.attacked(q, s)
	for k := Pawn; k <= King; k++ {
		pc := makePiece(dead, k)
		p.atk[pc], p.atk[pc|promotedBit] = saved[k][0], saved[k][1]
	}
	return ok
}

func (p *Position) epVictimSquare(s Seat, to Square) Square {
	for o := Seat(0); o < NumSeats; o++ {
		if o != s && p.ep[o] == to && p.board[p.epPawn[o]] == makePiece(o, Pawn) {
			return p.epPawn[o]
		}
	}
	return NoSquare
}

// LegalMoves appends the legal moves of seat s to l, whether or not it is
// s's turn (mates of players who are not to move are judged with it).
func (p *Position) LegalMoves(s Seat, l *MoveList) {
	start := l.N
	p.GenerateMoves(s, l)
	lc := p.newLegalChecker(s)
	n := start
	for i := start; i < l.N; i++ {
		if m := l.Moves[i]; p.legalWith(&lc, s, m) {
			l.Moves[n] = m
			n++
		}
	}
	l.N = n
}

// HasLegalMove reports whether seat s has at least one legal move.
func (p *Position) HasLegalMove(s Seat) bool {
	var l MoveList
	return p.hasLegalMove(s, &l)
}

// hasLegalMove is HasLegalMove generating into l. A MoveList (4 KB) on
// the stack makes every fresh goroutine that calls it grow and copy its
// stack, as a server's goroutine per request does for every move.
func (p *Position) hasLegalMove(s Seat, l *MoveList) bool {
	l.N = 0
	p.GenerateMoves(s, l)
	lc := p.newLegalChecker(s)
	for _, m := range l.Moves[:l.N] {
		if p.legalWith(&lc, s, m) {
			return true
		}
	}
	return false
}

// Undo holds what Unmake needs to restore the position before a move.
type Undo struct {
	hash     uint64
	halfmove int32
	captured uint8
	moved    uint8
	capSq    Square
	ep       Square
	epPawn   Square
	castle   uint8
	toMove   Seat
}

// Make plays move m for the seat to move and passes the turn to the next
// seat that is not out. m must be legal (or at least pseudo-legal) here.
func (p *Position) Make(m Move) Undo {
	s := p.toMove
	from, to := m.From(), m.To()
	b := &p.board
	pc := b[from]
	u := Undo{hash: p.hash, halfmove: int32(p.halfmove), moved: pc, ep: p.ep[s], epPawn: p.epPawn[s], castle: p.castle, toMove: s}
	h := p.hash
	capSq := to
	if m.EnPassant() {
		capSq = p.epVictimSquare(s, to)
	}
	u.capSq = capSq
	if capSq != NoSquare {
		if cp := b[capSq]; cp != empty {
			u.captured = cp
			h ^= zobrist.piece[cp][capSq]
			p.remove(capSq)
		}
	}
	h ^= zobrist.piece[pc][from]
	p.relocate(from, to)
	switch {
	case m.Promotion():
		npc := makePiece(s, Queen) | promotedBit
		b[to] = npc
		h ^= zobrist.piece[npc][to]
	case pieceKind(pc) == King:
		p.king[s] = to
		h ^= zobrist.piece[pc][to]
		if c := m.Castle(); c != 0 {
			cg := &p.geo.castle[s][c-1]
			rk := b[cg.rookFrom]
			h ^= zobrist.piece[rk][cg.rookFrom] ^ zobrist.piece[rk][cg.rookTo]
			p.relocate(cg.rookFrom, cg.rookTo)
		}
	default:
		h ^= zobrist.piece[pc][to]
	}
	if nc := p.castle &^ (p.geo.castleMask[from] | p.geo.castleMask[to]); nc != p.castle {
		h ^= zobrist.castle[p.castle] ^ zobrist.castle[nc]
		p.castle = nc
	}
	if p.ep[s] != NoSquare {
		h ^= zobrist.ep[s][p.ep[s]]
		p.ep[s], p.epPawn[s] = NoSquare, NoSquare
	}
	if m.flag() == flagDouble && p.enPass {
		p.ep[s] = Square(int(from) + p.geo.fwd[s])
		p.epPawn[s] = to
		h ^= zobrist.ep[s][p.ep[s]]
	}
	if u.captured != empty || pieceKind(pc) == Pawn {
		p.halfmove = 0
	} else {
		p.halfmove++
	}
	next := p.nextSeat(s)
	h ^= zobrist.toMove[s] ^ zobrist.toMove[next]
	p.toMove = next
	p.hash = h
	return u
}

// Unmake takes back move m, which must be the last move made, given the
// Undo that Make returned.
func (p *Position) Unmake(m Move, u Undo) {
	s := u.toMove
	from, to := m.From(), m.To()
	b := &p.board
	if c := m.Castle(); c != 0 {
		cg := &p.geo.castle[s][c-1]
		p.relocate(cg.rookTo, cg.rookFrom)
	}
	p.relocate(to, from)
	b[from] = u.moved
	if pieceKind(u.moved) == King {
		p.king[s] = from
	}
	if u.captured != empty {
		p.put(u.capSq, u.captured)
	}
	p.ep[s], p.epPawn[s] = u.ep, u.epPawn
	p.castle = u.castle
	p.halfmove = int(u.halfmove)
	p.toMove = s
	p.hash = u.hash
}

// pinSet lists the squares of seat s's pieces that shield s's king from
// an enemy slider; at most one per direction.
type pinSet struct {
	sq [8]Square
	n  int
}

func (ps *pinSet) has(q Square) bool {
	for _, x := range ps.sq[:ps.n] {
		if x == q {
			return true
		}
	}
	return false
}

// pins finds s's pieces that stand alone between s's king and an active
// enemy slider moving along that line.
func (p *Position) pins(s Seat, ksq Square, ps *pinSet) {
	b := &p.board
	for i, d := range kingOffsets {
		flag := uint8(atkOrtho)
		if i >= 4 {
			flag = atkDiag
		}
		t := int(ksq) + d
		for b[t] == empty {
			t += d
		}
		if pc := b[t]; pc == offCell || pieceSeat(pc) != s {
			continue
		}
		shield := t
		t += d
		for b[t] == empty {
			t += d
		}
		if pc := b[t]; p.atk[pc]&flag != 0 && pieceSeat(pc) != s {
			ps.sq[ps.n] = Square(shield)
			ps.n++
		}
	}
}

// legalChecker decides legality of pseudo-legal moves of one position
// cheaply: only king moves, en passant, moves of pinned pieces and moves
// while in check need the full test.
type legalChecker struct {
	ksq     Square
	inCheck bool
	pins    pinSet
}

func (p *Position) newLegalChecker(s Seat) legalChecker {
	lc := legalChecker{ksq: p.king[s]}
	if lc.ksq == NoSquare {
		return lc
	}
	lc.inCheck = p.attacked(int(lc.ksq), s)
	if !lc.inCheck {
		p.pins(s, lc.ksq, &lc.pins)
	}
	return lc
}

func (p *Position) legalWith(lc *legalChecker, s Seat, m Move) bool {
	if lc.ksq == NoSquare {
		return true
	}
	if lc.inCheck || m.Piece() == King || m.flag() == flagEnPassant || (lc.pins.n > 0 && lc.pins.has(m.From())) ||
		(m.Captured() == King && p.kingCaptureKills) {
		return p.Legal(s, m)
	}
	return true
}

// Perft counts the leaf nodes of the tree of legal move sequences depth
// plies deep from this position (docs/rules.md section 12).
func (p *Position) Perft(depth int) uint64 {
	if depth <= 0 {
		return 1
	}
	var l MoveList
	s := p.toMove
	p.GenerateMoves(s, &l)
	lc := p.newLegalChecker(s)
	var nodes uint64
	if depth == 1 {
		for _, m := range l.Moves[:l.N] {
			if p.legalWith(&lc, s, m) {
				nodes++
			}
		}
		return nodes
	}
	for _, m := range l.Moves[:l.N] {
		if !p.legalWith(&lc, s, m) {
			continue
		}
		u := p.Make(m)
		nodes += p.Perft(depth - 1)
		p.Unmake(m, u)
	}
	return nodes
}

// Clone returns an independent copy of the position.
func (p *Position) Clone() *Position {
	c := *p
	return &c
}

// setToMove gives the turn to seat s, keeping the hash current.
func (p *Position) setToMove(s Seat) {
	p.hash ^= zobrist.toMove[p.toMove] ^ zobrist.toMove[s]
	p.toMove = s
}

// attackedBy reports whether square q is attacked by an active piece of
// seat by.
func (p *Position) attackedBy(q int, by Seat) bool {
	b := &p.board
	is := func(pc uint8, flag uint8) bool { return p.atk[pc]&flag != 0 && pieceSeat(pc) == by }
	for _, o := range knightOffsets {
		if is(b[q+o], atkKnight) {
			return true
		}
	}
	for _, o := range kingOffsets {
		if is(b[q+o], atkKing) {
			return true
		}
	}
	pawn := makePiece(by, Pawn)
	if p.atk[pawn] != 0 && (b[q-p.geo.pawnCap[by][0]] == pawn || b[q-p.geo.pawnCap[by][1]] == pawn) {
		return true
	}
	for _, d := range diagDirs {
		t := q + d
		for b[t] == empty {
			t += d
		}
		if is(b[t], atkDiag) {
			return true
		}
	}
	for _, d := range orthoDirs {
		t := q + d
		for b[t] == empty {
			t += d
		}
		if is(b[t], atkOrtho) {
			return true
		}
	}
	return false
}

// attackersOf returns the squares of the pieces that attack q on behalf of
// no live piece of seat s: every piece of another seat, live or dead, and
// s's own dead pieces, with every piece blocking a line. It serves record
// replay diagnostics (which pieces could a site count for a check mark),
// not play, where dead pieces never attack.
func (p *Position) attackersOf(q Square, s Seat) []Square {
	var out []Square
	b := &p.board
	counts := func(t int) bool {
		pc := b[t]
		if pc == empty || pc == offCell {
			return false
		}
		o := pieceSeat(pc)
		return o != s || !p.pieceActive(o, pieceKind(pc))
	}
	for _, o := range knightOffsets {
		if t := int(q) + o; counts(t) && pieceKind(b[t]) == Knight {
			out = append(out, Square(t))
		}
	}
	for _, o := range kingOffsets {
		if t := int(q) + o; counts(t) && pieceKind(b[t]) == King {
			out = append(out, Square(t))
		}
	}
	for o := Seat(0); o < NumSeats; o++ {
		for _, c := range p.geo.pawnCap[o] {
			if t := int(q) - c; counts(t) && b[t] == makePiece(o, Pawn) {
				out = append(out, Square(t))
			}
		}
	}
	slide := func(dirs [4]int, k PieceKind) {
		for _, d := range dirs {
			t := int(q) + d
			for b[t] == empty {
				t += d
			}
			if kk := pieceKind(b[t]); counts(t) && (kk == k || kk == Queen) {
				out = append(out, Square(t))
			}
		}
	}
	slide(diagDirs, Bishop)
	slide(orthoDirs, Rook)
	return out
}
