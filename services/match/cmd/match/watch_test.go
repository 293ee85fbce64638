package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// seatClients returns a client per seat (by the player's token) on addr.
func (e *env) seatClients(addr string) [4]matchv1.MatchServiceClient {
	var cs [4]matchv1.MatchServiceClient
	for s, p := range players {
		cs[s] = e.client(addr, e.token(p, auth.RolePlayer))
	}
	return cs
}

// playMoves plays n random legal moves, each by the player to move.
func playMoves(t testing.TB, cs [4]matchv1.MatchServiceClient, id string, n int, rng *rand.Rand) *matchv1.Match {
	t.Helper()
	var m *matchv1.Match
	for range n {
		for _, c := range cs {
			resp, err := c.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
			if err != nil {
				t.Fatal(err)
			}
			m = resp.GetMatch()
			if m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ACTIVE {
				return m
			}
			if lm := m.GetLegalMoves(); len(lm) > 0 {
				if _, err := c.MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: lm[rng.IntN(len(lm))]}); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
	}
	resp, err := cs[0].GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetMatch()
}

// recvN receives n items from a watch stream.
func recvN(t testing.TB, stream interface {
	Recv() (*matchv1.WatchMatchResponse, error)
}, n int) []*matchv1.WatchMatchResponse {
	t.Helper()
	var out []*matchv1.WatchMatchResponse
	for range n {
		r, err := stream.Recv()
		if err != nil {
			t.Fatalf("after %d items: %v", len(out), err)
		}
		out = append(out, r)
	}
	return out
}

func TestWatchResume(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		m := e.create(inst.addr, nil)
		cs := e.seatClients(inst.addr)
		rng := rand.New(rand.NewPCG(1, 2))
		cur := playMoves(t, cs, m.GetMatchId(), 6, rng)
		v := cur.GetVersion()
		if v < 7 {
			t.Fatalf("version %d after 6 moves", v)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		// A service's stream is live (a spectator's is delayed:
		// TestSpectatorDelay).
		spec := e.client(inst.addr, e.token("broadcaster", auth.RoleService))

		// Resume after version 3: exactly 4..v, then live events.
		stream, err := spec.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: m.GetMatchId(), FromVersion: 3})
		if err != nil {
			t.Fatal(err)
		}
		items := recvN(t, stream, int(v-3))
		for i, it := range items {
			if it.GetEvent() == nil || it.GetVersion() != uint64(4+i) || it.GetEvent().GetVersion() != it.GetVersion() {
				t.Fatalf("item %d = %v, want event version %d", i, it, 4+i)
			}
		}
		cur = playMoves(t, cs, m.GetMatchId(), 1, rng)
		live := recvN(t, stream, int(cur.GetVersion()-v))
		if live[0].GetVersion() != v+1 || live[0].GetEvent().GetMoveApplied() == nil {
			t.Fatalf("live item = %v, want version %d", live[0], v+1)
		}

		// From 0: a snapshot at the current version.
		s0, err := spec.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: m.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		first := recvN(t, s0, 1)[0]
		if first.GetSnapshot() == nil || first.GetVersion() != cur.GetVersion() || first.GetSnapshot().GetFen4() != cur.GetFen4() {
			t.Fatalf("first item = %v", first)
		}

		// From a version the match has not reached: OUT_OF_RANGE.
		bad, err := spec.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: m.GetMatchId(), FromVersion: cur.GetVersion() + 5})
		if err == nil {
			_, err = bad.Recv()
		}
		if status.Code(err) != codes.OutOfRange {
			t.Fatalf("watch from the future: %v, want OutOfRange", err)
		}
	})
}

func TestWatchTrimmedLogGivesSnapshot(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(map[string]string{"MATCH_EVENT_LOG_LEN": "10"})
		m := e.create(inst.addr, nil)
		cs := e.seatClients(inst.addr)
		cur := playMoves(t, cs, m.GetMatchId(), 300, rand.New(rand.NewPCG(3, 4)))
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		stream, err := cs[0].WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: m.GetMatchId(), FromVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		first := recvN(t, stream, 1)[0]
		if first.GetSnapshot() == nil || first.GetVersion() != cur.GetVersion() {
			t.Fatalf("resume from a trimmed version: first item %v, want a snapshot at %d", first, cur.GetVersion())
		}
	})
}

// TestClockFlagsWithoutClients: nobody moves; the keeper flags each player
// in turn within a second of the deadline, and the game ends.
func TestClockFlagsWithoutClients(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		m := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) {
			r.TimeControl = &gamev1.TimeControl{Name: "0.02+0"} // 1.2 s
			r.FirstMoveAbort = proto.Bool(false)                // first-move time losses, not an abort
			r.Seed = proto.Uint64(3)
		})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		// A service sees the live clocks (a spectator sees those of its
		// delayed ply, none running).
		spec := e.client(inst.addr, e.token("broadcaster", auth.RoleService))
		stream, err := spec.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: m.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		snap := recvN(t, stream, 1)[0].GetSnapshot()
		deadline := snap.GetClocks()[0].GetTurnDeadline().AsTime()
		var flagged []gamev1.Seat
		for {
			it, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			ev := it.GetEvent()
			if to := ev.GetPlayerTimedOut(); to != nil {
				late := ev.GetOccurredAt().AsTime().Sub(deadline)
				if late < 0 || late > time.Second {
					t.Errorf("seat %v flagged %v after its deadline", to.GetSeat(), late)
				}
				flagged = append(flagged, to.GetSeat())
			}
			if ma := ev.GetMoveApplied(); ma != nil {
				for _, c := range ma.GetClocks() {
					if c.GetRunning() {
						deadline = c.GetTurnDeadline().AsTime()
					}
				}
			}
			if ev.GetGameOver() != nil {
				r := ev.GetGameOver().GetResult()
				if r.GetRanking()[0] != gamev1.Seat_SEAT_GREEN || r.GetTermination() != gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING {
					t.Errorf("result %v: want Green last player standing", r)
				}
			}
		}
		want := []gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW}
		if fmt.Sprint(flagged) != fmt.Sprint(want) {
			t.Errorf("flagged %v, want %v", flagged, want)
		}
	})
}

// TestWatchEndsOnShutdown: a graceful shutdown ends open watch streams with
// UNAVAILABLE (reconnect elsewhere) instead of holding the drain.
func TestWatchEndsOnShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, standalone(t))
	inst := e.start(map[string]string{"SHUTDOWN_TIMEOUT": "20s"})
	m := e.create(inst.addr, nil)
	spec := e.client(inst.addr, e.token("spectator", auth.RolePlayer))
	stream, err := spec.WatchMatch(t.Context(), &matchv1.WatchMatchRequest{MatchId: m.GetMatchId()})
	if err != nil {
		t.Fatal(err)
	}
	recvN(t, stream, 1)
	start := time.Now()
	inst.stop()
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("after shutdown: %v, want Unavailable", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("shutdown waited %v for the watch stream", d)
	}
}
