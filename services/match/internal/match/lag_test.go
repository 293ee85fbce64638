package match

import (
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
)

func mustTC(t *testing.T, name string) timecontrol.TimeControl {
	t.Helper()
	tc, err := timecontrol.Parse(name)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// lagMove plays one turn of seat s on c that the server measured as
// elapsed and the client claimed as think (think < 0: no claim), the way
// MakeMove does, and returns the compensation, the time charged and the
// quota before the move.
func lagMove(t *testing.T, c *Clocks, tc timecontrol.TimeControl, s rules.Seat, now time.Time, elapsed, think time.Duration) (comp, charged, quota time.Duration) {
	t.Helper()
	c.Running, c.TurnStart = int(s), now
	quota = c.LagQuota[s]
	if !c.LagTracked[s] && think >= 0 {
		quota = lagQuotaStart * lagGain(tc)
	}
	before := c.Remaining[s]
	end := now.Add(elapsed)
	comp = c.lagStep(tc, s, elapsed-think, think >= 0)
	c.TurnStart = c.TurnStart.Add(comp)
	c.charge(tc, end, true)
	charged = before + tc.Increment - c.Remaining[s]
	if tc.Delay == 0 && before > elapsed && comp+charged != elapsed {
		t.Fatalf("charged %v + compensation %v != elapsed %v", charged, comp, elapsed)
	}
	return comp, charged, quota
}

// TestLagQuota: compensation never exceeds the seat's quota, whatever the
// client claims, and charged + compensation is the server's elapsed time.
func TestLagQuota(t *testing.T) {
	t.Parallel()
	const moves = 200
	tests := []struct {
		name     string
		tc       string
		elapsed  time.Duration
		think    time.Duration // < 0: no claim
		wantComp func(i int, gain time.Duration) time.Duration
	}{
		{"steady 150 ms lag on 1+0 is fully compensated", "1+0", 400 * time.Millisecond, 250 * time.Millisecond,
			func(int, time.Duration) time.Duration { return 150 * time.Millisecond }},
		{"think time zero on a 2 s turn gets the quota, then the gain", "1+0", 2 * time.Second, 0,
			func(i int, gain time.Duration) time.Duration {
				if i == 0 {
					return lagQuotaStart * gain
				}
				return gain
			}},
		{"think time above elapsed is no lag", "3+2", time.Second, time.Hour,
			func(int, time.Duration) time.Duration { return 0 }},
		{"no claim gets nothing", "1+0", time.Second, -1,
			func(int, time.Duration) time.Duration { return 0 }},
		{"a 30 s lag claim on 15+10 gets the quota, then the gain", "15+10", 40 * time.Second, 10 * time.Second,
			func(i int, gain time.Duration) time.Duration {
				if i == 0 {
					return lagQuotaStart * gain
				}
				return gain
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tc := mustTC(t, tt.tc)
			gain := lagGain(tc)
			c := newClocks(tc, rules.Red, time.UnixMilli(1_000_000))
			for s := range c.Remaining {
				c.Remaining[s] = time.Hour // never runs out: only the quota limits
			}
			now := c.TurnStart
			var total time.Duration
			for i := range moves {
				comp, _, quota := lagMove(t, &c, tc, rules.Red, now, tt.elapsed, tt.think)
				now = now.Add(tt.elapsed)
				if want := tt.wantComp(i, gain); comp != want {
					t.Fatalf("move %d: compensation %v, want %v", i, comp, want)
				}
				if comp > quota || comp < 0 {
					t.Fatalf("move %d: compensation %v outside [0, quota %v]", i, comp, quota)
				}
				if c.LagQuota[rules.Red] > lagQuotaMax*gain {
					t.Fatalf("move %d: quota %v above the cap %v", i, c.LagQuota[rules.Red], lagQuotaMax*gain)
				}
				total += comp
				// Over n moves no claim wins more than the first quota
				// plus the gain of each later move.
				if limit := lagQuotaStart*gain + time.Duration(i)*gain; total > limit {
					t.Fatalf("after %d moves: %v compensated, above %v", i+1, total, limit)
				}
			}
			for s := rules.Seat(1); s < rules.NumSeats; s++ {
				if c.LagTracked[s] || c.LagQuota[s] != 0 || c.Remaining[s] != time.Hour {
					t.Errorf("seat %s touched: tracked %v quota %v remaining %v", s, c.LagTracked[s], c.LagQuota[s], c.Remaining[s])
				}
			}
		})
	}
}

// TestLagUnmeasuredMoves: once a seat's quota runs, moves without a claim
// (premoves, a client that stopped measuring) refill it without
// compensation, up to the cap; a seat that never claimed keeps no quota.
func TestLagUnmeasuredMoves(t *testing.T) {
	t.Parallel()
	tc := mustTC(t, "1+0")
	gain := lagGain(tc)
	var c Clocks
	if comp := c.lagStep(tc, rules.Blue, time.Second, false); comp != 0 || c.LagTracked[rules.Blue] {
		t.Fatalf("unmeasured first move: compensation %v, tracked %v", comp, c.LagTracked[rules.Blue])
	}
	if comp := c.lagStep(tc, rules.Blue, time.Hour, true); comp != lagQuotaStart*gain {
		t.Fatalf("first claim: compensation %v, want the start quota %v", comp, lagQuotaStart*gain)
	}
	for i := range 20 {
		if comp := c.lagStep(tc, rules.Blue, time.Hour, false); comp != 0 {
			t.Fatalf("unmeasured move %d compensated %v", i, comp)
		}
	}
	if c.LagQuota[rules.Blue] != lagQuotaMax*gain {
		t.Errorf("quota after 20 unmeasured moves %v, want the cap %v", c.LagQuota[rules.Blue], lagQuotaMax*gain)
	}
}

// TestLagRecord: quotas survive the record; a record without tracked
// seats keeps the older formats.
func TestLagRecord(t *testing.T) {
	t.Parallel()
	r := record{Status: StatusActive, LastMove: []byte("last")}
	if b := r.marshal(); b[0] != recordFormat {
		t.Fatalf("a record without lag quotas is written in format %d", b[0])
	}
	r.Clocks.LagTracked[rules.Yellow], r.Clocks.LagQuota[rules.Yellow] = true, 4200*time.Millisecond
	r.Premoves[rules.Green] = Premoves{Seat: rules.Green, Moves: []string{"b4-c4"}, Change: PremoveSet, Version: 3}
	b := r.marshal()
	if b[0] != recordFormatLag {
		t.Fatalf("a record with a lag quota is written in format %d", b[0])
	}
	var got record
	if err := got.unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if got.Clocks.LagTracked != r.Clocks.LagTracked || got.Clocks.LagQuota != r.Clocks.LagQuota {
		t.Errorf("lag state %v %v, want %v %v", got.Clocks.LagTracked, got.Clocks.LagQuota, r.Clocks.LagTracked, r.Clocks.LagQuota)
	}
	if len(got.Premoves[rules.Green].Moves) != 1 || string(got.LastMove) != "last" {
		t.Errorf("premoves %+v, last move %q", got.Premoves[rules.Green], got.LastMove)
	}
	if err := got.unmarshal(b[:recordFixedLen+1]); err == nil {
		t.Error("a truncated lag part decoded")
	}
}
