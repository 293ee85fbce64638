package match

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// Spectator delay (docs/match.md, "Spectator delay"; docs/api.md, "Who sees
// what, when"). While a match runs, a caller who holds no seat in it
// sees it Config.SpectatorDelay plies behind: an event of ply q (the plies
// played after it) becomes visible to them when the match has reached ply
// q + delay, and everything is visible once the match has ended. Events
// that are not moves (resignations, time losses, eliminations, claims,
// and the notices: disconnections, reconnections, outage credits) travel
// with their ply: a resignation made after move q shows together with
// move q. The MatchCreated event (version 1) is always visible. Since
// an event's ply never decreases with its version, what a caller sees is
// always a prefix of the match's history: the stream holds events back but
// never reorders or skips them, and the view (GetMatch, the watch snapshot)
// and the record (ExportGame) are the state after the last visible event.
//
// Who sees the game live: the players holding a seat, whether it is still
// live or out (resigned, timed out, eliminated), and service and operator
// callers. A player who is out saw the game live until then; delaying them
// from then on would take their board back in time and break the version
// continuity their client relies on, and a player who helps another is
// teaming, which the delay cannot stop (they could relay the position
// before leaving as well).

const (
	// DefaultSpectatorDelay is one full round of four plies: a spectator
	// never sees a move before every seat has answered it once.
	DefaultSpectatorDelay = 4
	// maxSpectatorDelay bounds the setting: the events a delayed watcher
	// holds back are in its memory and must still be in the match's event
	// log (MATCH_EVENT_LOG_LEN) when they become visible.
	maxSpectatorDelay = 64
)

// delayFor returns how many plies behind the live game caller c sees
// match e now: 0 while the match is over, for services and operators and
// for the players holding a seat.
func (s *Service) delayFor(e *entry, c Caller) int {
	if s.cfg.SpectatorDelay == 0 || e.rec.Status != StatusActive || c.Service || c.Operator || len(e.seatsOf(c)) > 0 {
		return 0
	}
	return s.cfg.SpectatorDelay
}

// visible reports whether an event (version, ply) is visible with delay
// while the match is at ply now.
func visible(version uint64, ply uint32, now uint32, delay int) bool {
	return delay == 0 || version == 1 || int64(ply)+int64(delay) <= int64(now)
}

// visibility is what a caller may see of a match at one moment.
type visibility struct {
	// delay is in plies (0: live).
	delay int
	// version is the match's live version.
	version uint64
}

// getVisible is Get that also says how the caller sees the match.
func (s *Service) getVisible(ctx context.Context, c Caller, id string) (*View, visibility, error) {
	e := s.cache.lock(id)
	defer e.unlock()
	if _, err := s.load(ctx, e, ""); err != nil {
		return nil, visibility{}, err
	}
	vis := visibility{delay: s.delayFor(e, c), version: e.version}
	if vis.delay == 0 {
		v := s.view(e, c, s.clockNow())
		s.addPresence(ctx, v)
		return v, vis, nil
	}
	v, err := s.delayedView(ctx, e, vis.delay)
	return v, vis, err
}

// delayedState is a match as delayed callers see it: the game replayed up
// to the last event whose ply is at most limit.
type delayedState struct {
	// game is replayed with the zombie moves given from the history (a
	// seeded game would play a zombie's moves together with the move
	// before them, which may lie on both sides of the limit).
	game *rules.Game
	// next is how many actions of the match's history game has applied.
	next int
	// counted is the version of the last event game has applied, counting
	// only the events that actions make (eventsOf); rec holds the exit
	// reasons and the last move as of then.
	counted uint64
	rec     record
	// stuck is set when the history could not be replayed (a start
	// position with a zombie to move, which no given-zombie game can
	// start from): game stays at the start, version 1.
	stuck bool
	// limit is the ply game was advanced to.
	limit int
	// version is the version delayed callers are shown at limit: that of
	// the last event of the match's log with a ply of at most limit,
	// counting the notices no action makes (PlayerDisconnected,
	// PlayerReconnected, ClockCredited), which counted misses. clocks are
	// the clocks recorded with the last move up to it (or at creation).
	// Both are read from the log once per limit (settled).
	version uint64
	clocks  ClockReading
	settled bool
}

// delayedAt returns e's delayed state for delay plies, advancing the cached
// one when it is a prefix of e's history.
func (s *Service) delayedAt(e *entry, delay int) (*delayedState, error) {
	hist := e.game.History()
	limit := e.game.Ply() - delay
	d := e.delayed
	if d == nil || d.game.Ply() > limit || !samePrefix(d.game.History(), hist) {
		var err error
		if d, err = newDelayed(e); err != nil {
			return nil, err
		}
		e.delayed = d
	}
	if !d.stuck {
		if err := d.advance(e, hist, limit); err != nil {
			// Never the live game instead: spectators see the start.
			s.log.Error("replay for delayed viewers failed; they see the start position", "match", e.id, "err", err)
			if d, err = newDelayed(e); err != nil {
				return nil, err
			}
			d.stuck = true
			e.delayed = d
		}
	}
	if d.limit != limit {
		// Events of the plies now let through (notices among them).
		d.limit, d.settled = limit, false
	}
	return d, nil
}

// samePrefix reports whether a is a prefix of b.
func samePrefix(a, b []rules.Action) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || a[i].Seat != b[i].Seat || a[i].Move != b[i].Move {
			return false
		}
	}
	return true
}

// newDelayed returns the state at version 1.
func newDelayed(e *entry) (*delayedState, error) {
	rs := e.game.Rules()
	g, err := rules.NewGameGivenZombieMoves(rs, e.game.StartFEN4())
	if err == nil {
		return &delayedState{game: g, counted: 1}, nil
	}
	// A zombie is to move in the start position: the seeded game played
	// its moves before version 1, as the stored match did, and no later
	// state can be replayed.
	g, err = rules.NewGame(rs, e.game.Seed(), e.game.StartFEN4())
	if err != nil {
		return nil, fmt.Errorf("match %s: start position: %w", e.id, err)
	}
	return &delayedState{game: g, counted: 1, stuck: true}, nil
}

// advance applies the actions of hist after d.next whose events have a
// ply of at most limit. Each action of a given-zombie game yields events
// of a single ply (a move's are at the ply after it, a leave's or claim's
// at the ply it was made), and eventsOf, which numbered the stored events,
// counts them; the notices between them are only in the log (settle).
func (d *delayedState) advance(e *entry, hist []rules.Action, limit int) error {
	g := d.game
	for ; d.next < len(hist); d.next++ {
		a := hist[d.next]
		ply := g.Ply()
		if a.Kind == rules.ActionMove {
			ply++
		}
		if ply > limit {
			return nil
		}
		before := g.Points()
		var eff rules.Effects
		var err error
		switch a.Kind {
		case rules.ActionMove:
			eff, err = g.Play(a.Seat, a.Move)
		case rules.ActionResign:
			eff, err = g.Resign(a.Seat)
		case rules.ActionTimeOut:
			eff, err = g.TimeOut(a.Seat)
		case rules.ActionClaim:
			eff, err = g.ClaimWin(a.Seat)
		default:
			err = fmt.Errorf("unknown action kind %d", a.Kind)
		}
		if err != nil {
			return fmt.Errorf("replay action %d of %s: %w", d.next, e.id, err)
		}
		evs := eventsOf(e.id, g, &eff, before, d.counted+1, time.Time{}, nil, &d.rec)
		d.counted += uint64(len(evs))
	}
	return nil
}

// delayedView is the view of a running match delay plies behind; e is
// locked. Its clocks are the remaining times as of its version (recorded
// with the last move, or at creation), none running: the live clocks
// would tell whose turn it is now.
func (s *Service) delayedView(ctx context.Context, e *entry, delay int) (*View, error) {
	d, err := s.delayedAt(e, delay)
	if err != nil {
		return nil, err
	}
	if err := s.settle(ctx, e, d, delay); err != nil {
		return nil, err
	}
	v := s.board(e, d.game, &d.rec, d.version)
	v.Status, v.Clocks, v.ToMove = StatusActive, d.clocks, d.game.ToMove()
	return v, nil
}

// settle reads d's version and clocks from the match's event log, once
// per limit. The versions of the notices no action makes are nowhere but
// in the log; rather than keeping them in the match's record (another
// record format, for rare events), the log's last events are read: those
// after the limit are the delay's plies of events, and a read of a page
// of them, which the clocks took anyway, usually reaches the last event
// the delay lets through and the move before it. An instance that has
// just started reads the same, so it shows the same version.
func (s *Service) settle(ctx context.Context, e *entry, d *delayedState, delay int) error {
	if d.settled {
		return nil
	}
	version, clocks := uint64(1), e.created.GetMatchCreated().GetClocks()
	if !d.stuck && d.limit >= 0 {
		v, cl, err := s.lastVisible(ctx, e, d.limit, int64(2*delay+16))
		if err != nil {
			return err
		}
		if v == 0 {
			// The log is shorter than the delay (MATCH_EVENT_LOG_LEN): the
			// replay's count, which misses the notices, is all there is.
			s.log.Warn("spectator view: the events up to the delay are trimmed from the log; its version may be too low", "match", e.id, "counted", d.counted)
			v = d.counted
		}
		version = v
		if cl != nil {
			clocks = cl // else trimmed too: the clocks at the start
		}
	}
	d.version, d.clocks, d.settled = version, ClockReading{Running: noSeat}, true
	for _, cl := range clocks {
		if seat, ok := wire.SeatOf(cl.GetSeat()); ok {
			d.clocks.Remaining[seat] = cl.GetRemaining().AsDuration()
		}
	}
	return nil
}

// lastVisible reads the log of e back from e's version, page events at a
// time, to the last event with a ply of at most limit (version) and the
// last MoveApplied up to it (clocks: its clocks; those at creation when
// the log reaches version 1 first). Version is 0 (not found) and clocks
// nil (not found) where the log is trimmed before them.
func (s *Service) lastVisible(ctx context.Context, e *entry, limit int, page int64) (version uint64, clocks []*gamev1.Clock, err error) {
	upto := e.version
	for upto > 1 {
		after := upto - min(upto-1, uint64(page))
		evs, err := s.store.Events(ctx, e.id, after, int64(upto-after))
		if err != nil {
			return 0, nil, err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			ev, err := fanout.ReadEvent(evs[i].Data)
			if err != nil {
				return 0, nil, fmt.Errorf("read event %d of %s: %w", evs[i].Version, e.id, err)
			}
			if version == 0 {
				if int64(ev.Ply) > int64(limit) {
					continue
				}
				version = evs[i].Version
			}
			if ev.Kind == fanout.KindMoveApplied {
				full := &eventsv1.MatchEvent{}
				if err := proto.Unmarshal(evs[i].Data, full); err != nil {
					return 0, nil, fmt.Errorf("decode event %d of %s: %w", evs[i].Version, e.id, err)
				}
				return version, full.GetMoveApplied().GetClocks(), nil
			}
		}
		if len(evs) == 0 || evs[0].Version != after+1 {
			return version, nil, nil // trimmed
		}
		upto = after
	}
	return max(version, 1), e.created.GetMatchCreated().GetClocks(), nil
}

// delayedPGN4 is the record of a running match as seen delay plies behind.
func (s *Service) delayedPGN4(e *entry, delay int, tags []rules.Tag) (string, error) {
	d, err := s.delayedAt(e, delay)
	if err != nil {
		return "", err
	}
	return d.game.PGN4(tags), nil
}
