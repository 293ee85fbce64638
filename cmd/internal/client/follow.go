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
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"

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
	// Premoves, when set (Event nil), is one of the follower's premove
	// queues, which changed; Match is unchanged by it.
	Premoves *matchv1.PremoveQueue
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
	// Check runs every snapshot, event and offer of legal moves through a
	// matchcheck.Checker and ends the follow with its error at the first
	// contract violation, so the bots and the end-to-end tests catch a
	// regression of the event contract. The checker replays the match with
	// the rules engine from version 1: when the first snapshot is later,
	// Follow first fetches the start (ExportGame) and the events from
	// version 1 (a second WatchMatch). When the match ends it checks that
	// the PGN4 export re-imports to the same game and that a stream from
	// version 1 repeats, event for event, what Follow received.
	Check bool
	// Seat is the caller's seat, against which Check holds the legal moves
	// offered; UNSPECIFIED for a spectator (or when unknown).
	Seat gamev1.Seat
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
	// history holds the events the checker saw, by version (Check only).
	history map[uint64]*eventsv1.MatchEvent
}

func (f *follower) violation(err error) error {
	return stopError{fmt.Errorf("match %s: %w", f.id, err)}
}

// checkSnapshot runs a stream's snapshot through the checker, if enabled:
// the first one starts it (from version 1, fetching the history first when
// the snapshot is later); later ones restart it, or are compared with the
// replay when they repeat its version.
func (f *follower) checkSnapshot(ctx context.Context) error {
	if !f.opts.Check {
		return nil
	}
	if f.history == nil && f.m.GetVersion() > 1 {
		return f.backfill(ctx)
	}
	if err := f.check.Snapshot(f.m); err != nil {
		return f.violation(err)
	}
	return nil
}

// checkEvent runs the next event through the checker, if enabled. Events
// the follower already folded from a refreshed snapshot still reach the
// checker, which needs every one.
func (f *follower) checkEvent(ev *eventsv1.MatchEvent) error {
	switch {
	case !f.opts.Check || ev.GetVersion() <= f.check.Version():
		return nil
	case ev.GetVersion() > f.check.Version()+1:
		// Reconnect from the checker's version (resumeFrom).
		return status.Errorf(codes.Unavailable, "version gap: checked %d, got %d", f.check.Version(), ev.GetVersion())
	}
	if err := f.check.Event(ev); err != nil {
		return f.violation(err)
	}
	f.remember(ev)
	return nil
}

func (f *follower) remember(ev *eventsv1.MatchEvent) {
	if f.history == nil {
		f.history = make(map[uint64]*eventsv1.MatchEvent)
	}
	f.history[ev.GetVersion()] = ev
}

// backfill starts the checker at version 1 when the first snapshot is
// later: the start position from the PGN4 export, the events from a
// stream from version 1 up to the snapshot, which must then agree with
// the replay. If the server no longer has those events (trimmed) or cannot
// be asked, the check runs on the events alone from the snapshot.
func (f *follower) backfill(ctx context.Context) error {
	snap := f.m
	f.history = make(map[uint64]*eventsv1.MatchEvent)
	fallback := func() error {
		f.check = matchcheck.Checker{}
		if err := f.check.Snapshot(snap); err != nil {
			return f.violation(err)
		}
		return nil
	}
	exp, err := f.c.Match.ExportGame(ctx, &matchv1.ExportGameRequest{MatchId: f.id})
	if err != nil {
		return fallback()
	}
	rec, err := rules.ParsePGN4(exp.GetPgn4(), nil)
	if err != nil {
		return f.violation(fmt.Errorf("the PGN4 export does not re-import: %v: %w", err, matchcheck.ErrViolation))
	}
	f.check = matchcheck.Checker{}
	if err := f.check.Start(snap.GetRuleSet(), rec.Game.StartFEN4()); err != nil {
		return f.violation(err)
	}
	if snap.GetVersion() > 1 {
		evs, ok := f.fromVersion1(ctx, snap.GetVersion())
		if !ok {
			return fallback()
		}
		for _, ev := range evs {
			if err := f.checkEvent(ev); err != nil {
				return err
			}
		}
	}
	return f.checkSnapshot(ctx)
}

// fromVersion1 reads the events 2..upTo from a stream from version 1
// (upTo 0: to the end of the match); false if the server sent a snapshot
// instead (trimmed history) or failed.
func (f *follower) fromVersion1(ctx context.Context, upTo uint64) ([]*eventsv1.MatchEvent, bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := f.c.Match.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: f.id, FromVersion: 1})
	if err != nil {
		return nil, false
	}
	var out []*eventsv1.MatchEvent
	for upTo == 0 || uint64(len(out))+1 < upTo {
		item, err := st.Recv()
		if errors.Is(err, io.EOF) && upTo == 0 {
			return out, true
		}
		if err == nil && item.GetPremoves() != nil {
			continue // the follower's own queue: not an event
		}
		if err != nil || item.GetEvent() == nil {
			return nil, false
		}
		out = append(out, item.GetEvent())
	}
	return out, true
}

// finalCheck runs when the match has ended (Check only, replaying): a
// stream from version 1 repeats every event the follower received, event
// for event, and the PGN4 export re-imports to the replayed game. The
// checker may still be behind the end (the folded state can come from a
// reload): it gets the last events from that stream first.
func (f *follower) finalCheck(ctx context.Context) error {
	if !f.opts.Check || !f.check.Replaying() {
		return nil
	}
	evs, ok := f.fromVersion1(ctx, 0)
	if !ok {
		return nil // best effort: trimmed, or the service is gone at the end of a run
	}
	for _, ev := range evs {
		if err := f.checkEvent(ev); err != nil {
			return err
		}
	}
	exp, err := f.c.Match.ExportGame(ctx, &matchv1.ExportGameRequest{MatchId: f.id})
	if err != nil {
		return nil
	}
	if err := f.check.Export(exp.GetPgn4()); err != nil {
		return f.violation(err)
	}
	for i, ev := range evs {
		if ev.GetVersion() != uint64(i)+2 {
			return f.violation(fmt.Errorf("replay from version 1: item %d has version %d: %w", i+1, ev.GetVersion(), matchcheck.ErrViolation))
		}
		if live, ok := f.history[ev.GetVersion()]; ok && !proto.Equal(live, ev) {
			return f.violation(fmt.Errorf("replay from version 1: version %d is %v, live it was %v: %w", ev.GetVersion(), ev, live, matchcheck.ErrViolation))
		}
	}
	if last := uint64(len(evs)) + 1; last != f.check.Version() {
		return f.violation(fmt.Errorf("replay from version 1 ends at version %d, the match at %d: %w", last, f.check.Version(), matchcheck.ErrViolation))
	}
	return nil
}

func (f *follower) version() uint64 { return f.m.GetVersion() }

// resumeFrom is the version a reconnection resumes from: the checker may
// be behind the folded state (after a refresh) and needs every event.
func (f *follower) resumeFrom() uint64 {
	if f.opts.Check && f.m != nil && f.check.Version() < f.version() {
		return f.check.Version()
	}
	return f.version()
}

func (f *follower) run(ctx context.Context) (*matchv1.Match, error) {
	var bo backoff
	for {
		err := f.stream(ctx, &bo)
		var stop stopError
		if errors.As(err, &stop) {
			return f.m, stop.err
		}
		if f.m != nil && Over(f.m) {
			return f.m, nil
		}
		if ctx.Err() != nil {
			return f.m, ctx.Err()
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
	st, err := f.c.Match.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: f.id, FromVersion: f.resumeFrom()})
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
				// Stale for the fold; a checker further behind restarts
				// from it (the events before it are gone).
				if f.opts.Check && x.Snapshot.GetVersion() > f.check.Version() {
					if err := f.check.Snapshot(x.Snapshot); err != nil {
						return f.violation(err)
					}
				}
				continue
			}
			f.m = x.Snapshot
			if err := f.checkSnapshot(ctx); err != nil {
				return err
			}
		case *matchv1.WatchMatchResponse_Event:
			ev = x.Event
			if f.m != nil {
				if err := f.checkEvent(ev); err != nil {
					return err
				}
			}
			switch {
			case f.m == nil:
				return errors.New("event before snapshot")
			case ev.GetVersion() <= f.version():
				continue // already folded (from a refresh)
			case ev.GetVersion() != f.version()+1:
				// A gap: reconnect from the last version seen.
				return status.Errorf(codes.Unavailable, "version gap: have %d, got %d", f.version(), ev.GetVersion())
			}
			f.m = proto.Clone(f.m).(*matchv1.Match)
			Fold(f.m, ev)
			if _, move := ev.GetEvent().(*eventsv1.MatchEvent_MoveApplied); move && f.opts.RefreshBoard && !Over(f.m) {
				if f.refresh(ctx) && f.opts.Check && f.m.GetVersion() == f.check.Version() {
					// A reload at the checker's version must be the
					// replayed state; a later one is only folded.
					if err := f.check.Snapshot(f.m); err != nil {
						return f.violation(err)
					}
				}
			}
		case *matchv1.WatchMatchResponse_Premoves:
			// The caller's own queue (docs/api.md, "Premoves"): it takes no
			// version and changes nothing else.
			if f.m == nil {
				return errors.New("premove queue before snapshot")
			}
			if err := f.fn(Update{Match: f.m, Premoves: x.Premoves, Reconnects: f.reconnects}); err != nil {
				return stopError{err}
			}
			continue
		default:
			continue
		}
		if f.opts.Check && item.GetVersion() == f.check.Version() {
			if err := f.check.LegalMoves(f.opts.Seat, item.GetLegalMoves()); err != nil {
				return f.violation(err)
			}
		}
		f.m.LegalMoves = nil
		if len(item.GetLegalMoves()) > 0 && item.GetVersion() == f.version() {
			f.m.LegalMoves = item.GetLegalMoves()
		}
		if err := f.fn(Update{Match: f.m, Event: ev, Reconnects: f.reconnects}); err != nil {
			return stopError{err}
		}
		if Over(f.m) {
			if err := f.finalCheck(ctx); err != nil {
				return err
			}
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
// the seat to move, the last move, disconnected players' grace ends and
// the result. Pieces and fen4 are not
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
	case *eventsv1.MatchEvent_PlayerDisconnected:
		seat(x.PlayerDisconnected.GetSeat()).DisconnectGraceEndsAt = x.PlayerDisconnected.GetGraceEndsAt()
	case *eventsv1.MatchEvent_ClockCredited:
		if len(x.ClockCredited.GetClocks()) > 0 {
			m.Clocks = x.ClockCredited.GetClocks()
		}
	case *eventsv1.MatchEvent_PlayerReconnected:
		seat(x.PlayerReconnected.GetSeat()).DisconnectGraceEndsAt = nil
	case *eventsv1.MatchEvent_PlayerTimedOut:
		st := seat(x.PlayerTimedOut.GetSeat())
		st.DisconnectGraceEndsAt = nil
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
