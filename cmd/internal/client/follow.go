package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/matchcheck"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// Update is the state of a match after one stream item.
type Update struct {
	// Match is the folded state at Match.Version. Its pieces and fen4 are
	// those of the last snapshot: after a MoveApplied event they are stale
	// unless FollowOptions.RefreshBoard is set. Read only.
	Match *matchv1.Match
	// Event is the event just applied; nil after a snapshot.
	Event *eventsv1.MatchEvent
	// Reconnects counts the stream reconnections so far.
	Reconnects int
}

// Over reports whether the match has ended (finished or aborted).
func (u Update) Over() bool { return Over(u.Match) }

// Over reports whether m has ended (finished or aborted).
func Over(m *matchv1.Match) bool {
	s := m.GetStatus()
	return s == matchv1.MatchStatus_MATCH_STATUS_FINISHED || s == matchv1.MatchStatus_MATCH_STATUS_ABORTED
}

// FollowOptions tune Follow.
type FollowOptions struct {
	// RefreshBoard reloads the match with GetMatch after every move so
	// Update.Match carries the current pieces (for display).
	RefreshBoard bool
	// Check runs every snapshot and event through a matchcheck.Checker and
	// ends the follow with its error at the first contract violation, so
	// the bots and the end-to-end tests catch a regression of the event
	// contract.
	Check bool
}

// Follow streams match id with WatchMatch and calls fn after every item
// with the folded state, until the match ends, fn returns an error or ctx
// ends. A dropped stream (server restart, slow reader, network) is reopened
// from the last version seen, so no event is missed or repeated. It returns
// the final state.
func (c *Client) Follow(ctx context.Context, id string, opts FollowOptions, fn func(Update) error) (*matchv1.Match, error) {
	f := follower{c: c, id: id, opts: opts, fn: fn}
	return f.run(ctx)
}

type follower struct {
	c    *Client
	id   string
	opts FollowOptions
	fn   func(Update) error

	m          *matchv1.Match
	reconnects int
	check      matchcheck.Checker
}

// checkSnapshot restarts the contract check from f.m, if enabled.
func (f *follower) checkSnapshot() error {
	if !f.opts.Check {
		return nil
	}
	if err := f.check.Snapshot(f.m); err != nil {
		return stopError{fmt.Errorf("match %s: %w", f.id, err)}
	}
	return nil
}

func (f *follower) version() uint64 { return f.m.GetVersion() }

func (f *follower) run(ctx context.Context) (*matchv1.Match, error) {
	var bo backoff
	for {
		err := f.stream(ctx, &bo)
		if f.m != nil && Over(f.m) {
			return f.m, nil
		}
		if ctx.Err() != nil {
			return f.m, ctx.Err()
		}
		var stop stopError
		if errors.As(err, &stop) {
			return f.m, stop.err
		}
		switch {
		case err == nil || errors.Is(err, io.EOF):
			// The stream ended before the match did: reconnect.
		case status.Code(err) == codes.OutOfRange:
			// The server has less history than we saw (storage lost it):
			// start over from a snapshot.
			f.m = nil
		case !retryable(err):
			return f.m, fmt.Errorf("watch match %s: %w", f.id, err)
		}
		f.reconnects++
		if err := bo.wait(ctx); err != nil {
			return f.m, err
		}
	}
}

// stopError carries an error of the callback out of the stream loop.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }

// stream runs one WatchMatch stream from the last version seen.
func (f *follower) stream(ctx context.Context, bo *backoff) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := f.c.Match.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: f.id, FromVersion: f.version()})
	if err != nil {
		return err
	}
	for {
		item, err := st.Recv()
		if err != nil {
			return err
		}
		bo.reset()
		var ev *eventsv1.MatchEvent
		switch x := item.GetItem().(type) {
		case *matchv1.WatchMatchResponse_Snapshot:
			if x.Snapshot.GetVersion() < f.version() {
				continue
			}
			f.m = x.Snapshot
			if err := f.checkSnapshot(); err != nil {
				return err
			}
		case *matchv1.WatchMatchResponse_Event:
			ev = x.Event
			switch {
			case f.m == nil:
				return errors.New("event before snapshot")
			case ev.GetVersion() <= f.version():
				continue // already folded (from a refresh)
			case ev.GetVersion() != f.version()+1:
				// A gap: reconnect from the last version seen.
				return status.Errorf(codes.Unavailable, "version gap: have %d, got %d", f.version(), ev.GetVersion())
			}
			if f.opts.Check {
				if err := f.check.Event(ev); err != nil {
					return stopError{fmt.Errorf("match %s: %w", f.id, err)}
				}
			}
			f.m = proto.Clone(f.m).(*matchv1.Match)
			Fold(f.m, ev)
			if _, move := ev.GetEvent().(*eventsv1.MatchEvent_MoveApplied); move && f.opts.RefreshBoard && !Over(f.m) {
				if f.refresh(ctx) {
					if err := f.checkSnapshot(); err != nil {
						return err
					}
				}
			}
		default:
			continue
		}
		f.m.LegalMoves = nil
		if len(item.GetLegalMoves()) > 0 && item.GetVersion() == f.version() {
			f.m.LegalMoves = item.GetLegalMoves()
		}
		if err := f.fn(Update{Match: f.m, Event: ev, Reconnects: f.reconnects}); err != nil {
			return stopError{err}
		}
		if Over(f.m) {
			return nil
		}
	}
}

// refresh replaces the folded state by a newer snapshot when GetMatch
// returns one, and reports whether it did; failures are ignored (the fold
// stays correct, only the pieces lag until the next refresh).
func (f *follower) refresh(ctx context.Context) bool {
	resp, err := f.c.Match.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: f.id})
	if err != nil || resp.GetMatch().GetVersion() < f.version() {
		return false
	}
	f.m = resp.GetMatch()
	return true
}

// Fold applies event ev to m (the next version): statuses, points, clocks,
// the seat to move, the last move and the result. Pieces and fen4 are not
// updated (that needs the rules engine and the zombie seed); reload the
// snapshot for those.
func Fold(m *matchv1.Match, ev *eventsv1.MatchEvent) {
	m.Version = ev.GetVersion()
	m.Ply = ev.GetPly()
	seat := func(s gamev1.Seat) *matchv1.SeatState {
		for _, st := range m.GetSeats() {
			if st.GetSeat() == s {
				return st
			}
		}
		return &matchv1.SeatState{}
	}
	setPoints := func(ps []*gamev1.SeatPoints) {
		for _, p := range ps {
			st := seat(p.GetSeat())
			st.Points = p.GetPoints()
			if st.GetStatus() == gamev1.SeatStatus_SEAT_STATUS_LIVE {
				st.ResultPoints = p.GetPoints()
			}
		}
	}
	switch x := ev.GetEvent().(type) {
	case *eventsv1.MatchEvent_MoveApplied:
		m.LastMove = x.MoveApplied.GetEffects()
		m.ToMove = x.MoveApplied.GetToMove()
		if len(x.MoveApplied.GetClocks()) > 0 {
			m.Clocks = x.MoveApplied.GetClocks()
		}
		setPoints(x.MoveApplied.GetPoints())
	case *eventsv1.MatchEvent_PlayerResigned:
		st := seat(x.PlayerResigned.GetSeat())
		st.Status = gamev1.SeatStatus_SEAT_STATUS_ZOMBIE
		st.ExitReason = gamev1.ExitReason_EXIT_REASON_RESIGNED
		st.ResultPoints = x.PlayerResigned.GetFrozenPoints()
	case *eventsv1.MatchEvent_PlayerTimedOut:
		st := seat(x.PlayerTimedOut.GetSeat())
		st.Status = gamev1.SeatStatus_SEAT_STATUS_ZOMBIE
		st.ExitReason = gamev1.ExitReason_EXIT_REASON_TIMED_OUT
		st.ResultPoints = x.PlayerTimedOut.GetFrozenPoints()
	case *eventsv1.MatchEvent_PlayerEliminated:
		e := x.PlayerEliminated.GetElimination()
		st := seat(e.GetSeat())
		st.Status = gamev1.SeatStatus_SEAT_STATUS_OUT
		st.ExitReason = e.GetReason()
		setPoints(x.PlayerEliminated.GetPoints())
		st.ResultPoints = x.PlayerEliminated.GetResultPoints()
	case *eventsv1.MatchEvent_GameOver:
		m.Status = matchv1.MatchStatus_MATCH_STATUS_FINISHED
		m.Result = x.GameOver.GetResult()
		m.ToMove = gamev1.Seat_SEAT_UNSPECIFIED
		for _, p := range m.Result.GetPoints() {
			seat(p.GetSeat()).ResultPoints = p.GetPoints()
		}
		for _, c := range m.GetClocks() {
			c.Running = false
			c.TurnDeadline = nil
		}
		m.FinishedAt = ev.GetOccurredAt()
	case *eventsv1.MatchEvent_MatchAborted:
		m.Status = matchv1.MatchStatus_MATCH_STATUS_ABORTED
		m.ToMove = gamev1.Seat_SEAT_UNSPECIFIED
		m.FinishedAt = ev.GetOccurredAt()
	}
}
