package fanout_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestStalledSubscribeDelaysNoOtherPartition: the hub reaches Redis through
// a proxy that stops forwarding the connections opened after some point.
// The subscription of a second partition, opened then, hangs (no read
// timeout: it hangs until the proxy lets go); events of the first partition
// must still reach its watcher meanwhile. Before the partitions had their
// own goroutines, the hub held one lock across the subscribe, and every
// delivery of the instance waited for it.
func TestStalledSubscribeDelaysNoOtherPartition(t *testing.T) {
	t.Parallel()
	rdb, addr := redistest.Standalone(t)
	px := newStallProxy(t, addr)
	defer px.close()
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(t)
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The hub's own client goes through the proxy and never times a read
	// out, so a stalled connection stays stalled until released.
	prdb := redis.NewClient(&redis.Options{Addr: px.addr(), ReadTimeout: -1, MaxRetries: -1})
	defer prdb.Close()
	hst, err := store.New(prdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := createMatch(t, st, -1)
	pa, _ := store.PartitionOf(a)
	b := createMatch(t, st, pa)

	hub := fanout.New(hst, slog.New(slog.NewTextHandler(io.Discard, nil)), 64)
	defer hub.Close()
	wa, err := hub.Watch(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Close()

	px.stallNew()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watchedB := make(chan error, 1)
	go func() {
		w, err := hub.Watch(ctx, b)
		if err == nil {
			w.Close()
		}
		watchedB <- err
	}()
	select {
	case <-px.stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the second partition's subscription opened no connection")
	}

	commit(t, st, a, 1, 1)
	select {
	case it := <-wa.C:
		if len(it.Events) != 1 || it.Events[0].Version != 2 {
			t.Fatalf("watcher of %s got %+v, want version 2", a, it)
		}
	case <-time.After(10 * time.Second):
		px.close() // lets the hub go, so that the test ends
		t.Fatal("an event of one partition waited for the stalled subscription of another")
	}
	cancel()
	<-watchedB
	// Let the stalled connection go before the hub closes: the hub's
	// subscription of b ends with the connection.
	px.close()
}

// createMatch creates a match whose partition is not avoid.
func createMatch(t *testing.T, st *store.Store, avoid int) string {
	t.Helper()
	for i := 0; ; i++ {
		req := fmt.Sprintf("req-%s-%d", t.Name(), i)
		id := store.NewIDFor(req)
		if p, _ := store.PartitionOf(id); p == avoid {
			continue
		}
		if _, _, err := st.Create(t.Context(), id, store.NewMatch{RequestID: req, Game: []byte("g"), Clock: []byte("c"), Meta: []byte("m"), Event: []byte("e")}); err != nil {
			t.Fatal(err)
		}
		return id
	}
}

// stallProxy forwards TCP connections to a Redis server; connections
// accepted after stallNew are held open without forwarding anything.
type stallProxy struct {
	ln      net.Listener
	target  string
	stalled chan struct{} // receives once per stalled connection

	mu     sync.Mutex
	stall  bool
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, stalled: make(chan struct{}, 16)}
	p.wg.Go(p.accept)
	return p
}

func (p *stallProxy) addr() string { return p.ln.Addr().String() }

func (p *stallProxy) stallNew() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall = true
}

func (p *stallProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.conns = append(p.conns, c)
		stall := p.stall
		p.mu.Unlock()
		if stall {
			select {
			case p.stalled <- struct{}{}:
			default:
			}
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, up)
		p.mu.Unlock()
		p.wg.Go(func() { _, _ = io.Copy(up, c); up.Close() })
		p.wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
	}
}

// close stops the proxy and closes every connection, stalled or not.
func (p *stallProxy) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	conns := p.conns
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}
