package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisbatch"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// claimFuzzArmies: a king and a rook each, nobody in check (rK h1, rR d1,
// bK a7, bR a4, yK g14, yR k14, gK n8, gR n11); the points go in "%d,0,0,%d".
const claimFuzzFEN = "R-0,0,0,0-0,0,0,0-0,0,0,0-%d,0,0,%d-0-6,yK,3,yR,3/14/14/13,gR/14/14/13,gK/bK,13/14/14/bR,13/14/14/3,rR,3,rK,6"

// FuzzClaimWin drives the ClaimWin handler with any caller, match id and
// match state reachable through the API: a match created with fuzzed Red
// and Green points, rule set and options, after fuzzed resignations. The
// handler must never panic, must answer exactly as the rules engine
// (mirrored in the test) decides, with a refusal that carries ErrorInfo and
// leaves the match unchanged, and a claim that ends the match as a claimed
// win.
//
//	go test ./internal/api -run '^$' -fuzz FuzzClaimWin -fuzztime 60s
func FuzzClaimWin(f *testing.F) {
	rdb, _ := redistest.Standalone(f)
	commits := redisbatch.New(rdb, redisbatch.DefaultConfig())
	f.Cleanup(commits.Close)
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(f)
	st, err := store.New(rdb, cfg, commits)
	if err != nil {
		f.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := match.New(st, nil, match.DefaultConfig(), log, time.Now)
	if err != nil {
		f.Fatal(err)
	}
	srv, err := New(svc, log, nil, 0)
	if err != nil {
		f.Fatal(err)
	}
	var seq atomic.Int64

	// who: 0 no identity, 1-4 the player of Red..Green, 5 a stranger, 6 a
	// service. opts: bits 0-1 the rule set and claim option (chesscom-ffa,
	// fourkingdoms, fourkingdoms with claims, chesscom-ffa without), bit 2
	// the auto-claim. resign: seats 0-3 resign in order, bit i for seat i.
	f.Add(uint8(50), uint8(29), uint8(0), uint8(0b0110), uint8(1), false, "")  // Red's claim, allowed
	f.Add(uint8(49), uint8(29), uint8(0), uint8(0b0110), uint8(1), false, "")  // a lead of 20
	f.Add(uint8(50), uint8(29), uint8(0), uint8(0b0110), uint8(4), false, "")  // the trailing seat
	f.Add(uint8(50), uint8(29), uint8(1), uint8(0b0110), uint8(1), false, "")  // fourkingdoms: no claims
	f.Add(uint8(50), uint8(29), uint8(2), uint8(0b0110), uint8(1), false, "")  // fourkingdoms with claims
	f.Add(uint8(90), uint8(0), uint8(4), uint8(0b0110), uint8(1), false, "")   // auto-claimed already
	f.Add(uint8(50), uint8(29), uint8(0), uint8(0b0000), uint8(1), false, "")  // four live players
	f.Add(uint8(50), uint8(29), uint8(0), uint8(0b0110), uint8(2), false, "")  // a resigned seat
	f.Add(uint8(50), uint8(29), uint8(0), uint8(0b0110), uint8(5), false, "")  // not a player
	f.Add(uint8(50), uint8(29), uint8(0), uint8(0b0110), uint8(0), false, "")  // no identity
	f.Add(uint8(50), uint8(29), uint8(0), uint8(0b0110), uint8(1), true, "")   // empty id
	f.Add(uint8(50), uint8(29), uint8(0), uint8(0b0110), uint8(1), true, "x{") // unknown id
	f.Fuzz(func(t *testing.T, red, green, opts, resign, who uint8, ownID bool, id string) {
		rs := rules.ChesscomFFA()
		req := &matchv1.CreateMatchRequest{RequestId: fmt.Sprintf("fuzz-%d", seq.Add(1)), TimeControl: &gamev1.TimeControl{Name: "10+5"}}
		switch opts & 3 {
		case 1:
			rs = rules.FourKingdoms()
		case 2:
			rs = rules.FourKingdoms()
			rs.ClaimWin = true
		case 3:
			rs.ClaimWin = false
		}
		req.RuleSet, req.ClaimWin = rs.Name, &rs.ClaimWin
		rs.AutoClaimWin = opts&4 != 0
		req.AutoClaimWin = &rs.AutoClaimWin
		start := fmt.Sprintf(claimFuzzFEN, red, green)
		req.StartFen4 = &start
		// The mirror draws the same zombie moves as the server.
		req.Seed = new(uint64)
		mirror, err := rules.NewGame(rs, 0, start)
		if err != nil {
			t.Fatal(err)
		}
		if mirror.Over() {
			return // CreateMatch refuses a finished position
		}
		var players [rules.NumSeats]context.Context
		for s := range rules.NumSeats {
			p := fmt.Sprintf("%s-%d", req.GetRequestId(), s)
			req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: p}})
			players[s] = auth.NewContext(t.Context(), auth.Identity{Subject: p, Role: auth.RolePlayer})
		}
		created, err := srv.CreateMatch(auth.NewContext(t.Context(), auth.Identity{Subject: "matchmaker", Role: auth.RoleService}), req)
		if err != nil {
			t.Fatalf("CreateMatch: %v", err)
		}
		matchID := created.GetMatch().GetMatchId()
		for s := range rules.Seat(rules.NumSeats) {
			if resign&(1<<s) == 0 || mirror.Over() {
				continue
			}
			if _, err := mirror.Resign(s); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Resign(players[s], &matchv1.ResignRequest{MatchId: matchID}); err != nil {
				t.Fatalf("%s resigns: %v", s, err)
			}
		}
		ctx := t.Context()
		switch who % 7 {
		case 1, 2, 3, 4:
			ctx = players[who%7-1]
		case 5:
			ctx = auth.NewContext(ctx, auth.Identity{Subject: "stranger", Role: auth.RolePlayer})
		case 6:
			ctx = auth.NewContext(ctx, auth.Identity{Subject: "matchmaker", Role: auth.RoleService})
		}
		if ownID {
			matchID = id
		}
		before, err := srv.GetMatch(players[0], &matchv1.GetMatchRequest{MatchId: created.GetMatch().GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}

		resp, err := srv.ClaimWin(ctx, &matchv1.ClaimWinRequest{MatchId: matchID})

		seat := rules.Seat(who%7) - 1
		var wantCode codes.Code
		var wantReason string
		switch {
		case who%7 == 0:
			wantCode = codes.Unauthenticated
		case ownID && matchID != created.GetMatch().GetMatchId():
			wantCode, wantReason = codes.NotFound, "MATCH_NOT_FOUND"
		case who%7 > 4:
			wantCode, wantReason = codes.PermissionDenied, "NOT_A_PLAYER"
		case mirror.Over():
			wantCode, wantReason = codes.FailedPrecondition, "MATCH_OVER"
		case mirror.CanClaimWin(seat) != nil:
			wantCode, wantReason = codes.FailedPrecondition, "CLAIM_NOT_ALLOWED"
		default:
			wantCode = codes.OK
		}
		if status.Code(err) != wantCode {
			t.Fatalf("ClaimWin (caller %d, own id %v %q, Red %d Green %d, opts %b, resigned %b) = %v, want %v",
				who%7, ownID, id, red, green, opts, resign, err, wantCode)
		}
		if wantReason != "" {
			if info := rpcerr.Info(err); info.GetReason() != wantReason || info.GetDomain() != "fourkingdoms.match.v1" {
				t.Fatalf("ClaimWin = %v: ErrorInfo %v, want %s", err, info, wantReason)
			}
		}
		after, gerr := srv.GetMatch(players[0], &matchv1.GetMatchRequest{MatchId: created.GetMatch().GetMatchId()})
		if gerr != nil {
			t.Fatal(gerr)
		}
		if err != nil {
			if after.GetMatch().GetVersion() != before.GetMatch().GetVersion() {
				t.Fatalf("refused ClaimWin (%v) changed the match: version %d -> %d", err, before.GetMatch().GetVersion(), after.GetMatch().GetVersion())
			}
			if strings.Contains(status.Convert(err).Message(), "panic") {
				t.Fatalf("ClaimWin = %v", err)
			}
			return
		}
		if _, err := mirror.ClaimWin(seat); err != nil {
			t.Fatal(err)
		}
		evs := resp.GetEvents()
		if len(evs) != 2 || evs[0].GetWinClaimed().GetSeat() != gamev1.Seat(seat+1) || evs[0].GetWinClaimed().GetAutomatic() ||
			evs[1].GetGameOver().GetResult().GetTermination() != gamev1.Termination_TERMINATION_CLAIMED_WIN ||
			resp.GetResult().GetTermination() != gamev1.Termination_TERMINATION_CLAIMED_WIN {
			t.Fatalf("ClaimWin by %s: events %v, result %v; want WinClaimed, GameOver, claimed win", seat, evs, resp.GetResult())
		}
		points := mirror.Result().Points
		for _, sp := range resp.GetResult().GetPoints() {
			if s := int(sp.GetSeat()) - 1; s < 0 || s >= rules.NumSeats || int(sp.GetPoints()) != points[s] {
				t.Fatalf("result points %v, the engine says %v", resp.GetResult().GetPoints(), points)
			}
		}
		if after.GetMatch().GetStatus() != matchv1.MatchStatus_MATCH_STATUS_FINISHED || after.GetMatch().GetVersion() != resp.GetVersion() {
			t.Fatalf("after the claim: %v version %d, want FINISHED at %d", after.GetMatch().GetStatus(), after.GetMatch().GetVersion(), resp.GetVersion())
		}
	})
}
