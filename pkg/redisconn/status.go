package redisconn

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

// The ErrorInfo reasons of Status.
const (
	ReasonUnavailable = "STORE_UNAVAILABLE"
	ReasonInternal    = "INTERNAL"
)

// Status turns err, which a service's own error table did not map, into
// the gRPC status the client sees, by [Classify], and logs it exactly once:
//
//	caller's context ended (or any error once it has)  CANCELED / DEADLINE_EXCEEDED, not logged
//	KindTransient                                       UNAVAILABLE "<store> is unavailable, retry with backoff", logged as a warning
//	KindBug (anything else)                             INTERNAL "internal error", logged as an error
//
// UNAVAILABLE carries an ErrorInfo of the caller's domain with reason
// STORE_UNAVAILABLE, INTERNAL one with reason INTERNAL. CANCELED and
// DEADLINE_EXCEEDED carry none: they are the caller's own doing, not a
// refusal, and the caller's context has usually ended before it reads them.
// store names what is unavailable ("match storage"); attrs are added to the
// log line. The error's text reaches only the log: it may hold keys and
// script names.
func Status(ctx context.Context, log *slog.Logger, err error, domain rpcerr.Domain, store string, attrs ...any) error {
	kind := Classify(err)
	switch {
	case kind == KindNone:
		return nil
	case kind == KindCanceled:
		return contextStatus(err)
	case kind == KindTransient && ctx.Err() != nil:
		// A timeout or a closed connection after the caller gave up:
		// report the caller's own reason.
		return contextStatus(ctx.Err())
	case kind == KindTransient:
		log.WarnContext(ctx, "storage unavailable", append(attrs, "err", err)...)
		return domain.Error(codes.Unavailable, ReasonUnavailable, store+" is unavailable, retry with backoff", nil)
	}
	log.ErrorContext(ctx, "internal error", append(attrs, "err", err)...)
	return domain.Error(codes.Internal, ReasonInternal, "internal error", nil)
}

func contextStatus(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	return status.Error(codes.Canceled, "request cancelled")
}
