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
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
		reason string // the ErrorInfo reason; "" where none is sent yet
	}{
		{wrap(match.ErrInvalid), codes.InvalidArgument, "INVALID_ARGUMENT"},
		{wrap(rules.ErrBadMoveText), codes.InvalidArgument, "BAD_MOVE_TEXT"},
		{match.ErrMoveIDReused, codes.InvalidArgument, "MOVE_ID_REUSED"},
		{match.ErrNotFound, codes.NotFound, "MATCH_NOT_FOUND"},
		{wrap(store.ErrNotFound), codes.NotFound, "MATCH_NOT_FOUND"},
		{match.ErrNotPlayer, codes.PermissionDenied, "NOT_A_PLAYER"},
		{wrap(match.ErrForbidden), codes.PermissionDenied, "FORBIDDEN"},
		{wrap(rules.ErrNotYourTurn), codes.FailedPrecondition, "NOT_YOUR_TURN"},
		{wrap(rules.ErrIllegalMove), codes.FailedPrecondition, "ILLEGAL_MOVE"},
		{rules.ErrSeatNotLive, codes.FailedPrecondition, "SEAT_NOT_LIVE"},
		{rules.ErrGameOver, codes.FailedPrecondition, "MATCH_OVER"},
		{match.ErrFinished, codes.FailedPrecondition, "MATCH_OVER"},
		{match.ErrTimeRanOut, codes.FailedPrecondition, "TIME_RAN_OUT"},
		{&match.PlyMismatchError{Expected: 3, Current: 5}, codes.FailedPrecondition, "PLY_MISMATCH"},
		{match.ErrConflict, codes.Aborted, "CONFLICT"},
		{match.ErrSlowConsumer, codes.ResourceExhausted, "SLOW_CONSUMER"},
		{match.ErrFutureVersion, codes.OutOfRange, "FUTURE_VERSION"},
		{wrap(store.ErrNotReplicated), codes.Unavailable, "STORE_UNAVAILABLE"},
		{wrap(fanout.ErrClosed), codes.Unavailable, "STORE_UNAVAILABLE"},
		{wrap(redis.ErrClosed), codes.Unavailable, ""},
		{wrap(&net.OpError{Op: "dial", Err: errors.New("refused")}), codes.Unavailable, ""},
		{wrap(redisReply("READONLY You can't write against a read only replica.")), codes.Unavailable, ""},
		{wrap(redisReply("ERR user_script:1: attempt to compare nil with number script: 1f2e, on @user_script:1.")), codes.Internal, ""},
		{wrap(redisReply("WRONGTYPE Operation against a key holding the wrong kind of value")), codes.Internal, ""},
		{wrap(redis.ErrNoScript), codes.Internal, ""},
		{context.Canceled, codes.Canceled, ""},
		{wrap(context.DeadlineExceeded), codes.DeadlineExceeded, ""},
		{status.Error(codes.Unauthenticated, "x"), codes.Unauthenticated, ""},
		{errors.New("bug"), codes.Internal, ""},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			t.Parallel()
			got := s.Status(t.Context(), tc.err)
			if status.Code(got) != tc.want {
				t.Fatalf("Status(%v) = %v, want %v", tc.err, got, tc.want)
			}
			var info *errdetails.ErrorInfo
			for _, d := range status.Convert(got).Details() {
				if i, ok := d.(*errdetails.ErrorInfo); ok {
					info = i
				}
			}
			if tc.reason != "" && (info.GetReason() != tc.reason || info.GetDomain() != "fourkingdoms.match.v1") {
				t.Fatalf("Status(%v) ErrorInfo %v, want reason %s in fourkingdoms.match.v1", tc.err, info, tc.reason)
			}
			if tc.want == codes.Internal && status.Convert(got).Message() != "internal error" {
				t.Errorf("internal error leaks details: %v", got)
			}
		})
	}
}

// redisReply is an error reply of Redis, as go-redis returns it (the real
// ones are classified in pkg/redisconn's tests).
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}
