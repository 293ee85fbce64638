package api

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// snapshot is the wire form of a match view. The domain's status and exit
// reason values are those of the wire enums (checked by the tests).
func snapshot(v *match.View) *matchv1.Match {
	m := &matchv1.Match{
		MatchId: v.ID, Status: matchv1.MatchStatus(v.Status), RuleSet: v.RuleSet, Unrated: v.Unrated, TimeControl: wire.TimeControl(v.TimeControl),
		Fen4: v.FEN4, Ply: uint32(v.Ply), Version: v.Version,
		Clocks:    wire.Clocks(&v.Clocks.Remaining, v.Clocks.Running, v.Clocks.Deadline),
		CreatedAt: timestamppb.New(v.CreatedAt),
		Seats:     make([]*matchv1.SeatState, rules.NumSeats),
		Pieces:    make([]*matchv1.PlacedPiece, len(v.Pieces)),
	}
	for st := range v.Seats {
		ss := &v.Seats[st]
		m.Seats[st] = &matchv1.SeatState{Seat: wire.Seat(rules.Seat(st)), Status: wire.SeatStatus(ss.Status),
			ExitReason: gamev1.ExitReason(ss.Exit), Points: int32(ss.Points), ResultPoints: int32(ss.ResultPoints),
			Player: &gamev1.Player{PlayerId: ss.Player.ID, DisplayName: ss.Player.DisplayName, IsBot: ss.Player.IsBot}}
		if !ss.GraceEnd.IsZero() {
			m.Seats[st].DisconnectGraceEndsAt = timestamppb.New(ss.GraceEnd)
		}
	}
	for i, sq := range v.Pieces {
		m.Pieces[i] = &matchv1.PlacedPiece{Square: sq.Name, Seat: wire.Seat(sq.Seat), Kind: wire.Kind(sq.Kind),
			Dead: sq.Dead, Zombie: sq.Zombie, Promoted: sq.Promoted}
	}
	if v.Status == match.StatusActive {
		m.ToMove = wire.Seat(v.ToMove)
		m.LegalMoves = v.LegalMoves
		m.CanClaimWin = v.CanClaimWin
	} else {
		m.FinishedAt = timestamppb.New(v.FinishedAt)
		if v.Result != nil {
			m.Result = wire.Result(ended{v})
		}
	}
	for i := range v.Premoves {
		m.Premoves = append(m.Premoves, premoveQueue(&v.Premoves[i]))
	}
	if len(v.LastMove) > 0 {
		lm := &gamev1.MoveEffects{}
		if proto.Unmarshal(v.LastMove, lm) == nil {
			m.LastMove = lm
		}
	}
	return m
}

// ended reads a finished view's end the way wire.Result reads a game's.
type ended struct{ v *match.View }

func (e ended) Result() rules.Result                 { return *e.v.Result }
func (e ended) Status(s rules.Seat) rules.SeatStatus { return e.v.Seats[s&3].Status }

// premoveQueue is the wire form of a premove queue. The domain's change
// values are those of the wire enum (checked by the tests).
func premoveQueue(p *match.Premoves) *matchv1.PremoveQueue {
	return &matchv1.PremoveQueue{Seat: wire.Seat(p.Seat), Moves: p.Moves, Change: matchv1.PremoveChange(p.Change),
		Version: p.Version, Move: p.Move}
}
