package matchcheck

import (
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

// startClocks sets the time control from m (false when it has none the
// checker can read, which turns the clock checks off) and each seat's lag
// quota bound to gains per-move gains.
func (c *Checker) startClocks(m *gamev1.TimeControl, gains int) bool {
	if m == nil {
		return false
	}
	tc, err := timecontrol.FromMessage(m)
	if err != nil {
		return false
	}
	c.tc, c.tcKnown = tc, true
	for i := range c.quota {
		c.quota[i] = time.Duration(gains) * tc.LagGain()
	}
	return true
}

// readClocks notes the stopped clocks of a clock list: their remaining
// time is exact, while a running clock's is read at some moment of its turn.
func (c *Checker) readClocks(clocks []*gamev1.Clock) {
	for _, cl := range clocks {
		if i, ok := index(cl.GetSeat()); ok && !cl.GetRunning() && cl.GetRemaining().CheckValid() == nil {
			c.clock[i], c.clockKnown[i] = cl.GetRemaining().AsDuration(), true
		}
	}
}

// charged checks the clock side of a MoveApplied by seat i: a zombie move
// is charged to no clock; a player's move has a time charged and a lag
// compensation that are valid durations, not negative, the compensation
// within an upper bound of the seat's quota (the server's quota starts at
// LagQuotaStart gains at the seat's first measured move, by a think time
// or by the seat's round-trip estimate, which the bound,
// started at the seat's first move, is never below), and the mover's clock
// after the move is its clock before less time_charged (less any delay)
// plus the increment. A move without time_charged comes from a server
// older than lag compensation: only its clocks are noted.
func (c *Checker) charged(v uint64, i int, m *eventsv1.MoveApplied) error {
	e := m.GetEffects()
	tcd, lc := m.GetTimeCharged(), m.GetLagCompensation()
	defer func() {
		c.clockKnown[i] = false
		c.readClocks(m.GetClocks())
	}()
	if e.GetIsZombieMove() {
		if tcd != nil || lc != nil {
			return c.fail(v, "zombie move %q charged %v with lag compensation %v: no clock pays for it", e.GetMove(), tcd.AsDuration(), lc.AsDuration())
		}
		return nil
	}
	if tcd == nil {
		if lc != nil {
			return c.fail(v, "%q has lag compensation %v but no time_charged", e.GetMove(), lc.AsDuration())
		}
		return nil
	}
	if tcd.CheckValid() != nil || (lc != nil && lc.CheckValid() != nil) || tcd.AsDuration() < 0 || lc.AsDuration() < 0 {
		return c.fail(v, "%q charged %v with lag compensation %v: not valid durations of at least 0", e.GetMove(), tcd, lc)
	}
	charged, comp := tcd.AsDuration(), lc.AsDuration()
	if !c.tcKnown {
		return nil
	}
	if comp > c.quota[i] {
		return c.fail(v, "%q: lag compensation %v exceeds %v's quota (at most %v)", e.GetMove(), comp, e.GetSeat(), c.quota[i])
	}
	gain := c.tc.LagGain()
	c.quota[i] = min(c.quota[i]+gain-comp, timecontrol.LagQuotaMax*gain)
	if !c.clockKnown[i] {
		return nil
	}
	want := max(c.clock[i]-max(charged-c.tc.Delay, 0), 0) + c.tc.Increment
	for _, cl := range m.GetClocks() {
		if cl.GetSeat() == e.GetSeat() && !cl.GetRunning() && cl.GetRemaining().AsDuration() != want {
			return c.fail(v, "%q: %v's clock %v after the move; %v charged on %v makes %v", e.GetMove(), e.GetSeat(),
				cl.GetRemaining().AsDuration(), charged, c.clock[i], want)
		}
	}
	return nil
}
