package match

import (
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
)

// Lag compensation follows Lichess's quota model (scalachess LagTracker,
// docs/match.md "Clocks and deadlines"): a move's lag is the server's
// measured turn time less the think time the client claims; the seat gets
// back min(lag, quota), and its quota then grows by a per-move gain less
// what was given, up to a cap. A client lying about its think time can thus
// win at most the quota on one move and the gain per move on average, never
// more, and only on its own clock.
const (
	// lagQuotaStart and lagQuotaMax are a seat's first and largest quota,
	// in per-move gains (Lichess: 3 and 7).
	lagQuotaStart = 3
	lagQuotaMax   = 7
	// lagEstimateMoves is how many moves a game is assumed to last when
	// the time control's length is estimated (Lichess: initial + 40
	// increments).
	lagEstimateMoves = 40
)

// lagGain is the quota a seat gains per move under tc. As in Lichess it
// scales with the estimated game length E = initial + 40 × (increment or
// delay): 0.35 s when E ≤ 15 s, 1 s when E ≥ 180 s, else 0.4 s + E/300
// (1+0: 0.6 s, 3+0: 1 s). Short controls get less, since the same lag
// given back is a larger share of the clock there. A delay counts like an
// increment: it is time a move may take for free.
func lagGain(tc timecontrol.TimeControl) time.Duration {
	est := tc.Initial + lagEstimateMoves*(tc.Increment+tc.Delay)
	switch {
	case est >= 180*time.Second:
		return time.Second
	case est <= 15*time.Second:
		return 350 * time.Millisecond
	default:
		return (400*time.Millisecond + est/300).Truncate(time.Millisecond)
	}
}

// lagStep records a move of seat s whose measured lag is lag (negative
// counts as none) and returns the compensation given: min(lag, quota),
// truncated to milliseconds as the record stores them. measured says
// whether the client claimed a think time at all. A seat's quota starts
// with its first measured move (lagQuotaStart gains, as Lichess starts a
// game); afterwards every move of the seat, measured or not (a premove,
// a client that stopped measuring), adds the gain less the compensation,
// capped at lagQuotaMax gains. Seats that never claimed a think time keep
// no quota, so their records stay readable by instances older than lag
// compensation.
func (c *Clocks) lagStep(tc timecontrol.TimeControl, s rules.Seat, lag time.Duration, measured bool) time.Duration {
	gain := lagGain(tc)
	if !c.LagTracked[s] {
		if !measured {
			return 0
		}
		c.LagTracked[s], c.LagQuota[s] = true, lagQuotaStart*gain
	}
	var comp time.Duration
	if measured {
		comp = min(max(lag, 0), c.LagQuota[s]).Truncate(time.Millisecond)
	}
	c.LagQuota[s] = min(c.LagQuota[s]+gain-comp, lagQuotaMax*gain)
	return comp
}
