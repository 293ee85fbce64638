package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// claimArmies: a king and a rook each, nobody in check; with the points
// Red 50, Green 29 of claimStart, Red leads Green by 21.
const claimArmies = "rK:h1 rR:d1 bK:a7 bR:a4 yK:g14 yR:k14 gK:n8 gR:n11"

func claimStart(t *testing.T) string {
	return strings.Replace(fen4(t, "R", claimArmies), "-0,0,0,0-0-", "-50,0,0,29-0-", 1)
}

// TestClaimWin: docs/rules.md section 8.3 through the RPC. Under
// chesscom-ffa only the leader of the last two live players, ahead by more
// than 20, may claim; the match then ends with the claimer paid 20 for
// each other king, and exactly one MatchFinished. Under fourkingdoms
// (claims off) the same claim is refused.
func TestClaimWin(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		ctx := t.Context()
		var c [4]matchv1.MatchServiceClient
		for s := range c {
			c[s] = e.client(inst.addr, e.token(players[s], auth.RolePlayer))
		}
		refused := func(err error, reason string) {
			t.Helper()
			if status.Code(err) != codes.FailedPrecondition {
				t.Fatalf("ClaimWin = %v, want FAILED_PRECONDITION %s", err, reason)
			}
			checkRefusal(t, err, "fourkingdoms.match.v1/"+reason, "")
		}
		leaveBlueYellow := func(id string) {
			t.Helper()
			for _, s := range []int{1, 2} {
				if _, err := c[s].Resign(ctx, &matchv1.ResignRequest{MatchId: id}); err != nil {
					t.Fatalf("seat %d resigns: %v", s, err)
				}
			}
		}

		start := claimStart(t)
		off := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) { r.RuleSet = "fourkingdoms"; r.StartFen4 = &start })
		leaveBlueYellow(off.GetMatchId())
		_, err := c[0].ClaimWin(ctx, &matchv1.ClaimWinRequest{MatchId: off.GetMatchId()})
		refused(err, "CLAIM_NOT_ALLOWED")

		m := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) { r.RuleSet = "chesscom-ffa"; r.StartFen4 = &start })
		id := m.GetMatchId()
		_, err = c[0].ClaimWin(ctx, &matchv1.ClaimWinRequest{MatchId: id})
		refused(err, "CLAIM_NOT_ALLOWED") // four live players
		leaveBlueYellow(id)
		_, err = c[3].ClaimWin(ctx, &matchv1.ClaimWinRequest{MatchId: id})
		refused(err, "CLAIM_NOT_ALLOWED") // Green trails

		resp, err := c[0].ClaimWin(ctx, &matchv1.ClaimWinRequest{MatchId: id})
		if err != nil {
			t.Fatalf("Red claims: %v", err)
		}
		want := &gamev1.Result{
			// Red: 50 + 20 for each of Blue's, Yellow's (zombie) and Green's kings.
			Points: []*gamev1.SeatPoints{{Seat: gamev1.Seat_SEAT_RED, Points: 110}, {Seat: gamev1.Seat_SEAT_BLUE},
				{Seat: gamev1.Seat_SEAT_YELLOW}, {Seat: gamev1.Seat_SEAT_GREEN, Points: 29}},
			Ranking:     []gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_GREEN, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_BLUE},
			Termination: gamev1.Termination_TERMINATION_CLAIMED_WIN,
		}
		evs := resp.GetEvents()
		if len(evs) != 2 || evs[0].GetWinClaimed().GetSeat() != gamev1.Seat_SEAT_RED || evs[0].GetWinClaimed().GetAutomatic() ||
			evs[1].GetGameOver() == nil || resp.GetVersion() != evs[1].GetVersion() {
			t.Fatalf("ClaimWin events = %v (version %d), want WinClaimed by Red, then GameOver", evs, resp.GetVersion())
		}
		for name, got := range map[string]*gamev1.Result{"response": resp.GetResult(), "GameOver": evs[1].GetGameOver().GetResult()} {
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("%s result (-want +got):\n%s", name, diff)
			}
		}
		_, err = c[0].ClaimWin(ctx, &matchv1.ClaimWinRequest{MatchId: id})
		refused(err, "MATCH_OVER")

		checkFinishedOnce(t, e, id, want)
	})
}

// checkFinishedOnce checks that the match has exactly one MatchFinished
// record on the global stream, with the result want.
func checkFinishedOnce(t *testing.T, e *env, id string, want *gamev1.Result) {
	t.Helper()
	mf := waitFinished(t, e, id)
	if diff := cmp.Diff(want, mf.GetResult(), protocmp.Transform()); diff != "" {
		t.Errorf("MatchFinished result (-want +got):\n%s", diff)
	}
	// The relay is asynchronous: give a duplicate time to show.
	time.Sleep(300 * time.Millisecond)
	fin := eventstream.MatchFinished()
	msgs, err := e.rdb().XRange(t.Context(), e.prefix+fin.Key(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, msg := range msgs {
		if f, err := fin.Decode(msg.Values); err == nil && f.GetMatchId() == id {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d MatchFinished records for the claimed match, want 1", n)
	}
}

// autoClaimArmies: Red's rook on d11 can take Green's rook on n11 along
// rank 11 without checking Green's king; Blue and Yellow have bare kings
// far from everything, so their zombie moves change nothing; nobody is in
// check.
const autoClaimArmies = "rK:h1 rR:d11 bK:a7 yK:g14 gK:m5 gR:n11"

// TestAutoClaimWin: docs/rules.md section 8.3's auto-claim through the
// service, on fourkingdoms with the option set at creation. Blue and Yellow
// resign (zombies): Green, at 0, can still reach 20 + 5 (Red's king and
// rook) + 20 + 20 (the zombie kings) = 65, more than Red's 61, so the game
// goes on. Red's Rd11xn11 makes it 66 against 65: with the option on the
// server claims for Red in the same step (WinClaimed automatic, the match
// finished with TERMINATION_CLAIMED_WIN and one MatchFinished); with it
// off the match goes on, and the view offers Red (only Red) the claim.
func TestAutoClaimWin(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		ctx := t.Context()
		c := e.seatClients(inst.addr)
		start := strings.Replace(fen4(t, "R", autoClaimArmies), "-0,0,0,0-0-", "-61,0,0,0-0-", 1)
		for _, auto := range []bool{true, false} {
			m := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) {
				r.RuleSet, r.StartFen4, r.AutoClaimWin = "fourkingdoms", &start, &auto
				r.ClaimWin = &[]bool{true}[0]
				r.Seed = &[]uint64{1}[0]
			})
			id := m.GetMatchId()
			for _, s := range []int{1, 2} {
				resp, err := c[s].Resign(ctx, &matchv1.ResignRequest{MatchId: id})
				if err != nil {
					t.Fatalf("auto %v: seat %d resigns: %v", auto, s, err)
				}
				for _, ev := range resp.GetEvents() {
					if ev.GetGameOver() != nil || ev.GetWinClaimed() != nil {
						t.Fatalf("auto %v: seat %d's resignation ended the match (%v); want it to go on: 61 < 65", auto, s, ev)
					}
				}
			}
			for s, want := range []bool{true, false, false, false} {
				v, err := c[s].GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
				if err != nil {
					t.Fatal(err)
				}
				if got := v.GetMatch().GetCanClaimWin(); got != want {
					t.Errorf("auto %v: seat %d's view: can_claim_win %v, want %v (Red leads Green 61 to 0)", auto, s, got, want)
				}
			}
			resp, err := c[0].MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: id, Move: "Rd11xn11"})
			if err != nil {
				t.Fatalf("auto %v: Red's Rd11xn11: %v", auto, err)
			}
			var claims []*eventsv1.WinClaimed
			for _, ev := range resp.GetEvents() {
				if wc := ev.GetWinClaimed(); wc != nil {
					claims = append(claims, wc)
				}
			}
			if !auto {
				if resp.GetGameOver() || len(claims) != 0 {
					t.Fatalf("auto-claim off: game over %v (%v), claims %v; want the match to go on", resp.GetGameOver(), resp.GetResult(), claims)
				}
				continue
			}
			if !resp.GetGameOver() || len(claims) != 1 || claims[0].GetSeat() != gamev1.Seat_SEAT_RED || !claims[0].GetAutomatic() {
				t.Fatalf("auto-claim on: game over %v, claims %v; want the server's claim for Red", resp.GetGameOver(), claims)
			}
			want := &gamev1.Result{
				// Red: 61 + 5 for the rook + 20 for each of Blue's and
				// Yellow's (zombie) kings and Green's king.
				Points: []*gamev1.SeatPoints{{Seat: gamev1.Seat_SEAT_RED, Points: 126}, {Seat: gamev1.Seat_SEAT_BLUE},
					{Seat: gamev1.Seat_SEAT_YELLOW}, {Seat: gamev1.Seat_SEAT_GREEN}},
				Ranking:     []gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_GREEN, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_BLUE},
				Termination: gamev1.Termination_TERMINATION_CLAIMED_WIN,
			}
			if diff := cmp.Diff(want, resp.GetResult(), protocmp.Transform()); diff != "" {
				t.Errorf("MakeMove result (-want +got):\n%s", diff)
			}
			v, err := c[3].GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
			if err != nil || v.GetMatch().GetStatus() != matchv1.MatchStatus_MATCH_STATUS_FINISHED {
				t.Fatalf("GetMatch after the auto-claim: %v, status %v", err, v.GetMatch().GetStatus())
			}
			checkFinishedOnce(t, e, id, want)
		}
	})
}
