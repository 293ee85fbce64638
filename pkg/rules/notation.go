package rules

import (
	"fmt"
	"strings"
)

// ParseMove reads a move of the seat to move in long algebraic form,
// tolerantly: "h2-h4", "h2h4", "Qg1xQh14", "Qg1xh14", "O-O", "O-O-O",
// "k7-k8=Q", "k7-k8=D", "k7k8", with or without check and mate marks. It
// returns ErrBadMoveText when the text cannot be read and ErrIllegalMove
// when no legal move matches.
func (g *Game) ParseMove(text string) (Move, error) {
	return parseMoveFor(g.pos, g.pos.toMove, text)
}

// CheckMoveText reports whether text can be read as a move in the forms
// ParseMove accepts, without a position to look it up in (moves queued for
// a later position): nil, or an error wrapping ErrBadMoveText.
func CheckMoveText(text string) error {
	_, err := parseMoveText(text)
	return err
}

type moveText struct {
	castle   int // 1 short, 2 long
	from, to Square
	promo    bool
}

func parseMoveText(text string) (moveText, error) {
	t := strings.TrimSpace(text)
	t = strings.TrimRight(t, "+#!?RT")
	var mt moveText
	switch strings.ReplaceAll(t, "0", "O") {
	case "O-O":
		mt.castle = 1
		return mt, nil
	case "O-O-O":
		mt.castle = 2
		return mt, nil
	}
	if t != "" && strings.IndexByte("KQRBNP", t[0]) >= 0 {
		t = t[1:]
	}
	q, n := scanSquare(t)
	if n == 0 {
		return mt, fmt.Errorf("%w: %q", ErrBadMoveText, text)
	}
	mt.from = q
	t = t[n:]
	if t != "" && (t[0] == '-' || t[0] == 'x' || t[0] == 'X' || t[0] == ':') {
		t = t[1:]
	}
	if t != "" && strings.IndexByte("KQRBNP", t[0]) >= 0 {
		t = t[1:]
	}
	q, n = scanSquare(t)
	if n == 0 {
		return mt, fmt.Errorf("%w: %q", ErrBadMoveText, text)
	}
	mt.to = q
	t = t[n:]
	t = strings.TrimPrefix(t, "=")
	switch t {
	case "":
	case "Q", "D", "q", "d":
		mt.promo = true
	default:
		return mt, fmt.Errorf("%w: %q", ErrBadMoveText, text)
	}
	return mt, nil
}

func parseMoveFor(p *Position, s Seat, text string) (Move, error) {
	mt, err := parseMoveText(text)
	if err != nil {
		return NoMove, err
	}
	var l MoveList
	p.LegalMoves(s, &l)
	if m := mt.find(l.Moves[:l.N]); m != NoMove {
		return m, nil
	}
	return NoMove, fmt.Errorf("%w: %q for %s", ErrIllegalMove, text, s)
}

// find returns the move of legal that the text names, or NoMove.
func (mt moveText) find(legal []Move) Move {
	for _, m := range legal {
		if mt.castle != 0 {
			if m.Castle() == mt.castle {
				return m
			}
			continue
		}
		if m.From() == mt.from && m.To() == mt.to && (!mt.promo || m.Promotion()) {
			return m
		}
	}
	return NoMove
}
