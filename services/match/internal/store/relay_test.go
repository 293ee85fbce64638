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
	// master.
	cc := rdb.(*redis.ClusterClient)
	masterOf := func(p int) string {
		m, err := cc.MasterForKey(ctx, s.OutboxKey(p))
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	}
	reqs := map[int][]string{}
	var stalled, other = -1, -1
	for i := 0; stalled < 0 || other < 0 || len(reqs[stalled]) < 2; i++ {
		req := fmt.Sprintf("req-%d", i)
		p := store.PartitionForRequest(req)
		reqs[p] = append(reqs[p], req)
		switch {
		case stalled < 0 && len(reqs[p]) == 2:
			stalled = p
		case other < 0 && stalled >= 0 && masterOf(p) != masterOf(stalled):
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
		c := store.Change{Expected: 1, ExpectedStamp: stampOf(t, s, tt.id), Game: []byte("end"), Events: [][]byte{[]byte("over")}, Finished: true}
		if tt.abandoned {
			c.AbandonedData = []byte(tt.id)
		} else {
			c.FinishedData = []byte(tt.id)
		}
		res, err := s.Commit(ctx, tt.id, c)
		if res.Outcome != store.Applied || !errors.Is(err, tt.want) {
			t.Fatalf("finishing Commit of %s = %+v, %v; want applied, error %v", tt.id, res, err, tt.want)
		}
	}

	// relay is one keeper scan of the outboxes: it returns the partitions
	// whose entries the replicas did not confirm.
	relay := func() []int {
		t.Helper()
		due, err := s.Scan(ctx, allPartitions(), time.Now(), 100)
		if err != nil {
			t.Fatal(err)
		}
		var held []int
		for _, d := range due {
			err := s.Relay(ctx, d.Partition, d.Outbox)
			switch {
			case errors.Is(err, store.ErrNotReplicated):
				held = append(held, d.Partition)
			case err != nil:
				t.Fatalf("Relay of partition %d: %v", d.Partition, err)
			}
		}
		return held
	}
	// published lists the match ids relayed to a stream, sorted.
	published := func(stream string) []string {
		t.Helper()
		msgs, err := rdb.XRange(ctx, stream, "-", "+").Result()
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
	check := func(when string, wantFinished, wantAbandoned []string) {
		t.Helper()
		slices.Sort(wantFinished)
		if got := published(s.FinishedStreamKey()); !slices.Equal(got, wantFinished) {
			t.Errorf("%s: finished stream holds %v, want %v", when, got, wantFinished)
		}
		if got := published(s.AbandonedStreamKey()); !slices.Equal(got, wantAbandoned) {
			t.Errorf("%s: abandoned stream holds %v, want %v", when, got, wantAbandoned)
		}
	}

	if held := relay(); !slices.Equal(held, []int{stalled}) {
		t.Errorf("while the replica stalls: partitions held back %v, want [%d]", held, stalled)
	}
	check("while the replica stalls", []string{elsewhere}, nil)

	resume()
	// The replica catches up from the master's backlog; until it answers,
	// each scan holds the partition back again (bounded by the WAIT
	// timeout, not timed here).
	for attempt := 0; len(relay()) > 0; attempt++ {
		if attempt == 30 {
			t.Fatal("the resumed replica never confirmed the outbox")
		}
	}
	check("after the replica caught up", []string{finished, elsewhere}, []string{abandoned})
	if held := relay(); len(held) > 0 {
		t.Errorf("a scan of the emptied outboxes held back %v", held)
	}
	check("after one more scan", []string{finished, elsewhere}, []string{abandoned})
}
