package match_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// pingFixture is a service on a real Redis with a fake clock, and a
// running match between p0 (Red) .. p3 (Green).
type pingFixture struct {
	svc   *match.Service
	clock *match.FakeClock
	id    string
	tc    timecontrol.TimeControl
	seq   int
}

func newPingFixture(t *testing.T, k redistest.Kind, tcName string) *pingFixture {
	t.Helper()
	rdb, prefix := k.Client(t)
	cfg := store.DefaultConfig()
	cfg.Prefix = prefix
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &pingFixture{clock: match.NewFakeClock(time.UnixMilli(1_800_000_000_000))}
	f.svc, err = match.New(st, nil, match.DefaultConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)), f.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	f.id = f.create(t, tcName)
	f.tc, err = timecontrol.Parse(tcName)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *pingFixture) create(t *testing.T, tcName string) string {
	t.Helper()
	f.seq++
	req := &matchv1.CreateMatchRequest{RequestId: fmt.Sprint(t.Name(), f.seq), TimeControl: &gamev1.TimeControl{Name: tcName}}
	for s := range rules.NumSeats {
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: fmt.Sprint("p", s)}})
	}
	m, err := f.svc.Create(t.Context(), match.Caller{ID: "matchmaker", Service: true}, req)
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func player(s rules.Seat) match.Caller { return match.Caller{ID: fmt.Sprint("p", int(s))} }

// measure is one round-trip measurement of seat s whose client sends the
// token back rtt after the server sent it.
func (f *pingFixture) measure(t *testing.T, s rules.Seat, rtt time.Duration) match.PingResult {
	t.Helper()
	first, err := f.svc.Ping(t.Context(), player(s), f.id, nil)
	if err != nil {
		t.Fatalf("Ping without a token: %v", err)
	}
	if first.Measured || len(first.Token) == 0 || first.Next != match.PingInterval {
		t.Fatalf("Ping without a token = %+v", first)
	}
	f.clock.Advance(rtt)
	r, err := f.svc.Ping(t.Context(), player(s), f.id, first.Token)
	if err != nil {
		t.Fatalf("Ping with its token: %v", err)
	}
	if !r.Measured || r.RoundTrip != rtt {
		t.Fatalf("Ping with its token after %v = %+v", rtt, r)
	}
	return r
}

// move plays the first legal move of the seat to move (which must be s),
// without a think time, after the turn lasted turn (from the last move),
// and returns its time charged and compensation.
func (f *pingFixture) move(t *testing.T, s rules.Seat) (charged, comp time.Duration) {
	t.Helper()
	v, err := f.svc.Get(t.Context(), player(s), f.id)
	if err != nil {
		t.Fatal(err)
	}
	if v.ToMove != s || len(v.LegalMoves) == 0 {
		t.Fatalf("%s to move, legal moves %v; want %s", v.ToMove, v.LegalMoves, s)
	}
	out, err := f.svc.MakeMove(t.Context(), player(s), &matchv1.MakeMoveRequest{MatchId: f.id, Move: v.LegalMoves[0]})
	if err != nil {
		t.Fatal(err)
	}
	ma := out.Events[0].GetMoveApplied()
	return ma.GetTimeCharged().AsDuration(), ma.GetLagCompensation().AsDuration()
}

// TestRoundTripCompensation: Red's pings show a steady 150 ms round trip
// and its moves carry no think time; on 1+0 each of its moves gets 150 ms
// back (within the quota), the others, who never pinged, nothing, and
// charged + compensation is the server's measure of every turn.
func TestRoundTripCompensation(t *testing.T) {
	t.Parallel()
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			f := newPingFixture(t, k, "1+0")
			const rtt = 150 * time.Millisecond
			for range 5 {
				if r := f.measure(t, rules.Red, rtt); r.Estimate != rtt {
					t.Fatalf("estimate %v after steady %v round trips", r.Estimate, rtt)
				}
			}
			turnStart := f.clock.Now().Add(-5 * rtt) // Red's first turn began at creation
			for round := range 6 {
				f.clock.Advance(2 * time.Second) // Red thinks; a measurement falls in its turn
				f.measure(t, rules.Red, rtt)
				elapsed := f.clock.Now().Sub(turnStart)
				charged, comp := f.move(t, rules.Red)
				if comp != rtt {
					t.Errorf("round %d: Red compensated %v, want the round trip %v", round, comp, rtt)
				}
				if charged+comp != elapsed {
					t.Errorf("round %d: Red charged %v + compensation %v != the turn %v", round, charged, comp, elapsed)
				}
				for s := rules.Blue; s < rules.NumSeats; s++ {
					f.clock.Advance(time.Second)
					charged, comp := f.move(t, s)
					if comp != 0 || charged != time.Second {
						t.Errorf("round %d: %s (no pings) charged %v, compensated %v; want 1s, none", round, s, charged, comp)
					}
				}
				turnStart = f.clock.Now()
			}
		})
	}
}

// TestRoundTripInflated: a client that waits 9 s before sending its
// token back (an estimate of 9 s) and moves without think time gets no
// more than the quota on any move, and no more than the first quota plus
// a gain per later move in all; charged + compensation is the turn.
func TestRoundTripInflated(t *testing.T) {
	t.Parallel()
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			f := newPingFixture(t, k, "3+0")
			gain := f.tc.LagGain()
			turnStart := f.clock.Now()
			var total time.Duration
			for round := range 8 {
				f.measure(t, rules.Red, 9*time.Second)
				f.clock.Advance(time.Second)
				elapsed := f.clock.Now().Sub(turnStart)
				charged, comp := f.move(t, rules.Red)
				if charged+comp != elapsed {
					t.Errorf("round %d: charged %v + compensation %v != the turn %v", round, charged, comp, elapsed)
				}
				if comp > timecontrol.LagQuotaMax*gain {
					t.Errorf("round %d: compensation %v above the largest quota %v", round, comp, timecontrol.LagQuotaMax*gain)
				}
				total += comp
				if limit := timecontrol.LagQuotaStart*gain + time.Duration(round)*gain; total > limit {
					t.Errorf("after %d moves: %v compensated, above %v", round+1, total, limit)
				}
				for s := rules.Blue; s < rules.NumSeats; s++ {
					f.clock.Advance(100 * time.Millisecond)
					f.move(t, s)
				}
				turnStart = f.clock.Now()
			}
			if total == 0 {
				t.Error("the inflated round trip bought nothing: the quota was never used")
			}
		})
	}
}

// TestPingRefusals: forged, altered, foreign, malformed and expired
// tokens, strangers, unknown and finished matches get their errors, and
// none of them changes the seat's estimate.
func TestPingRefusals(t *testing.T) {
	t.Parallel()
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			f := newPingFixture(t, k, "5+0")
			ctx := t.Context()
			red, blue := player(rules.Red), player(rules.Blue)
			start, err := f.svc.Ping(ctx, red, f.id, nil)
			if err != nil {
				t.Fatal(err)
			}
			other := f.create(t, "5+0")
			otherTok, err := f.svc.Ping(ctx, red, other, nil)
			if err != nil {
				t.Fatal(err)
			}
			altered := func(i int) []byte {
				b := append([]byte(nil), start.Token...)
				b[i] ^= 1
				return b
			}
			finished := f.create(t, "5+0")
			for s := rules.Red; s < rules.NumSeats; s++ {
				if _, err := f.svc.Resign(ctx, player(s), finished); err != nil && !errors.Is(err, match.ErrFinished) {
					t.Fatal(err)
				}
			}
			tests := []struct {
				name   string
				caller match.Caller
				id     string
				token  []byte
				want   error
			}{
				{"Blue sends Red's token", blue, f.id, start.Token, match.ErrBadPingToken},
				{"a token of another match", red, f.id, otherTok.Token, match.ErrBadPingToken},
				{"the time altered (a shorter round trip)", red, f.id, altered(8), match.ErrBadPingToken},
				{"the signature altered", red, f.id, altered(len(start.Token) - 1), match.ErrBadPingToken},
				{"malformed: too short", red, f.id, start.Token[:5], match.ErrBadPingToken},
				{"malformed: unknown format", red, f.id, altered(0), match.ErrBadPingToken},
				{"a stranger", match.Caller{ID: "stranger"}, f.id, nil, match.ErrNotPlayer},
				{"a service", match.Caller{ID: "matchmaker", Service: true}, f.id, nil, match.ErrNotPlayer},
				{"an unknown match", red, "00" + "0123456789abcdef0123", nil, match.ErrNotFound},
				{"a malformed match id", red, "m/../x", nil, match.ErrNotFound},
				{"a finished match", red, finished, nil, match.ErrFinished},
			}
			for _, tt := range tests {
				if _, err := f.svc.Ping(ctx, tt.caller, tt.id, tt.token); !errors.Is(err, tt.want) {
					t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
				}
			}
			f.clock.Advance(10*time.Second + time.Millisecond)
			if _, err := f.svc.Ping(ctx, red, f.id, start.Token); !errors.Is(err, match.ErrBadPingToken) {
				t.Errorf("a token 10.001 s old: %v, want ErrBadPingToken", err)
			}
			// Nothing was measured: Red's move is charged in full.
			charged, comp := f.move(t, rules.Red)
			if comp != 0 || charged != 10*time.Second+time.Millisecond {
				t.Errorf("Red charged %v, compensated %v after refused pings; want the whole turn, none", charged, comp)
			}
		})
	}
}

// TestPingAcrossInstances: a token issued by one instance is checked by
// another (the key is shared in Redis); after the key is lost and a new
// instance makes a new one, the older instances follow it at their next
// failed check, and a client whose token was refused meanwhile starts
// again.
func TestPingAcrossInstances(t *testing.T) {
	t.Parallel()
	for _, k := range redistest.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := k.Client(t)
			clock := match.NewFakeClock(time.UnixMilli(1_800_000_000_000))
			instance := func() *match.Service {
				cfg := store.DefaultConfig()
				cfg.Prefix = prefix
				st, err := store.New(rdb, cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				svc, err := match.New(st, nil, match.DefaultConfig(), slog.New(slog.NewTextHandler(io.Discard, nil)), clock.Now)
				if err != nil {
					t.Fatal(err)
				}
				return svc
			}
			a, b := instance(), instance()
			f := &pingFixture{svc: a, clock: clock}
			id := f.create(t, "5+0")
			ctx, red := t.Context(), player(rules.Red)
			// measure starts on one instance and ends on another.
			measure := func(from, to *match.Service) error {
				first, err := from.Ping(ctx, red, id, nil)
				if err != nil {
					t.Fatal(err)
				}
				clock.Advance(80 * time.Millisecond)
				r, err := to.Ping(ctx, red, id, first.Token)
				if err == nil && r.RoundTrip != 80*time.Millisecond {
					t.Fatalf("round trip %v, want 80ms", r.RoundTrip)
				}
				return err
			}
			if err := measure(a, b); err != nil {
				t.Fatalf("a token of instance a checked by b: %v", err)
			}
			if err := rdb.Del(ctx, prefix+"{fk:keeper}:ping-key").Err(); err != nil {
				t.Fatal(err)
			}
			c := instance() // makes a new key
			clock.Advance(time.Second)
			if err := measure(c, b); err != nil {
				t.Fatalf("after the key was made again, b checked c's token: %v", err)
			}
			// a reads the new key at its first failed check; a token it
			// issued with the old one is refused (the client starts again).
			first, err := a.Ping(ctx, red, id, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Ping(ctx, red, id, first.Token); !errors.Is(err, match.ErrBadPingToken) {
				t.Fatalf("a token signed with the lost key: %v, want ErrBadPingToken", err)
			}
			if err := measure(c, a); err != nil {
				t.Fatalf("a checked c's token: %v", err)
			}
			if err := measure(a, c); err != nil {
				t.Fatalf("c checked a's token after a followed the new key: %v", err)
			}
		})
	}
}
