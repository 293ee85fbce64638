package api

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
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
//	unknown player (GetRating)           -> NOT_FOUND
//	anything else: redisconn.Status (by redisconn.Classify)
//	  caller gone / deadline             -> CANCELED / DEADLINE_EXCEEDED
//	  Redis unreachable, failing over    -> UNAVAILABLE, logged as a warning
//	  anything else (script errors too)  -> INTERNAL, generic message, logged
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
	case errors.Is(err, errUnknownRuleSet), errors.Is(err, errUnknownPlayer):
		return status.Error(codes.NotFound, err.Error())
	}
	return redisconn.Status(ctx, s.log, err, "rating store")
}
