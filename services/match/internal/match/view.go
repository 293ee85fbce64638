package match

import (
	"slices"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// View is a match at one version as one caller sees it: what a snapshot
// shows. It is a copy taken under the match's lock, so it stays valid
// after the call; the transport builds the wire form from it.
type View struct {
	ID      string
	Status  Status
	RuleSet string
	// Unrated: the match does not count for ratings (set at creation).
	Unrated bool
	// TimeControl is the match's time control, as accepted at creation.
	TimeControl timecontrol.TimeControl
	FEN4        string
	Ply         int
	Version     uint64
	// Clocks are the clocks as of the moment the view was taken.
	Clocks    ClockReading
	CreatedAt time.Time
	// FinishedAt is when the match finished or was aborted (zero while it
	// is active).
	FinishedAt time.Time
	// Seats are the four seats, in seat order.
	Seats [rules.NumSeats]SeatView
	// Pieces are the pieces on the board.
	Pieces []rules.SquareInfo
	// ToMove is the seat to move while the match is active.
	ToMove rules.Seat
	// LegalMoves are the caller's legal moves when they hold the live
	// seat to move.
	LegalMoves []string
	// CanClaimWin reports that the caller holds a seat that may claim the
	// win now (rules.Game.CanClaimWin): what ClaimWin would accept.
	CanClaimWin bool
	// Result is the match's result once it finished (nil while it is
	// active and when it was aborted).
	Result *rules.Result
	// LastMove is the last move's effects, an encoded
	// fourkingdoms.game.v1.MoveEffects as the match record keeps it (nil
	// before the first move). It is shared: never modify it.
	LastMove []byte
	// Premoves are the caller's own premove queues (those that ever
	// changed).
	Premoves []Premoves
}

// SeatView is one seat of a View.
type SeatView struct {
	Player Player
	Status rules.SeatStatus
	// Exit is why the seat left the game (ExitNone while it plays).
	Exit ExitReason
	// Points are the points on the board; ResultPoints the ones that
	// count for the result (frozen when the player resigned or timed out).
	Points, ResultPoints int
	// GraceEnd, while the seat's player is shown disconnected, is when the
	// seat runs out of time unless they reconnect (presence.go); zero
	// otherwise.
	GraceEnd time.Time
}

// Player is who holds a seat.
type Player struct {
	ID          string
	DisplayName string
	IsBot       bool
}

// ExitReason is why a seat left the game (values as in
// game.v1.ExitReason: the match record stores those numbers).
type ExitReason uint8

// Exit reasons.
const (
	ExitNone ExitReason = iota
	ExitResigned
	ExitTimedOut
	ExitMated
	ExitStalemated
	ExitKingCaptured
)

// view takes the View of a loaded entry for the caller.
func (s *Service) view(e *entry, c Caller, now time.Time) *View {
	g := e.game
	v := s.board(e, g, &e.rec, e.version)
	v.Status, v.Clocks = e.rec.Status, e.rec.Clocks.read(e.tc, s.cfg.FirstMoveLimit, now)
	v.Premoves = premovesOf(e, c)
	if e.rec.Status == StatusActive {
		v.ToMove, v.LegalMoves = g.ToMove(), s.legalFor(e, c)
		v.CanClaimWin = slices.ContainsFunc(e.seatsOf(c), func(x rules.Seat) bool { return g.CanClaimWin(x) == nil })
	} else {
		v.FinishedAt = e.rec.FinishedAt
		if e.rec.Status == StatusFinished {
			r := g.Result()
			v.Result = &r
		}
	}
	return v
}

// board is what game g of entry e shows at version, with rec's exit
// reasons and last move: the live game, or the one a delayed viewer sees
// (visibility.go). Status, clocks, seat to move and result are the
// caller's to fill in.
func (s *Service) board(e *entry, g *rules.Game, rec *record, version uint64) *View {
	mc := e.created.GetMatchCreated()
	v := &View{
		ID: e.id, RuleSet: mc.GetRuleSet(), Unrated: mc.GetUnrated(), TimeControl: e.tc, FEN4: g.FEN4(), Ply: g.Ply(),
		Version: version, CreatedAt: e.created.GetOccurredAt().AsTime(), Pieces: g.Squares(), LastMove: rec.LastMove,
	}
	for _, sp := range mc.GetPlayers() {
		if seat, ok := wire.SeatOf(sp.GetSeat()); ok {
			p := sp.GetPlayer()
			v.Seats[seat].Player = Player{ID: p.GetPlayerId(), DisplayName: p.GetDisplayName(), IsBot: p.GetIsBot()}
		}
	}
	points, result := g.Points(), g.ResultPoints()
	for st := range rules.NumSeats {
		ss := &v.Seats[st]
		ss.Status, ss.Exit = g.Status(rules.Seat(st)), ExitReason(rec.Exit[st])
		ss.Points, ss.ResultPoints = points[st], result[st]
	}
	return v
}
