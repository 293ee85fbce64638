package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/servertest"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// TestSlowReaders: hostile clients open WatchMatch streams over raw
// HTTP/2 with a flow-control window of 0 and never read, and make their
// streams' traffic themselves (each changes its own premove queue in a
// loop: private notices, sent to its stream only), while other clients
// play games and watch them. The transport's write quota fills, the
// sends block, and MATCH_WATCH_SEND_TIMEOUT later each slow stream is
// ended by the server: its handler returns, the stream leaves
// match_watch_streams and counts in match_watch_dropped_total
// {reason="slow_consumer"}. When a slow client reads again it gets what
// was queued and then RESOURCE_EXHAUSTED SLOW_CONSUMER. The others get
// every event of their games, in order; their MakeMove and watch
// latencies (from the move's call to the spectator's receipt) are logged
// with and without the flood, as ratios of one run (timings are not
// asserted: the machine is shared).
func TestSlowReaders(t *testing.T) {
	e := newEnv(t, standalone(t))
	env := e.baseEnv()
	env["MATCH_WATCH_SEND_TIMEOUT"] = "1s"
	env["MATCH_SPECTATOR_DELAY"] = "0"
	// Red never moves in the slow readers' matches: Blue may queue
	// premoves for as long as the flood needs (under -race, a minute).
	env["MATCH_FIRST_MOVE_LIMIT"] = "10m"
	srv := servertest.Start(t, run, env)
	addr := srv.GRPCAddr().String()

	const games, plies, slow = 4, 60, 3
	base := playWatched(t, e, addr, games, plies)
	heapBase := heapInUse()

	// The slow readers, each seated as Blue in a match of its own (Red
	// to move, so Blue may queue premoves).
	var readers []*stalledStream
	var changes atomic.Int64
	for i := range slow {
		p := fmt.Sprintf("slow-%d", i)
		m := e.create(addr, func(r *matchv1.CreateMatchRequest) {
			r.Players[1].Player = &gamev1.Player{PlayerId: p, DisplayName: p}
			r.FirstMoveAbort = proto.Bool(false)
		})
		tok := e.token(p, auth.RolePlayer)
		readers = append(readers, openStalled(t, addr, tok, m.GetMatchId()))
		c := e.client(addr, tok)
		ctx, cancel := context.WithCancel(t.Context())
		t.Cleanup(cancel)
		for range 2 { // concurrent changes may conflict: some are refused
			go floodPremoves(ctx, c, m.GetMatchId(), &changes)
		}
		readers[i].stopFlood = cancel
	}
	flood := playWatched(t, e, addr, games, plies)

	// Every slow stream ends on the server, with nobody reading it.
	waitDropped(t, srv, slow, 3*time.Minute, &changes)
	for _, r := range readers {
		r.stopFlood()
	}
	t.Logf("%d premove changes by the slow readers", changes.Load())
	heapFlood := heapInUse()
	servertest.WaitMetric(t, srv, "match_watch_streams", "0")

	for i, r := range readers {
		n, err := r.resume()
		if status.Code(err) != codes.ResourceExhausted || rpcerr.Info(err).GetReason() != "SLOW_CONSUMER" {
			t.Errorf("slow reader %d, after %d queued messages: %v; want RESOURCE_EXHAUSTED SLOW_CONSUMER", i, n, err)
			continue
		}
		t.Logf("slow reader %d: %d queued messages, then %v", i, n, err)
	}

	heapDrained := heapInUse()
	t.Logf("MakeMove  p50 %v -> %v (x%.2f), p99 %v -> %v (x%.2f) during the flood (%d and %d moves)",
		base.move(50), flood.move(50), ratio(flood.move(50), base.move(50)),
		base.move(99), flood.move(99), ratio(flood.move(99), base.move(99)), len(base.moves), len(flood.moves))
	t.Logf("watch     p50 %v -> %v (x%.2f), p99 %v -> %v (x%.2f) during the flood",
		base.watch(50), flood.watch(50), ratio(flood.watch(50), base.watch(50)),
		base.watch(99), flood.watch(99), ratio(flood.watch(99), base.watch(99)))
	// What the ended slow streams still hold on the server is the
	// messages queued in the transport, which the client gets before the
	// status: freed when it reads them (or its connection closes).
	t.Logf("heap in use: %d KB after the games without slow readers; %d KB after those with %d slow readers, their streams ended; %d KB once they read what was queued (%d KB per slow stream until then)",
		heapBase>>10, heapFlood>>10, slow, heapDrained>>10, (int64(heapFlood)-int64(heapDrained))/slow>>10)
}

// played is what playWatched measured.
type played struct {
	moves, delays []time.Duration
}

func (p played) move(q int) time.Duration  { return pct(p.moves, q) }
func (p played) watch(q int) time.Duration { return pct(p.delays, q) }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(max(b, 1)) }

// pct returns the q-th percentile of ds.
func pct(ds []time.Duration, q int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(len(s)-1, len(s)*q/100)]
}

// playWatched plays games matches of up to plies random moves at once, each
// watched by a spectator that must receive every event in order; it
// returns the MakeMove latencies and, per move, the time from its call to
// the spectator's receipt.
func playWatched(t *testing.T, e *env, addr string, games, plies int) played {
	t.Helper()
	var (
		mu  sync.Mutex
		out played
		wg  sync.WaitGroup
	)
	errs := make(chan error, games)
	for g := range games {
		m := e.create(addr, nil)
		id := m.GetMatchId()
		cs := e.seatClients(addr)
		spec := e.client(addr, e.token(fmt.Sprintf("spectator-%d", g), auth.RolePlayer))
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		stream, err := spec.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		first, err := stream.Recv()
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		var (
			smu      sync.Mutex
			received = map[uint64]time.Time{}
			last     = first.GetVersion()
			gap      error
		)
		go func() {
			for {
				it, err := stream.Recv()
				smu.Lock()
				switch {
				case err != nil:
					if ctx.Err() == nil {
						gap = fmt.Errorf("spectator of %s after version %d: %w", id, last, err)
					}
				case it.GetVersion() != last+1:
					gap = fmt.Errorf("spectator of %s: version %d after %d", id, it.GetVersion(), last)
				default:
					last = it.GetVersion()
					received[last] = time.Now()
				}
				stop := err != nil || gap != nil || it.GetEvent().GetGameOver() != nil
				smu.Unlock()
				if stop {
					return
				}
			}
		}()
		wg.Go(func() {
			defer cancel()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var moves []time.Duration
			var version uint64
			sent := map[uint64]time.Time{}
			for range plies {
				resp, err := cs[0].GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
				if err != nil {
					errs <- err
					return
				}
				m := resp.GetMatch()
				if m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ACTIVE {
					break
				}
				// The legal moves are the caller's: ask as the seat to move.
				seat := int(m.GetToMove()) - 1
				resp, err = cs[seat].GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
				if err != nil {
					errs <- err
					return
				}
				lm := resp.GetMatch().GetLegalMoves()
				if len(lm) == 0 {
					break
				}
				start := time.Now()
				mv, err := cs[seat].MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: id, Move: lm[rng.IntN(len(lm))]})
				if err != nil {
					errs <- fmt.Errorf("MakeMove in %s: %w", id, err)
					return
				}
				moves = append(moves, time.Since(start))
				version = mv.GetVersion()
				sent[version] = start
			}
			// The spectator gets up to the last version within a while.
			for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				smu.Lock()
				done, err := last >= version, gap
				smu.Unlock()
				if err != nil {
					errs <- err
					return
				}
				if done {
					break
				}
				if time.Now().After(end) {
					errs <- fmt.Errorf("spectator of %s stuck at version %d of %d", id, last, version)
					return
				}
			}
			cancel()
			smu.Lock()
			defer smu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			out.moves = append(out.moves, moves...)
			for v, at := range sent {
				if got, ok := received[v]; ok {
					out.delays = append(out.delays, got.Sub(at))
				} else {
					errs <- fmt.Errorf("spectator of %s never got version %d", id, v)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// floodPremoves changes the caller's premove queue in a match until ctx
// ends: every change is a notice to the caller's own watch streams.
func floodPremoves(ctx context.Context, c matchv1.MatchServiceClient, id string, changes *atomic.Int64) {
	qs := [][]string{{"m4-l4", "m5-l5", "m6-l6"}, {"m7-l7", "m8-l8", "m9-l9"}}
	for i := 0; ctx.Err() == nil; i++ {
		if _, err := c.SetPremoves(ctx, &matchv1.SetPremovesRequest{MatchId: id, Moves: qs[i%2]}); err == nil {
			changes.Add(1)
		}
	}
}

// waitDropped waits until the server counts n streams dropped as slow
// consumers.
func waitDropped(t *testing.T, srv *server.Server, n int, timeout time.Duration, changes *atomic.Int64) {
	t.Helper()
	var v string
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		v, _ = servertest.Value(servertest.Scrape(t, srv), "match_watch_dropped_total", `reason="slow_consumer"`)
		if v == strconv.Itoa(n) {
			return
		}
	}
	streams, _ := servertest.Value(servertest.Scrape(t, srv), "match_watch_streams")
	t.Fatalf("slow streams dropped: %s after %v, want %d (%s streams open, %d premove changes)", v, timeout, n, streams, changes.Load())
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// stalledStream is a WatchMatch call by a client that reads nothing until
// resume (servertest.Stalled).
type stalledStream struct {
	*servertest.Stalled
	stopFlood func()
}

func openStalled(t *testing.T, addr, token, id string) *stalledStream {
	t.Helper()
	s := servertest.OpenStalled(t, addr, "/fourkingdoms.match.v1.MatchService/WatchMatch", token, &matchv1.WatchMatchRequest{MatchId: id})
	return &stalledStream{Stalled: s}
}

// resume reads the stream to its end and returns the number of messages
// received and the status it ended with.
func (s *stalledStream) resume() (int, error) {
	msgs, err := s.Resume()
	for _, m := range msgs {
		if err := proto.Unmarshal(m, new(matchv1.WatchMatchResponse)); err != nil {
			return 0, err
		}
	}
	return len(msgs), err
}
