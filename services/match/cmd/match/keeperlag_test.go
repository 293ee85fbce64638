package main

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestSlowKeeperStepsDown: an instance whose every Redis answer comes
// 100 ms late (through a proxy) renews its range leases in time, but its
// scans never get to read a deadline before their time is up. Without
// MATCH_KEEPER_MAX_LAG it kept its half of the ranges for ever and their
// clocks were never flagged (the chaos run's "flags 1.8-2.8 s late" from a
// starved instance, taken to the extreme). With it, the slow instance
// gives its ranges back after a few lagging scans, the healthy instance
// takes all of them, and a clock that runs out in one of the slow
// instance's former ranges is flagged. While it stays slow it does not
// take ranges back; when the healthy instance stops, the slow one, now
// alone, works every range again (slow is better than nobody); once its
// Redis is fast again, the two share the ranges.
func TestSlowKeeperStepsDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, standalone(t))
	rdb := e.rdb()
	ov := map[string]string{"MATCH_KEEPER_MAX_LAG": "200ms"}
	healthy := e.start(ov)
	idH := e.newMember(t, rdb, nil)

	proxy := newSlowProxy(t, e.backend.env["REDIS_ADDR"], 100*time.Millisecond)
	slowEnv := map[string]string{"MATCH_KEEPER_MAX_LAG": "200ms", "REDIS_ADDR": proxy.addr}
	e.start(slowEnv)
	idS := e.newMember(t, rdb, []string{idH})

	h := e.waitLeases(t, rdb, "the slow instance takes ranges", 10*time.Second, func(h map[string][]int) bool {
		return len(h[idS]) > 0
	})
	r := h[idS][0]
	t.Logf("the slow instance took ranges %v", h[idS])

	// Red's 3 s clock runs out in a range the slow instance held.
	short := e.createInRange(healthy.addr, r, func(r *matchv1.CreateMatchRequest) {
		r.TimeControl = &gamev1.TimeControl{Name: "0.05+0"}
		r.FirstMoveAbort = proto.Bool(false)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	stream, err := e.client(healthy.addr, e.token("spectator", auth.RolePlayer)).WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: short.GetMatchId()})
	if err != nil {
		t.Fatal(err)
	}
	recvN(t, stream, 1)

	h = e.waitLeases(t, rdb, "the healthy instance holds every range", 10*time.Second, func(h map[string][]int) bool {
		return len(h[idH]) == store.KeeperRanges
	})
	// The ranges may reach the healthy instance before the step-down ends
	// (a renewal through the slow proxy missed its lease, or the release
	// itself timed out and the leases lapsed), so the membership is
	// awaited: an instance that did not step down keeps announcing itself
	// and stays a member.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, members := readLeases(t, rdb, e.prefix)
		if !slices.Contains(members, idS) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the slow instance gave its ranges up but is still a member after 10s: %v", members)
		}
	}
	t.Logf("the slow instance stepped down; leases %v", h)

	for {
		it, err := stream.Recv()
		if err != nil {
			t.Fatalf("waiting for Red's flag in range %d: %v", r, err)
		}
		if to := it.GetEvent().GetPlayerTimedOut(); to != nil {
			t.Logf("Red flagged %v after the deadline", it.GetEvent().GetOccurredAt().AsTime().Sub(clockDeadline(short)))
			break
		}
	}

	// Still slow: its probes lag, it stays out.
	time.Sleep(time.Second)
	if h, members := readLeases(t, rdb, e.prefix); len(h[idS]) > 0 || slices.Contains(members, idS) {
		t.Fatalf("the slow instance joined again while slow: leases %v, members %v", h, members)
	}

	// Alone, it works every range however slow it is.
	healthy.stop()
	e.waitLeases(t, rdb, "the slow instance, alone, holds every range", 15*time.Second, func(h map[string][]int) bool {
		return len(h[idS]) == store.KeeperRanges
	})

	// Fast again, with a second instance: they share the ranges.
	proxy.setDelay(0)
	e.start(ov)
	idO := e.newMember(t, rdb, []string{idS})
	e.waitLeases(t, rdb, "the two instances hold 8 ranges each", 15*time.Second, func(h map[string][]int) bool {
		return len(h[idS]) == store.KeeperRanges/2 && len(h[idO]) == store.KeeperRanges/2
	})
}

// clockDeadline returns the deadline of a match's running clock.
func clockDeadline(m *matchv1.Match) time.Time {
	for _, c := range m.GetClocks() {
		if c.GetRunning() {
			return c.GetTurnDeadline().AsTime()
		}
	}
	return time.Time{}
}

// slowProxy forwards TCP connections to a Redis server and holds every
// chunk of its answers for a delay, so that each round trip through it
// takes at least that long while the commands themselves run at once.
type slowProxy struct {
	addr  string
	delay atomic.Int64 // nanoseconds
}

func newSlowProxy(t *testing.T, target string, delay time.Duration) *slowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{addr: ln.Addr().String()}
	p.delay.Store(int64(delay))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			track(c)
			track(s)
			wg.Go(func() {
				_, _ = io.Copy(s, c)
				s.Close()
			})
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						time.Sleep(time.Duration(p.delay.Load()))
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			if err := c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				t.Logf("proxy: %v", err)
			}
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

func (p *slowProxy) setDelay(d time.Duration) { p.delay.Store(int64(d)) }
