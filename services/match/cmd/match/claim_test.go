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

		mf := waitFinished(t, e, id)
		if diff := cmp.Diff(want, mf.GetResult(), protocmp.Transform()); diff != "" {
			t.Errorf("MatchFinished result (-want +got):\n%s", diff)
		}
		// The relay is asynchronous: give a duplicate time to show.
		time.Sleep(300 * time.Millisecond)
		fin := eventstream.MatchFinished()
		msgs, err := e.rdb().XRange(ctx, e.prefix+fin.Key(), "-", "+").Result()
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
	})
}
