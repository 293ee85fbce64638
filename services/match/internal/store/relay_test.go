package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestRelayWaitsForReplicas: with WaitReplicas, the relay publishes only
// outbox entries a replica holds. While the replica of one master is
// stalled, a match of that master's partition finishes on the master alone
// (ErrNotReplicated), and a failover now would take the end back: neither
// its MatchFinished nor a MatchAbandoned of the same partition may reach the
// global streams, while a partition of another master relays as usual.
// Once the replica catches up, each entry is relayed exactly once.
func TestRelayWaitsForReplicas(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t)
	rdb := cluster.Client(t)
	s := newStore(t, rdb, func(c *store.Config) { c.WaitReplicas, c.WaitTimeout = 1, time.Second })
	ctx := t.Context()

	// Two matches in one partition and one in a partition of another
	// master. The stalled master serves neither global stream: this test
	// is about the outbox (TestRelayDeletesOnlyConfirmedCopies about the
	// streams).
	cc := rdb.(*redis.ClusterClient)
	masterOf := func(key string) string {
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	}
	streams := []string{masterOf(s.FinishedStreamKey()), masterOf(s.AbandonedStreamKey())}
	reqs := map[int][]string{}
	var stalled, other = -1, -1
	for i := 0; stalled < 0 || other < 0 || len(reqs[stalled]) < 2; i++ {
		req := fmt.Sprintf("req-%d", i)
		p := store.PartitionForRequest(req)
		reqs[p] = append(reqs[p], req)
		switch master := masterOf(s.OutboxKey(p)); {
		case stalled < 0 && len(reqs[p]) == 2 && !slices.Contains(streams, master):
			stalled = p
		case other < 0 && stalled >= 0 && master != masterOf(s.OutboxKey(stalled)):
			other = p
		}
	}
	finished, abandoned := create(t, s, reqs[stalled][0]), create(t, s, reqs[stalled][1])
	elsewhere := create(t, s, reqs[other][0])

	resume := cluster.StallReplicaOf(t, s.OutboxKey(stalled))
	for _, tt := range []struct {
		id        string
		abandoned bool
		want      error
	}{
		{finished, false, store.ErrNotReplicated},
		{abandoned, true, store.ErrNotReplicated},
		{elsewhere, false, nil},
	} {
		if err := finish(t, s, tt.id, tt.abandoned); !errors.Is(err, tt.want) {
			t.Fatalf("finishing Commit of %s: %v, want %v", tt.id, err, tt.want)
		}
	}

	check := func(when string, wantFinished, wantAbandoned []string) {
		t.Helper()
		slices.Sort(wantFinished)
		if got := published(t, rdb, s.FinishedStreamKey()); !slices.Equal(got, wantFinished) {
			t.Errorf("%s: finished stream holds %v, want %v", when, got, wantFinished)
		}
		if got := published(t, rdb, s.AbandonedStreamKey()); !slices.Equal(got, wantAbandoned) {
			t.Errorf("%s: abandoned stream holds %v, want %v", when, got, wantAbandoned)
		}
	}

	if held := relayScan(t, s); !slices.Equal(held, []int{stalled}) {
		t.Errorf("while the replica stalls: partitions held back %v, want [%d]", held, stalled)
	}
	check("while the replica stalls", []string{elsewhere}, nil)

	resume()
	// The replica catches up from the master's backlog; until it answers,
	// each scan holds the partition back again (bounded by the WAIT
	// timeout, not timed here).
	for attempt := 0; len(relayScan(t, s)) > 0; attempt++ {
		if attempt == 30 {
			t.Fatal("the resumed replica never confirmed the outbox")
		}
	}
	check("after the replica caught up", []string{finished, elsewhere}, []string{abandoned})
	if held := relayScan(t, s); len(held) > 0 {
		t.Errorf("a scan of the emptied outboxes held back %v", held)
	}
	check("after one more scan", []string{finished, elsewhere}, []string{abandoned})
}

// TestRelayDeletesOnlyConfirmedCopies: with WaitReplicas, the relay deletes
// outbox entries only once the global stream's replicas hold the copy:
// while the replica of the finished stream's master is stalled, a record
// of a partition on another master is copied (on that master alone) but
// stays in its outbox, so a failover of the stream's master could not lose
// it. Once the replica catches up, the outbox empties and the stream holds
// the record once.
func TestRelayDeletesOnlyConfirmedCopies(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t)
	rdb := cluster.Client(t)
	s := newStore(t, rdb, func(c *store.Config) { c.WaitReplicas, c.WaitTimeout = 1, time.Second })
	ctx := t.Context()
	cc := rdb.(*redis.ClusterClient)
	masterOf := func(key string) string {
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	}
	req := ""
	for i := 0; req == ""; i++ {
		r := fmt.Sprintf("req-%d", i)
		if masterOf(s.OutboxKey(store.PartitionForRequest(r))) != masterOf(s.FinishedStreamKey()) {
			req = r
		}
	}
	id := create(t, s, req)
	p, _ := store.PartitionOf(id)
	if err := finish(t, s, id, false); err != nil {
		t.Fatalf("finishing Commit: %v", err)
	}

	resume := cluster.StallReplicaOf(t, s.FinishedStreamKey())
	if held := relayScan(t, s); !slices.Equal(held, []int{p}) {
		t.Errorf("while the stream's replica stalls: partitions held back %v, want [%d]", held, p)
	}
	if n := outboxLen(t, s, p); n != 1 {
		t.Errorf("while the stream's replica stalls: outbox holds %d entries, want the 1 not confirmed", n)
	}
	resume()
	for attempt := 0; len(relayScan(t, s)) > 0; attempt++ {
		if attempt == 30 {
			t.Fatal("the resumed replica never confirmed the copy")
		}
	}
	if n := outboxLen(t, s, p); n != 0 {
		t.Errorf("after the replica caught up: outbox holds %d entries, want 0", n)
	}
	if got := published(t, rdb, s.FinishedStreamKey()); !slices.Equal(got, []string{id}) {
		t.Errorf("finished stream holds %v, want [%s] once", got, id)
	}
}

// finish commits the final change of a match created by create, its
// outbox record (a MatchFinished, or a MatchAbandoned) holding its id, and
// returns the commit's error (ErrNotReplicated when applied unconfirmed).
func finish(t *testing.T, s *store.Store, id string, abandoned bool) error {
	t.Helper()
	c := store.Change{Expected: 1, ExpectedStamp: stampOf(t, s, id), Game: []byte("end"), Events: [][]byte{[]byte("over")}, Finished: true}
	if abandoned {
		c.AbandonedData = []byte(id)
	} else {
		c.FinishedData = []byte(id)
	}
	res, err := s.Commit(t.Context(), id, c)
	if res.Outcome != store.Applied {
		t.Fatalf("finishing Commit of %s = %+v, %v; want applied", id, res, err)
	}
	return err
}

// relayScan is one keeper scan of the outboxes: it returns the partitions
// whose entries or copies the replicas did not confirm.
func relayScan(t *testing.T, s *store.Store) []int {
	t.Helper()
	due, err := s.Scan(t.Context(), allPartitions(), time.Now(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var held []int
	for _, d := range due {
		err := s.Relay(t.Context(), d.Partition, d.Outbox)
		switch {
		case errors.Is(err, store.ErrNotReplicated):
			held = append(held, d.Partition)
		case err != nil:
			t.Fatalf("Relay of partition %d: %v", d.Partition, err)
		}
	}
	return held
}

// published lists the outbox records (match ids, as finish writes them)
// relayed to a stream, sorted.
func published(t *testing.T, rdb redis.UniversalClient, stream string) []string {
	t.Helper()
	msgs, err := rdb.XRange(t.Context(), stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.Values[eventstream.MatchFinished().DataField()].(string))
	}
	slices.Sort(ids)
	return ids
}

func outboxLen(t *testing.T, s *store.Store, p int) int {
	t.Helper()
	due, err := s.Scan(t.Context(), []int{p}, time.Now(), 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range due {
		n += len(d.Outbox)
	}
	return n
}
