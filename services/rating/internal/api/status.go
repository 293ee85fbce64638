package api

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// fieldError is a request field that fails validation.
type fieldError struct {
	field, reason string
}

func (e *fieldError) Error() string { return e.field + ": " + e.reason }

func invalid(field, reason string) error { return &fieldError{field: field, reason: reason} }

// toStatus maps an error of a handler to the gRPC status the client sees.
// It is the only place that chooses codes:
//
//	invalid field, bad page token        -> INVALID_ARGUMENT (with field details)
//	unknown rule set                     -> NOT_FOUND
//	caller gone / deadline               -> CANCELED / DEADLINE_EXCEEDED
//	Redis unreachable, failing over      -> UNAVAILABLE
//	anything else                        -> INTERNAL, generic message, logged
func (s *Service) toStatus(ctx context.Context, err error) error {
	var fe *fieldError
	switch {
	case errors.As(err, &fe):
		st := status.New(codes.InvalidArgument, fe.Error())
		if d, derr := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: fe.field, Description: fe.reason},
		}}); derr == nil {
			st = d
		}
		return st.Err()
	case errors.Is(err, store.ErrInvalidCursor):
		return s.toStatus(ctx, errBadToken)
	case errors.Is(err, errUnknownRuleSet):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	case unavailable(err):
		s.log.WarnContext(ctx, "rating store unavailable", "err", err)
		return status.Error(codes.Unavailable, "rating store unavailable, retry later")
	}
	s.log.ErrorContext(ctx, "rating request failed", "err", err)
	return status.Error(codes.Internal, "internal error")
}

// unavailable reports errors that mean Redis cannot be reached right now.
func unavailable(err error) bool {
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	msg := err.Error()
	for _, p := range []string{"CLUSTERDOWN", "LOADING", "TRYAGAIN", "MASTERDOWN"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
