package match

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// Outages are not the player's time (docs/match.md "Outages"). When a
// keeper takes over a range that nobody served for longer than a lease TTL
// plus an interval (every instance dead, or cut off from Redis: a single
// instance's death is covered by the others within that time, and they
// accepted moves meanwhile), the service could not accept moves for the
// range's matches from the last moment it was served until now. The seat
// to move in each of those matches gets that time back, at most
// Config.OutageCreditMax, before the keeper looks at their deadlines: its
// turn counts as started that much later (a ClockCredited event).

// CreditOutage gives the running seat of a match back the part of its
// turn that fell in the outage [from, to); it reports whether it did.
func (s *Service) CreditOutage(ctx context.Context, id string, from, to time.Time) (bool, error) {
	if s.cfg.OutageCreditMax == 0 {
		return false, nil
	}
	credited := false
	_, _, err := s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		credited = false
		rec := e.rec
		if rec.Status != StatusActive || rec.Clocks.Running == noSeat {
			return nil, errNothingDue
		}
		start := rec.Clocks.TurnStart
		if from.After(start) {
			start = from
		}
		credit := min(to.Sub(start), s.cfg.OutageCreditMax).Truncate(time.Millisecond)
		if credit <= 0 {
			return nil, errNothingDue
		}
		rec.Clocks.TurnStart = rec.Clocks.TurnStart.Add(credit)
		seat := rules.Seat(rec.Clocks.Running)
		ev := &eventsv1.MatchEvent{MatchId: e.id, Version: e.version + 1, Ply: uint32(e.game.Ply()), OccurredAt: timestamppb.New(now),
			Event: &eventsv1.MatchEvent_ClockCredited{ClockCredited: &eventsv1.ClockCredited{Seat: wire.Seat(seat),
				Credited: durationpb.New(credit), Clocks: clocksPB(&rec.Clocks, e.tc, s.cfg.FirstMoveLimit, now)}}}
		credited = true
		return &change{events: []*eventsv1.MatchEvent{ev}, rec: rec}, nil
	})
	if errors.Is(err, errNothingDue) || errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return credited && err == nil, err
}
