package timecontrol

import "time"

// Lag compensation quota (docs/match.md "Lag compensation"), after
// Lichess's LagTracker: a seat's quota starts at LagQuotaStart gains, grows
// by one gain per move less the compensation given, and never exceeds
// LagQuotaMax gains. It lives here, beside the time control it scales with,
// so that the match service and the protocol checker use the same numbers.
const (
	LagQuotaStart = 3
	LagQuotaMax   = 7
	// lagEstimateMoves is how many moves a game is assumed to last when
	// its length is estimated (Lichess: initial + 40 increments).
	lagEstimateMoves = 40
)

// LagGain is the lag compensation quota a seat gains per move under tc. As
// in Lichess it scales with the estimated game length E = initial + 40 ×
// (increment or delay): 0.35 s when E ≤ 15 s, 1 s when E ≥ 180 s, else
// 0.4 s + E/300 (1+0: 0.6 s), truncated to milliseconds. Short controls
// get less, since the same time given back is a larger share of their
// clocks. A delay counts like an increment: it is time a move may take
// for free.
func (tc TimeControl) LagGain() time.Duration {
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
