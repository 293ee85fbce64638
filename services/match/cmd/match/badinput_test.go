package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
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
		premove := func(c matchv1.MatchServiceClient, r *matchv1.SetPremovesRequest) func(context.Context) error {
			return func(ctx context.Context) error { _, err := c.SetPremoves(ctx, r); return err }
		}
		ping := func(c matchv1.MatchServiceClient, r *matchv1.PingRequest) func(context.Context) error {
			return func(ctx context.Context) error { _, err := c.Ping(ctx, r); return err }
		}
		// A token of Red's, and the same with its time or signature
		// altered (a forgery claiming a shorter round trip).
		tok, err := red.Ping(t.Context(), &matchv1.PingRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		otherTok, err := red.Ping(t.Context(), &matchv1.PingRequest{MatchId: e.create(inst.addr, nil).GetMatchId()})
		if err != nil {
			t.Fatal(err)
		}
		altered := func(i int) []byte {
			b := slices.Clone(tok.GetToken())
			b[i] ^= 0x40
			return b
		}
		tests := []struct {
			name string
			call func(context.Context) error
			want codes.Code
			// The ErrorInfo (domain/reason) the refusal carries; "" for the
			// transport's own refusal of an oversized message.
			reason string
			field  string // the BadRequest field of INVALID_ARGUMENT
		}{
			{"unauthenticated", move(anon, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3"}), codes.Unauthenticated, "fourkingdoms.auth.v1/MISSING_TOKEN", ""},
			{"another player's piece", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "m8-l8"}), codes.FailedPrecondition, "fourkingdoms.match.v1/ILLEGAL_MOVE", ""},
			{"not your turn", move(blue, &matchv1.MakeMoveRequest{MatchId: id, Move: "m8-l8"}), codes.FailedPrecondition, "fourkingdoms.match.v1/NOT_YOUR_TURN", ""},
			{"illegal move", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h6"}), codes.FailedPrecondition, "fourkingdoms.match.v1/ILLEGAL_MOVE", ""},
			{"malformed square", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "z99-h4"}), codes.InvalidArgument, "fourkingdoms.match.v1/BAD_MOVE_TEXT", "move"},
			{"empty move", move(red, &matchv1.MakeMoveRequest{MatchId: id}), codes.InvalidArgument, "fourkingdoms.match.v1/INVALID_ARGUMENT", "move"},
			{"negative think time", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3", ClientThinkTime: durationpb.New(-time.Second)}),
				codes.InvalidArgument, "fourkingdoms.match.v1/INVALID_ARGUMENT", "client_think_time"},
			{"malformed think time", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3", ClientThinkTime: &durationpb.Duration{Seconds: 1, Nanos: -5}}),
				codes.InvalidArgument, "fourkingdoms.match.v1/INVALID_ARGUMENT", "client_think_time"},
			{"unknown match", move(red, &matchv1.MakeMoveRequest{MatchId: store.NewID(5), Move: "h2-h3"}), codes.NotFound, "fourkingdoms.match.v1/MATCH_NOT_FOUND", ""},
			{"malformed match id", move(red, &matchv1.MakeMoveRequest{MatchId: "../x", Move: "h2-h3"}), codes.NotFound, "fourkingdoms.match.v1/MATCH_NOT_FOUND", ""},
			{"stale expected ply", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3", ExpectedPly: proto.Uint32(4)}), codes.FailedPrecondition, "fourkingdoms.match.v1/PLY_MISMATCH", ""},
			{"finished match", move(red, &matchv1.MakeMoveRequest{MatchId: over.GetMatchId(), Move: "h2-h3"}), codes.FailedPrecondition, "fourkingdoms.match.v1/MATCH_OVER", ""},
			{"oversized move text", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: strings.Repeat("h", 10_000)}), codes.InvalidArgument, "fourkingdoms.match.v1/INVALID_ARGUMENT", "move"},
			{"oversized client move id", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3", ClientMoveId: strings.Repeat("x", 65)}), codes.InvalidArgument, "fourkingdoms.match.v1/INVALID_ARGUMENT", "client_move_id"},
			{"oversized message", move(red, &matchv1.MakeMoveRequest{MatchId: id, Move: strings.Repeat("h", 2<<20)}), codes.ResourceExhausted, "", ""},
			{"spectator moves", move(spec, &matchv1.MakeMoveRequest{MatchId: id, Move: "h2-h3"}), codes.PermissionDenied, "fourkingdoms.match.v1/NOT_A_PLAYER", ""},
			{"spectator resigns", func(ctx context.Context) error {
				_, err := spec.Resign(ctx, &matchv1.ResignRequest{MatchId: id})
				return err
			}, codes.PermissionDenied, "fourkingdoms.match.v1/NOT_A_PLAYER", ""},
			{"player creates a match", func(ctx context.Context) error {
				_, err := red.CreateMatch(ctx, &matchv1.CreateMatchRequest{RequestId: "x"})
				return err
			}, codes.PermissionDenied, "fourkingdoms.match.v1/FORBIDDEN", ""},
			{"create without players", func(ctx context.Context) error {
				_, err := svc.CreateMatch(ctx, &matchv1.CreateMatchRequest{RequestId: "bad-1"})
				return err
			}, codes.InvalidArgument, "fourkingdoms.match.v1/INVALID_ARGUMENT", "players"},
			{"seat given twice", func(ctx context.Context) error {
				req := &matchv1.CreateMatchRequest{RequestId: "bad-2"}
				for i, p := range players {
					req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(min(i, 2) + 1), Player: &gamev1.Player{PlayerId: p}})
				}
				_, err := svc.CreateMatch(ctx, req)
				return err
			}, codes.InvalidArgument, "fourkingdoms.match.v1/INVALID_ARGUMENT", "players[3].seat"},
			{"player aborts", func(ctx context.Context) error {
				_, err := red.AbortMatch(ctx, &matchv1.AbortMatchRequest{MatchId: id, Reason: "no"})
				return err
			}, codes.PermissionDenied, "fourkingdoms.match.v1/FORBIDDEN", ""},
			{"abort a finished match", func(ctx context.Context) error {
				_, err := op.AbortMatch(ctx, &matchv1.AbortMatchRequest{MatchId: over.GetMatchId(), Reason: "again"})
				return err
			}, codes.FailedPrecondition, "fourkingdoms.match.v1/MATCH_OVER", ""},
			{"four premoves", premove(blue, &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{"m8-l8", "m7-l7", "m6-l6", "m5-l5"}}),
				codes.InvalidArgument, "fourkingdoms.match.v1/INVALID_ARGUMENT", "moves"},
			{"unreadable premove", premove(blue, &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{"m8-l8", "m8-z99"}}),
				codes.InvalidArgument, "fourkingdoms.match.v1/BAD_MOVE_TEXT", "moves[1]"},
			{"empty premove", premove(blue, &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{""}}),
				codes.InvalidArgument, "fourkingdoms.match.v1/INVALID_ARGUMENT", "moves[0]"},
			{"premove on your turn", premove(red, &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{"h2-h3"}}),
				codes.FailedPrecondition, "fourkingdoms.match.v1/YOUR_TURN", ""},
			{"spectator premoves", premove(spec, &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{"m8-l8"}}),
				codes.PermissionDenied, "fourkingdoms.match.v1/NOT_A_PLAYER", ""},
			{"premove for another's seat", premove(blue, &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{"b7-c7"}, Seat: gamev1.Seat_SEAT_GREEN}),
				codes.PermissionDenied, "fourkingdoms.match.v1/NOT_A_PLAYER", ""},
			{"premove in a finished match", premove(blue, &matchv1.SetPremovesRequest{MatchId: over.GetMatchId(), Moves: []string{"m8-l8"}}),
				codes.FailedPrecondition, "fourkingdoms.match.v1/MATCH_OVER", ""},
			{"premove in an unknown match", premove(blue, &matchv1.SetPremovesRequest{MatchId: store.NewID(5), Moves: []string{"m8-l8"}}),
				codes.NotFound, "fourkingdoms.match.v1/MATCH_NOT_FOUND", ""},
			{"spectator clears premoves", func(ctx context.Context) error {
				_, err := spec.ClearPremoves(ctx, &matchv1.ClearPremovesRequest{MatchId: id})
				return err
			}, codes.PermissionDenied, "fourkingdoms.match.v1/NOT_A_PLAYER", ""},
			{"ping with a malformed token", ping(red, &matchv1.PingRequest{MatchId: id, Token: []byte("x")}),
				codes.InvalidArgument, "fourkingdoms.match.v1/BAD_PING_TOKEN", "token"},
			{"ping with a forged time", ping(red, &matchv1.PingRequest{MatchId: id, Token: altered(8)}),
				codes.InvalidArgument, "fourkingdoms.match.v1/BAD_PING_TOKEN", "token"},
			{"ping with a forged signature", ping(red, &matchv1.PingRequest{MatchId: id, Token: altered(len(tok.GetToken()) - 1)}),
				codes.InvalidArgument, "fourkingdoms.match.v1/BAD_PING_TOKEN", "token"},
			{"ping with another seat's token", ping(blue, &matchv1.PingRequest{MatchId: id, Token: tok.GetToken()}),
				codes.InvalidArgument, "fourkingdoms.match.v1/BAD_PING_TOKEN", "token"},
			{"ping with another match's token", ping(red, &matchv1.PingRequest{MatchId: id, Token: otherTok.GetToken()}),
				codes.InvalidArgument, "fourkingdoms.match.v1/BAD_PING_TOKEN", "token"},
			{"spectator pings", ping(spec, &matchv1.PingRequest{MatchId: id}), codes.PermissionDenied, "fourkingdoms.match.v1/NOT_A_PLAYER", ""},
			{"ping in a finished match", ping(red, &matchv1.PingRequest{MatchId: over.GetMatchId()}), codes.FailedPrecondition, "fourkingdoms.match.v1/MATCH_OVER", ""},
			{"ping in an unknown match", ping(red, &matchv1.PingRequest{MatchId: store.NewID(5)}), codes.NotFound, "fourkingdoms.match.v1/MATCH_NOT_FOUND", ""},
			{"ping in a malformed match id", ping(red, &matchv1.PingRequest{MatchId: "../x"}), codes.NotFound, "fourkingdoms.match.v1/MATCH_NOT_FOUND", ""},
			{"unauthenticated ping", ping(anon, &matchv1.PingRequest{MatchId: id}), codes.Unauthenticated, "fourkingdoms.auth.v1/MISSING_TOKEN", ""},
			{"clear premoves in a finished match", func(ctx context.Context) error {
				_, err := blue.ClearPremoves(ctx, &matchv1.ClearPremovesRequest{MatchId: over.GetMatchId()})
				return err
			}, codes.FailedPrecondition, "fourkingdoms.match.v1/MATCH_OVER", ""},
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
				checkRefusal(t, err, tc.reason, tc.field)
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
		// Red's player sees the game live (a spectator, a round behind).
		after, err := red.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		if after.GetMatch().GetPly() != 1 || after.GetMatch().GetVersion() != first.GetVersion() {
			t.Errorf("after a move and its retries: ply %d version %d, want 1 and %d", after.GetMatch().GetPly(), after.GetMatch().GetVersion(), first.GetVersion())
		}
	})
}

// checkRefusal checks the details of a refusal: an ErrorInfo of reason
// ("domain/REASON"; "" for none) and, for INVALID_ARGUMENT, a BadRequest
// naming field.
func checkRefusal(t *testing.T, err error, reason, field string) {
	t.Helper()
	var info *errdetails.ErrorInfo
	var br *errdetails.BadRequest
	for _, d := range status.Convert(err).Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *errdetails.BadRequest:
			br = d
		}
	}
	if got := info.GetDomain() + "/" + info.GetReason(); (info != nil || reason != "") && got != reason {
		t.Errorf("%v: ErrorInfo %s, want %s", err, got, reason)
	}
	if status.Code(err) != codes.InvalidArgument {
		return
	}
	if v := br.GetFieldViolations(); len(v) != 1 || v[0].GetField() != field || v[0].GetDescription() == "" {
		t.Errorf("%v: BadRequest %v, want one violation of %q", err, br, field)
	}
}
