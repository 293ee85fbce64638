package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestKeeperScalesOut: three instances (two in this process, one a child
// process) share the keeper's partition ranges, each holding a third of
// them: 6, 5 and 5 of the 16, the closest split there is. The process is
// SIGKILLed: its leases lapse and the two others take its ranges over, and
// a clock that runs out in one of them while nobody serves it is flagged
// within a second of its deadline plus the lease TTL. Then one in-process
// instance stops: its leases are released at once and the last instance
// takes every range. Matches finished in every phase (with all three up,
// in the killed instance's ranges while they are unserved, in the stopped
// instance's ranges as it stops) all reach the global stream; duplicates
// (at-least-once relay, deduplicated by consumers) are counted and logged.
func TestKeeperScalesOut(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		const ttl = time.Second // longer than the tests' default: the unserved window is measured
		ov := map[string]string{"MATCH_KEEPER_LEASE_TTL": ttl.String()}
		rdb := e.rdb()
		a := e.start(ov)
		idA := e.newMember(t, rdb, nil)
		b := e.start(ov)
		idB := e.newMember(t, rdb, []string{idA})
		_, procC := e.startProcess(ov)
		idC := e.newMember(t, rdb, []string{idA, idB})

		// The settled split: the members sorted by name, the first holds 6
		// ranges, the others 5 (transiently an instance may hold one more
		// or fewer while another gives a range back).
		ids := slices.Sorted(slices.Values([]string{idA, idB, idC}))
		held := e.waitLeases(t, rdb, "three instances hold 6, 5 and 5 ranges", 5*time.Second, func(h map[string][]int) bool {
			return len(h[ids[0]]) == 6 && len(h[ids[1]]) == 5 && len(h[ids[2]]) == 5
		})
		t.Logf("ranges held: A %v, B %v, C %v", held[idA], held[idB], held[idC])

		// One match per range, finished now, and one per range of C and of
		// B, finished later while those ranges change hands.
		var now, inC, inB []string
		for r := range store.KeeperRanges {
			now = append(now, e.createInRange(a.addr, r, nil).GetMatchId())
		}
		for _, r := range held[idC] {
			inC = append(inC, e.createInRange(a.addr, r, nil).GetMatchId())
		}
		for _, r := range held[idB] {
			inB = append(inB, e.createInRange(a.addr, r, nil).GetMatchId())
		}
		seats := e.seatClients(a.addr)
		finish := func(ids []string) {
			t.Helper()
			for _, id := range ids {
				for _, c := range seats[1:] {
					if _, err := c.Resign(t.Context(), &matchv1.ResignRequest{MatchId: id}); err != nil {
						t.Fatalf("resign in %s: %v", id, err)
					}
				}
			}
		}
		finish(now)

		// Red's 3 s clock runs out in a range of C shortly after C dies.
		short := e.createInRange(a.addr, held[idC][0], func(r *matchv1.CreateMatchRequest) {
			r.TimeControl = &gamev1.TimeControl{Name: "0.05+0"}
			r.FirstMoveAbort = proto.Bool(false) // first-move time losses, not an abort
		})
		var deadline time.Time
		for _, c := range short.GetClocks() {
			if c.GetRunning() {
				deadline = c.GetTurnDeadline().AsTime()
			}
		}
		if deadline.IsZero() {
			t.Fatalf("short match has no running clock: %v", short.GetClocks())
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		stream, err := e.client(a.addr, e.token("spectator", auth.RolePlayer)).WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: short.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		recvN(t, stream, 1) // the snapshot
		time.Sleep(time.Until(deadline.Add(-300 * time.Millisecond)))
		if h, _ := readLeases(t, rdb, e.prefix); !slices.Contains(h[idC], held[idC][0]) {
			t.Fatalf("range %d moved from C before the kill: holders %v", held[idC][0], h)
		}
		if err := procC.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = procC.Wait()
		killed := time.Now()
		finish(inC) // their MatchFinished records wait in unserved outboxes

		for {
			it, err := stream.Recv()
			if err != nil {
				t.Fatalf("waiting for Red's flag: %v", err)
			}
			if to := it.GetEvent().GetPlayerTimedOut(); to != nil {
				late := it.GetEvent().GetOccurredAt().AsTime().Sub(deadline)
				t.Logf("Red flagged %v after the deadline (%v after the kill)", late, time.Since(killed))
				if to.GetSeat() != gamev1.Seat_SEAT_RED || late < 0 || late > ttl+time.Second {
					t.Errorf("flagged %v %v after the deadline; want Red within the lease TTL (%v) plus 1s", to.GetSeat(), late, ttl)
				}
				break
			}
		}
		e.waitLeases(t, rdb, "A and B hold 8 ranges each after C's leases lapsed", ttl+5*time.Second, func(h map[string][]int) bool {
			return len(h[idA]) == 8 && len(h[idB]) == 8
		})
		t.Logf("C's ranges taken over %v after the kill", time.Since(killed))

		// B stops: its leases are released as it leaves, not left to lapse.
		b.stop()
		stopped := time.Now()
		finish(inB)
		h, members := readLeases(t, rdb, e.prefix)
		if len(h[idB]) > 0 || slices.Contains(members, idB) {
			t.Fatalf("after B stopped it still holds %v (members %v)", h[idB], members)
		}
		e.waitLeases(t, rdb, "A holds all 16 ranges after B stopped", ttl, func(h map[string][]int) bool {
			return len(h[idA]) == store.KeeperRanges
		})
		t.Logf("B's ranges taken over %v after it stopped", time.Since(stopped))

		// Every finished match reaches the global stream.
		all := slices.Concat(now, inC, inB)
		var counts map[string]int
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			counts = finishedRecords(t, rdb, e.prefix)
			missing := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return counts[id] > 0 })
			if len(missing) == 0 {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("%d of %d finished matches never reached the global stream: %v", len(missing), len(all), missing)
			}
		}
		dups := 0
		for _, n := range counts {
			dups += n - 1
		}
		t.Logf("%d finished matches relayed, %d duplicate records (consumers dedupe by match id)", len(all), dups)
	})
}

// createInRange creates a match whose partition is in keeper range r, by
// picking a request id that maps there.
func (e *env) createInRange(addr string, r int, mod func(*matchv1.CreateMatchRequest)) *matchv1.Match {
	e.t.Helper()
	for i := 0; ; i++ {
		req := fmt.Sprintf("%sr%d-%d-%d", e.prefix, r, i, prefixSeq.Add(1))
		if store.PartitionForRequest(req)*store.KeeperRanges/store.Partitions != r {
			continue
		}
		return e.create(addr, func(cr *matchv1.CreateMatchRequest) {
			cr.RequestId = req
			if mod != nil {
				mod(cr)
			}
		})
	}
}

// readLeases returns the holder of each range lease (by owner; "" for the
// free ones) and the keeper membership.
func readLeases(t *testing.T, rdb redis.UniversalClient, prefix string) (map[string][]int, []string) {
	t.Helper()
	keys := make([]string, store.KeeperRanges)
	for r := range keys {
		keys[r] = fmt.Sprintf("%s{fk:keeper}:range:%d", prefix, r)
	}
	vals, err := rdb.MGet(t.Context(), keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	h := map[string][]int{}
	for r, v := range vals {
		s, _ := v.(string)
		h[store.LeaseOwner(s)] = append(h[store.LeaseOwner(s)], r)
	}
	members, err := rdb.ZRange(t.Context(), prefix+"{fk:keeper}:members", 0, -1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return h, members
}

// waitLeases polls the leases until ok accepts them.
func (e *env) waitLeases(t *testing.T, rdb redis.UniversalClient, what string, timeout time.Duration, ok func(map[string][]int) bool) map[string][]int {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		h, _ := readLeases(t, rdb, e.prefix)
		if ok(h) {
			return h
		}
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s; holders %v", timeout, what, h)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newMember waits for a keeper to join besides the known ones and returns
// its name.
func (e *env) newMember(t *testing.T, rdb redis.UniversalClient, known []string) string {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		_, members := readLeases(t, rdb, e.prefix)
		n := len(members)
		if fresh := slices.DeleteFunc(members, func(m string) bool { return slices.Contains(known, m) }); len(fresh) == 1 && n == len(known)+1 {
			return fresh[0]
		}
	}
	t.Fatalf("no keeper joined besides %v", known)
	return ""
}

// finishedRecords counts the global stream's MatchFinished records by match.
func finishedRecords(t *testing.T, rdb redis.UniversalClient, prefix string) map[string]int {
	t.Helper()
	fin := eventstream.MatchFinished()
	msgs, err := rdb.XRange(t.Context(), prefix+fin.Key(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, m := range msgs {
		f, err := fin.Decode(m.Values)
		if err != nil {
			t.Fatalf("stream entry %s breaks the contract: %v", m.ID, err)
		}
		counts[f.GetMatchId()]++
	}
	return counts
}
