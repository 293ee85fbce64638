package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// smallArmies: kings, queens, a rook and two pawns each, so random play
// ends in a few hundred plies at most.
const smallArmies = "rK:h1 rQ:g1 rR:d1 rP:g2 rP:h2 " +
	"bK:n8 bQ:n7 bR:n4 bP:m7 bP:m8 " +
	"yK:g14 yQ:h14 yR:k14 yP:g13 yP:h13 " +
	"gK:a7 gQ:a8 gR:a11 gP:b7 gP:b8"

// playRandomly plays seat's moves through the watch stream: on every item
// that lists the caller's legal moves it plays a random one. It returns
// the versions of all items received.
func playRandomly(ctx context.Context, c matchv1.MatchServiceClient, id string, seed uint64) ([]uint64, error) {
	rng := rand.New(rand.NewPCG(seed, 1))
	stream, err := c.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id})
	if err != nil {
		return nil, err
	}
	var versions []uint64
	n := 0
	for {
		resp, err := stream.Recv()
		if err != nil {
			return versions, err
		}
		versions = append(versions, resp.GetVersion())
		var ply uint32
		switch {
		case resp.GetSnapshot() != nil:
			ply = resp.GetSnapshot().GetPly()
		default:
			ply = resp.GetEvent().GetPly()
			if resp.GetEvent().GetGameOver() != nil {
				return versions, nil
			}
		}
		if len(resp.GetLegalMoves()) == 0 {
			continue
		}
		n++
		move := resp.GetLegalMoves()[rng.IntN(len(resp.GetLegalMoves()))]
		_, err = c.MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: id, Move: move, ClientMoveId: fmt.Sprintf("m%d", n), ExpectedPly: &ply})
		if err != nil {
			return versions, fmt.Errorf("MakeMove %s at ply %d: %w", move, ply, err)
		}
	}
}

func TestFullGameByFourClients(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		start := fen4(t, "R", smallArmies)
		m := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) { r.StartFen4 = &start; r.Seed = proto.Uint64(7) })
		if m.GetVersion() != 1 || m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ACTIVE || m.GetToMove() != gamev1.Seat_SEAT_RED {
			t.Fatalf("created match = %v", m)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()

		// A spectator records the whole sequence too.
		spec := e.client(inst.addr, e.token("spectator", auth.RolePlayer))
		var wg sync.WaitGroup
		seen := make([][]uint64, 5)
		errs := make([]error, 5)
		for s, p := range players {
			c := e.client(inst.addr, e.token(p, auth.RolePlayer))
			wg.Go(func() { seen[s], errs[s] = playRandomly(ctx, c, m.GetMatchId(), uint64(s)+100) })
		}
		wg.Go(func() { seen[4], errs[4] = playRandomly(ctx, spec, m.GetMatchId(), 0) })
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
		}
		for i := range seen {
			// Each stream: a snapshot at version v, then v+1, v+2, ... to the end.
			for j := 1; j < len(seen[i]); j++ {
				if seen[i][j] != seen[i][j-1]+1 {
					t.Fatalf("client %d: versions not consecutive: %v", i, seen[i])
				}
			}
			if last := seen[i][len(seen[i])-1]; last != seen[0][len(seen[0])-1] {
				t.Fatalf("client %d ended at version %d, client 0 at %d", i, last, seen[0][len(seen[0])-1])
			}
		}

		viewer := e.client(inst.addr, e.token("spectator", auth.RolePlayer))
		got, err := viewer.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: m.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		fin := got.GetMatch()
		if fin.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_FINISHED || fin.GetResult() == nil || fin.GetFinishedAt() == nil {
			t.Fatalf("finished match = %v", fin)
		}
		checkRanking(t, fin.GetResult())
		for i, ss := range fin.GetSeats() {
			if ss.GetResultPoints() != fin.GetResult().GetPoints()[i].GetPoints() {
				t.Errorf("seat %d result points %d, result says %d", i, ss.GetResultPoints(), fin.GetResult().GetPoints()[i].GetPoints())
			}
		}

		// The export re-imports to the same game.
		exp, err := viewer.ExportGame(ctx, &matchv1.ExportGameRequest{MatchId: m.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := rules.ParsePGN4(exp.GetPgn4(), nil)
		if err != nil {
			t.Fatalf("re-import: %v\n%s", err, exp.GetPgn4())
		}
		if rec.Game.FEN4() != fin.GetFen4() || rec.Game.Ply() != int(fin.GetPly()) {
			t.Errorf("re-imported game differs: %s at ply %d, served %s at ply %d", rec.Game.FEN4(), rec.Game.Ply(), fin.GetFen4(), fin.GetPly())
		}
		if rp := rec.Game.Result().Points; !slices.Equal(rp[:], resultPoints(fin.GetResult())) {
			t.Errorf("re-imported result points %v, served %v", rp, resultPoints(fin.GetResult()))
		}

		// MatchFinished reaches the global stream with the same result.
		mf := waitFinished(t, e, m.GetMatchId())
		if diff := cmp.Diff(fin.GetResult(), mf.GetResult(), protocmp.Transform()); diff != "" {
			t.Errorf("MatchFinished result differs (-match +event):\n%s", diff)
		}
		if mf.GetPlies() != fin.GetPly() || mf.GetRuleSet() != "fourkingdoms" || len(mf.GetPlayers()) != 4 {
			t.Errorf("MatchFinished = %v", mf)
		}
	})
}

// TestResignationsEndTheGame: three players resign; the last live player
// wins with 20 points per zombie king (docs/rules.md section 8), the others rank by
// frozen points with the later seat first on ties (docs/rules.md section 9).
func TestResignationsEndTheGame(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		m := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) { r.Seed = proto.Uint64(1) })
		ctx := t.Context()
		red := e.client(inst.addr, e.token(players[0], auth.RolePlayer))
		mv, err := red.MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: m.GetMatchId(), Move: "h2-h3", ClientMoveId: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if mv.GetVersion() != 2 || mv.GetPly() != 1 || mv.GetToMove() != gamev1.Seat_SEAT_BLUE || len(mv.GetEvents()) != 1 {
			t.Fatalf("MakeMove = %v", mv)
		}
		ma := mv.GetEvents()[0].GetMoveApplied()
		if ma.GetEffects().GetMove() != "h2-h3" || ma.GetEffects().GetSeat() != gamev1.Seat_SEAT_RED || ma.GetToMove() != gamev1.Seat_SEAT_BLUE {
			t.Fatalf("MoveApplied = %v", ma)
		}
		// Yellow resigns out of turn, then Blue (to move) and Green.
		for _, s := range []int{2, 1, 3} {
			c := e.client(inst.addr, e.token(players[s], auth.RolePlayer))
			r, err := c.Resign(ctx, &matchv1.ResignRequest{MatchId: m.GetMatchId()})
			if err != nil {
				t.Fatalf("seat %d resigns: %v", s, err)
			}
			if s == 1 {
				// Blue was to move: the server plays Blue's and then
				// Yellow's zombie moves at once; Green (live) is to move.
				evs := r.GetEvents()
				if len(evs) != 3 || evs[0].GetPlayerResigned().GetSeat() != gamev1.Seat_SEAT_BLUE ||
					!evs[1].GetMoveApplied().GetEffects().GetIsZombieMove() || evs[1].GetMoveApplied().GetEffects().GetSeat() != gamev1.Seat_SEAT_BLUE ||
					!evs[2].GetMoveApplied().GetEffects().GetIsZombieMove() || evs[2].GetMoveApplied().GetToMove() != gamev1.Seat_SEAT_GREEN {
					t.Fatalf("Blue's resignation events = %v", evs)
				}
				if r.GetVersion() != evs[2].GetVersion() {
					t.Errorf("response version %d, last event %d", r.GetVersion(), evs[2].GetVersion())
				}
			}
		}
		got, err := red.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: m.GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		res := got.GetMatch().GetResult()
		want := &gamev1.Result{
			Points: []*gamev1.SeatPoints{{Seat: gamev1.Seat_SEAT_RED, Points: 60}, {Seat: gamev1.Seat_SEAT_BLUE},
				{Seat: gamev1.Seat_SEAT_YELLOW}, {Seat: gamev1.Seat_SEAT_GREEN}},
			Ranking:     []gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_GREEN, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_BLUE},
			Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING,
		}
		if diff := cmp.Diff(want, res, protocmp.Transform()); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		for _, ss := range got.GetMatch().GetSeats()[1:] {
			if ss.GetStatus() != gamev1.SeatStatus_SEAT_STATUS_ZOMBIE || ss.GetExitReason() != gamev1.ExitReason_EXIT_REASON_RESIGNED {
				t.Errorf("seat %v: status %v reason %v", ss.GetSeat(), ss.GetStatus(), ss.GetExitReason())
			}
		}
		mf := waitFinished(t, e, m.GetMatchId())
		if diff := cmp.Diff(want, mf.GetResult(), protocmp.Transform()); diff != "" {
			t.Errorf("MatchFinished result (-want +got):\n%s", diff)
		}
	})
}

func resultPoints(r *gamev1.Result) []int {
	out := make([]int, len(r.GetPoints()))
	for i, p := range r.GetPoints() {
		out[i] = int(p.GetPoints())
	}
	return out
}

// checkRanking checks that a ranking orders seats by result points, ties
// going to the seat later in turn order.
func checkRanking(t *testing.T, r *gamev1.Result) {
	t.Helper()
	pts := resultPoints(r)
	rk := r.GetRanking()
	if len(rk) != 4 {
		t.Fatalf("ranking %v", rk)
	}
	for i := 1; i < 4; i++ {
		a, b := int(rk[i-1])-1, int(rk[i])-1
		if pts[a] < pts[b] || pts[a] == pts[b] && a < b {
			t.Errorf("ranking %v out of order for points %v", rk, pts)
		}
	}
}

// waitFinished waits for the match's MatchFinished record on the global stream.
func waitFinished(t *testing.T, e *env, id string) *eventsv1.MatchFinished {
	t.Helper()
	rdb := e.rdb()
	fin := eventstream.MatchFinished()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		msgs, err := rdb.XRange(t.Context(), e.prefix+fin.Key(), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range msgs {
			mf, err := fin.Decode(msg.Values)
			if err != nil {
				t.Fatalf("stream entry %s breaks the contract: %v", msg.ID, err)
			}
			if mf.GetMatchId() == id {
				return mf
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no MatchFinished for %s", id)
	return nil
}

func TestCreateMatchIsIdempotent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		req := func(r *matchv1.CreateMatchRequest) { r.RequestId = "same-request" }
		first := e.create(inst.addr, req)
		red := e.client(inst.addr, e.token(players[0], auth.RolePlayer))
		if _, err := red.MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: first.GetMatchId(), Move: "h2-h3"}); err != nil {
			t.Fatal(err)
		}
		again := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) {
			req(r)
			r.TimeControl = &gamev1.TimeControl{Name: "1+0"} // ignored on a repeat
		})
		if again.GetMatchId() != first.GetMatchId() || again.GetPly() != 1 || again.GetTimeControl().GetName() != "10+5" {
			t.Fatalf("repeated CreateMatch = %s ply %d %s; want match %s", again.GetMatchId(), again.GetPly(), again.GetTimeControl().GetName(), first.GetMatchId())
		}
	})
}
