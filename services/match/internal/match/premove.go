package match

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// Premoves (docs/match.md, "Premoves"): a live player may queue up to
// MaxPremoves moves while it is not their turn. The queues are part of the
// match record, so they are read, changed and committed with the same
// version and stamp check as every other change, and a queue set through
// one instance fires when any instance applies the move that gives the
// seat its turn. Firing happens inside that change: after any change that
// leaves a live seat with a queue to move, its first move is played (and
// charged Config.PremoveCost) before the change is committed, and so on
// while the next seat to move has a queue too.

// MaxPremoves is the longest premove queue.
const MaxPremoves = 3

// PremoveChange says why a premove queue last changed (values as in
// match.v1.PremoveChange: the record stores those numbers).
type PremoveChange uint8

// Premove changes.
const (
	PremoveNone PremoveChange = iota
	PremoveSet
	PremoveCleared
	PremovePlayed
	PremoveIllegal
	PremoveSeatLeft
	PremoveMatchOver
	PremoveNoTime
)

// Premoves is one seat's premove queue and why it last changed. It is
// private to the seat's player.
type Premoves struct {
	Seat rules.Seat
	// Moves are the queued moves, the next to be played first.
	Moves []string
	// Change is why the queue last changed (PremoveNone: never).
	Change PremoveChange
	// Version is the match version of that change: the played move's
	// event for PremovePlayed, else the version right after the change.
	Version uint64
	// Move is the move played (PremovePlayed) or refused (PremoveIllegal).
	Move string
}

// ErrYourTurn: premoves are for seats that are not to move.
var ErrYourTurn = errors.New("it is your turn: make the move instead of queueing it")

// premoveSeat picks the caller's seat a premove request is for: the one
// named, or the first live seat not to move (any seat of theirs if none is).
func premoveSeat(e *entry, c Caller, named gamev1.Seat) (rules.Seat, error) {
	seats := e.seatsOf(c)
	if len(seats) == 0 {
		return 0, ErrNotPlayer
	}
	if named != gamev1.Seat_SEAT_UNSPECIFIED {
		s, ok := wire.SeatOf(named)
		if !ok || !slices.Contains(seats, s) {
			return 0, fmt.Errorf("%w: you do not hold seat %s", ErrNotPlayer, named)
		}
		return s, nil
	}
	for _, s := range seats {
		if e.game.Status(s) == rules.Live && s != e.game.ToMove() {
			return s, nil
		}
	}
	for _, s := range seats {
		if e.game.Status(s) == rules.Live {
			return s, nil
		}
	}
	return seats[0], nil
}

// SetPremoves replaces the premove queue of the caller's seat (moves empty:
// clears it) and returns it as stored.
func (s *Service) SetPremoves(ctx context.Context, c Caller, id string, seat gamev1.Seat, moves []string) (Premoves, error) {
	if len(moves) > MaxPremoves {
		return Premoves{}, rpcerr.Field(ErrInvalid, "moves", fmt.Sprintf("at most %d premoves, have %d", MaxPremoves, len(moves)))
	}
	for i, m := range moves {
		if len(m) == 0 || len(m) > maxMoveTextLen {
			return Premoves{}, rpcerr.Field(ErrInvalid, fmt.Sprintf("moves[%d]", i), fmt.Sprintf("must have 1 to %d bytes", maxMoveTextLen))
		}
		if err := rules.CheckMoveText(m); err != nil {
			return Premoves{}, rpcerr.Field(err, fmt.Sprintf("moves[%d]", i), err.Error())
		}
	}
	return s.changePremoves(ctx, c, id, seat, moves, len(moves) == 0)
}

// ClearPremoves empties the premove queue of the caller's seat.
func (s *Service) ClearPremoves(ctx context.Context, c Caller, id string, seat gamev1.Seat) (Premoves, error) {
	return s.changePremoves(ctx, c, id, seat, nil, true)
}

func (s *Service) changePremoves(ctx context.Context, c Caller, id string, seat gamev1.Seat, moves []string, clear bool) (Premoves, error) {
	var got Premoves
	var unchanged = errors.New("unchanged")
	_, _, err := s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		st, err := premoveSeat(e, c, seat)
		if err != nil {
			return nil, err
		}
		if e.rec.Status != StatusActive {
			return nil, ErrFinished
		}
		cur := e.rec.Premoves[st]
		cur.Seat = st
		if clear && len(cur.Moves) == 0 {
			// Nothing to clear: no commit, no notice.
			got = cur
			return nil, unchanged
		}
		if !clear {
			if e.game.Status(st) != rules.Live {
				return nil, fmt.Errorf("%w: %s", rules.ErrSeatNotLive, st)
			}
			if e.game.ToMove() == st {
				return nil, ErrYourTurn
			}
		}
		rec := e.rec
		p := Premoves{Seat: st, Moves: slices.Clone(moves), Change: PremoveSet, Version: e.version}
		if clear {
			p.Moves, p.Change = nil, PremoveCleared
		}
		rec.Premoves[st] = p
		got = p
		return &change{rec: rec, notices: []Premoves{p}}, nil
	})
	if errors.Is(err, unchanged) {
		return got, nil
	}
	return got, err
}

// settlePremoves runs after a change to the entry's game (rec is the
// change's record, events its events so far): while the seat to move is
// live with a queue, its first premove is played as a move made
// Config.PremoveCost after its turn began, or, when illegal then (or the
// clock has less than that left), the queue is dropped. Then the queues of
// seats that are no longer live, or of every seat when the match is over,
// are dropped. It returns the events with those of the premoves appended
// and the owners' notices.
func (s *Service) settlePremoves(e *entry, rec *record, now time.Time, events []*eventsv1.MatchEvent) ([]*eventsv1.MatchEvent, []Premoves) {
	var notices []Premoves
	g := e.game
	next := func() uint64 { return e.version + uint64(len(events)) }
	note := func(p Premoves) {
		rec.Premoves[p.Seat] = p
		notices = append(notices, p)
	}
	for rec.Status == StatusActive && !g.Over() {
		seat := g.ToMove()
		q := rec.Premoves[seat]
		if len(q.Moves) == 0 || g.Status(seat) != rules.Live || rec.Clocks.Running != int(seat) {
			break
		}
		// The premove is a move made PremoveCost into the turn, which
		// began with this change: its clock is charged that (less any
		// delay, plus the increment) as for any move.
		start := now.Add(-s.cfg.PremoveCost)
		if rec.Clocks.TurnStart.Before(start) {
			start = rec.Clocks.TurnStart
		}
		turn := rec.Clocks
		turn.TurnStart = start
		if d, _ := turn.Deadline(e.tc, s.cfg.FirstMoveLimit); !d.After(now) {
			note(Premoves{Seat: seat, Change: PremoveNoTime, Version: next()})
			break
		}
		before := g.Points()
		text := q.Moves[0]
		_, eff, err := g.PlayText(seat, text)
		if err != nil {
			note(Premoves{Seat: seat, Change: PremoveIllegal, Version: next(), Move: text})
			break
		}
		rec.Clocks = turn
		// A premove gets no lag compensation (the server played it), but
		// counts as a move for the seat's lag quota.
		rec.Clocks.lagStep(e.tc, seat, 0, false)
		rec.Clocks.follow(e.tc, g, now, true, true)
		s.finish(g, rec, now)
		played := next() + 1
		pe := eventsOf(e.id, g, &eff, before, played, now, clocksPB(&rec.Clocks, e.tc, s.cfg.FirstMoveLimit, now), rec)
		setCharge(pe, now.Sub(start), 0)
		events = append(events, pe...)
		note(Premoves{Seat: seat, Moves: slices.Clone(q.Moves[1:]), Change: PremovePlayed, Version: played, Move: text})
	}
	over := rec.Status != StatusActive || g.Over()
	for st := range rules.NumSeats {
		seat := rules.Seat(st)
		if len(rec.Premoves[st].Moves) == 0 {
			continue
		}
		switch {
		case over:
			note(Premoves{Seat: seat, Change: PremoveMatchOver, Version: next()})
		case g.Status(seat) != rules.Live:
			note(Premoves{Seat: seat, Change: PremoveSeatLeft, Version: next()})
		}
	}
	return events, notices
}

// premovesOf returns the queues of the caller's seats that ever changed.
func premovesOf(e *entry, c Caller) []Premoves {
	var out []Premoves
	for _, st := range e.seatsOf(c) {
		if p := e.rec.Premoves[st]; p.Change != PremoveNone {
			p.Seat = st
			out = append(out, p)
		}
	}
	return out
}

// Encoding of a seat's queue, in the record and in live notices: the
// change (one byte); unless it is PremoveNone, the version (uvarint), the
// move (length byte, text), the number of queued moves (byte) and each
// (length byte, text).

func appendPremoves(b []byte, p *Premoves) []byte {
	b = append(b, byte(p.Change))
	if p.Change == PremoveNone {
		return b
	}
	b = binary.AppendUvarint(b, p.Version)
	b = append(append(b, byte(len(p.Move))), p.Move...)
	b = append(b, byte(len(p.Moves)))
	for _, m := range p.Moves {
		b = append(append(b, byte(len(m))), m...)
	}
	return b
}

var errBadPremoves = errors.New("bad premove queue")

// readPremoves decodes a queue from the start of b and returns the rest.
func readPremoves(b []byte, p *Premoves) ([]byte, error) {
	text := func() (string, error) {
		if len(b) < 1 || int(b[0]) > maxMoveTextLen || len(b) < 1+int(b[0]) {
			return "", errBadPremoves
		}
		t := string(b[1 : 1+b[0]])
		b = b[1+b[0]:]
		return t, nil
	}
	if len(b) < 1 || b[0] > byte(PremoveNoTime) {
		return nil, errBadPremoves
	}
	*p = Premoves{Seat: p.Seat, Change: PremoveChange(b[0])}
	b = b[1:]
	if p.Change == PremoveNone {
		return b, nil
	}
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errBadPremoves
	}
	p.Version, b = v, b[n:]
	var err error
	if p.Move, err = text(); err != nil {
		return nil, err
	}
	if len(b) < 1 || b[0] > MaxPremoves {
		return nil, errBadPremoves
	}
	n, b = int(b[0]), b[1:]
	for range n {
		m, err := text()
		if err != nil {
			return nil, err
		}
		p.Moves = append(p.Moves, m)
	}
	return b, nil
}

// encodeNotice encodes a live notice: the seat (one byte), then the queue.
func encodeNotice(p *Premoves) []byte {
	return appendPremoves([]byte{byte(p.Seat)}, p)
}

// decodeNotice decodes a notice written by encodeNotice.
func decodeNotice(b []byte) (Premoves, error) {
	if len(b) < 1 || b[0] >= rules.NumSeats {
		return Premoves{}, errBadPremoves
	}
	p := Premoves{Seat: rules.Seat(b[0])}
	rest, err := readPremoves(b[1:], &p)
	if err != nil {
		return Premoves{}, err
	}
	if len(rest) != 0 {
		return Premoves{}, errBadPremoves
	}
	return p, nil
}

// noticeSeats is the mask of the caller's seats (bit n for rules.Seat n, as
// a notice starts with its seat) for fanout.Watcher.SetSeats: premove
// notices go only to the watchers of their seat's player, not into every
// spectator's buffer.
func (ws *watchState) noticeSeats() uint32 {
	var m uint32
	for st := range rules.NumSeats {
		if ws.seats[wire.Seat(rules.Seat(st))] {
			m |= 1 << st
		}
	}
	return m
}
