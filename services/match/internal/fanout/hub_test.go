package fanout_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func setup(t *testing.T, rdb redis.UniversalClient) (*store.Store, string) {
	t.Helper()
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(t)
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := store.NewIDFor("r")
	if _, _, err := st.Create(t.Context(), id, store.NewMatch{RequestID: "r", Game: []byte("g"), Clock: []byte("c"), Meta: []byte("m"), Event: []byte("e")}); err != nil {
		t.Fatal(err)
	}
	return st, id
}

// commit stores one change with n events, versions from v+1.
func commit(t *testing.T, st *store.Store, id string, v uint64, n int) {
	t.Helper()
	var evs [][]byte
	for i := range n {
		b, _ := proto.Marshal(&eventsv1.MatchEvent{MatchId: id, Version: v + uint64(i) + 1})
		evs = append(evs, b)
	}
	cur, err := st.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Commit(t.Context(), id, store.Change{Expected: v, ExpectedStamp: cur.Stamp, Game: []byte("g"), Events: evs})
	if err != nil || res.Outcome != store.Applied {
		t.Fatalf("commit = %+v, %v", res, err)
	}
}

func TestHub(t *testing.T) {
	t.Parallel()
	s, _ := redistest.Standalone(t)
	c, _ := redistest.Cluster(t)
	for name, rdb := range map[string]redis.UniversalClient{"standalone": s, "cluster": c} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("FanOut", func(t *testing.T) { testFanOut(t, rdb) })
			t.Run("SlowConsumerDropped", func(t *testing.T) { testSlow(t, rdb) })
		})
	}
}

// testFanOut: many watchers of one match get every change in order.
func testFanOut(t *testing.T, rdb redis.UniversalClient) {
	st, id := setup(t, rdb)
	hub := fanout.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)), 64)
	defer hub.Close()
	var ws []*fanout.Watcher
	for range 20 {
		w, err := hub.Watch(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ws = append(ws, w)
	}
	if _, ok := rdb.(*redis.Client); ok {
		// One subscription per match and instance, however many watchers.
		ch, _ := st.Channel(id)
		n, err := rdb.PubSubShardNumSub(t.Context(), ch).Result()
		if err != nil || n[ch] != 1 {
			t.Fatalf("SHARDNUMSUB %s = %v, %v; want 1 subscriber for 20 watchers", ch, n, err)
		}
	}
	v := uint64(1)
	for _, n := range []int{1, 3, 2} {
		commit(t, st, id, v, n)
		v += uint64(n)
	}
	// Each event is encoded once for all its watchers (Event.Frame).
	var builds atomic.Int64
	build := func(version uint64, raw []byte) []byte {
		builds.Add(1)
		return append([]byte(fmt.Sprint(version, ":")), raw...)
	}
	frames := map[uint64]*byte{}
	for i, w := range ws {
		var got []uint64
		for len(got) < 6 {
			select {
			case it := <-w.C:
				for _, ev := range it.Events {
					got = append(got, ev.Version)
					b := ev.Frame(build)
					if want := fmt.Sprint(ev.Version, ":"); !bytes.HasPrefix(b, []byte(want)) || !bytes.Equal(b[len(want):], ev.Raw) {
						t.Fatalf("watcher %d: frame of version %d is %q", i, ev.Version, b)
					}
					if f, ok := frames[ev.Version]; ok && f != &b[0] {
						t.Fatalf("watcher %d: version %d has a frame of its own", i, ev.Version)
					}
					frames[ev.Version] = &b[0]
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("watcher %d got %v, want versions 2..7", i, got)
			}
		}
		if fmt.Sprint(got) != "[2 3 4 5 6 7]" {
			t.Fatalf("watcher %d got %v", i, got)
		}
	}
	if n := builds.Load(); n != 6 {
		t.Errorf("6 events for 20 watchers encoded %d times, want once each", n)
	}
}

// testSlow: a watcher that does not read is dropped (Lost) while another
// keeps receiving everything.
func testSlow(t *testing.T, rdb redis.UniversalClient) {
	st, id := setup(t, rdb)
	hub := fanout.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)), 2)
	defer hub.Close()
	slow, err := hub.Watch(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, err := hub.Watch(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	for v := uint64(1); v <= 10; v++ {
		commit(t, st, id, v, 1)
		select {
		case it := <-fast.C:
			if it.Events[0].Version != v+1 {
				t.Fatalf("fast watcher got version %d, want %d", it.Events[0].Version, v+1)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("fast watcher got nothing for version %d", v+1)
		}
	}
	select {
	case <-slow.Lost():
	default:
		t.Fatal("slow watcher not dropped after overflowing its buffer")
	}
}

// TestHubResubscribesWhenTheServerDropsTheChannel: a manual failover turns
// the master serving a match's channel into a replica, and the node drops
// the channel's subscribers without closing the connection (no error for
// Receive). The watcher must still get the next change.
func TestHubResubscribesWhenTheServerDropsTheChannel(t *testing.T) {
	t.Parallel()
	lc := redistest.NewCluster(t)
	rdb := lc.Client(t)
	st, id := setup(t, rdb)
	hub := fanout.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)), 64)
	defer hub.Close()
	w, err := hub.Watch(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	ch, _ := st.Channel(id)
	cc := rdb.(*redis.ClusterClient)
	master, err := cc.MasterForKey(t.Context(), ch)
	if err != nil {
		t.Fatal(err)
	}
	masterID, err := master.Do(t.Context(), "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	var replica *redis.Client
	for _, addr := range lc.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		info, err := c.Info(t.Context(), "replication").Result()
		if err == nil && strings.Contains(info, "role:slave") {
			if nodes, err := c.Do(t.Context(), "CLUSTER", "NODES").Text(); err == nil && myselfReplicates(nodes, masterID) {
				replica = c
			}
		}
	}
	if replica == nil {
		t.Fatalf("no replica of %s (%s)", master.Options().Addr, masterID)
	}
	// A manual failover gives up after a few seconds when the nodes are
	// slow to agree (a loaded machine): it is asked again, FORCE from the
	// second time on (no handshake with the master, which stays up and is
	// demoted all the same).
	deadline := time.Now().Add(60 * time.Second)
	var asked time.Time
	for attempt := 0; ; {
		info, _ := master.Info(t.Context(), "replication").Result()
		if strings.Contains(info, "role:slave") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the master was not demoted by CLUSTER FAILOVER (%d attempts)", attempt)
		}
		if time.Since(asked) > 8*time.Second {
			args := []any{"CLUSTER", "FAILOVER"}
			if attempt > 0 {
				args = append(args, "FORCE")
			}
			if err := replica.Do(t.Context(), args...).Err(); err != nil {
				t.Fatal(err)
			}
			attempt++
			asked = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The change is committed after the demotion, so only a renewed
	// subscription can deliver it (or tell the watcher to catch up).
	deadline = time.Now().Add(20 * time.Second)
	for {
		cur, err := st.Load(t.Context(), id)
		if err == nil {
			if _, err := st.Commit(t.Context(), id, store.Change{Expected: 1, ExpectedStamp: cur.Stamp, Game: []byte("g"),
				Events: [][]byte{mustEvent(t, id, 2)}}); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("commit after the failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	timeout := time.After(15 * time.Second)
	for {
		select {
		case it := <-w.C:
			if it.Resync || (len(it.Events) > 0 && it.Events[0].Version == 2) {
				return
			}
		case <-timeout:
			t.Fatal("the watcher got neither the change nor a resync after the server dropped its channel")
		}
	}
}

// myselfReplicates reports whether the "myself" line of CLUSTER NODES
// names masterID as its master.
func myselfReplicates(nodes, masterID string) bool {
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.Contains(f[2], "myself") && f[3] == masterID {
			return true
		}
	}
	return false
}

func mustEvent(t *testing.T, id string, v uint64) []byte {
	t.Helper()
	b, err := proto.Marshal(&eventsv1.MatchEvent{MatchId: id, Version: v})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPrivateNoticesReachOnlyTheirSeats: a premove notice for one seat goes
// into the buffers of that seat's watchers (and of a watcher whose seats
// are not known yet), never into a spectator's or another seat's.
func TestPrivateNoticesReachOnlyTheirSeats(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.Standalone(t)
	st, id := setup(t, rdb)
	hub := fanout.New(st, slog.New(slog.NewTextHandler(io.Discard, nil)), 64)
	defer hub.Close()
	watch := func(seats uint32, set bool) *fanout.Watcher {
		w, err := hub.Watch(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Close)
		if set {
			w.SetSeats(seats)
		}
		return w
	}
	seat1, seat2, spectator, unknown := watch(1<<1, true), watch(1<<2, true), watch(0, true), watch(0, false)

	cur, err := st.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Commit(t.Context(), id, store.Change{Expected: 1, ExpectedStamp: cur.Stamp, Game: []byte("g"),
		Events: [][]byte{mustEvent(t, id, 2)}, Private: [][]byte{{1, 'q'}}})
	if err != nil || res.Outcome != store.Applied {
		t.Fatalf("commit = %+v, %v", res, err)
	}
	commit(t, st, id, 2, 1)

	for _, tc := range []struct {
		name string
		w    *fanout.Watcher
		want string
	}{
		{"seat 1", seat1, "[2 P 3]"},
		{"seat 2", seat2, "[2 3]"},
		{"spectator", spectator, "[2 3]"},
		{"seats not known yet", unknown, "[2 P 3]"},
	} {
		var got []string
		for len(got) == 0 || got[len(got)-1] != "3" {
			select {
			case it := <-tc.w.C:
				switch {
				case it.Private != nil:
					got = append(got, "P")
				case len(it.Events) == 1:
					got = append(got, fmt.Sprint(it.Events[0].Version))
				default:
					t.Fatalf("%s: unexpected item %+v", tc.name, it)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s got %v, want %s", tc.name, got, tc.want)
			}
		}
		if fmt.Sprint("[", joinSpace(got), "]") != tc.want {
			t.Errorf("%s got %v, want %s", tc.name, got, tc.want)
		}
	}
}

func joinSpace(s []string) string { return strings.Join(s, " ") }
