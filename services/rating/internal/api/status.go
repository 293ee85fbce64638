package api

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// invalid is a request field that fails validation.
func invalid(field, reason string) error { return rpcerr.Field(nil, field, reason) }

// The ErrorInfo reasons of toStatus (domain fourkingdoms.rating.v1).
const (
	reasonInvalid        = "INVALID_ARGUMENT"
	reasonUnknownRuleSet = "RULE_SET_NOT_FOUND"
	reasonUnknownPlayer  = "PLAYER_NOT_FOUND"
)

// toStatus maps an error of a handler to the gRPC status the client sees.
// It is the only place that chooses codes; every refusal carries an
// ErrorInfo of domain fourkingdoms.rating.v1:
//
//	invalid field, bad page token        -> INVALID_ARGUMENT, INVALID_ARGUMENT (with a BadRequest)
//	unknown rule set                     -> NOT_FOUND, RULE_SET_NOT_FOUND
//	unknown player (GetRating)           -> NOT_FOUND, PLAYER_NOT_FOUND
//	anything else: redisconn.Status (by redisconn.Classify)
//	  caller gone / deadline             -> CANCELED / DEADLINE_EXCEEDED
//	  Redis unreachable, failing over    -> UNAVAILABLE, STORE_UNAVAILABLE, logged as a warning
//	  anything else (script errors too)  -> INTERNAL, INTERNAL, generic message, logged
func (s *Service) toStatus(ctx context.Context, err error) error {
	var fe *rpcerr.FieldError
	switch {
	case errors.As(err, &fe):
		return rpcerr.Rating.Invalid(reasonInvalid, fe, fe.Field)
	case errors.Is(err, store.ErrInvalidCursor):
		return s.toStatus(ctx, errBadToken)
	case errors.Is(err, errUnknownRuleSet):
		return rpcerr.Rating.Error(codes.NotFound, reasonUnknownRuleSet, err.Error(), nil)
	case errors.Is(err, errUnknownPlayer):
		return rpcerr.Rating.Error(codes.NotFound, reasonUnknownPlayer, err.Error(), nil)
	}
	return redisconn.Status(ctx, s.log, err, rpcerr.Rating, "rating store")
}
