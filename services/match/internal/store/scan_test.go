package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestScanWhileAMasterHangs: while one master of a cluster answers nothing
// (stopped, not yet failed over), a scan reads every partition of the
// other masters and reports only the hung master's as failed. go-redis
// fails a whole pipeline that spans masters when one of them does not
// answer before the context ends, so a scan that sent all masters' reads
// together failed every partition: for the seconds of a master's
// failover the keeper flagged no clock and relayed no result anywhere,
// and counted healthy partitions as unserved.
func TestScanWhileAMasterHangs(t *testing.T) {
	t.Parallel()
	lc := redistest.NewCluster(t)
	rdb := lc.Client(t)
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("the cluster's client is a %T", rdb)
	}
	s := newStore(t, rdb, nil)
	ctx := t.Context()
	ids := map[int]string{} // partition -> its match, due since a minute ago
	for n := 0; len(ids) < store.Partitions; n++ {
		req := fmt.Sprintf("req-%d", n)
		p := store.PartitionForRequest(req)
		if ids[p] != "" {
			continue
		}
		id := store.NewIDFor(req)
		if _, created, err := s.Create(ctx, id, store.NewMatch{RequestID: req, Game: []byte("g"), Clock: []byte("c"),
			Meta: []byte("m"), Event: []byte("e"), Deadline: time.Now().Add(-time.Minute)}); err != nil || !created {
			t.Fatalf("create in partition %d: %v, %v", p, created, err)
		}
		ids[p] = id
	}
	masterOf := func(p int) string {
		node, err := cc.MasterForKey(ctx, fmt.Sprintf("{fk:p%02x}", p))
		if err != nil {
			t.Fatal(err)
		}
		return node.Options().Addr
	}
	hung := masterOf(0)
	onHung := map[int]bool{}
	for p := range store.Partitions {
		onHung[p] = masterOf(p) == hung
	}

	resume := lc.StallMasterOf(t, "{fk:p00}")
	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond) // well within the 2 s node timeout
	due, err := s.Scan(sctx, allPartitions(), time.Now(), 10)
	cancel()
	resume()

	se, ok := errors.AsType[*store.ScanError](err)
	if !ok {
		t.Fatalf("Scan with a master hung: error %v, want a *store.ScanError", err)
	}
	for p := range store.Partitions {
		if _, failed := se.Failed[p]; failed != onHung[p] {
			t.Errorf("partition %d (on the hung master: %v): failed %v", p, onHung[p], failed)
		}
	}
	read := map[int]bool{}
	for _, d := range due {
		read[d.Partition] = true
		if len(d.Matches) != 1 || d.Matches[0] != ids[d.Partition] {
			t.Errorf("partition %d: due %v, want [%s]", d.Partition, d.Matches, ids[d.Partition])
		}
	}
	for p := range store.Partitions {
		if !onHung[p] && !read[p] {
			t.Errorf("partition %d, on a master that answers, was not read", p)
		}
	}
}
