package rpcerr_test

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

var errInvalid = errors.New("invalid request")

func TestError(t *testing.T) {
	t.Parallel()
	retry := &errdetails.RetryInfo{RetryDelay: durationpb.New(0)}
	err := rpcerr.Match.Error(codes.FailedPrecondition, "PLY_MISMATCH", "stale", map[string]string{"current_ply": "7"}, retry)
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition || st.Message() != "stale" {
		t.Fatalf("status = %v %q", st.Code(), st.Message())
	}
	want := []proto.Message{
		&errdetails.ErrorInfo{Domain: "fourkingdoms.match.v1", Reason: "PLY_MISMATCH", Metadata: map[string]string{"current_ply": "7"}},
		retry,
	}
	got := st.Details()
	if len(got) != len(want) {
		t.Fatalf("details = %v, want %v", got, want)
	}
	for i := range want {
		if m, ok := got[i].(proto.Message); !ok || !proto.Equal(m, want[i]) {
			t.Errorf("detail %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	seat := rpcerr.Field(errInvalid, "players[2].seat", "not a seat")
	tests := []struct {
		name    string
		err     error
		wantMsg string
		want    []*errdetails.BadRequest_FieldViolation
	}{
		{"field error", seat, "invalid request: players[2].seat: not a seat",
			[]*errdetails.BadRequest_FieldViolation{{Field: "players[2].seat", Description: "not a seat"}}},
		{"wrapped", fmt.Errorf("create match: %w", seat), "create match: invalid request: players[2].seat: not a seat",
			[]*errdetails.BadRequest_FieldViolation{{Field: "players[2].seat", Description: "not a seat"}}},
		{"joined", errors.Join(seat, rpcerr.Field(errInvalid, "rule_set", "unknown")), "invalid request: players[2].seat: not a seat\ninvalid request: rule_set: unknown",
			[]*errdetails.BadRequest_FieldViolation{{Field: "players[2].seat", Description: "not a seat"}, {Field: "rule_set", Description: "unknown"}}},
		{"no field error", fmt.Errorf("bad move text: %q", "zz"), `bad move text: "zz"`,
			[]*errdetails.BadRequest_FieldViolation{{Field: "move", Description: `bad move text: "zz"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := rpcerr.Match.Invalid("INVALID_ARGUMENT", tt.err, "move")
			if c := status.Code(err); c != codes.InvalidArgument {
				t.Errorf("code = %v", c)
			}
			if m := status.Convert(err).Message(); m != tt.wantMsg {
				t.Errorf("message = %q, want %q", m, tt.wantMsg)
			}
			if ei := rpcerr.Info(err); ei.GetDomain() != "fourkingdoms.match.v1" || ei.GetReason() != "INVALID_ARGUMENT" {
				t.Errorf("ErrorInfo = %v", ei)
			}
			if got, want := rpcerr.BadRequest(err), (&errdetails.BadRequest{FieldViolations: tt.want}); !proto.Equal(got, want) {
				t.Errorf("BadRequest = %v, want %v", got, want)
			}
		})
	}
}

func TestFieldErrorIsSentinel(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("wrap: %w", rpcerr.Field(errInvalid, "move", "empty"))
	if !errors.Is(err, errInvalid) {
		t.Error("errors.Is(FieldError, sentinel) = false")
	}
	var fe *rpcerr.FieldError
	if !errors.As(err, &fe) || fe.Field != "move" {
		t.Errorf("errors.As = %v", fe)
	}
}

func TestNoDetailsOnPlainErrors(t *testing.T) {
	t.Parallel()
	if rpcerr.Info(errors.New("x")) != nil || rpcerr.BadRequest(status.Error(codes.Internal, "x")) != nil {
		t.Error("details found where there are none")
	}
}
