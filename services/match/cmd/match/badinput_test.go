package main

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestBadInput: every bad request gets its status code and leaves the
// match unchanged.
func TestBadInput(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		active := e.create(inst.addr, nil)
		over := e.create(inst.addr, nil)
		op := e.client(inst.addr, e.token("op", auth.RoleOperator))
		if _, err := op.AbortMatch(t.Context(), &matchv1.AbortMatchRequest{MatchId: over.GetMatchId(), Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		anon := e.client(inst.addr, "")
		red := e.client(inst.addr, e.token(players[0], auth.RolePlayer))
		blue := e.client(inst.addr, e.token(players[1], auth.RolePlayer))
		spec := e.client(inst.addr, e.token("spectator", auth.RolePlayer))
		svc := e.client(inst.addr, e.token("matchmaker", auth.RoleService))
		id := active.GetMatchId()
		move := func(c matchv1.MatchServiceClient, r *matchv1.MakeMoveRequest) func(context.Context) error {
			return func(ctx context.Context) error { _, err := c.MakeMove(ctx, r); return err }
		}
		tests := []struct {
			name string
			call func(context.Context) error
			want codes.Code
		}{
			{"unauthenticated", move(anon, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3"}), codes.Unauthenticated},
			{"another player's piece", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "m8-l8"}), codes.FailedPrecondition},
			{"not your turn", move(blue, &matchv1.MakeMoveRequest{MatchId: id, Move: "m8-l8"}), codes.FailedPrecondition},
			{"illegal move", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h6"}), codes.FailedPrecondition},
			{"malformed square", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "z99-h4"}), codes.InvalidArgument},
			{"empty move", move(red, &matchv1.MakeMoveRequest{MatchId: id}), codes.InvalidArgument},
			{"unknown match", move(red, &matchv1.MakeMoveRequest{MatchId: store.NewID(5), Move: "h2-h3"}), codes.NotFound},
			{"malformed match id", move(red, &matchv1.MakeMoveRequest{MatchId: "../x", Move: "h2-h3"}), codes.NotFound},
			{"stale expected ply", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3", ExpectedPly: proto.Uint32(4)}), codes.FailedPrecondition},
			{"finished match", move(red, &matchv1.MakeMoveRequest{MatchId: over.GetMatchId(), Move: "h2-h3"}), codes.FailedPrecondition},
			{"oversized move text", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: strings.Repeat("h", 10_000)}), codes.InvalidArgument},
			{"oversized client move id", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3", ClientMoveId: strings.Repeat("x", 65)}), codes.InvalidArgument},
			{"oversized message", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: strings.Repeat("h", 2<<20)}), codes.ResourceExhausted},
			{"spectator moves", move(spec, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3"}), codes.PermissionDenied},
			{"spectator resigns", func(ctx context.Context) error {
				_, err := spec.Resign(ctx, &matchv1.ResignRequest{MatchId: id})
				return err
			}, codes.PermissionDenied},
			{"player creates a match", func(ctx context.Context) error {
				_, err := red.CreateMatch(ctx, &matchv1.CreateMatchRequest{RequestId: "x"})
				return err
			}, codes.PermissionDenied},
			{"create without players", func(ctx context.Context) error {
				_, err := svc.CreateMatch(ctx, &matchv1.CreateMatchRequest{RequestId: "bad-1"})
				return err
			}, codes.InvalidArgument},
			{"player aborts", func(ctx context.Context) error {
				_, err := red.AbortMatch(ctx, &matchv1.AbortMatchRequest{MatchId: id, Reason: "no"})
				return err
			}, codes.PermissionDenied},
			{"abort a finished match", func(ctx context.Context) error {
				_, err := op.AbortMatch(ctx, &matchv1.AbortMatchRequest{MatchId: over.GetMatchId(), Reason: "again"})
				return err
			}, codes.FailedPrecondition},
		}
		before, err := spec.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.call(t.Context())
				if status.Code(err) != tc.want {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				after, err := spec.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
				if err != nil {
					t.Fatal(err)
				}
				if after.GetMatch().GetVersion() != before.GetMatch().GetVersion() || after.GetMatch().GetFen4() != before.GetMatch().GetFen4() {
					t.Fatalf("match changed: version %d -> %d", before.GetMatch().GetVersion(), after.GetMatch().GetVersion())
				}
			})
		}

		// The ply mismatch names the current ply.
		_, err = red.MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3", ExpectedPly: proto.Uint32(4)})
		var info *errdetails.ErrorInfo
		for _, d := range status.Convert(err).Details() {
			if ei, ok := d.(*errdetails.ErrorInfo); ok {
				info = ei
			}
		}
		if info.GetReason() != "PLY_MISMATCH" || info.GetMetadata()["current_ply"] != "0" {
			t.Errorf("ply mismatch details = %v", info)
		}

		// A retried move id returns the first answer and applies nothing twice;
		// the same id with another move is refused.
		first, err := red.MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3", ClientMoveId: "once"})
		if err != nil {
			t.Fatal(err)
		}
		again, err := red.MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3", ClientMoveId: "once", ExpectedPly: proto.Uint32(0)})
		if err != nil || !proto.Equal(first, again) {
			t.Fatalf("retry = %v, %v; want the first answer %v", again, err, first)
		}
		if _, err := red.MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: "g2-g3", ClientMoveId: "once"}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("reused move id with another move: %v, want InvalidArgument", err)
		}
		after, err := spec.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		if after.GetMatch().GetPly() != 1 || after.GetMatch().GetVersion() != first.GetVersion() {
			t.Errorf("after a move and its retries: ply %d version %d, want 1 and %d", after.GetMatch().GetPly(), after.GetMatch().GetVersion(), first.GetVersion())
		}
	})
}
