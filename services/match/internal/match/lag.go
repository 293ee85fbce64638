package match

import (
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
)

// Lag compensation follows Lichess's quota model (scalachess LagTracker,
// docs/match.md "Lag compensation"): a move's lag is the server's
// measured turn time less the think time the client claims; the seat gets
// back min(lag, quota), and its quota then grows by a per-move gain less
// what was given, up to a cap. A client lying about its think time can thus
// win at most the quota on one move and the gain per move on average, never
// more, and only on its own clock.

// lagQuotaStart and lagQuotaMax are a seat's first and largest quota, in
// per-move gains (timecontrol.TimeControl.LagGain).
const (
	lagQuotaStart = timecontrol.LagQuotaStart
	lagQuotaMax   = timecontrol.LagQuotaMax
)

func lagGain(tc timecontrol.TimeControl) time.Duration { return tc.LagGain() }

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
