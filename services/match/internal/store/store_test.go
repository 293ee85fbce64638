package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisbatch"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

func newStore(t *testing.T, rdb redis.UniversalClient, mod func(*store.Config)) *store.Store {
	t.Helper()
	cfg := store.DefaultConfig()
	cfg.Prefix = testPrefix(t)
	cfg.EventLogLen = 10
	if mod != nil {
		mod(&cfg)
	}
	// Commits share round trips, as in the service.
	bt := redisbatch.New(rdb, redisbatch.DefaultConfig())
	t.Cleanup(bt.Close)
	s, err := store.New(rdb, cfg, bt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func create(t *testing.T, s *store.Store, req string) string {
	t.Helper()
	id := store.NewIDFor(req)
	got, created, err := s.Create(t.Context(), id, store.NewMatch{
		RequestID: req, Game: []byte("g1"), Clock: []byte("c1"), Meta: []byte("meta"), Event: []byte("e1"),
		Deadline: time.Now().Add(time.Hour),
	})
	if err != nil || !created || got != id {
		t.Fatalf("Create = %q, %v, %v; want %q, true, nil", got, created, err, id)
	}
	return id
}

func stampOf(t *testing.T, s *store.Store, id string) string {
	t.Helper()
	st, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st.Stamp
}

func TestPartitionOf(t *testing.T) {
	t.Parallel()
	for p := range store.Partitions {
		id := store.NewID(p)
		got, err := store.PartitionOf(id)
		if err != nil || got != p {
			t.Fatalf("PartitionOf(%q) = %d, %v; want %d", id, got, err, p)
		}
	}
	for _, bad := range []string{"", "zz", "0g0000000000000000000000", "00000000000000000000000", "AB00000000000000000000", "../../etc/passwd000000"} {
		if _, err := store.PartitionOf(bad); err == nil {
			t.Errorf("PartitionOf(%q) succeeded", bad)
		}
	}
}

func TestStore(t *testing.T) {
	t.Parallel()
	for name, rdb := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("CreateIsIdempotent", func(t *testing.T) { testCreateIdempotent(t, rdb) })
			t.Run("CommitOutcomes", func(t *testing.T) { testCommitOutcomes(t, rdb) })
			t.Run("EventsTrimmed", func(t *testing.T) { testEventsTrimmed(t, rdb) })
			t.Run("FinishRelaysOutbox", func(t *testing.T) { testFinish(t, rdb) })
			t.Run("AbandonRelaysToItsStream", func(t *testing.T) { testAbandon(t, rdb) })
			t.Run("RacingCommits", func(t *testing.T) { testRacingCommits(t, rdb) })
			t.Run("LiveNotification", func(t *testing.T) { testLive(t, rdb) })
			t.Run("KeeperRanges", func(t *testing.T) { testKeeperRanges(t, rdb) })
			t.Run("CommitAfterScriptFlush", func(t *testing.T) { testCommitAfterScriptFlush(t, rdb) })
			t.Run("OutageNotes", func(t *testing.T) { testOutageNotes(t, rdb) })
		})
	}
}

func testCreateIdempotent(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, nil)
	id := create(t, s, "req-1")
	other := store.NewIDFor("req-1")
	got, created, err := s.Create(t.Context(), other, store.NewMatch{RequestID: "req-1", Game: []byte("x")})
	if err != nil || created || got != id {
		t.Fatalf("repeated Create = %q, %v, %v; want %q, false, nil", got, created, err, id)
	}
	st, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != 1 || string(st.Game) != "g1" || string(st.Clock) != "c1" || string(st.Meta) != "meta" {
		t.Errorf("Load = %+v", st)
	}
	if _, err := s.Load(t.Context(), store.NewID(3)); err != store.ErrNotFound {
		t.Errorf("Load(unknown) error = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Create(t.Context(), store.NewID((store.PartitionForRequest("r2")+1)%store.Partitions), store.NewMatch{RequestID: "r2"}); err == nil {
		t.Error("Create with an id outside the request's partition succeeded")
	}
}

func testCommitOutcomes(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, nil)
	ctx := t.Context()
	id := create(t, s, "req-c")
	res, err := s.Commit(ctx, id, store.Change{Expected: 1, ExpectedStamp: stampOf(t, s, id), Game: []byte("g2"), Clock: []byte("c2"),
		Events: [][]byte{[]byte("e2"), []byte("e3")}, MoveKey: "0:m1", Reply: []byte("r1"), Deadline: time.Now().Add(time.Minute)})
	if err != nil || res.Outcome != store.Applied || res.Version != 3 {
		t.Fatalf("Commit = %+v, %v; want applied at version 3", res, err)
	}
	// The same move key answers the stored reply, even from a stale version.
	res, err = s.Commit(ctx, id, store.Change{Expected: 1, Game: []byte("gX"), Events: [][]byte{[]byte("x")}, MoveKey: "0:m1", Reply: []byte("r2")})
	if err != nil || res.Outcome != store.Duplicate || string(res.Reply) != "r1" {
		t.Fatalf("duplicate Commit = %+v, %v; want the first reply", res, err)
	}
	// A stale version returns the current state.
	res, err = s.Commit(ctx, id, store.Change{Expected: 2, Game: []byte("gX"), Events: [][]byte{[]byte("x")}})
	if err != nil || res.Outcome != store.Conflict || res.Version != 3 || string(res.State.Game) != "g2" || string(res.State.Clock) != "c2" {
		t.Fatalf("stale Commit = %+v, %v; want conflict with version 3", res, err)
	}
	// The right version with another stamp is a different state.
	res, err = s.Commit(ctx, id, store.Change{Expected: 3, ExpectedStamp: "other", Game: []byte("gX"), Events: [][]byte{[]byte("x")}})
	if err != nil || res.Outcome != store.Conflict || res.Version != 3 {
		t.Fatalf("Commit with a foreign stamp = %+v, %v; want conflict", res, err)
	}
	if _, err := s.Commit(ctx, store.NewID(7), store.Change{Expected: 1}); err == nil {
		t.Error("Commit on an unknown match succeeded")
	}
	st, reply, err := s.LoadWithReply(ctx, id, "0:m1")
	if err != nil || st.Version != 3 || string(reply) != "r1" {
		t.Errorf("LoadWithReply = %+v, %q, %v", st, reply, err)
	}
	_, reply, err = s.LoadWithReply(ctx, id, "0:none")
	if err != nil || reply != nil {
		t.Errorf("LoadWithReply(unknown key) = %q, %v; want nil reply", reply, err)
	}
	evs, err := s.Events(ctx, id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Event{{1, []byte("e1")}, {2, []byte("e2")}, {3, []byte("e3")}}
	if fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Errorf("Events = %v, want %v", evs, want)
	}
	evs, err = s.Events(ctx, id, 2, 100)
	if err != nil || len(evs) != 1 || evs[0].Version != 3 {
		t.Errorf("Events after 2 = %v, %v", evs, err)
	}
	// A caller that gives up gets its context's error, not a decoding error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Commit(cctx, id, store.Change{Expected: 3, ExpectedStamp: stampOf(t, s, id)}); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a cancelled context: %v, want context.Canceled", err)
	}
}

// testCommitAfterScriptFlush: a node without the commit script (restarted,
// or a new master) loads it on the first commit that reaches it.
func testCommitAfterScriptFlush(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, nil)
	id := create(t, s, "req-flush")
	if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.Commit(t.Context(), id, store.Change{Expected: 1, ExpectedStamp: stampOf(t, s, id), Game: []byte("g2"), Events: [][]byte{[]byte("e2")}})
	if err != nil || res.Outcome != store.Applied || res.Version != 2 {
		t.Fatalf("Commit after SCRIPT FLUSH = %+v, %v; want applied at version 2", res, err)
	}

	// The same with WAIT: the commit and the WAIT share a pipeline.
	waiting := newStore(t, rdb, func(c *store.Config) {
		c.Prefix = s.Config().Prefix
		c.WaitReplicas, c.WaitTimeout = 1, 200*time.Millisecond
	})
	if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	res, err = waiting.Commit(t.Context(), id, store.Change{Expected: 2, ExpectedStamp: res.Stamp, Game: []byte("g3"), Events: [][]byte{[]byte("e3")}, Deadline: time.Now().Add(time.Hour)})
	_, cluster := rdb.(*redis.ClusterClient) // the standalone server has no replica to confirm
	if res.Outcome != store.Applied || res.Version != 3 || (cluster && err != nil) || (!cluster && !errors.Is(err, store.ErrNotReplicated)) {
		t.Fatalf("Commit with WAIT after SCRIPT FLUSH = %+v, %v; want applied at version 3", res, err)
	}

	// And the scan of every partition.
	if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	due, err := s.Scan(t.Context(), allPartitions(), time.Now().Add(2*time.Hour), 10)
	if err != nil {
		t.Fatalf("Scan after SCRIPT FLUSH: %v", err)
	}
	found := false
	for _, d := range due {
		for _, m := range d.Matches {
			found = found || m == id
		}
	}
	if !found {
		t.Errorf("Scan after SCRIPT FLUSH: %s not due in %+v", id, due)
	}
}

func testEventsTrimmed(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, nil)
	ctx := t.Context()
	id := create(t, s, "req-t")
	stamp := stampOf(t, s, id)
	for v := uint64(1); v < 500; v++ {
		res, err := s.Commit(ctx, id, store.Change{Expected: v, ExpectedStamp: stamp, Game: []byte("g"), Events: [][]byte{fmt.Appendf(nil, "e%d", v+1)}})
		if err != nil || res.Outcome != store.Applied {
			t.Fatalf("Commit %d = %+v, %v", v, res, err)
		}
		stamp = res.Stamp
	}
	evs, err := s.Events(ctx, id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || len(evs) > 200 || evs[0].Version == 1 || evs[len(evs)-1].Version != 500 {
		t.Fatalf("after 500 events with log length 10: have %d events from %d", len(evs), evs[0].Version)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Version != evs[i-1].Version+1 {
			t.Fatalf("gap in event log at %d", evs[i].Version)
		}
	}
}

func testFinish(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, func(c *store.Config) { c.Retention = time.Hour })
	ctx := t.Context()
	id := create(t, s, "req-f")
	if d, err := s.Deadline(ctx, id); err != nil || d.IsZero() {
		t.Fatalf("Deadline after create = %v, %v", d, err)
	}
	if ttl, err := s.TTL(ctx, id); err != nil || ttl >= 0 {
		t.Fatalf("active match TTL = %v, %v; want none", ttl, err)
	}
	// The record as the match service encodes it: the test is the
	// producer's half of the match -> rating contract (package eventstream).
	fin := eventstream.MatchFinished()
	published := &eventsv1.MatchFinished{MatchId: id, RuleSet: "fourkingdoms", Plies: 42,
		Result:     &gamev1.Result{Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING},
		FinishedAt: timestamppb.New(time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC))}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(published)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Commit(ctx, id, store.Change{Expected: 1, ExpectedStamp: stampOf(t, s, id), Game: []byte("end"), Events: [][]byte{[]byte("over")},
		Finished: true, FinishedData: data})
	if err != nil || res.Outcome != store.Applied {
		t.Fatalf("finishing Commit = %+v, %v", res, err)
	}
	if d, err := s.Deadline(ctx, id); err != nil || !d.IsZero() {
		t.Errorf("Deadline after finish = %v, %v; want none", d, err)
	}
	if ttl, err := s.TTL(ctx, id); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Errorf("finished match TTL = %v, %v; want at most 1h", ttl, err)
	}
	due, err := s.Scan(ctx, allPartitions(), time.Now(), 100)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := store.PartitionOf(id)
	var found bool
	for _, d := range due {
		if d.Partition != p {
			continue
		}
		for _, e := range d.Outbox {
			if e.Values[fin.DataField()] == string(data) {
				found = true
			}
		}
		// Twice, as a relay whose delete failed (a scan cut at its
		// deadline, a crash) copies again: the stream must keep one.
		for range 2 {
			if err := s.Relay(ctx, d.Partition, d.Outbox); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !found {
		t.Fatalf("outbox of partition %d lacks the finished record: %+v", p, due)
	}
	if key := s.FinishedStreamKey(); !strings.HasSuffix(key, ":"+fin.Key()) {
		t.Errorf("finished stream key %q, want the contract's %q behind the test's key prefix", key, fin.Key())
	}
	msgs, err := rdb.XRange(ctx, s.FinishedStreamKey(), "-", "+").Result()
	if err != nil || len(msgs) != 1 || len(msgs[0].Values) != 2 {
		t.Fatalf("finished stream = %+v, %v; want one entry of two fields", msgs, err)
	}
	got, err := fin.Decode(msgs[0].Values)
	if err != nil {
		t.Fatalf("the relayed entry breaks the contract: %v", err)
	}
	if diff := cmp.Diff(published, got, protocmp.Transform()); diff != "" {
		t.Errorf("relayed MatchFinished (-published +decoded):\n%s", diff)
	}
	due, err = s.Scan(ctx, allPartitions(), time.Now(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range due {
		if d.Partition == p && len(d.Outbox) > 0 {
			t.Errorf("outbox not emptied after relay: %+v", d.Outbox)
		}
	}
}

// testAbandon: a first-move abort's MatchAbandoned record and a
// MatchFinished record of the same partition's outbox each reach their own
// stream, once, however often the relay copies them.
func testAbandon(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, nil)
	ctx := t.Context()
	// Two matches of one partition: the request ids of one partition
	// are found by trying.
	abandonedID := create(t, s, "req-ab")
	p, _ := store.PartitionOf(abandonedID)
	var finishedID string
	for i := 0; finishedID == ""; i++ {
		if req := fmt.Sprintf("req-fin-%d", i); store.PartitionForRequest(req) == p {
			finishedID = create(t, s, req)
		}
	}
	ab, fin := eventstream.MatchAbandoned(), eventstream.MatchFinished()
	abandoned := &eventsv1.MatchAbandoned{MatchId: abandonedID, RuleSet: "fourkingdoms", MissedSeat: gamev1.Seat_SEAT_BLUE,
		Players:    []*gamev1.SeatPlayer{{Seat: gamev1.Seat_SEAT_RED, Player: &gamev1.Player{PlayerId: "g-a", IsBot: true}}},
		OccurredAt: timestamppb.New(time.Date(2026, 12, 2, 12, 1, 5, 0, time.UTC))}
	finished := &eventsv1.MatchFinished{MatchId: finishedID, RuleSet: "fourkingdoms"}
	for _, c := range []struct {
		id     string
		change store.Change
	}{
		{abandonedID, store.Change{Finished: true, AbandonedData: mustMarshal(t, abandoned)}},
		{finishedID, store.Change{Finished: true, FinishedData: mustMarshal(t, finished)}},
	} {
		c.change.Expected, c.change.ExpectedStamp, c.change.Game = 1, stampOf(t, s, c.id), []byte("end")
		if res, err := s.Commit(ctx, c.id, c.change); err != nil || res.Outcome != store.Applied {
			t.Fatalf("final Commit of %s = %+v, %v", c.id, res, err)
		}
	}
	if _, err := s.Commit(ctx, finishedID, store.Change{Finished: true, FinishedData: []byte("x"), AbandonedData: []byte("y")}); err == nil {
		t.Error("a change both finished and abandoned was accepted")
	}
	due, err := s.Scan(ctx, []int{p}, time.Now(), 100)
	if err != nil || len(due) != 1 || len(due[0].Outbox) != 2 {
		t.Fatalf("Scan = %+v, %v; want the two records in the outbox of partition %d", due, err, p)
	}
	for range 2 { // a relay whose delete failed copies again
		if err := s.Relay(ctx, p, due[0].Outbox); err != nil {
			t.Fatal(err)
		}
	}
	if key := s.AbandonedStreamKey(); !strings.HasSuffix(key, ":"+ab.Key()) {
		t.Errorf("abandoned stream key %q, want the contract's %q behind the test's key prefix", key, ab.Key())
	}
	msgs, err := rdb.XRange(ctx, s.AbandonedStreamKey(), "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("abandoned stream = %+v, %v; want one entry", msgs, err)
	}
	got, err := ab.Decode(msgs[0].Values)
	if err != nil {
		t.Fatalf("the relayed entry breaks the contract: %v", err)
	}
	if diff := cmp.Diff(abandoned, got, protocmp.Transform()); diff != "" {
		t.Errorf("relayed MatchAbandoned (-published +decoded):\n%s", diff)
	}
	msgs, err = rdb.XRange(ctx, s.FinishedStreamKey(), "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("finished stream = %+v, %v; want one entry", msgs, err)
	}
	if got, err := fin.Decode(msgs[0].Values); err != nil || got.GetMatchId() != finishedID {
		t.Errorf("finished stream holds %v, %v; want match %s", got, err, finishedID)
	}
	if due, err := s.Scan(ctx, []int{p}, time.Now(), 100); err != nil || len(due) != 0 {
		t.Errorf("after the relay Scan = %+v, %v; want an empty outbox", due, err)
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testRacingCommits: many writers race from the same versions; every version
// is applied exactly once.
func testRacingCommits(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, func(c *store.Config) { c.EventLogLen = 10000 })
	ctx := t.Context()
	id := create(t, s, "req-r")
	const writers, perWriter = 8, 25
	stamp0 := stampOf(t, s, id)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			version, stamp := uint64(1), stamp0
			for done := 0; done < perWriter; {
				res, err := s.Commit(ctx, id, store.Change{Expected: version, ExpectedStamp: stamp, Game: fmt.Appendf(nil, "w%d", w),
					Events: [][]byte{fmt.Appendf(nil, "w%d-%d", w, done)}})
				if err != nil {
					t.Error(err)
					return
				}
				switch res.Outcome {
				case store.Applied:
					version, stamp = res.Version, res.Stamp
					done++
				case store.Conflict:
					version, stamp = res.Version, res.State.Stamp
				}
			}
		})
	}
	wg.Wait()
	evs, err := s.Events(ctx, id, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+writers*perWriter {
		t.Fatalf("have %d events, want %d", len(evs), 1+writers*perWriter)
	}
	seen := map[string]bool{}
	for i, e := range evs {
		if e.Version != uint64(i+1) || seen[string(e.Data)] {
			t.Fatalf("event %d = %v (duplicate or out of order)", i, e)
		}
		seen[string(e.Data)] = true
	}
}

func testLive(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, nil)
	ctx := t.Context()
	id := create(t, s, "req-l")
	p, _ := store.PartitionOf(id)
	ch, _ := s.Channel(id)
	ps := s.Subscribe(ctx, p)
	defer ps.Close()
	if err := ps.SSubscribe(ctx, ch); err != nil {
		t.Fatal(err)
	}
	// Wait for both subscription confirmations.
	for n := 0; n < 2; {
		msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := msg.(*redis.Subscription); ok {
			n++
		}
	}
	if _, err := s.Commit(ctx, id, store.Change{Expected: 1, ExpectedStamp: stampOf(t, s, id), Game: []byte("g"), Events: [][]byte{[]byte("a"), {}, []byte("ccc")}}); err != nil {
		t.Fatal(err)
	}
	msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := msg.(*redis.Message)
	if !ok || m.Channel != ch {
		t.Fatalf("received %#v", msg)
	}
	evs, err := store.DecodeBatch([]byte(m.Payload))
	if err != nil || len(evs) != 3 || !bytes.Equal(evs[0], []byte("a")) || len(evs[1]) != 0 || !bytes.Equal(evs[2], []byte("ccc")) {
		t.Fatalf("DecodeBatch = %q, %v", evs, err)
	}
}

func allPartitions() []int {
	ps := make([]int, store.Partitions)
	for p := range ps {
		ps[p] = p
	}
	return ps
}

// testKeeperRanges: membership, taking free ranges with fresh fencing
// tokens, renewal only of the exact value held, lapse of an instance that
// stops announcing itself, release and leaving.
func testKeeperRanges(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, nil)
	ctx := t.Context()
	var none [store.KeeperRanges]string
	m, err := s.Heartbeat(ctx, "a", &none, time.Minute)
	if err != nil || !slices.Equal(m.Members, []string{"a"}) || m.Leases != none {
		t.Fatalf("first heartbeat = %+v, %v; want member a, every range free", m, err)
	}
	short := 300 * time.Millisecond
	got, err := s.AcquireRanges(ctx, "a", []int{0, 1, 2, 3}, 2, short)
	if err != nil || len(got) != 2 || got[0] == "" || got[1] == "" || store.LeaseOwner(got[0]) != "a" {
		t.Fatalf("AcquireRanges = %v, %v; want ranges 0 and 1 for a", got, err)
	}
	// b arrives; of its candidates, 1 is taken.
	m, err = s.Heartbeat(ctx, "b", &none, short)
	if err != nil || !slices.Equal(m.Members, []string{"a", "b"}) || m.Leases[0] != got[0] || m.Leases[2] != "" {
		t.Fatalf("heartbeat of b = %+v, %v; want members a, b and a's leases", m, err)
	}
	gotB, err := s.AcquireRanges(ctx, "b", []int{1, 2, 3}, 2, short)
	if err != nil || len(gotB) != 2 || gotB[2] == "" || gotB[3] == "" {
		t.Fatalf("AcquireRanges for b = %v, %v; want ranges 2 and 3", gotB, err)
	}
	if tokenOf(t, gotB[2]) <= tokenOf(t, got[1]) {
		t.Errorf("fencing tokens %q then %q: not increasing", got[1], gotB[2])
	}

	// a renews with a short TTL; range 1 under a stale token is not
	// renewed, and b, silent, lapses with its leases.
	held := none
	held[0], held[1] = got[0], "1:a"
	for range 6 {
		if m, err = s.Heartbeat(ctx, "a", &held, short); err != nil {
			t.Fatal(err)
		}
		time.Sleep(short / 3)
	}
	if !slices.Equal(m.Members, []string{"a"}) || m.Leases[0] != got[0] || m.Leases[1] != "" || m.Leases[2] != "" || m.Leases[3] != "" {
		t.Fatalf("after b went silent and a renewed range 0 only: %+v", m)
	}

	// Release: only the exact value is released; leaving drops a.
	if n, err := s.ReleaseRanges(ctx, "a", map[int]string{0: "999:a"}, false); err != nil || n != 0 {
		t.Fatalf("release under a wrong token = %d, %v; want nothing released", n, err)
	}
	if n, err := s.ReleaseRanges(ctx, "a", map[int]string{0: got[0]}, true); err != nil || n != 1 {
		t.Fatalf("release = %d, %v; want 1", n, err)
	}
	m, err = s.Heartbeat(ctx, "c", &none, time.Minute)
	if err != nil || !slices.Equal(m.Members, []string{"c"}) || m.Leases != none {
		t.Fatalf("after a left: %+v, %v; want member c only, every range free", m, err)
	}
}

func tokenOf(t *testing.T, lease string) int {
	t.Helper()
	tok, _, _ := strings.Cut(lease, ":")
	n, err := strconv.Atoi(tok)
	if err != nil {
		t.Fatalf("lease %q has no numeric token", lease)
	}
	return n
}

func TestDecodeBatchRejectsTruncation(t *testing.T) {
	t.Parallel()
	for _, in := range [][]byte{{0}, {0, 0, 0, 5, 1}} {
		if _, err := store.DecodeBatch(in); err == nil {
			t.Errorf("DecodeBatch(%v) succeeded", in)
		}
	}
}

// testOutageNotes: notes written are read back as written, and a note is
// dropped only while it is the one the dropper knows.
func testOutageNotes(t *testing.T, rdb redis.UniversalClient) {
	s := newStore(t, rdb, nil)
	ctx := t.Context()
	t0 := time.UnixMilli(1_700_000_000_000)
	failing := store.NewOutageNote(t0, t0.Add(time.Second), time.Time{})
	ended := store.NewOutageNote(t0, t0.Add(time.Second), t0.Add(1500*time.Millisecond))
	if err := s.NoteOutages(ctx, map[int]store.OutageNote{3: failing, 200: ended}); err != nil {
		t.Fatal(err)
	}
	read := func() map[int]store.OutageNote {
		t.Helper()
		notes, err := s.OutageNotes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return notes
	}
	if got := read(); len(got) != 2 || !got[3].Equal(failing) || !got[200].Equal(ended) || !got[3].To.IsZero() {
		t.Fatalf("notes %v, want 3: %v, 200: %v", got, failing, ended)
	}
	// Partition 3's note changed since the dropper read it: it stays.
	if err := s.NoteOutages(ctx, map[int]store.OutageNote{3: ended}); err != nil {
		t.Fatal(err)
	}
	for p, n := range map[int]store.OutageNote{3: failing, 200: ended} {
		if err := s.DropOutageNote(ctx, p, n); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(); len(got) != 1 || !got[3].Equal(ended) {
		t.Fatalf("notes %v after the drops, want only 3: %v", got, ended)
	}
}
