package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// TestHostileCredentials: every forged or broken credential is refused
// with UNAUTHENTICATED and its ErrorInfo on every RPC, through the real
// server and its interceptors, and the match is left unchanged. The
// forgeries claim Red, who is to move, and the operator role, so a token
// accepted by mistake would move, resign, premove or abort. Authentication
// runs before any storage, so one backend suffices.
func TestHostileCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t, standalone(t))
	inst := e.start(nil)
	m := e.create(inst.addr, nil)
	id := m.GetMatchId()
	conn, err := grpc.NewClient(inst.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := matchv1.NewMatchServiceClient(conn)
	rpcs := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"MakeMove", func(ctx context.Context) error {
			_, err := c.MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3"})
			return err
		}},
		{"Resign", func(ctx context.Context) error {
			_, err := c.Resign(ctx, &matchv1.ResignRequest{MatchId: id})
			return err
		}},
		{"ClaimWin", func(ctx context.Context) error {
			_, err := c.ClaimWin(ctx, &matchv1.ClaimWinRequest{MatchId: id})
			return err
		}},
		{"SetPremoves", func(ctx context.Context) error {
			_, err := c.SetPremoves(ctx, &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{"b7-c7"}, Seat: gamev1.Seat_SEAT_GREEN})
			return err
		}},
		{"ClearPremoves", func(ctx context.Context) error {
			_, err := c.ClearPremoves(ctx, &matchv1.ClearPremovesRequest{MatchId: id})
			return err
		}},
		{"GetMatch", func(ctx context.Context) error {
			_, err := c.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
			return err
		}},
		{"Ping", func(ctx context.Context) error {
			_, err := c.Ping(ctx, &matchv1.PingRequest{MatchId: id})
			return err
		}},
		{"ExportGame", func(ctx context.Context) error {
			_, err := c.ExportGame(ctx, &matchv1.ExportGameRequest{MatchId: id})
			return err
		}},
		{"CreateMatch", func(ctx context.Context) error {
			_, err := c.CreateMatch(ctx, &matchv1.CreateMatchRequest{RequestId: "hostile"})
			return err
		}},
		{"AbortMatch", func(ctx context.Context) error {
			_, err := c.AbortMatch(ctx, &matchv1.AbortMatchRequest{MatchId: id, Reason: "hostile"})
			return err
		}},
		{"WatchMatch", func(ctx context.Context) error {
			s, err := c.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}},
	}
	claimed := []auth.Identity{
		{Subject: players[0], Role: auth.RolePlayer, DisplayName: players[0]},
		{Subject: "op", Role: auth.RoleOperator},
	}
	before := e.client(inst.addr, e.token("spectator", auth.RolePlayer))
	want, err := before.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range claimed {
		for _, h := range authtest.HostileTokens(t, e.keys, who, time.Now()) {
			for _, rpc := range rpcs {
				t.Run(string(who.Role)+"/"+h.Name+"/"+rpc.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					defer cancel()
					if h.Authorization != "" {
						ctx = metadata.AppendToOutgoingContext(ctx, auth.MetadataKey, h.Authorization)
					}
					authtest.RequireRefused(t, rpc.call(ctx), h)
				})
			}
		}
	}
	got, err := before.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetMatch().GetVersion() != want.GetMatch().GetVersion() || got.GetMatch().GetFen4() != want.GetMatch().GetFen4() ||
		got.GetMatch().GetStatus() != matchv1.MatchStatus_MATCH_STATUS_ACTIVE {
		t.Fatalf("match changed: version %d -> %d, status %v", want.GetMatch().GetVersion(), got.GetMatch().GetVersion(), got.GetMatch().GetStatus())
	}

	// Valid tokens of the wrong role, or of a player holding no seat (or
	// not the seat named), are PERMISSION_DENIED and change nothing either
	// (the rest of the match's refusals are in TestBadInput).
	redC := e.client(inst.addr, e.token(players[0], auth.RolePlayer))
	stranger := e.client(inst.addr, e.token("stranger", auth.RolePlayer))
	svc := e.client(inst.addr, e.token("matchmaker", auth.RoleService))
	const notPlayer, forbidden = "fourkingdoms.match.v1/NOT_A_PLAYER", "fourkingdoms.match.v1/FORBIDDEN"
	denied := []struct {
		name   string
		call   func(ctx context.Context) error
		reason string
	}{
		{"stranger moves", func(ctx context.Context) error {
			_, err := stranger.MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3"})
			return err
		}, notPlayer},
		{"stranger resigns", func(ctx context.Context) error {
			_, err := stranger.Resign(ctx, &matchv1.ResignRequest{MatchId: id})
			return err
		}, notPlayer},
		{"stranger claims", func(ctx context.Context) error {
			_, err := stranger.ClaimWin(ctx, &matchv1.ClaimWinRequest{MatchId: id})
			return err
		}, notPlayer},
		{"stranger premoves", func(ctx context.Context) error {
			_, err := stranger.SetPremoves(ctx, &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{"m8-l8"}})
			return err
		}, notPlayer},
		{"red premoves for Green", func(ctx context.Context) error {
			_, err := redC.SetPremoves(ctx, &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{"b7-c7"}, Seat: gamev1.Seat_SEAT_GREEN})
			return err
		}, notPlayer},
		{"stranger pings", func(ctx context.Context) error {
			_, err := stranger.Ping(ctx, &matchv1.PingRequest{MatchId: id})
			return err
		}, notPlayer},
		{"service pings", func(ctx context.Context) error {
			_, err := svc.Ping(ctx, &matchv1.PingRequest{MatchId: id})
			return err
		}, notPlayer},
		{"player creates a match", func(ctx context.Context) error {
			_, err := redC.CreateMatch(ctx, &matchv1.CreateMatchRequest{RequestId: "p"})
			return err
		}, forbidden},
		{"player aborts", func(ctx context.Context) error {
			_, err := redC.AbortMatch(ctx, &matchv1.AbortMatchRequest{MatchId: id, Reason: "p"})
			return err
		}, forbidden},
		{"service aborts", func(ctx context.Context) error {
			_, err := svc.AbortMatch(ctx, &matchv1.AbortMatchRequest{MatchId: id, Reason: "s"})
			return err
		}, forbidden},
	}
	for _, tc := range denied {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(t.Context())
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("got %v, want PermissionDenied", err)
			}
			checkRefusal(t, err, tc.reason, "")
			after, err := before.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
			if err != nil {
				t.Fatal(err)
			}
			if after.GetMatch().GetVersion() != want.GetMatch().GetVersion() {
				t.Fatalf("match changed: version %d -> %d", want.GetMatch().GetVersion(), after.GetMatch().GetVersion())
			}
		})
	}
}
