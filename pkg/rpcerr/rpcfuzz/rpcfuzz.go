// Package rpcfuzz is the one harness of the handler-level fuzz targets of
// the services' public RPCs: a fuzz input is a caller choice, a target
// choice and the bytes of a request proto; the seed corpus is requests
// captured from a real flow the target drives first. Check holds the
// checks every answer must pass: a refusal a client can act on, never
// INTERNAL or UNKNOWN, and always with an ErrorInfo.
package rpcfuzz

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

// Input is one fuzz input: Who picks the caller and Pick the target (the
// meaning of both is the fuzz target's), Req is the request.
type Input[Req proto.Message] struct {
	Who, Pick uint8
	Req       Req
}

// Fuzz runs body for every input that unmarshals as a Req (made by newReq),
// with seeds as the seed corpus. Inputs that are not a valid Req are
// skipped: gRPC refuses them before any handler runs.
func Fuzz[Req proto.Message](f *testing.F, newReq func() Req, seeds []Input[Req], body func(t *testing.T, in Input[Req])) {
	f.Helper()
	for _, s := range seeds {
		b, err := proto.Marshal(s.Req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s.Who, s.Pick, b)
	}
	f.Fuzz(func(t *testing.T, who, pick uint8, b []byte) {
		req := newReq()
		if err := proto.Unmarshal(b, req); err != nil {
			t.Skip()
		}
		body(t, Input[Req]{Who: who, Pick: pick, Req: req})
	})
}

// Check fails t unless err is nil or a refusal a client can act on: not
// INTERNAL or UNKNOWN (a bug or a store fault, neither reachable by a
// request alone), and with an ErrorInfo unless the caller's own ending
// (CANCELED, DEADLINE_EXCEEDED), as TestEveryRefusalHasErrorInfo requires
// of the code. It reports whether err was a refusal.
func Check(t testing.TB, rpc string, req proto.Message, err error) (refused bool) {
	t.Helper()
	if err == nil {
		return false
	}
	s, ok := status.FromError(err)
	switch {
	case !ok:
		t.Fatalf("%s(%v) = %v: not a gRPC status", rpc, req, err)
	case s.Code() == codes.Internal || s.Code() == codes.Unknown:
		t.Fatalf("%s(%v) = %v", rpc, req, err)
	case s.Code() == codes.Canceled || s.Code() == codes.DeadlineExceeded:
	case rpcerr.Info(err) == nil:
		t.Fatalf("%s(%v) = %v: a refusal without ErrorInfo", rpc, req, err)
	}
	return true
}
