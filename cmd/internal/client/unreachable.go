package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// UnreachableError is a call that failed because no connection to the
// service could be made (nothing listens at the address, the host is
// unknown). It keeps the gRPC status, so status.Code and the retry rules
// see an Unavailable error as before; errors.As tells a person which
// service at which address was missing.
type UnreachableError struct {
	// Service is "matchmaking", "match" or "rating".
	Service string
	// Addr is the address dialled.
	Addr string
	// Err is the call's error.
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s at %s: %s", e.Service, e.Addr, status.Convert(e.Err).Message())
}

// Unwrap returns the call's error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// GRPCStatus returns the call's status (Unavailable).
func (e *UnreachableError) GRPCStatus() *status.Status { return status.Convert(e.Err) }

// unreachable reports whether err says the connection could not be made,
// as opposed to an Unavailable answer of a running server (its store is
// down, it is shutting down). grpc-go gives no typed error for it: the
// transport's message is the only sign.
func unreachable(err error) bool {
	s, ok := status.FromError(err)
	if !ok || s.Code() != codes.Unavailable {
		return false
	}
	msg := s.Message()
	return strings.Contains(msg, "connection error") || strings.Contains(msg, "while dialing") ||
		strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host")
}

// markUnreachable returns interceptors that turn connection failures of the
// calls to service at addr into *UnreachableError.
func markUnreachable(service, addr string) []grpc.DialOption {
	mark := func(err error) error {
		var ue *UnreachableError
		if err == nil || errors.As(err, &ue) || !unreachable(err) {
			return err
		}
		return &UnreachableError{Service: service, Addr: addr, Err: err}
	}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return mark(invoker(ctx, method, req, reply, cc, opts...))
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, mark(err)
		}
		return markedStream{ClientStream: s, mark: mark}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// markedStream marks the connection failures of a stream's reads.
type markedStream struct {
	grpc.ClientStream
	mark func(error) error
}

func (s markedStream) RecvMsg(m any) error { return s.mark(s.ClientStream.RecvMsg(m)) }
