package rules

// zobristTables holds the random keys of the position hash. They are
// generated once from a fixed seed, so hashes are stable across runs and
// machines (the binary encoding does not store them, but tests and logs may
// compare them).
type zobristTables struct {
	piece  [maxPieceByte][numCells]uint64
	ep     [NumSeats][numCells]uint64
	castle [256]uint64
	toMove [NumSeats]uint64
	status [NumSeats][3]uint64
}

var zobrist = newZobrist()

func newZobrist() *zobristTables {
	z := &zobristTables{}
	x := uint64(0x4B1D_F0C4_2026_0001)
	next := func() uint64 { // splitmix64
		x += 0x9E3779B97F4A7C15
		v := x
		v = (v ^ v>>30) * 0xBF58476D1CE4E5B9
		v = (v ^ v>>27) * 0x94D049BB133111EB
		return v ^ v>>31
	}
	for i := range z.piece {
		for q := range z.piece[i] {
			z.piece[i][q] = next()
		}
	}
	for s := range z.ep {
		for q := range z.ep[s] {
			z.ep[s][q] = next()
		}
	}
	var bits [8]uint64
	for i := range bits {
		bits[i] = next()
	}
	for c := range z.castle {
		for i := range 8 {
			if c&(1<<i) != 0 {
				z.castle[c] ^= bits[i]
			}
		}
	}
	for s := range z.toMove {
		z.toMove[s] = next()
		for st := range z.status[s] {
			z.status[s][st] = next()
		}
	}
	return z
}

func (p *Position) computeHash() uint64 {
	var h uint64
	for q := range numCells {
		if pc := p.board[q]; pc != empty && pc != offCell {
			h ^= zobrist.piece[pc][q]
		}
	}
	for s := range NumSeats {
		if p.ep[s] != NoSquare {
			h ^= zobrist.ep[s][p.ep[s]]
		}
	}
	h ^= zobrist.castle[p.castle]
	h ^= zobrist.toMove[p.toMove]
	return h
}
