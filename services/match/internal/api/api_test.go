package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

func TestStatus(t *testing.T) {
	t.Parallel()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	wrap := func(err error) error { return fmt.Errorf("context: %w", err) }
	tests := []struct {
		err    error
		want   codes.Code
		reason string // the ErrorInfo reason; "" where none is sent
		field  string // the BadRequest field of INVALID_ARGUMENT
	}{
		{wrap(match.ErrInvalid), codes.InvalidArgument, "INVALID_ARGUMENT", ""},
		{wrap(rpcerr.Field(match.ErrInvalid, "players[2].seat", "not a seat")), codes.InvalidArgument, "INVALID_ARGUMENT", "players[2].seat"},
		{wrap(rules.ErrBadMoveText), codes.InvalidArgument, "BAD_MOVE_TEXT", "move"},
		{match.ErrMoveIDReused, codes.InvalidArgument, "MOVE_ID_REUSED", "client_move_id"},
		{match.ErrNotFound, codes.NotFound, "MATCH_NOT_FOUND", ""},
		{wrap(store.ErrNotFound), codes.NotFound, "MATCH_NOT_FOUND", ""},
		{match.ErrNotPlayer, codes.PermissionDenied, "NOT_A_PLAYER", ""},
		{wrap(match.ErrForbidden), codes.PermissionDenied, "FORBIDDEN", ""},
		{wrap(rules.ErrNotYourTurn), codes.FailedPrecondition, "NOT_YOUR_TURN", ""},
		{wrap(rules.ErrIllegalMove), codes.FailedPrecondition, "ILLEGAL_MOVE", ""},
		{rules.ErrSeatNotLive, codes.FailedPrecondition, "SEAT_NOT_LIVE", ""},
		{rules.ErrGameOver, codes.FailedPrecondition, "MATCH_OVER", ""},
		{match.ErrFinished, codes.FailedPrecondition, "MATCH_OVER", ""},
		{match.ErrTimeRanOut, codes.FailedPrecondition, "TIME_RAN_OUT", ""},
		{&match.PlyMismatchError{Expected: 3, Current: 5}, codes.FailedPrecondition, "PLY_MISMATCH", ""},
		{match.ErrConflict, codes.Aborted, "CONFLICT", ""},
		{match.ErrSlowConsumer, codes.ResourceExhausted, "SLOW_CONSUMER", ""},
		{match.ErrFutureVersion, codes.OutOfRange, "FUTURE_VERSION", ""},
		{wrap(store.ErrNotReplicated), codes.Unavailable, "STORE_UNAVAILABLE", ""},
		{wrap(fanout.ErrClosed), codes.Unavailable, "STORE_UNAVAILABLE", ""},
		{wrap(redis.ErrClosed), codes.Unavailable, "STORE_UNAVAILABLE", ""},
		{wrap(&net.OpError{Op: "dial", Err: errors.New("refused")}), codes.Unavailable, "STORE_UNAVAILABLE", ""},
		{wrap(redisReply("READONLY You can't write against a read only replica.")), codes.Unavailable, "STORE_UNAVAILABLE", ""},
		{wrap(redisReply("ERR user_script:1: attempt to compare nil with number script: 1f2e, on @user_script:1.")), codes.Internal, "INTERNAL", ""},
		{wrap(redisReply("WRONGTYPE Operation against a key holding the wrong kind of value")), codes.Internal, "INTERNAL", ""},
		{wrap(redis.ErrNoScript), codes.Internal, "INTERNAL", ""},
		{context.Canceled, codes.Canceled, "", ""},
		{wrap(context.DeadlineExceeded), codes.DeadlineExceeded, "", ""},
		{status.Error(codes.Unauthenticated, "x"), codes.Unauthenticated, "", ""},
		{errors.New("bug"), codes.Internal, "INTERNAL", ""},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			t.Parallel()
			got := s.Status(t.Context(), tc.err)
			if status.Code(got) != tc.want {
				t.Fatalf("Status(%v) = %v, want %v", tc.err, got, tc.want)
			}
			info := rpcerr.Info(got)
			if info.GetReason() != tc.reason || (tc.reason != "" && info.GetDomain() != "fourkingdoms.match.v1") {
				t.Fatalf("Status(%v) ErrorInfo %v, want reason %q in fourkingdoms.match.v1", tc.err, info, tc.reason)
			}
			checkBadRequest(t, got, tc.field)
			if tc.want == codes.Internal && status.Convert(got).Message() != "internal error" {
				t.Errorf("internal error leaks details: %v", got)
			}
		})
	}
}

// TestStatusTable checks every entry of the refusals table: its ErrorInfo
// (domain and reason) and, for INVALID_ARGUMENT, a BadRequest.
func TestStatusTable(t *testing.T) {
	t.Parallel()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, r := range refusals {
		t.Run(r.reason+"/"+r.err.Error(), func(t *testing.T) {
			t.Parallel()
			got := s.Status(t.Context(), fmt.Errorf("context: %w", r.err))
			if status.Code(got) != r.code {
				t.Errorf("code %v, want %v", status.Code(got), r.code)
			}
			if info := rpcerr.Info(got); info.GetDomain() != "fourkingdoms.match.v1" || info.GetReason() != r.reason {
				t.Errorf("ErrorInfo %v, want fourkingdoms.match.v1 %s", info, r.reason)
			}
			checkBadRequest(t, got, r.field)
		})
	}
}

// checkBadRequest checks that an INVALID_ARGUMENT status carries a
// BadRequest with one violation of field, and that other codes carry none.
func checkBadRequest(t *testing.T, err error, field string) {
	t.Helper()
	br := rpcerr.BadRequest(err)
	if status.Code(err) != codes.InvalidArgument {
		if br != nil {
			t.Errorf("%v carries a BadRequest %v", err, br)
		}
		return
	}
	if v := br.GetFieldViolations(); len(v) != 1 || v[0].GetField() != field || v[0].GetDescription() == "" {
		t.Errorf("%v BadRequest %v, want one violation of field %q", err, br, field)
	}
}

// redisReply is an error reply of Redis, as go-redis returns it (the real
// ones are classified in pkg/redisconn's tests).
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}
