package match_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// partitionOutage is a go-redis hook that, while down, fails every command
// on the keys of one hash tag (a partition) as a dead master does
// (connection refused), and lets the others through: a Redis outage of
// one partition while the keeper's own keys stay reachable.
type partitionOutage struct {
	tag  string
	down atomic.Bool
}

func (h *partitionOutage) hits(cmd redis.Cmder) bool {
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.Contains(s, h.tag) {
			return true
		}
	}
	return false
}

func (h *partitionOutage) refused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

func (h *partitionOutage) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *partitionOutage) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.down.Load() && h.hits(cmd) {
			cmd.SetErr(h.refused())
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (h *partitionOutage) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.down.Load() {
			return next(ctx, cmds)
		}
		var pass []redis.Cmder
		for _, c := range cmds {
			if h.hits(c) {
				c.SetErr(h.refused())
			} else {
				pass = append(pass, c)
			}
		}
		if len(pass) == 0 {
			return h.refused()
		}
		return next(ctx, pass)
	}
}

// TestPartitionOutageCredit: the partition of a match is unreachable for
// 2 s while Blue is to move (the keeper's own keys and the other
// partitions stay reachable, as when the master of some slots fails
// over). The keeper, at its first scan that reads the partition again,
// gives Blue the time back: one ClockCredited, before anything else
// happens to the match, and no second one on the scans after. Blue loses
// at most 1 s of clock to the outage, and gets no more back than the
// time since its turn began.
func TestPartitionOutageCredit(t *testing.T) {
	t.Parallel()
	_, addr := redistest.Standalone(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(t)
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := fanout.New(st, log, 8)
	defer hub.Close()
	svc, err := match.New(st, hub, match.DefaultConfig(), log, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	req := &matchv1.CreateMatchRequest{RequestId: cfg.Prefix, TimeControl: &gamev1.TimeControl{Name: "10+5"}}
	for s := range rules.NumSeats {
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: fmt.Sprint("p", s)}})
	}
	m, err := svc.Create(ctx, match.Caller{ID: "matchmaker", Service: true}, req)
	if err != nil {
		t.Fatal(err)
	}
	red, err := svc.Get(ctx, match.Caller{ID: "p0"}, m.ID)
	if err != nil || len(red.LegalMoves) == 0 {
		t.Fatalf("Red's legal moves: %v, %v", red, err)
	}
	moved, err := svc.MakeMove(ctx, match.Caller{ID: "p0"}, &matchv1.MakeMoveRequest{MatchId: m.ID, Move: red.LegalMoves[0]})
	if err != nil {
		t.Fatal(err)
	}
	turnStart := time.Now() // Blue's turn began before this

	p, err := store.PartitionOf(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	hook, waitScans := keepWithOutage(t, rdb, svc, log, p)

	down := time.Now()
	hook.down.Store(true)
	waitScans(3) // the outage is seen
	time.Sleep(2 * time.Second)
	hook.down.Store(false)
	outage := time.Since(down)

	var credits []*eventsv1.ClockCredited
	for end := time.Now().Add(30 * time.Second); len(credits) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no ClockCredited after the partition's outage")
		}
		credits = credited(t, st, m.ID, moved.Version)
	}
	seen := time.Now()
	waitScans(5) // scans after the one that credited find nothing to credit
	if got := credited(t, st, m.ID, moved.Version); len(got) != 1 {
		t.Fatalf("%d ClockCredited events, want 1: %v", len(got), got)
	}
	cc := credits[0]
	got := cc.GetCredited().AsDuration()
	t.Logf("outage %v (test's measure), credited %v", outage, got)
	if cc.GetSeat() != gamev1.Seat_SEAT_BLUE {
		t.Errorf("credited %v, want Blue", cc.GetSeat())
	}
	if lost := outage - got; lost > time.Second {
		t.Errorf("Blue lost %v of clock to the outage, want at most 1 s", lost)
	}
	if turn := seen.Sub(turnStart); got > turn {
		t.Errorf("credited %v, more than Blue's turn so far (%v)", got, turn)
	}
}

// credited returns the ClockCredited events of match id after version,
// and fails t on any other event (nothing else may happen to it).
// keepWithOutage adds a partitionOutage hook for partition p to rdb and
// runs a keeper of svc until the test ends; it returns the hook and a
// function that waits for n more scans. The keeper has read the partition
// (two scans) when it returns.
func keepWithOutage(t *testing.T, rdb redis.UniversalClient, svc *match.Service, log *slog.Logger, p int) (*partitionOutage, func(n int64)) {
	t.Helper()
	hook := &partitionOutage{tag: fmt.Sprintf("{fk:p%02x}", p)}
	rdb.AddHook(hook)
	_, waitScans := runKeeper(t, svc, log)
	waitScans(2)
	return hook, waitScans
}

func credited(t *testing.T, st *store.Store, id string, version uint64) []*eventsv1.ClockCredited {
	t.Helper()
	evs, err := st.Events(t.Context(), id, version, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []*eventsv1.ClockCredited
	for _, e := range evs {
		ev := &eventsv1.MatchEvent{}
		if err := proto.Unmarshal(e.Data, ev); err != nil {
			t.Fatal(err)
		}
		cc := ev.GetClockCredited()
		if cc == nil {
			t.Fatalf("event %d after the first move: %v, want only ClockCredited", e.Version, ev)
		}
		out = append(out, cc)
	}
	return out
}

// TestMoveAfterPartitionOutage: Blue's partition is unreachable for 2 s
// right after Red moved, and Blue's player retries the move every 100 ms
// until it goes through (what clients do). The move that commits after
// recovery carries the outage's credit (a ClockCredited before the
// MoveApplied), or finds it given by the keeper: Blue is charged about
// only the time outside the outage, a deadline that passed in the outage
// is no time loss, and nobody is credited twice (the keeper's later scans
// give nothing to Blue again, nor to Yellow, whose turn began after). The
// move goes to the instance whose keeper holds every range, or to another
// one that only saw its own failed attempts.
func TestMoveAfterPartitionOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// other: the move goes to an instance that keeps no range.
		other bool
		// late: Blue's first-move limit (1 s) passes in the outage.
		late bool
	}{
		{name: "keeper's instance"},
		{name: "keeper's instance, deadline in the outage", late: true},
		{name: "another instance", other: true},
		{name: "another instance, deadline in the outage", other: true, late: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testMoveAfterOutage(t, tc.other, tc.late)
		})
	}
}

func testMoveAfterOutage(t *testing.T, other, late bool) {
	_, addr := redistest.Standalone(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(t)
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := fanout.New(st, log, 8)
	defer hub.Close()
	mcfg := match.DefaultConfig()
	if late {
		mcfg.FirstMoveLimit = time.Second
	}
	svc, err := match.New(st, hub, mcfg, log, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	mover := svc
	if other {
		if mover, err = match.New(st, hub, mcfg, log, time.Now); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	req := &matchv1.CreateMatchRequest{RequestId: cfg.Prefix, TimeControl: &gamev1.TimeControl{Name: "10+5"}}
	for s := range rules.NumSeats {
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: fmt.Sprint("p", s)}})
	}
	m, err := svc.Create(ctx, match.Caller{ID: "matchmaker", Service: true}, req)
	if err != nil {
		t.Fatal(err)
	}
	p, err := store.PartitionOf(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	hook, waitScans := keepWithOutage(t, rdb, svc, log, p)

	red, err := svc.Get(ctx, match.Caller{ID: "p0"}, m.ID)
	if err != nil || len(red.LegalMoves) == 0 {
		t.Fatalf("Red's legal moves: %v, %v", red, err)
	}
	redSent := time.Now() // Blue's turn began after this
	moved, err := svc.MakeMove(ctx, match.Caller{ID: "p0"}, &matchv1.MakeMoveRequest{MatchId: m.ID, Move: red.LegalMoves[0]})
	if err != nil {
		t.Fatal(err)
	}
	blue, err := mover.Get(ctx, match.Caller{ID: "p1"}, m.ID)
	if err != nil || len(blue.LegalMoves) == 0 {
		t.Fatalf("Blue's legal moves: %v, %v", blue, err)
	}

	down := time.Now()
	hook.down.Store(true)
	var up time.Time
	move := &matchv1.MakeMoveRequest{MatchId: m.ID, Move: blue.LegalMoves[0], ClientMoveId: "blue-1"}
	var out match.Outcome
	for tries := 0; ; tries++ {
		if up.IsZero() && time.Since(down) >= 2*time.Second {
			hook.down.Store(false)
			up = time.Now()
		}
		out, err = mover.MakeMove(ctx, match.Caller{ID: "p1"}, move)
		if err == nil {
			break
		}
		if !up.IsZero() && time.Since(up) > 30*time.Second || errors.Is(err, match.ErrTimeRanOut) || ctx.Err() != nil {
			t.Fatalf("Blue's move, try %d: %v", tries, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	done := time.Now()
	outage := up.Sub(down)
	if out.Over || out.Ply != 2 {
		t.Fatalf("Blue's move: %+v, want it applied", out)
	}

	waitScans(5) // the keeper's scans after the move find nothing left to give
	var charged, credit time.Duration
	credits, moves := 0, 0
	for _, ev := range events(t, st, m.ID, moved.Version) {
		switch {
		case ev.GetClockCredited() != nil:
			cc := ev.GetClockCredited()
			if cc.GetSeat() != gamev1.Seat_SEAT_BLUE {
				t.Errorf("%v credited %v: only Blue's turn was in the outage", cc.GetSeat(), cc.GetCredited().AsDuration())
			}
			credits++
			credit += cc.GetCredited().AsDuration()
		case ev.GetMoveApplied() != nil:
			if moves++; moves > 1 {
				break
			}
			if credits == 0 {
				t.Errorf("Blue's move at version %d before any ClockCredited", ev.GetVersion())
			}
			charged = ev.GetMoveApplied().GetTimeCharged().AsDuration()
		case ev.GetMatchAborted().GetFirstMoveMissed() == gamev1.Seat_SEAT_BLUE || ev.GetPlayerEliminated().GetElimination().GetSeat() == gamev1.Seat_SEAT_BLUE:
			// Yellow, to move after Blue, may run out of its first-move
			// limit (1 s) while the test waits for the keeper's scans.
			t.Errorf("event %d: %v, want none (Blue moved in time)", ev.GetVersion(), ev)
		}
	}
	turn := done.Sub(redSent)
	t.Logf("outage %v (test's measure), Blue's turn at most %v, credited %v in %d events, charged %v", outage, turn, credit, credits, charged)
	if credits != 1 {
		t.Errorf("%d ClockCredited events, want 1", credits)
	}
	if outside := turn - outage; charged > outside+time.Second {
		t.Errorf("Blue was charged %v for a turn with at most %v outside the outage: lost more than 1 s to it", charged, outside)
	}
}

// events returns the events of match id after version.
func events(t *testing.T, st *store.Store, id string, version uint64) []*eventsv1.MatchEvent {
	t.Helper()
	stored, err := st.Events(t.Context(), id, version, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []*eventsv1.MatchEvent
	for _, e := range stored {
		ev := &eventsv1.MatchEvent{}
		if err := proto.Unmarshal(e.Data, ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// TestOutageHandoverCredit: the keeper of every range (instance A) sees
// Blue's partition go down, then stops (it releases its ranges, and what
// it knew in memory goes with it) while the partition is still down;
// instance B takes the ranges, and the partition comes back. Blue's
// first-move limit (1 s) passes in the outage. B gives Blue the whole
// outage back, once (a ClockCredited before anything else happens to the
// match; a later flag only after the credited deadline), not just the
// part since it took the ranges. With no outage, the handover alone (the
// ranges unscanned for a while, the partition serving) credits nothing.
func TestOutageHandoverCredit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		outage bool
	}{
		{name: "partition down across the handover", outage: true},
		{name: "handover only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testOutageHandover(t, tc.outage)
		})
	}
}

func testOutageHandover(t *testing.T, outage bool) {
	_, addr := redistest.Standalone(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(t)
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := fanout.New(st, log, 8)
	defer hub.Close()
	mcfg := match.DefaultConfig()
	mcfg.FirstMoveLimit = time.Second
	a, err := match.New(st, hub, mcfg, log, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := match.New(st, hub, mcfg, log, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	req := &matchv1.CreateMatchRequest{RequestId: cfg.Prefix, TimeControl: &gamev1.TimeControl{Name: "10+5"}}
	for s := range rules.NumSeats {
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: fmt.Sprint("p", s)}})
	}
	m, err := a.Create(ctx, match.Caller{ID: "matchmaker", Service: true}, req)
	if err != nil {
		t.Fatal(err)
	}
	p, err := store.PartitionOf(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	hook := &partitionOutage{tag: fmt.Sprintf("{fk:p%02x}", p)}
	rdb.AddHook(hook)
	stopA, waitA := runKeeper(t, a, log)
	waitA(2)

	red, err := a.Get(ctx, match.Caller{ID: "p0"}, m.ID)
	if err != nil || len(red.LegalMoves) == 0 {
		t.Fatalf("Red's legal moves: %v, %v", red, err)
	}
	redSent := time.Now() // Blue's turn began after this
	moved, err := a.MakeMove(ctx, match.Caller{ID: "p0"}, &matchv1.MakeMoveRequest{MatchId: m.ID, Move: red.LegalMoves[0]})
	if err != nil {
		t.Fatal(err)
	}

	down := time.Now()
	hook.down.Store(outage)
	waitA(8) // A sees the outage for a while
	stopA()
	_, waitB := runKeeper(t, b, log)
	waitB(5) // B holds the ranges, and (outage) sees the partition down
	hook.down.Store(false)
	gap := time.Since(down)

	if outage {
		for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("no ClockCredited after the partition's outage")
			}
			if evs := events(t, st, m.ID, moved.Version); len(evs) > 0 {
				break
			}
		}
	}
	waitB(5) // later scans give nothing again
	var credit time.Duration
	credits := 0
	for i, ev := range events(t, st, m.ID, moved.Version) {
		cc := ev.GetClockCredited()
		switch {
		case cc != nil:
			if cc.GetSeat() != gamev1.Seat_SEAT_BLUE {
				t.Errorf("%v credited %v: only Blue's turn was in the outage", cc.GetSeat(), cc.GetCredited().AsDuration())
			}
			credits++
			credit += cc.GetCredited().AsDuration()
		case i == 0 && outage:
			t.Errorf("event %d before any ClockCredited: %v", ev.GetVersion(), ev)
		default:
			// Blue's clock ran out: not before its credited deadline.
			if deadline := redSent.Add(mcfg.FirstMoveLimit + credit); ev.GetOccurredAt().AsTime().Before(deadline) {
				t.Errorf("event %d at %v, before Blue's credited deadline %v: %v", ev.GetVersion(), ev.GetOccurredAt().AsTime(), deadline, ev)
			}
		}
	}
	t.Logf("gap %v (outage: %v), credited %v in %d events", gap, outage, credit, credits)
	switch {
	case !outage && credits > 0:
		t.Errorf("credited %v in %d events for a handover alone", credit, credits)
	case outage && credits != 1:
		t.Errorf("%d ClockCredited events, want 1", credits)
	case outage && gap-credit > time.Second:
		t.Errorf("Blue lost %v of clock to an outage of %v: more than 1 s", gap-credit, gap)
	}
}

// runKeeper runs a keeper of svc until stop is called (or the test ends);
// wait waits for n more scans.
func runKeeper(t *testing.T, svc *match.Service, log *slog.Logger) (stop func(), wait func(n int64)) {
	t.Helper()
	ctx := t.Context()
	var scans atomic.Int64
	k, err := match.NewKeeper(svc, match.DefaultKeeperConfig("t"), log, func(string, error) { scans.Add(1) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	kctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = k.Run(kctx) })
	stop = func() {
		cancel()
		wg.Wait()
	}
	t.Cleanup(stop)
	wait = func(n int64) {
		t.Helper()
		for end := scans.Load() + n; scans.Load() < end; time.Sleep(10 * time.Millisecond) {
			if ctx.Err() != nil {
				t.Fatal(ctx.Err())
			}
		}
	}
	return stop, wait
}
