// Package rpcerr builds the gRPC status errors with which the services
// refuse a call: every refusal carries a google.rpc.ErrorInfo naming its
// domain (the service's proto package, e.g. "fourkingdoms.match.v1") and
// an UPPER_SNAKE reason, so clients can branch on (domain, reason) without
// parsing messages; INVALID_ARGUMENT also carries a google.rpc.BadRequest
// naming the offending request fields. docs/api.md lists every domain and
// reason in one table.
//
// Validation code that may not import gRPC reports a bad field with a
// *FieldError wrapping its sentinel error, so errors.Is on the sentinel
// still works and the transport finds the field path with errors.As.
package rpcerr

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// Domain is the ErrorInfo domain of a service's refusals.
type Domain string

// Domains of the refusals, one per proto package, plus the shared server
// bootstrap's own (rate limiting, shutdown, recovered panics).
const (
	Match       Domain = "fourkingdoms.match.v1"
	Matchmaking Domain = "fourkingdoms.matchmaking.v1"
	Rating      Domain = "fourkingdoms.rating.v1"
	Auth        Domain = "fourkingdoms.auth.v1"
	Server      Domain = "fourkingdoms.server"
)

// Error returns a status error of code and msg whose first detail is an
// ErrorInfo of domain d, reason and meta (nil for none), followed by
// details (RetryInfo, BadRequest, ...).
func (d Domain) Error(code codes.Code, reason, msg string, meta map[string]string, details ...protoadapt.MessageV1) error {
	all := make([]protoadapt.MessageV1, 0, 1+len(details))
	all = append(all, &errdetails.ErrorInfo{Domain: string(d), Reason: reason, Metadata: meta})
	all = append(all, details...)
	st, err := status.New(code, msg).WithDetails(all...)
	if err != nil {
		// Only an unmarshalable detail fails, and these are generated
		// messages; keep the code and message at least.
		return status.Error(code, msg)
	}
	return st.Err()
}

// Invalid returns an INVALID_ARGUMENT status error with err's text as the
// message, an ErrorInfo of domain d and reason, and a BadRequest holding
// one violation per *FieldError in err's tree (errors.Join included). When
// err holds none, the violation names field, described by err's text.
func (d Domain) Invalid(reason string, err error, field string) error {
	return d.Error(codes.InvalidArgument, reason, err.Error(), nil, Violations(err, field))
}

// Violations returns the BadRequest of err: one violation per *FieldError
// in err's tree, or, when there is none, one for field described by err's
// text.
func Violations(err error, field string) *errdetails.BadRequest {
	br := &errdetails.BadRequest{}
	walk(err, func(fe *FieldError) {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: fe.Field, Description: fe.Description})
	})
	if len(br.FieldViolations) == 0 {
		br.FieldViolations = []*errdetails.BadRequest_FieldViolation{{Field: field, Description: err.Error()}}
	}
	return br
}

func walk(err error, f func(*FieldError)) {
	if fe, ok := err.(*FieldError); ok {
		f(fe)
		// A FieldError names one field: what it wraps is its cause.
		return
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, f)
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			walk(e, f)
		}
	}
}

// FieldError is a request field that fails validation: Field is its path
// in the request as a client writes it ("players[2].seat"), Description
// what is wrong. Err, when set, is the sentinel it wraps (ErrInvalid), so
// errors.Is(fieldErr, ErrInvalid) holds.
type FieldError struct {
	Field       string
	Description string
	Err         error
}

// Field returns a *FieldError for field wrapping sentinel (nil for none).
func Field(sentinel error, field, description string) error {
	return &FieldError{Field: field, Description: description, Err: sentinel}
}

// Error reads "<sentinel>: <field>: <description>".
func (e *FieldError) Error() string {
	if e.Err == nil {
		return e.Field + ": " + e.Description
	}
	return e.Err.Error() + ": " + e.Field + ": " + e.Description
}

// Unwrap returns the sentinel.
func (e *FieldError) Unwrap() error { return e.Err }

// Info returns the ErrorInfo of a status error, or nil: for tests and
// clients that branch on the reason.
func Info(err error) *errdetails.ErrorInfo {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei
		}
	}
	return nil
}

// BadRequest returns the BadRequest of a status error, or nil.
func BadRequest(err error) *errdetails.BadRequest {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			return br
		}
	}
	return nil
}
