// Package api is the gRPC transport of the match service: it checks the
// caller's identity, calls the domain logic in package match, builds the
// wire responses from the domain's results and maps its errors to gRPC
// status codes in one function (Status).
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/stall"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// Server implements match.v1.MatchService.
type Server struct {
	matchv1.UnimplementedMatchServiceServer
	svc *match.Service
	log *slog.Logger
	// streams counts the open WatchMatch streams (match_watch_streams, the
	// per-pod metric the autoscaler reads); dropped counts the streams the
	// server ended before the match did (match_watch_dropped_total).
	streams metric.Int64UpDownCounter
	dropped metric.Int64Counter
	// sendTimeout is how long a WatchMatch send may wait for a client
	// that does not read before the stream ends (pkg/stall); 0: for ever.
	sendTimeout time.Duration
	// stalled is the status of a stream ended that way, built once: it
	// is the same for every stream and a guard keeps it while its stream
	// lives.
	stalled *status.Status
}

// Reasons of match_watch_dropped_total. A stream that ends because the
// match is over or the client left is not a drop.
var (
	dropSlow     = metric.WithAttributes(attribute.String("reason", "slow_consumer"))
	dropShutdown = metric.WithAttributes(attribute.String("reason", "shutdown"))
	dropError    = metric.WithAttributes(attribute.String("reason", "error"))
)

// New returns the gRPC server of the match service. mp receives its
// metrics; nil means none. A WatchMatch stream whose send waits longer than
// sendTimeout for its client to read ends with RESOURCE_EXHAUSTED
// SLOW_CONSUMER; 0 lets it wait until the client reads or leaves.
func New(svc *match.Service, log *slog.Logger, mp metric.MeterProvider, sendTimeout time.Duration) (*Server, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("github.com/fourkingdoms/fourkingdoms/services/match/internal/api")
	streams, err := m.Int64UpDownCounter("match.watch.streams", metric.WithUnit("{stream}"),
		metric.WithDescription("WatchMatch streams open on this instance."))
	if err != nil {
		return nil, fmt.Errorf("match.watch.streams metric: %w", err)
	}
	dropped, err := m.Int64Counter("match.watch.dropped", metric.WithUnit("{stream}"),
		metric.WithDescription("WatchMatch streams the server ended before the match ended, by reason: slow_consumer (the client read too slowly), shutdown (the instance stopped), error (storage)."))
	if err != nil {
		return nil, fmt.Errorf("match.watch.dropped metric: %w", err)
	}
	// Every series exists from the start, so rate() sees the first drop.
	for _, r := range []metric.AddOption{dropSlow, dropShutdown, dropError} {
		dropped.Add(context.Background(), 0, r)
	}
	s := &Server{svc: svc, log: log, streams: streams, dropped: dropped, sendTimeout: sendTimeout}
	s.stalled = status.Convert(s.Status(context.Background(), errStalled))
	return s, nil
}

// Register registers the service on a gRPC server.
func (s *Server) Register(g *grpc.Server) { matchv1.RegisterMatchServiceServer(g, s) }

func caller(ctx context.Context) (match.Caller, error) {
	id, ok := auth.FromContext(ctx)
	if !ok {
		return match.Caller{}, auth.NoIdentity()
	}
	return match.Caller{ID: id.Subject, Service: id.Role == auth.RoleService, Operator: id.Role == auth.RoleOperator}, nil
}

// CreateMatch implements MatchService.
func (s *Server) CreateMatch(ctx context.Context, req *matchv1.CreateMatchRequest) (*matchv1.CreateMatchResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.svc.Create(ctx, c, req)
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	return &matchv1.CreateMatchResponse{Match: snapshot(m)}, nil
}

// GetMatch implements MatchService.
func (s *Server) GetMatch(ctx context.Context, req *matchv1.GetMatchRequest) (*matchv1.GetMatchResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.svc.Get(ctx, c, req.GetMatchId())
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	return &matchv1.GetMatchResponse{Match: snapshot(m)}, nil
}

// MakeMove implements MatchService.
func (s *Server) MakeMove(ctx context.Context, req *matchv1.MakeMoveRequest) (*matchv1.MakeMoveResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.svc.MakeMove(ctx, c, req)
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	resp := &matchv1.MakeMoveResponse{Events: out.Events, Version: out.Version, Ply: uint32(out.Ply), GameOver: out.Over,
		Result: out.Result}
	if !out.Over {
		resp.ToMove = wire.Seat(out.ToMove)
	}
	return resp, nil
}

// Resign implements MatchService.
func (s *Server) Resign(ctx context.Context, req *matchv1.ResignRequest) (*matchv1.ResignResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.svc.Resign(ctx, c, req.GetMatchId())
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	return &matchv1.ResignResponse{Events: out.Events, Version: out.Version}, nil
}

// ClaimWin implements MatchService.
func (s *Server) ClaimWin(ctx context.Context, req *matchv1.ClaimWinRequest) (*matchv1.ClaimWinResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.svc.ClaimWin(ctx, c, req.GetMatchId())
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	return &matchv1.ClaimWinResponse{Events: out.Events, Version: out.Version, Result: out.Result}, nil
}

// SetPremoves implements MatchService.
func (s *Server) SetPremoves(ctx context.Context, req *matchv1.SetPremovesRequest) (*matchv1.SetPremovesResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.svc.SetPremoves(ctx, c, req.GetMatchId(), req.GetSeat(), req.GetMoves())
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	return &matchv1.SetPremovesResponse{Queue: premoveQueue(&p)}, nil
}

// ClearPremoves implements MatchService.
func (s *Server) ClearPremoves(ctx context.Context, req *matchv1.ClearPremovesRequest) (*matchv1.ClearPremovesResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.svc.ClearPremoves(ctx, c, req.GetMatchId(), req.GetSeat())
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	return &matchv1.ClearPremovesResponse{Queue: premoveQueue(&p)}, nil
}

// Ping implements MatchService.
func (s *Server) Ping(ctx context.Context, req *matchv1.PingRequest) (*matchv1.PingResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.svc.Ping(ctx, c, req.GetMatchId(), req.GetToken())
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	resp := &matchv1.PingResponse{Token: r.Token, NextPingIn: durationpb.New(r.Next)}
	if r.Measured {
		resp.RoundTrip, resp.RoundTripEstimate = durationpb.New(r.RoundTrip), durationpb.New(r.Estimate)
	}
	return resp, nil
}

// WatchMatch implements MatchService.
func (s *Server) WatchMatch(req *matchv1.WatchMatchRequest, stream grpc.ServerStreamingServer[matchv1.WatchMatchResponse]) error {
	ctx := stream.Context()
	c, err := caller(ctx)
	if err != nil {
		return err
	}
	s.streams.Add(ctx, 1)
	defer s.streams.Add(ctx, -1)
	guard := stall.New(ctx, s.sendTimeout, s.stalled)
	defer guard.Stop()
	sendFailed := false
	err = s.svc.Watch(ctx, c, req.GetMatchId(), req.GetFromVersion(), func(it match.WatchItem) error {
		err := guard.Send(func() error { return stream.Send(watchResponse(it)) })
		sendFailed = err != nil
		return err
	})
	if guard.Stalled() {
		// The guard wrote the status; this one goes nowhere.
		s.dropped.Add(ctx, 1, dropSlow)
		return s.stalled.Err()
	}
	if err != nil {
		if !sendFailed && ctx.Err() == nil {
			s.countDrop(ctx, err)
		}
		return s.Status(ctx, err)
	}
	return nil
}

// errStalled ends a stream whose client read nothing for the send timeout.
var errStalled = fmt.Errorf("%w (the client read nothing for too long)", match.ErrSlowConsumer)

// countDrop counts a stream the server ended on its own.
func (s *Server) countDrop(ctx context.Context, err error) {
	switch {
	case errors.Is(err, match.ErrNotFound), errors.Is(err, store.ErrNotFound), errors.Is(err, match.ErrForbidden),
		errors.Is(err, match.ErrFutureVersion):
		// Refused at the start: never a stream.
	case errors.Is(err, match.ErrSlowConsumer):
		s.dropped.Add(ctx, 1, dropSlow)
	case errors.Is(err, fanout.ErrClosed):
		s.dropped.Add(ctx, 1, dropShutdown)
	default:
		s.dropped.Add(ctx, 1, dropError)
	}
}

// watchResponse is the wire form of a stream item. An event goes out as
// its encoding, shared by every stream of the match on this instance
// (match.WatchItem.Encoded: built once per event), carried as the unknown
// fields of an empty WatchMatchResponse: proto marshals those as they are,
// so per stream the codec copies the bytes and nothing is encoded again.
// The stream's legal moves follow in a buffer of the stream's own (a
// repeated field's occurrences concatenate), never appended to the shared
// bytes. The carrier goes through the stream's codec and compressor like
// any message; a grpc.PreparedMsg shared by the streams would not (it is
// compressed for the stream that prepared it, and a client that compresses
// its request gets compressed replies).
func watchResponse(it match.WatchItem) *matchv1.WatchMatchResponse {
	if it.Snapshot != nil {
		resp := &matchv1.WatchMatchResponse{Version: it.Version, LegalMoves: it.LegalMoves}
		resp.Item = &matchv1.WatchMatchResponse_Snapshot{Snapshot: snapshot(it.Snapshot)}
		return resp
	}
	if it.Premoves != nil {
		resp := &matchv1.WatchMatchResponse{Version: it.Version, LegalMoves: it.LegalMoves}
		resp.Item = &matchv1.WatchMatchResponse_Premoves{Premoves: premoveQueue(it.Premoves)}
		return resp
	}
	return eventResponse(it.Encoded(eventFrame), it.LegalMoves)
}

// eventResponse is the response of an event item: shared, the event's
// encoding (eventFrame), and the stream's legal moves, which go after a
// copy of it, never appended to it.
func eventResponse(shared []byte, legal []string) *matchv1.WatchMatchResponse {
	b := shared
	if len(legal) > 0 {
		n := len(shared)
		for _, m := range legal {
			n += protowire.SizeTag(fieldLegalMoves) + protowire.SizeBytes(len(m))
		}
		b = make([]byte, len(shared), n)
		copy(b, shared)
		for _, m := range legal {
			b = protowire.AppendTag(b, fieldLegalMoves, protowire.BytesType)
			b = protowire.AppendString(b, m)
		}
	}
	resp := &matchv1.WatchMatchResponse{}
	resp.ProtoReflect().SetUnknown(b)
	return resp
}

// Field numbers of WatchMatchResponse that eventFrame and eventResponse
// write (TestEventFrame decodes what they write).
const (
	fieldVersion    protowire.Number = 1
	fieldEvent      protowire.Number = 3
	fieldLegalMoves protowire.Number = 4
)

// eventFrame is the encoding of a WatchMatchResponse of version that
// carries event (an encoded MatchEvent).
func eventFrame(version uint64, event []byte) []byte {
	b := make([]byte, 0, protowire.SizeTag(fieldVersion)+protowire.SizeVarint(version)+
		protowire.SizeTag(fieldEvent)+protowire.SizeBytes(len(event)))
	if version != 0 {
		b = protowire.AppendTag(b, fieldVersion, protowire.VarintType)
		b = protowire.AppendVarint(b, version)
	}
	b = protowire.AppendTag(b, fieldEvent, protowire.BytesType)
	return protowire.AppendBytes(b, event)
}

// ExportGame implements MatchService.
func (s *Server) ExportGame(ctx context.Context, req *matchv1.ExportGameRequest) (*matchv1.ExportGameResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	pgn, err := s.svc.Export(ctx, c, req.GetMatchId())
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	return &matchv1.ExportGameResponse{Pgn4: pgn}, nil
}

// AbortMatch implements MatchService.
func (s *Server) AbortMatch(ctx context.Context, req *matchv1.AbortMatchRequest) (*matchv1.AbortMatchResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.svc.Abort(ctx, c, req.GetMatchId(), req.GetReason())
	if err != nil {
		return nil, s.Status(ctx, err)
	}
	return &matchv1.AbortMatchResponse{Match: snapshot(m)}, nil
}

// refusals is the table of Status: the domain and engine errors a client
// is told about, each with its code and its ErrorInfo reason (docs/api.md
// lists the same). The first entry whose error matches wins. field is the
// request field an INVALID_ARGUMENT names in its BadRequest when the error
// holds no *rpcerr.FieldError.
var refusals = []struct {
	err    error
	code   codes.Code
	reason string
	field  string
}{
	{match.ErrInvalid, codes.InvalidArgument, "INVALID_ARGUMENT", ""},
	{rules.ErrBadMoveText, codes.InvalidArgument, "BAD_MOVE_TEXT", "move"},
	{match.ErrMoveIDReused, codes.InvalidArgument, "MOVE_ID_REUSED", "client_move_id"},
	{match.ErrBadPingToken, codes.InvalidArgument, "BAD_PING_TOKEN", "token"},
	{match.ErrNotFound, codes.NotFound, "MATCH_NOT_FOUND", ""},
	{store.ErrNotFound, codes.NotFound, "MATCH_NOT_FOUND", ""},
	{match.ErrNotPlayer, codes.PermissionDenied, "NOT_A_PLAYER", ""},
	{match.ErrForbidden, codes.PermissionDenied, "FORBIDDEN", ""},
	{rules.ErrNotYourTurn, codes.FailedPrecondition, "NOT_YOUR_TURN", ""},
	{match.ErrYourTurn, codes.FailedPrecondition, "YOUR_TURN", ""},
	{rules.ErrIllegalMove, codes.FailedPrecondition, "ILLEGAL_MOVE", ""},
	{rules.ErrSeatNotLive, codes.FailedPrecondition, "SEAT_NOT_LIVE", ""},
	{rules.ErrGameOver, codes.FailedPrecondition, "MATCH_OVER", ""},
	{rules.ErrClaimNotAllowed, codes.FailedPrecondition, "CLAIM_NOT_ALLOWED", ""},
	{match.ErrFinished, codes.FailedPrecondition, "MATCH_OVER", ""},
	{match.ErrTimeRanOut, codes.FailedPrecondition, "TIME_RAN_OUT", ""},
	{match.ErrConflict, codes.Aborted, "CONFLICT", ""},
	{match.ErrSlowConsumer, codes.ResourceExhausted, "SLOW_CONSUMER", ""},
	{match.ErrFutureVersion, codes.OutOfRange, "FUTURE_VERSION", ""},
}

// Status maps an error of the domain, the engine or the store to a gRPC
// status. It is the one place where that mapping lives: the refusals
// table, then
//
//	*match.PlyMismatchError (ErrorInfo PLY_MISMATCH, current_ply)  FailedPrecondition
//	store.ErrNotReplicated, fanout.ErrClosed (STORE_UNAVAILABLE)   Unavailable
//	anything else: redisconn.Status (by redisconn.Classify)
//	  context cancellation / deadline                              Canceled / DeadlineExceeded
//	  transient Redis and network errors                           Unavailable (logged as a warning)
//	  anything else, script errors included                        Internal (logged; generic message)
//
// Every refusal carries a google.rpc.ErrorInfo of domain
// fourkingdoms.match.v1, and INVALID_ARGUMENT a google.rpc.BadRequest with
// the field path. A MakeMove from a seat that resigned or timed out
// (a zombie) or is out is refused with SEAT_NOT_LIVE, whoever is to move.
func (s *Server) Status(ctx context.Context, err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	var ply *match.PlyMismatchError
	if errors.As(err, &ply) {
		return rpcerr.Match.Error(codes.FailedPrecondition, "PLY_MISMATCH", err.Error(), map[string]string{"current_ply": strconv.Itoa(ply.Current)})
	}
	for _, r := range refusals {
		if !errors.Is(err, r.err) {
			continue
		}
		if r.code == codes.InvalidArgument {
			return rpcerr.Match.Invalid(r.reason, err, r.field)
		}
		return rpcerr.Match.Error(r.code, r.reason, err.Error(), nil)
	}
	if errors.Is(err, store.ErrNotReplicated) || errors.Is(err, fanout.ErrClosed) {
		s.log.WarnContext(ctx, "storage unavailable", "err", err)
		return rpcerr.Match.Error(codes.Unavailable, redisconn.ReasonUnavailable, "match storage is unavailable, retry with backoff", nil)
	}
	return redisconn.Status(ctx, s.log, err, rpcerr.Match, "match storage")
}
