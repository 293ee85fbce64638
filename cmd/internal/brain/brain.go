// Package brain chooses moves for computer players (bots, and the terminal
// client's --auto mode) from a position the server sent.
//
// Two levels exist:
//
//   - random: a uniformly random legal move;
//   - greedy: a shallow search that plays for points under the rules of the
//     game (docs/rules.md sections 5-6): it takes material by its capture value
//     (zombie pieces only for their king, dead pieces never), mates for 20
//     per player, promotes, and weighs what the next player to move can do
//     right after it (capture one of its pieces, mate it, or collect a king
//     its own move left attacked) and what the two players after that can
//     capture. It never leaves its king where a single reply captures or
//     mates it if another move avoids that.
//
// A choice takes microseconds to a few milliseconds, so a bot never loses on
// time because of its brain. A Brain is not safe for concurrent use (it owns
// a random source): give each bot its own.
package brain

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
)

// Level names a playing strength.
type Level string

// The levels.
const (
	Random Level = "random"
	Greedy Level = "greedy"
)

// Levels lists the known levels, weakest first.
func Levels() []Level { return []Level{Random, Greedy} }

// ParseLevel returns the level named s.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels() {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown bot level %q (want random or greedy)", s)
}

// repeatPenalty is what returning to a position costs per earlier visit.
const repeatPenalty = 1.0

// ErrNoMove is returned when the position offers no legal move to choose.
var ErrNoMove = errors.New("no legal move")

// Turn is what a brain needs to choose a move.
type Turn struct {
	// RuleSet is the match's rule set name ("" means "fourkingdoms").
	RuleSet string
	// FEN4 is the position, with the seat to move.
	FEN4 string
	// Seat is the engine seat (0-3) of the player to move.
	Seat rules.Seat
	// Legal are the server's legal moves for Seat in long algebraic form.
	// The chosen move is always one of them when it is not empty.
	Legal []string
	// Game identifies the game (a match id); the brain remembers the
	// positions its moves led to within one game to avoid repeating them.
	Game string
}

// Brain chooses moves at one level.
type Brain struct {
	level Level
	rng   *rand.Rand
	// game and seen: the positions (hashes) this brain's moves led to in
	// the current game, and how often.
	game string
	seen map[uint64]int
}

// New returns a brain of the given level drawing randomness from rng.
func New(level Level, rng *rand.Rand) *Brain {
	return &Brain{level: level, rng: rng}
}

// Level returns the brain's level.
func (b *Brain) Level() Level { return b.level }

// Choose returns the move to play in long algebraic form.
func (b *Brain) Choose(t Turn) (string, error) {
	if b.level == Random {
		if len(t.Legal) > 0 {
			return t.Legal[b.rng.IntN(len(t.Legal))], nil
		}
	}
	name := t.RuleSet
	if name == "" {
		name = "fourkingdoms"
	}
	rs, ok := rules.RuleSetByName(name)
	if !ok {
		return b.fallback(t, fmt.Errorf("unknown rule set %q", name))
	}
	g, err := rules.NewGame(rs, 0, t.FEN4)
	if err != nil {
		return b.fallback(t, fmt.Errorf("read position: %w", err))
	}
	if g.ToMove() != t.Seat {
		return b.fallback(t, fmt.Errorf("position has %s to move, not %s", g.ToMove(), t.Seat))
	}
	moves := g.LegalMoves(t.Seat)
	if len(t.Legal) > 0 {
		// The server is the authority: only consider moves it lists.
		moves = slices.DeleteFunc(moves, func(m rules.Move) bool { return !slices.Contains(t.Legal, g.MoveText(m)) })
	}
	if len(moves) == 0 {
		return b.fallback(t, ErrNoMove)
	}
	if b.level == Random {
		return g.MoveText(moves[b.rng.IntN(len(moves))]), nil
	}
	if t.Game != b.game || b.seen == nil {
		b.game, b.seen = t.Game, map[uint64]int{}
	}
	s := searcher{pos: g.Position(), rs: &rs, me: t.Seat}
	best, bestScore, bestHash := moves[0], -1e18, uint64(0)
	for _, m := range moves {
		// The jitter only breaks ties, so equal moves vary between games.
		sc := s.score(m) + b.rng.Float64()*0.01
		u := s.pos.Make(m)
		h := s.pos.Hash()
		s.pos.Unmake(m, u)
		// Going back to a position already reached is worth a pawn less
		// per time: shuffling ends in a draw by repetition (+10 for all),
		// while making progress may win more.
		sc -= repeatPenalty * float64(b.seen[h])
		if sc > bestScore {
			best, bestScore, bestHash = m, sc, h
		}
	}
	b.seen[bestHash]++
	return g.MoveText(best), nil
}

// fallback picks a random server move when the position cannot be read, so
// a bot keeps playing (and never flags) even if the engine disagrees.
func (b *Brain) fallback(t Turn, err error) (string, error) {
	if len(t.Legal) == 0 {
		return "", err
	}
	return t.Legal[b.rng.IntN(len(t.Legal))], nil
}
