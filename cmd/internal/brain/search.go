package brain

import "github.com/fourkingdoms/fourkingdoms/pkg/rules"

// Weights of the greedy evaluation, in points.
const (
	// lostKing is what losing the own king (or being mated) costs: far
	// more than its 20 points, since a player out of the game scores no
	// more.
	lostKing = 100
	// promotionGain is the material a promotion adds (a queen that is worth
	// only 1 point to a capturer but moves like a queen).
	promotionGain = 8
	// nextWeight, laterWeight discount the captures of my pieces by the
	// next player (who surely gets to move) and by the two after it (who
	// may be busy elsewhere).
	nextWeight  = 1.0
	laterWeight = 0.5
	// rivalGainWeight discounts points the next player gains from others:
	// they count against me in a points race, but less than my own losses.
	rivalGainWeight = 0.3
)

// searcher evaluates the moves of seat me in pos. It makes and unmakes moves
// on pos and leaves it as it found it.
type searcher struct {
	pos *rules.Position
	rs  *rules.RuleSet
	me  rules.Seat
}

// score is the greedy value of move m for me: what it gains now, minus what
// the players after me can take in reply.
func (s *searcher) score(m rules.Move) float64 {
	p := s.pos
	gain := float64(s.captureValue(m.To()))
	if m.Promotion() {
		gain += promotionGain
	}
	gain += s.progress(m)
	u := p.Make(m)
	defer p.Unmake(m, u)
	gain += float64(s.rs.MatePoints * s.mates(s.me))

	// The next player to move: look at every reply.
	next := p.ToMove()
	threat, rivalGain := 0.0, 0.0
	if next != s.me && p.Status(next) != rules.Out {
		threat, rivalGain = s.replies(next)
	}
	// The two players after it: what of mine they attack now.
	for o := next + 1; o != next+rules.NumSeats; o++ {
		seat := o % rules.NumSeats
		if seat == s.me || seat == next || p.Status(seat) == rules.Out {
			continue
		}
		threat = max(threat, laterWeight*s.bestCaptureOf(seat, s.me))
	}
	return gain - threat - rivalGainWeight*rivalGain
}

// replies plays every legal reply of seat o and returns the worst loss for
// me (weighted) and the most points o could gain from anyone.
func (s *searcher) replies(o rules.Seat) (threat, gain float64) {
	p := s.pos
	var l rules.MoveList
	p.LegalMoves(o, &l)
	zombie := p.Status(o) == rules.Zombie
	for _, r := range l.Moves[:l.N] {
		victim, kind, _, captures := p.PieceAt(r.To())
		g := float64(s.captureValue(r.To()))
		loss := 0.0
		if captures && victim == s.me {
			loss = s.exchangeLoss(o, r, kind)
		}
		// Mates judged right after the reply (only replies that check can
		// mate, so most replies skip the move generation).
		u := p.Make(r)
		if p.InCheck(s.me) && !p.HasLegalMove(s.me) {
			loss = lostKing
		}
		g += float64(s.rs.MatePoints * s.matesIfChecked(o))
		p.Unmake(r, u)
		if zombie {
			// A zombie plays a random move: any one reply is unlikely.
			loss /= float64(max(l.N, 1))
			g = 0
		}
		threat = max(threat, nextWeight*loss)
		if captures && victim != s.me {
			gain = max(gain, g)
		}
	}
	return threat, gain
}

// bestCaptureOf returns the material of victim that seat o can capture in
// one legal move in the current position.
func (s *searcher) bestCaptureOf(o, victim rules.Seat) float64 {
	p := s.pos
	var l rules.MoveList
	p.LegalMoves(o, &l)
	best := 0.0
	for _, r := range l.Moves[:l.N] {
		if v, kind, _, ok := p.PieceAt(r.To()); ok && v == victim {
			best = max(best, s.exchangeLoss(o, r, kind))
		}
	}
	if p.Status(o) == rules.Zombie {
		best /= float64(max(l.N, 1))
	}
	return best
}

// exchangeLoss is what I lose when seat o plays capture r of my piece of
// kind victim: the piece, less the capturer when the square is defended
// (someone other than o attacks it, so the capturer is taken back). A
// static exchange of one step is enough to stop the bot from fearing every
// defended piece, and from offering undefended ones.
func (s *searcher) exchangeLoss(o rules.Seat, r rules.Move, victim rules.PieceKind) float64 {
	loss := s.materialValue(r.To(), victim)
	if victim != rules.King && s.pos.Attacked(r.To(), o) {
		loss = max(0, loss-float64(s.rs.PieceValues[r.Piece()]))
	}
	return loss
}

// captureValue returns the points a capture on q scores (docs/rules.md
// section 5): zombie pieces only for their king, dead pieces nothing.
func (s *searcher) captureValue(q rules.Square) int {
	owner, kind, promoted, ok := s.pos.PieceAt(q)
	if !ok {
		return 0
	}
	switch s.pos.Status(owner) {
	case rules.Out:
		return 0
	case rules.Zombie:
		if kind == rules.King {
			return s.rs.KingCapturePoints
		}
		if !s.rs.ZombiePiecesScore {
			return 0
		}
	}
	if kind == rules.King {
		return s.rs.KingCapturePoints
	}
	if kind == rules.Queen && promoted {
		return s.rs.PromotedQueen
	}
	return s.rs.PieceValues[kind]
}

// materialValue is what losing the piece on q costs me: its playing
// strength, not its points (a promoted queen still moves like a queen).
func (s *searcher) materialValue(q rules.Square, kind rules.PieceKind) float64 {
	if kind == rules.King {
		return lostKing
	}
	return float64(s.rs.PieceValues[kind])
}

// mates counts the players other than mover who are mated in the current
// position: in check with no legal move (docs/rules.md section 6).
func (s *searcher) mates(mover rules.Seat) int {
	n := 0
	for o := range rules.Seat(rules.NumSeats) {
		if o == mover || s.pos.Status(o) == rules.Out {
			continue
		}
		if s.pos.InCheck(o) && !s.pos.HasLegalMove(o) {
			n++
		}
	}
	return n
}

// matesIfChecked is mates without me (my own mate is counted as a loss).
func (s *searcher) matesIfChecked(mover rules.Seat) int {
	n := 0
	for o := range rules.Seat(rules.NumSeats) {
		if o == mover || o == s.me || s.pos.Status(o) == rules.Out {
			continue
		}
		if s.pos.InCheck(o) && !s.pos.HasLegalMove(o) {
			n++
		}
	}
	return n
}

// progress rewards moves that make progress without risk: pawns advancing
// toward promotion and minor pieces leaving the back rank, so quiet
// positions do not turn into aimless shuffling.
func (s *searcher) progress(m rules.Move) float64 {
	switch m.Piece() {
	case rules.Pawn:
		return 0.05
	case rules.Knight, rules.Bishop:
		if s.onHomeEdge(m.From()) {
			return 0.1
		}
	case rules.King:
		if m.Castle() != 0 {
			return 0.2
		}
		return -0.1
	}
	return 0
}

// onHomeEdge reports whether q is on one of the two outermost lines of the
// board, where every army starts.
func (s *searcher) onHomeEdge(q rules.Square) bool {
	f, r := q.File(), q.Rank()
	return f <= 1 || f >= 12 || r <= 1 || r >= 12
}
