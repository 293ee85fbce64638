package rules

import "slices"

// ZombieArmy says which pieces of a resigned or flagged player keep playing.
type ZombieArmy uint8

const (
	// ZombieWholeArmy: the whole army plays uniformly random legal moves.
	ZombieWholeArmy ZombieArmy = iota
	// ZombieKingOnly: only the king plays random moves ("dead king
	// walking"); the rest of the army is dead at once.
	ZombieKingOnly
)

// RuleSet is a complete, data-only description of a variant. Every rule
// that differs between variants, and every decision of the rule book
// (docs/rules.md), is a field here; the engine reads the fields and has no
// per-variant branches.
type RuleSet struct {
	// Name identifies the rule set ("fourkingdoms", "chesscom-ffa").
	Name string
	// Seating places the armies and so fixes the direction of play.
	Seating Seating
	// EnPassant allows capturing a pawn that just made a double step, by any
	// opponent whose pawn attacks the skipped square, until the pawn's owner
	// moves again.
	EnPassant bool
	// Zombie says which pieces of a resigned/flagged player keep moving.
	Zombie ZombieArmy
	// CaptureOwnDeadPieces lets a seat capture its own dead pieces (a
	// walking zombie king takes its dead army's pieces on the largest site);
	// otherwise only pieces of other colours can be captured.
	CaptureOwnDeadPieces bool
	// ResignPassesTurn: a player who resigns or runs out of time on their
	// own turn uses up that turn (the largest site); otherwise the zombie
	// moves for them at once.
	ResignPassesTurn bool
	// SiteMarks: check and mate marks as the largest site writes them: one
	// "+" per king the move puts in check (kings its mover attacks now and
	// did not before, and kings in check now that were not before, such as
	// a third player's line the move opened), one "#" per player the move
	// puts out (mated or king captured). Otherwise one "+" per king the
	// mover attacks after the move and one "#" per player mated.
	SiteMarks bool
	// MateMarkedAsCheck (with SiteMarks): a king the move mates and the
	// mover's pieces attack after it is marked "+" as well as "#", even
	// when it was in check before the move (the largest site writes such a
	// move "+#"). The default marks already do so: every king the mover
	// attacks gets a "+".
	MateMarkedAsCheck bool
	// LeaveMate: a player who resigns or runs out of time and whose
	// remaining army (under ZombieKingOnly: the king alone) is then in
	// check with no legal move is mated at once, by nobody: it is out,
	// nobody scores, and the record writes the leave "R#" or "T#".
	// Otherwise such a seat stays a zombie until its turn comes, when it
	// is out without points (docs/rules.md sections 6.4, 13.3.12).
	LeaveMate bool
	// LeaveInsufficientDraw: when a player leaves and exactly one live
	// player remains whose army is a bare king (it cannot mate anyone),
	// the game ends drawn by insufficient material (termination
	// BareKings) instead of by the last player standing: the last live
	// player and the player who left each get DrawPoints (the leaver's
	// count for its result), and the last live player gets
	// LastPlayerBonus for every other zombie king (docs/rules.md section
	// 13.3.14).
	LeaveInsufficientDraw bool
	// PromotionLetter is the letter written after '=' for a promotion to a
	// queen ('Q', or 'D' on the largest site). Both are always accepted.
	PromotionLetter byte

	// Points for captured pieces by kind (index PieceKind); PromotedQueen
	// is the value of a queen that was promoted from a pawn.
	PieceValues   [King + 1]int
	PromotedQueen int
	// MatePoints go to the mover for each player mated by the move, and
	// KingCapturePoints to the capturer of a king.
	MatePoints        int
	KingCapturePoints int
	// ZombiePiecesScore: capturing a zombie's pieces other than the king
	// scores their normal value (false: 0 points, docs/rules.md section 5).
	ZombiePiecesScore bool
	// StalematePoints go to a stalemated player (decision: judged on turn).
	StalematePoints int
	// StalemateOnTurn (decision) judges stalemate when the player's turn
	// comes rather than immediately after every move.
	StalemateOnTurn bool
	// ZombieKingStalemateDrawPoints go to every live player when a zombie
	// whose army is king-only is stalemated (0: nothing).
	ZombieKingStalemateDrawPoints int
	// ZombieKingStalemateSplit: instead, 2 x ZombieKingStalemateDrawPoints
	// are shared equally by the live players, rounded to the nearest point
	// (10 each for two, 7 each for three). On in chesscom-ffa, whose
	// records show the split (the original rule sheet said "+10 each"; see
	// docs/rules.md section 13.3.4).
	ZombieKingStalemateSplit bool
	// DrawSharesZombieKings: when the game ends drawn (ply limit,
	// repetition, bare kings), the live players also share the
	// LastPlayerBonus of every zombie king still on the board, rounded as
	// in ZombieKingStalemateSplit (the largest site's records).
	DrawSharesZombieKings bool
	// LastPlayerBonus goes to the last live player for every king still on
	// the board that was neither captured nor mated (zombie kings).
	LastPlayerBonus int
	// DrawPoints go to every live player when the game ends by the ply
	// limit, repetition or bare kings (decision).
	DrawPoints int
	// NoProgressPlies ends the game after this many consecutive plies
	// without a capture or pawn move (0: never) (decision).
	NoProgressPlies int
	// NoProgressLiveMoves ends the game after this many consecutive moves
	// of live players without a pawn move or a capture that scores
	// (zombie moves, and captures of dead pieces, neither count nor reset
	// the count), judged when a live player's turn comes (0: never). This
	// is the largest site's "50-move rule".
	NoProgressLiveMoves int
	// RepetitionCount ends the game when a position occurs this many times
	// (0: never) (decision).
	RepetitionCount int
	// RepetitionCountsPoints: a position for repetition includes every
	// seat's board points, as the largest site's position text (FEN4)
	// does; a move that scores (a check bonus, say) makes a new position
	// even when the board is the same (docs/rules.md section 13.3.13).
	RepetitionCountsPoints bool
	// BareKingsDraw ends the game when no live player has anything but a
	// bare king (decision).
	BareKingsDraw bool
	// CheckBonus2/3 are the points for checking two or three kings of live
	// players with one move, when the moved piece is a queen (index 0) or
	// any other piece (index 1). Zero: none (decision for fourkingdoms: the
	// rule sheet lists none).
	CheckBonus2 [2]int
	CheckBonus3 [2]int
	// ClaimWin: with exactly two live players left, the one leading the
	// other by more than KingCapturePoints may claim the win
	// (Game.ClaimWin) (docs/rules.md section 8.3). On in chesscom-ffa, as
	// the largest site plays; off by default.
	ClaimWin bool
	// AutoClaimWin: with exactly two live players left, the game ends as
	// won by the leader's claim as soon as the other can no longer end
	// ranked above the leader (Game.MaxReachablePoints). Off in both rule
	// sets: the largest site's records play on past that point (section
	// 8.3); an option.
	AutoClaimWin bool
	// TieBreakLaterSeatFirst ranks, on equal result points, the player who
	// moves later in the turn order higher (Green, Yellow, Blue, Red).
	TieBreakLaterSeatFirst bool
}

var standardValues = [King + 1]int{Pawn: 1, Knight: 3, Bishop: 5, Rook: 5, Queen: 9, King: 20}

// FourKingdoms returns the default rule set (docs/rules.md sections 1-12).
func FourKingdoms() RuleSet {
	return RuleSet{
		Name:                   "fourkingdoms",
		Seating:                SeatingCounterclockwise,
		Zombie:                 ZombieWholeArmy,
		PromotionLetter:        'Q',
		PieceValues:            standardValues,
		PromotedQueen:          1,
		MatePoints:             20,
		KingCapturePoints:      20,
		StalematePoints:        20,
		StalemateOnTurn:        true,
		LastPlayerBonus:        20,
		DrawPoints:             10,
		NoProgressPlies:        100,
		RepetitionCount:        3,
		BareKingsDraw:          true,
		TieBreakLaterSeatFirst: true,
	}
}

// ChesscomFFA returns the rule set of the largest four-player site's
// free-for-all (docs/rules.md section 13).
func ChesscomFFA() RuleSet {
	rs := FourKingdoms()
	rs.Name = "chesscom-ffa"
	rs.Seating = SeatingClockwise
	rs.EnPassant = true
	rs.Zombie = ZombieKingOnly
	rs.CaptureOwnDeadPieces = true
	rs.ResignPassesTurn = true
	rs.PromotionLetter = 'D'
	rs.SiteMarks = true
	rs.MateMarkedAsCheck = true
	rs.LeaveMate = true
	rs.LeaveInsufficientDraw = true
	rs.RepetitionCountsPoints = true
	rs.ZombieKingStalemateSplit = true
	rs.DrawSharesZombieKings = true
	rs.NoProgressPlies = 0
	rs.ClaimWin = true
	rs.NoProgressLiveMoves = 100
	rs.ZombieKingStalemateDrawPoints = 10
	// The original rule sheet said +5 for a double check by a piece other
	// than a queen; every such check in the site's records paid +1
	// (docs/rules.md section 13.3.5).
	rs.CheckBonus2 = [2]int{1, 1}
	rs.CheckBonus3 = [2]int{5, 20}
	return rs
}

// RuleSetByName returns the named rule set ("fourkingdoms" or
// "chesscom-ffa"); "" means the default.
func RuleSetByName(name string) (RuleSet, bool) {
	switch name {
	case "", "fourkingdoms":
		return FourKingdoms(), true
	case "chesscom-ffa":
		return ChesscomFFA(), true
	}
	return RuleSet{}, false
}

// RuleSetNames lists the names RuleSetByName accepts, default first.
func RuleSetNames() []string { return slices.Clone(ruleSetNames[:]) }

var ruleSetNames = [...]string{"fourkingdoms", "chesscom-ffa"}

// OptionNames lists the rules a match may turn on or off on top of its
// named rule set (docs/rules.md, the option table): ClaimWin and
// AutoClaimWin. A game keeps them through its binary encoding and its PGN4
// record (tag RuleOptions); any other change to a named rule set is not
// stored.
func OptionNames() []string {
	return slices.Clone(ruleOptions[:])
}

// ruleOptions are the options in bit order; RuleSet.option maps each to
// its field.
var ruleOptions = [...]string{"ClaimWin", "AutoClaimWin"}

// option returns the field of ruleOptions[i] (nil for no option). A switch
// rather than a table of accessor functions: an argument of a call through
// a function value escapes, and the copies of RuleSet that optionBits,
// withOptionBits and storable make went to the heap, three to four per
// encoding of a game, that is per move in the match service.
func (rs *RuleSet) option(i int) *bool {
	switch ruleOptions[i] {
	case "ClaimWin":
		return &rs.ClaimWin
	case "AutoClaimWin":
		return &rs.AutoClaimWin
	}
	return nil
}

// optionBits returns rs's options, bit i for ruleOptions[i].
func optionBits(rs RuleSet) byte {
	var bits byte
	for i := range ruleOptions {
		if *rs.option(i) {
			bits |= 1 << i
		}
	}
	return bits
}

// withOptionBits returns rs with its options set from bits.
func withOptionBits(rs RuleSet, bits byte) RuleSet {
	for i := range ruleOptions {
		*rs.option(i) = bits&(1<<i) != 0
	}
	return rs
}

// storable reports whether rs is a named rule set with at most its
// options changed, and returns that named rule set's option bits.
func storable(rs RuleSet) (std byte, ok bool) {
	named, known := RuleSetByName(rs.Name)
	if !known || named.Name != rs.Name {
		return 0, false
	}
	return optionBits(named), withOptionBits(named, optionBits(rs)) == rs
}

func (rs *RuleSet) captureValue(p uint8, ownerStatus SeatStatus) int {
	k := pieceKind(p)
	switch ownerStatus {
	case Out:
		return 0
	case Zombie:
		if k == King {
			return rs.KingCapturePoints
		}
		if !rs.ZombiePiecesScore {
			return 0
		}
	}
	if k == King {
		return rs.KingCapturePoints
	}
	if k == Queen && p&promotedBit != 0 {
		return rs.PromotedQueen
	}
	return rs.PieceValues[k]
}
