package rules

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Binary encoding of a game (version 1), small enough to store after every
// move:
//
//	"4K" 0x01            magic and version
//	rule set             1 byte: index in RuleSetNames
//	flags                1 byte: 1 start FEN4 follows, 2 zombie moves are
//	                     stored (record replay), 4 aborted, 8 leaves that
//	                     keep the turn follow (record replay, see
//	                     Action.KeepTurn): codes 8-15 below are those
//	                     leaves and moves start at 16; 16 a claim
//	                     follows the actions; 32 the options byte follows
//	[options]            1 byte, when flags has 32: the rule set's options
//	                     (OptionNames), bit i for the i-th, when they
//	                     differ from the named rule set's
//	seed                 uvarint
//	[start FEN4]         uvarint length + canonical FEN4 text
//	n                    uvarint number of actions
//	n actions            uvarint each: 0-3 resignation of seat 0-3, 4-7
//	                     time loss of seat 0-3, 8+i the i-th move of the
//	                     sorted legal moves of the seat to move
//	[claimer]            uvarint seat, when flags has 16: the game
//	                     ended by that seat's claim (Game.ClaimWin), after
//	                     the n actions
//
// Zombie moves drawn from the seed are not stored: decoding replays the
// game and draws them again. Legal move lists are short, so a move takes
// one byte (two in the rare position with 120 or more legal moves): a
// 200-ply game from the standard start takes about 210 bytes.
const (
	binMagic0, binMagic1, binVersion = '4', 'K', 1

	binFlagFEN     = 1
	binFlagZombies = 2
	binFlagAborted = 4
	binFlagKeep    = 8
	binFlagClaim   = 16
	binFlagOptions = 32
	binMoveBase    = 8
	// binMoveBaseKeep is the first move code under binFlagKeep: 8-11
	// resignation and 12-15 time loss keeping the turn.
	binMoveBaseKeep = 16
)

// MarshalBinary encodes the game: rule set, seed, start position and the
// history of actions (no clocks). It implements encoding.BinaryMarshaler.
func (g *Game) MarshalBinary() ([]byte, error) {
	ri := slices.Index(ruleSetNames[:], g.rules.Name)
	if ri < 0 {
		return nil, fmt.Errorf("marshal game: %w %q", ErrUnknownRules, g.rules.Name)
	}
	std, ok := storable(g.rules)
	if !ok {
		return nil, fmt.Errorf("marshal game: rule set %q was modified beyond its options %v", g.rules.Name, OptionNames())
	}
	opts := optionBits(g.rules)
	buf := make([]byte, 0, 16+len(g.startFEN)+len(g.history))
	buf = append(buf, binMagic0, binMagic1, binVersion, byte(ri))
	var flags byte
	if g.startFEN != "" {
		flags |= binFlagFEN
	}
	if g.manualZombies {
		flags |= binFlagZombies
	}
	if g.term == Aborted {
		flags |= binFlagAborted
	}
	moveBase := binMoveBase
	if slices.ContainsFunc(g.history, func(a Action) bool { return a.KeepTurn }) {
		flags |= binFlagKeep
		moveBase = binMoveBaseKeep
	}
	claimer := -1
	if last := len(g.history) - 1; last >= 0 && g.history[last].Kind == ActionClaim {
		claimer = int(g.history[last].Seat)
		flags |= binFlagClaim
	}
	if opts != std {
		flags |= binFlagOptions
	}
	buf = append(buf, flags)
	if opts != std {
		buf = append(buf, opts)
	}
	buf = binary.AppendUvarint(buf, g.seed)
	if g.startFEN != "" {
		buf = binary.AppendUvarint(buf, uint64(len(g.startFEN)))
		buf = append(buf, g.startFEN...)
	}
	n := 0
	for _, a := range g.history {
		if a.Kind != ActionClaim && !(a.Kind == ActionMove && a.Zombie && !g.manualZombies) {
			n++
		}
	}
	buf = binary.AppendUvarint(buf, uint64(n))
	for _, a := range g.history {
		switch a.Kind {
		case ActionResign, ActionTimeOut:
			code := uint64(a.Seat)
			if a.Kind == ActionTimeOut {
				code += 4
			}
			if a.KeepTurn {
				code += 8
			}
			buf = binary.AppendUvarint(buf, code)
		case ActionMove:
			if a.Zombie && !g.manualZombies {
				continue
			}
			buf = binary.AppendUvarint(buf, uint64(moveBase+a.index))
		}
	}
	if claimer >= 0 {
		buf = binary.AppendUvarint(buf, uint64(claimer))
	}
	return buf, nil
}

// UnmarshalBinary replaces g with the game decoded from data, replaying
// every action. It implements encoding.BinaryUnmarshaler.
func (g *Game) UnmarshalBinary(data []byte) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadEncoding, fmt.Sprintf(format, args...))
	}
	if len(data) < 5 || data[0] != binMagic0 || data[1] != binMagic1 {
		return bad("no magic")
	}
	if data[2] != binVersion {
		return bad("version %d", data[2])
	}
	if int(data[3]) >= len(ruleSetNames) {
		return bad("rule set %d", data[3])
	}
	rs, _ := RuleSetByName(ruleSetNames[data[3]])
	flags := data[4]
	rest := data[5:]
	if flags&binFlagOptions != 0 {
		if len(rest) == 0 || rest[0] >= 1<<len(ruleOptions) {
			return bad("options")
		}
		rs, rest = withOptionBits(rs, rest[0]), rest[1:]
	}
	next := func() (uint64, error) {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, bad("truncated")
		}
		rest = rest[n:]
		return v, nil
	}
	seed, err := next()
	if err != nil {
		return err
	}
	var fen string
	if flags&binFlagFEN != 0 {
		l, err := next()
		if err != nil {
			return err
		}
		if l > uint64(len(rest)) {
			return bad("truncated FEN4")
		}
		fen, rest = string(rest[:l]), rest[l:]
	}
	n, err := next()
	if err != nil {
		return err
	}
	if n > uint64(len(rest)) {
		return bad("action count %d exceeds data", n)
	}
	ng, err := NewGame(rs, seed, fen)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadEncoding, err)
	}
	ng.manualZombies = flags&binFlagZombies != 0
	moveBase := uint64(binMoveBase)
	if flags&binFlagKeep != 0 {
		moveBase = binMoveBaseKeep
	}
	for i := range n {
		v, err := next()
		if err != nil {
			return err
		}
		switch {
		case v < moveBase:
			kind := ActionResign
			if v&4 != 0 {
				kind = ActionTimeOut
			}
			_, err = ng.leave(Seat(v&3), kind, v&8 != 0)
		default:
			ms := ng.legal(ng.ToMove())
			idx := v - moveBase
			if idx >= uint64(len(ms)) {
				return bad("action %d: move index %d of %d", i, idx, len(ms))
			}
			_, err = ng.Play(ng.ToMove(), ms[idx])
		}
		if err != nil {
			return bad("action %d: %v", i, err)
		}
	}
	if flags&binFlagClaim != 0 {
		v, err := next()
		if err != nil {
			return err
		}
		if v >= NumSeats {
			return bad("claim by seat %d", v)
		}
		if _, err := ng.ClaimWin(Seat(v)); err != nil {
			return bad("claim: %v", err)
		}
	}
	if len(rest) != 0 {
		return bad("%d trailing bytes", len(rest))
	}
	if flags&binFlagAborted != 0 {
		ng.Abort()
	}
	*g = *ng
	return nil
}
