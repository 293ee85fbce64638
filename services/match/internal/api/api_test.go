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
		err  error
		want codes.Code
	}{
		{wrap(match.ErrInvalid), codes.InvalidArgument},
		{wrap(rules.ErrBadMoveText), codes.InvalidArgument},
		{match.ErrMoveIDReused, codes.InvalidArgument},
		{match.ErrNotFound, codes.NotFound},
		{wrap(store.ErrNotFound), codes.NotFound},
		{match.ErrNotPlayer, codes.PermissionDenied},
		{wrap(match.ErrForbidden), codes.PermissionDenied},
		{wrap(rules.ErrNotYourTurn), codes.FailedPrecondition},
		{wrap(rules.ErrIllegalMove), codes.FailedPrecondition},
		{rules.ErrSeatNotLive, codes.FailedPrecondition},
		{rules.ErrGameOver, codes.FailedPrecondition},
		{match.ErrFinished, codes.FailedPrecondition},
		{match.ErrTimeRanOut, codes.FailedPrecondition},
		{&match.PlyMismatchError{Expected: 3, Current: 5}, codes.FailedPrecondition},
		{match.ErrConflict, codes.Aborted},
		{match.ErrSlowConsumer, codes.ResourceExhausted},
		{match.ErrFutureVersion, codes.OutOfRange},
		{wrap(store.ErrNotReplicated), codes.Unavailable},
		{wrap(fanout.ErrClosed), codes.Unavailable},
		{wrap(redis.ErrClosed), codes.Unavailable},
		{wrap(&net.OpError{Op: "dial", Err: errors.New("refused")}), codes.Unavailable},
		{wrap(redisReply("READONLY You can't write against a read only replica.")), codes.Unavailable},
		{wrap(redisReply("ERR user_script:1: attempt to compare nil with number script: 1f2e, on @user_script:1.")), codes.Internal},
		{wrap(redisReply("WRONGTYPE Operation against a key holding the wrong kind of value")), codes.Internal},
		{wrap(redis.ErrNoScript), codes.Internal},
		{context.Canceled, codes.Canceled},
		{wrap(context.DeadlineExceeded), codes.DeadlineExceeded},
		{status.Error(codes.Unauthenticated, "x"), codes.Unauthenticated},
		{errors.New("bug"), codes.Internal},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			t.Parallel()
			got := s.Status(t.Context(), tc.err)
			if status.Code(got) != tc.want {
				t.Fatalf("Status(%v) = %v, want %v", tc.err, got, tc.want)
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
