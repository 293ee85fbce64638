package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestOutageCredit: the only instance is SIGKILLed while Blue is to move,
// and a new one starts 5 s later. Blue could not move in between: the new
// instance's keeper, taking the unserved ranges, gives Blue that time back
// (ClockCredited), so Blue loses at most 1 s of clock to the outage.
func TestOutageCredit(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		addr, proc := e.startProcess(nil)
		id := e.create(addr, nil).GetMatchId()
		resp, err := e.client(addr, e.token(players[0], auth.RolePlayer)).MakeMove(t.Context(),
			&matchv1.MakeMoveRequest{MatchId: id, Move: rounds[0][0]})
		if err != nil {
			t.Fatal(err)
		}
		version := resp.GetEvents()[len(resp.GetEvents())-1].GetVersion()
		before := blueDeadline(t, e, addr, id)
		if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = proc.Wait()
		killed := time.Now()
		time.Sleep(5 * time.Second)
		inst := e.start(nil)
		up := time.Now()

		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		stream, err := e.client(inst.addr, e.token("observer", auth.RoleService)).WatchMatch(ctx,
			&matchv1.WatchMatchRequest{MatchId: id, FromVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		for {
			it, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for the credit: %v", err)
			}
			if it.GetEvent().GetPlayerTimedOut() != nil {
				t.Fatalf("a seat timed out: %v", it.GetEvent())
			}
			if cc := it.GetEvent().GetClockCredited(); cc != nil {
				outage := up.Sub(killed)
				t.Logf("outage %v (no instance), credited %v", outage, cc.GetCredited().AsDuration())
				if cc.GetSeat() != gamev1.Seat_SEAT_BLUE {
					t.Errorf("credited %v, want Blue", cc.GetSeat())
				}
				if lost := outage - cc.GetCredited().AsDuration(); lost > time.Second {
					t.Errorf("Blue lost %v of clock to the outage, want at most 1 s", lost)
				}
				break
			}
		}
		after := blueDeadline(t, e, inst.addr, id)
		if got := after.Sub(before); got < 4*time.Second {
			t.Errorf("Blue's deadline moved by %v, want about the outage (5 s)", got)
		}
	})
}

// blueDeadline reads Blue's running clock's deadline.
func blueDeadline(t *testing.T, e *env, addr, id string) time.Time {
	t.Helper()
	return seatDeadline(t, e, addr, id, gamev1.Seat_SEAT_BLUE)
}

// seatDeadline reads the deadline of seat's clock, which must run.
func seatDeadline(t *testing.T, e *env, addr, id string, seat gamev1.Seat) time.Time {
	t.Helper()
	m, err := e.client(addr, e.token("observer", auth.RoleService)).GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.GetMatch().GetClocks() {
		if c.GetSeat() == seat && c.GetRunning() {
			return c.GetTurnDeadline().AsTime()
		}
	}
	t.Fatalf("%v's clock does not run: %v", seat, m.GetMatch().GetClocks())
	return time.Time{}
}

// TestClusterFailoverCredit: the master holding a match's partition is
// killed while Red is to move (after a first round, so that no first-move
// limit runs), and its replica is promoted. The keeper, whose own keys are
// on another master, sees the partition unreadable and then back, and
// gives Red the time back (one ClockCredited): Red loses at most 1 s of
// clock to the outage, measured as the time a probe of the partition's
// slot could not write. A match on a master that stayed up gets at most
// as much (the cluster refuses every command for part of a failover).
func TestClusterFailoverCredit(t *testing.T) {
	t.Parallel()
	// Runs last: a go-redis pool that dialled the dead master retries
	// once a second and sees its client closed only then (goleak).
	t.Cleanup(func() { time.Sleep(1100 * time.Millisecond) })
	lc := redistest.NewCluster(t)
	e := newEnv(t, backend{name: "private-cluster", env: map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(lc.Addrs(), ",")},
		client: func(t testing.TB) redis.UniversalClient { return lc.Client(t) }})
	inst := e.start(map[string]string{"REDIS_READ_TIMEOUT": "500ms"})
	cc, ok := lc.Client(t).(*redis.ClusterClient)
	if !ok {
		t.Fatal("the cluster's client is no *redis.ClusterClient")
	}
	masterOf := func(key string) string {
		t.Helper()
		m, err := cc.MasterForKey(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	}
	keeper := masterOf("{fk:keeper}")
	// The match on a master other than the keeper's (a failover of the
	// keeper's master is an outage of every instance's keeper: the
	// ranges lapse and TestOutageCredit's path credits them), and one
	// on the third master.
	var hit, spared *matchv1.Match
	var hitKey string
	for hit == nil || spared == nil {
		m := e.create(inst.addr, nil)
		p, err := store.PartitionOf(m.GetMatchId())
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s{fk:p%02x}:probe", e.prefix, p)
		switch master := masterOf(key); {
		case master == keeper:
		case hit == nil:
			hit, hitKey = m, key
		case master != masterOf(hitKey) && spared == nil:
			spared = m
		}
	}
	cs := e.seatClients(inst.addr)
	var version uint64 // of the hit match after the first round
	for _, m := range []*matchv1.Match{spared, hit} {
		for s, mv := range rounds[0] {
			resp, err := cs[s].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: m.GetMatchId(), Move: mv})
			if err != nil {
				t.Fatal(err)
			}
			version = resp.GetEvents()[len(resp.GetEvents())-1].GetVersion()
		}
	}
	id := hit.GetMatchId()
	before := seatDeadline(t, e, inst.addr, id, gamev1.Seat_SEAT_RED)
	spareBefore := seatDeadline(t, e, inst.addr, spared.GetMatchId(), gamev1.Seat_SEAT_RED)

	// The probe writes to the partition's slot until stopped: the outage
	// is from its last write before the kill to its first after.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := cc.Set(ctx, hitKey, "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// The replica has the match before its master dies (the service runs
	// without WAIT here: the promoted master has no replica to wait for).
	master, err := redisconn.Master(ctx, cc, hitKey)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := master.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n < 1 {
		t.Fatalf("WAIT 1 = %d, %v", n, err)
	}
	probed := make(chan time.Duration, 1)
	go func() {
		lastOK, firstFail := time.Now(), time.Time{}
		for ctx.Err() == nil {
			err := cc.Set(ctx, hitKey, "x", time.Minute).Err()
			switch {
			case err == nil && !firstFail.IsZero():
				probed <- time.Since(lastOK)
				return
			case err == nil:
				lastOK = time.Now()
			default:
				if firstFail.IsZero() {
					firstFail = time.Now()
				}
				redisconn.ReloadCluster(ctx, cc) // else it may keep asking the dead master
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	killed := lc.KillMasterOf(t, hitKey)
	var outage time.Duration
	select {
	case outage = <-probed:
	case <-ctx.Done():
		t.Fatal("the partition's slot did not come back")
	}
	// Back as a replica: the clients' pools stop dialling it.
	defer lc.Restart(t, killed)

	stream, err := e.client(inst.addr, e.token("observer", auth.RoleService)).WatchMatch(ctx,
		&matchv1.WatchMatchRequest{MatchId: id, FromVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	var credit *eventsv1.ClockCredited
	for credit == nil {
		it, err := stream.Recv()
		if err != nil {
			t.Fatalf("waiting for the credit: %v", err)
		}
		if ev := it.GetEvent(); ev != nil && ev.GetClockCredited() == nil {
			t.Fatalf("an event other than ClockCredited after the first round: %v", ev)
		}
		credit = it.GetEvent().GetClockCredited()
	}
	got := credit.GetCredited().AsDuration()
	t.Logf("outage %v (probe), credited %v", outage, got)
	if credit.GetSeat() != gamev1.Seat_SEAT_RED {
		t.Errorf("credited %v, want Red", credit.GetSeat())
	}
	if lost := outage - got; lost > time.Second {
		t.Errorf("Red lost %v of clock to the outage, want at most 1 s", lost)
	}
	if moved := seatDeadline(t, e, inst.addr, id, gamev1.Seat_SEAT_RED).Sub(before); moved != got {
		t.Errorf("Red's deadline moved by %v, credited %v", moved, got)
	}
	// While a master is failed and no replica promoted yet, the whole
	// cluster refuses commands (CLUSTERDOWN: cluster-require-full-coverage),
	// the keeper's heartbeat included: the match on a master that stayed up
	// may be credited for that while, never for more than the outage. The
	// two partitions' windows are measured by different scans: the keeper
	// reads partitions in chunks, so the scan that sees one back may start
	// up to an interval plus a scan's time limit (half the lease TTL) after
	// the other's; that much is measurement granularity, not over-credit
	// (seen: 10-80 ms).
	slack := keeperInterval + keeperLeaseTTL/2
	if moved := seatDeadline(t, e, inst.addr, spared.GetMatchId(), gamev1.Seat_SEAT_RED).Sub(spareBefore); moved > got+slack {
		t.Errorf("the match on a master that stayed up had its deadline moved by %v, more than the failed one's %v (+%v for scan granularity)", moved, got, slack)
	} else {
		t.Logf("the match on a master that stayed up was credited %v", moved)
	}
}
