package server

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

// Interceptor order (outermost first), the same for unary and stream calls:
//
//  1. recovery: a handler panic becomes INTERNAL and the server stays up;
//     outermost so that it also covers the other interceptors.
//  2. logging: one line per call with the final code, so rejected calls
//     (unauthenticated, rate limited) are logged too.
//  3. authentication: verifies the bearer token, puts the Identity in ctx.
//  4. rate limiting: per identity subject, or per client address when
//     anonymous (behind trusted proxies, from X-Forwarded-For).
//  5. (streams only) the per-caller cap on open streams.

const (
	healthPrefix     = "/grpc.health.v1.Health/"
	reflectionPrefix = "/grpc.reflection."
)

// The server's own refusals carry an ErrorInfo of domain
// rpcerr.Server ("fourkingdoms.server"): they come from the bootstrap, not
// from a service's API, whichever service the call was for.
const (
	reasonShuttingDown   = "SHUTTING_DOWN"
	reasonRateLimited    = "RATE_LIMITED"
	reasonTooManyStreams = "TOO_MANY_STREAMS"
	reasonInternal       = "INTERNAL"
)

// errShuttingDown answers calls that arrive while the server drains; the
// code is retryable, so clients reconnect to another instance.
var errShuttingDown = rpcerr.Server.Error(codes.Unavailable, reasonShuttingDown, "server is shutting down: retry", nil)

// callInfo lets the logging interceptor see the subject that the inner
// authentication interceptor found.
type callInfo struct{ subject string }

type callInfoKey struct{}

type interceptors struct {
	log     *slog.Logger
	tokens  *auth.Verifier
	public  map[string]bool
	limiter *limiter       // nil: no rate limiting
	streams *streamCounter // nil: no cap on a caller's open streams
	now     func() time.Time
	// watchStop is closed during shutdown to end health Watch streams,
	// which would otherwise hold GracefulStop until its deadline.
	watchStop <-chan struct{}
	calls     *inflight
	// proxies are the peers whose X-Forwarded-For is believed
	// (clientaddr.go).
	proxies trustedProxies
}

func (ic *interceptors) isPublic(method string) bool {
	return ic.public[method] || strings.HasPrefix(method, healthPrefix) || strings.HasPrefix(method, reflectionPrefix)
}

// quiet methods are neither logged nor rate limited: probes poll them.
func quiet(method string) bool { return strings.HasPrefix(method, healthPrefix) }

func (ic *interceptors) recovered(ctx context.Context, method string, p any) error {
	ic.log.ErrorContext(ctx, "panic in handler", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return rpcerr.Server.Error(codes.Internal, reasonInternal, "internal error", nil)
}

// admit runs authentication and rate limiting and returns the context the
// handler sees.
func (ic *interceptors) admit(ctx context.Context, method string) (context.Context, error) {
	now := ic.now()
	id, err := ic.tokens.Authenticate(ctx, now)
	switch {
	case err == nil:
		ctx = auth.NewContext(ctx, id)
		if ci, ok := ctx.Value(callInfoKey{}).(*callInfo); ok {
			ci.subject = id.Subject
		}
	case !ic.isPublic(method):
		return ctx, err
	}
	if ic.limiter == nil || quiet(method) {
		return ctx, nil
	}
	if ok, wait := ic.limiter.allow(ic.callerKey(ctx), now); !ok {
		return ctx, rpcerr.Server.Error(codes.ResourceExhausted, reasonRateLimited,
			fmt.Sprintf("rate limit exceeded: retry after %v", wait.Round(time.Millisecond)), nil,
			&errdetails.RetryInfo{RetryDelay: durationpb.New(wait)})
	}
	return ctx, nil
}

// callerKey names the caller that limits apply to: the token's subject,
// or the client's address for an anonymous call (clientaddr.go).
func (ic *interceptors) callerKey(ctx context.Context) string {
	if id, ok := auth.FromContext(ctx); ok {
		return "sub:" + id.Subject
	}
	return "ip:" + ic.proxies.clientHost(ctx)
}

// openStream counts a new stream of the caller of ctx against the
// per-caller cap and returns the function that ends it. Services are
// trusted and exempt (one service may watch on behalf of many players),
// and so are health watches (probes).
func (ic *interceptors) openStream(ctx context.Context, method string) (func(), error) {
	if ic.streams == nil || quiet(method) {
		return func() {}, nil
	}
	if id, ok := auth.FromContext(ctx); ok && id.Role == auth.RoleService {
		return func() {}, nil
	}
	key := ic.callerKey(ctx)
	if !ic.streams.acquire(key) {
		return nil, rpcerr.Server.Error(codes.ResourceExhausted, reasonTooManyStreams,
			fmt.Sprintf("too many open streams: this caller already has %d open on this server (GRPC_MAX_STREAMS_PER_CALLER); close one, e.g. stop watching a finished match, then retry", ic.streams.max),
			map[string]string{"max_streams": fmt.Sprint(ic.streams.max)})
	}
	return func() { ic.streams.release(key) }, nil
}

func (ic *interceptors) logCall(ctx context.Context, method string, start time.Time, ci *callInfo, err error) {
	code := status.Code(err)
	level := slog.LevelInfo
	switch code {
	case codes.Internal, codes.Unknown, codes.DataLoss:
		level = slog.LevelError
	}
	if !ic.log.Enabled(ctx, level) {
		return // building the record costs allocations on every call
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("code", code.String()),
		slog.Duration("duration", time.Since(start)),
		slog.String("peer", ic.proxies.clientHost(ctx)),
	}
	if ci.subject != "" {
		attrs = append(attrs, slog.String("subject", ci.subject))
	}
	if err != nil && code != codes.OK {
		attrs = append(attrs, slog.String("error", status.Convert(err).Message()))
	}
	ic.log.LogAttrs(ctx, level, "rpc", attrs...)
}

func (ic *interceptors) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, ic.recovered(ctx, info.FullMethod, p)
		}
	}()
	if !quiet(info.FullMethod) {
		ci := &callInfo{}
		ctx = context.WithValue(ctx, callInfoKey{}, ci)
		start := time.Now()
		// Deferred after the recover above, so it runs first and logs the
		// panic's code via this second recover.
		defer func() {
			if p := recover(); p != nil {
				err = ic.recovered(ctx, info.FullMethod, p)
				resp = nil
			}
			ic.logCall(ctx, info.FullMethod, start, ci, err)
		}()
	}
	if !quiet(info.FullMethod) {
		if !ic.calls.begin() {
			return nil, errShuttingDown
		}
		defer ic.calls.end()
	}
	ctx, err = ic.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// wrappedStream replaces a stream's context.
type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *wrappedStream) Context() context.Context { return w.ctx }

func (ic *interceptors) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx := ss.Context()
	defer func() {
		if p := recover(); p != nil {
			err = ic.recovered(ctx, info.FullMethod, p)
		}
	}()
	if !quiet(info.FullMethod) {
		ci := &callInfo{}
		ctx = context.WithValue(ctx, callInfoKey{}, ci)
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				err = ic.recovered(ctx, info.FullMethod, p)
			}
			ic.logCall(ctx, info.FullMethod, start, ci, err)
		}()
	}
	if !quiet(info.FullMethod) {
		if !ic.calls.begin() {
			return errShuttingDown
		}
		defer ic.calls.end()
	}
	ctx, err = ic.admit(ctx, info.FullMethod)
	if err != nil {
		return err
	}
	closeStream, err := ic.openStream(ctx, info.FullMethod)
	if err != nil {
		return err
	}
	defer closeStream()
	if info.FullMethod == healthPrefix+"Watch" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-ic.watchStop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
}
