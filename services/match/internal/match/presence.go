package match

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// Disconnects (docs/match.md "Disconnects"; docs/rules.md 10 and 13.5).
//
// A seated player is present while at least one of their watch streams
// is open on any instance. Each instance keeps, in memory, how many
// streams it holds per match and seat, and pushes the seats' presence
// leases in Redis (store.TouchPresence) to now + DisconnectAfter every
// DisconnectAfter/2, and at once for a seat that opens its first stream
// on the instance. A lease that runs out (every stream closed, or every
// instance holding them gone) is found by the keeper, which scans the
// partitions' presence due sets beside the clock deadlines: it shows the
// seat disconnected (PlayerDisconnected) with a grace end; a lease pushed
// again before that (PlayerReconnected) cancels it; at the grace end the
// keeper times the seat out (PlayerTimedOut, disconnected), also when it
// is not its turn. Since the keeper, not the instance that served the
// match, does both, they happen even if no instance served the match in
// between (one that holds the range's lease: within a lease TTL plus an
// interval after the last holder died).
//
// Presence counts only once a seat's player has opened a watch stream: a
// player (or a bot) who plays without watching is never shown
// disconnected; their clock and the first-move limit still apply.

// Disconnect grace scaling: the grace is DisconnectGrace for a game
// expected to last graceFullLength or longer (E = initial + 40 ×
// (increment or delay), as for the lag quota), proportionally less for
// shorter ones, never under a quarter of it; half of that before the
// seat's first move.
const graceFullLength = 5 * time.Minute

// disconnectGrace is the grace of a seat under tc.
func disconnectGrace(base time.Duration, tc timecontrol.TimeControl, moved bool) time.Duration {
	est := tc.Initial + 40*(tc.Increment+tc.Delay)
	g := base
	if est < graceFullLength {
		g = max(time.Duration(float64(base)*float64(est)/float64(graceFullLength)), base/4)
	}
	if !moved {
		g /= 2
	}
	return g.Truncate(time.Millisecond)
}

// presence is this instance's open player streams, by match and seat.
type presence struct {
	mu   sync.Mutex
	open map[string]*[rules.NumSeats]int
	// fresh holds the seats that opened their first stream on this
	// instance since the last touch. They are touched even if the stream
	// closed in the meantime: a stream that lived only a few milliseconds
	// (a move, then the connection dropped) still made the player present,
	// so their lease must exist for the keeper to show them disconnected.
	fresh map[string]*[rules.NumSeats]bool
	poke  chan struct{}
}

func newPresence() *presence {
	return &presence{open: map[string]*[rules.NumSeats]int{}, fresh: map[string]*[rules.NumSeats]bool{}, poke: make(chan struct{}, 1)}
}

// hold counts an open stream of the given seats of a match until the
// returned function is called. It costs a map update, and the first
// stream of a seat on this instance wakes RunPresence, which pushes the
// seat's lease at once (announcing a reconnection without waiting).
func (p *presence) hold(id string, seats []rules.Seat) (release func()) {
	p.mu.Lock()
	m := p.open[id]
	if m == nil {
		m = new([rules.NumSeats]int)
		p.open[id] = m
	}
	for _, s := range seats {
		if m[s] == 0 {
			f := p.fresh[id]
			if f == nil {
				f = new([rules.NumSeats]bool)
				p.fresh[id] = f
			}
			f[s] = true
		}
		m[s]++
	}
	p.mu.Unlock()
	select {
	case p.poke <- struct{}{}:
	default:
	}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, s := range seats {
			m[s]--
		}
		if *m == [rules.NumSeats]int{} && p.open[id] == m {
			delete(p.open, id)
		}
	}
}

// touches lists the seats to touch: the fresh ones, and with all every
// seat with an open stream.
func (p *presence) touches(all bool) []store.Touch {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []store.Touch
	add := func(id string, touch func(seat int) bool) {
		t := store.Touch{ID: id}
		for s := range rules.NumSeats {
			if touch(s) {
				t.Seats = append(t.Seats, s)
			}
		}
		if len(t.Seats) > 0 {
			out = append(out, t)
		}
	}
	for id, f := range p.fresh {
		m := p.open[id]
		add(id, func(s int) bool { return f[s] || (all && m != nil && m[s] > 0) })
	}
	if all {
		for id, m := range p.open {
			if p.fresh[id] == nil {
				add(id, func(s int) bool { return m[s] > 0 })
			}
		}
	}
	clear(p.fresh)
	return out
}

// watchPresence counts a player's watch stream for presence; the caller
// releases it when the stream ends. Nil release when presence is off.
func (s *Service) watchPresence(id string, seats []rules.Seat) func() {
	if s.cfg.DisconnectGrace == 0 || len(seats) == 0 {
		return func() {}
	}
	return s.presence.hold(id, seats)
}

// RunPresence pushes the presence leases of the players whose watch
// streams this instance holds until ctx ends, and announces the
// reconnection of seats shown disconnected. Failures are logged and
// retried at the next round (a lease is pushed every DisconnectAfter/2, so
// one failed round shows nobody disconnected).
func (s *Service) RunPresence(ctx context.Context) error {
	if s.cfg.DisconnectGrace == 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(s.cfg.DisconnectAfter / 2)
	defer t.Stop()
	for {
		all := false
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			all = true
		case <-s.presence.poke:
		}
		s.touchPresence(ctx, s.presence.touches(all))
	}
}

func (s *Service) touchPresence(ctx context.Context, touches []store.Touch) {
	if len(touches) == 0 {
		return
	}
	back, err := s.store.TouchPresence(ctx, touches, s.clockNow().Add(s.cfg.DisconnectAfter))
	if err != nil && ctx.Err() == nil {
		s.log.Warn("presence not pushed", "err", err)
	}
	for id, seats := range back {
		for _, seat := range seats {
			err := s.announce(ctx, id, func(*entry) (*eventsv1.MatchEvent, error) {
				return &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerReconnected{
					PlayerReconnected: &eventsv1.PlayerReconnected{Seat: wire.Seat(rules.Seat(seat))}}}, nil
			})
			if err != nil && !errors.Is(err, ErrFinished) && ctx.Err() == nil {
				s.log.Warn("reconnection not announced", "match", id, "seat", seat, "err", err)
			}
		}
	}
}

// announce commits one event that changes nothing but the version (a
// presence event) to a running match.
func (s *Service) announce(ctx context.Context, id string, build func(e *entry) (*eventsv1.MatchEvent, error)) error {
	_, _, err := s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		if e.rec.Status != StatusActive {
			return nil, ErrFinished
		}
		ev, err := build(e)
		if err != nil {
			return nil, err
		}
		ev.MatchId, ev.Version, ev.Ply, ev.OccurredAt = e.id, e.version+1, uint32(e.game.Ply()), timestamppb.New(now)
		return &change{events: []*eventsv1.MatchEvent{ev}, rec: e.rec}, nil
	})
	return err
}

// addPresence marks the seats of a running match's view that are shown
// disconnected, with their grace end. Without it (presence off, Redis
// failing) the view simply shows nobody disconnected: the events still do.
func (s *Service) addPresence(ctx context.Context, v *View) {
	if s.cfg.DisconnectGrace == 0 || v.Status != StatusActive {
		return
	}
	ps, err := s.store.Presence(ctx, v.ID)
	if err != nil {
		return
	}
	for seat, sp := range ps {
		if seat >= 0 && seat < rules.NumSeats && v.Seats[seat].Status == rules.Live {
			v.Seats[seat].GraceEnd = sp.GraceEnd
		}
	}
}

// errPresenceChanged: the seat is no longer what the keeper found.
var errPresenceChanged = errors.New("presence changed")

// CheckPresence does what is due in a match's presence (the keeper calls
// it for the matches its scan found): a seat whose lease ran out is shown
// disconnected, a seat whose grace ended runs out of time, seats out of
// the game and matches that ended are forgotten.
func (s *Service) CheckPresence(ctx context.Context, id string) error {
	ps, err := s.store.Presence(ctx, id)
	if err != nil {
		return err
	}
	type seatState struct {
		live, moved bool
	}
	var seats [rules.NumSeats]seatState
	var tc timecontrol.TimeControl
	active := false
	e := s.cache.lock(id)
	_, err = s.load(ctx, e, "")
	if err == nil {
		active, tc = e.rec.Status == StatusActive, e.tc
		for st := range seats {
			seats[st] = seatState{live: e.game.Status(rules.Seat(st)) == rules.Live, moved: e.rec.Clocks.Moved[st]}
		}
	}
	e.unlock()
	switch {
	case errors.Is(err, ErrNotFound):
		return s.store.DropPresence(ctx, id)
	case err != nil:
		return err
	case !active:
		return s.store.DropPresence(ctx, id)
	}
	now := s.clockNow()
	var errs []error
	for seat, sp := range ps {
		switch {
		case seat < 0 || seat >= rules.NumSeats || !seats[seat].live:
			errs = append(errs, s.store.ClearPresence(ctx, id, seat))
		case !sp.GraceEnd.IsZero() && !now.Before(sp.GraceEnd):
			err := s.disconnectTimeout(ctx, id, rules.Seat(seat), sp.GraceEnd)
			if err == nil || errors.Is(err, errPresenceChanged) || errors.Is(err, ErrFinished) {
				err = s.store.ClearPresence(ctx, id, seat)
			}
			errs = append(errs, err)
		case sp.GraceEnd.IsZero() && !now.Before(sp.Lease):
			// The grace counts from when the lease ran out, not from when
			// a keeper got to it: a keeper late for want of a live
			// instance does not lengthen it.
			end := sp.Lease.Add(disconnectGrace(s.cfg.DisconnectGrace, tc, seats[seat].moved))
			marked, err := s.store.MarkDisconnected(ctx, id, seat, now, end)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !marked {
				continue
			}
			err = s.announce(ctx, id, func(*entry) (*eventsv1.MatchEvent, error) {
				return &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerDisconnected{PlayerDisconnected: &eventsv1.PlayerDisconnected{
					Seat: wire.Seat(rules.Seat(seat)), GraceEndsAt: timestamppb.New(end)}}}, nil
			})
			if err != nil && !errors.Is(err, ErrFinished) {
				errs = append(errs, fmt.Errorf("announce disconnection: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// disconnectTimeout times out a seat whose disconnect grace ended.
func (s *Service) disconnectTimeout(ctx context.Context, id string, seat rules.Seat, graceEnd time.Time) error {
	// A reconnection since the keeper read the presence wins (the window
	// left, between this read and the commit, is a few milliseconds).
	ps, err := s.store.Presence(ctx, id)
	if err != nil {
		return err
	}
	if !ps[int(seat)].GraceEnd.Equal(graceEnd) {
		return errPresenceChanged
	}
	_, _, err = s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		if e.rec.Status != StatusActive {
			return nil, ErrFinished
		}
		if e.game.Status(seat) != rules.Live {
			return nil, errPresenceChanged
		}
		ch, err := s.leave(e, now, seat, true)
		if err != nil {
			return nil, err
		}
		for _, ev := range ch.events {
			if to := ev.GetPlayerTimedOut(); to != nil && to.GetSeat() == wire.Seat(seat) {
				to.Disconnected, to.FirstMoveLimit = true, false
			}
		}
		return ch, nil
	})
	if err == nil {
		s.log.Info("disconnected player timed out", "match", id, "seat", int(seat))
	}
	return err
}
