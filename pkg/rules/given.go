package rules

import (
	"errors"
	"fmt"
)

// ErrNotZombie is returned by PlayZombie for a seat that is not a zombie.
var ErrNotZombie = errors.New("seat is not a zombie")

// NewGameGivenZombieMoves starts a game like NewGame whose zombie moves are
// given by the caller instead of drawn from a seed: a game record, or a
// server's event stream that publishes every zombie move but never its
// seed. After each action the game stops at a zombie's turn (stalemates,
// mates on turn and the end of the game are still judged as in any game)
// until PlayZombie applies the zombie's move. (Play and PlayText accept
// a zombie's move in such a game too, as record replay needs; PlayZombie
// is the call that insists the seat is a zombie.)
func NewGameGivenZombieMoves(rs RuleSet, startFEN4 string) (*Game, error) {
	g, err := NewGame(rs, 0, startFEN4)
	if err != nil {
		return nil, err
	}
	if g.ply != 0 {
		// NewGame drew zombie moves from the seed because a zombie was
		// to move at the start: no caller can give those.
		return nil, fmt.Errorf("%w: a zombie is to move in the start position", ErrBadRecord)
	}
	g.manualZombies = true
	return g, nil
}

// PlayZombie applies move text (as PlayText reads it) for zombie seat s, in
// a game from NewGameGivenZombieMoves: the move must be one of the moves the
// zombie's army may make (all its legal moves; a king-only zombie's are its
// king's). It fails with ErrGameOver, ErrBadSeat, ErrNotYourTurn,
// ErrNotZombie, ErrBadMoveText or ErrIllegalMove and then changes nothing.
// The returned effects hold that one move (marked Zombie) and what followed
// it up to the next turn of a live player or zombie.
func (g *Game) PlayZombie(s Seat, text string) (Move, Effects, error) {
	switch {
	case s >= NumSeats:
		return NoMove, Effects{}, ErrBadSeat
	case g.over:
		return NoMove, Effects{}, ErrGameOver
	case !g.manualZombies:
		return NoMove, Effects{}, fmt.Errorf("%w: this game draws its zombie moves from its seed", ErrNotZombie)
	case g.pos.status[s] != Zombie:
		return NoMove, Effects{}, fmt.Errorf("%w: %s is %s", ErrNotZombie, s, g.pos.status[s])
	}
	// PlayText checks the turn and legality; in a game with manual zombie
	// moves it lets a zombie move and marks the move Zombie.
	return g.PlayText(s, text)
}
