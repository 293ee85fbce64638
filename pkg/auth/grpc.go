package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

// MetadataKey is the gRPC metadata key carrying "Bearer <token>".
const MetadataKey = "authorization"

const bearerPrefix = "bearer "

// TokenFromMetadata returns the bearer token of an incoming call, or
// ErrMissingToken / ErrMalformedToken.
func TokenFromMetadata(ctx context.Context) (string, error) {
	// Not FromIncomingContext: that copies every header of the call.
	vals := metadata.ValueFromIncomingContext(ctx, MetadataKey)
	switch len(vals) {
	case 0:
		return "", ErrMissingToken
	case 1:
	default:
		return "", fmt.Errorf("%w: %d authorization headers", ErrMalformedToken, len(vals))
	}
	v := vals[0]
	if len(v) < len(bearerPrefix) || !strings.EqualFold(v[:len(bearerPrefix)], bearerPrefix) {
		return "", fmt.Errorf("%w: authorization must be \"Bearer <token>\"", ErrMalformedToken)
	}
	tok := strings.TrimSpace(v[len(bearerPrefix):])
	if tok == "" {
		return "", ErrMissingToken
	}
	return tok, nil
}

// Authenticate verifies the bearer token of an incoming call at time now
// against ks alone; see [Verifier.Authenticate].
func (ks *KeySet) Authenticate(ctx context.Context, now time.Time) (Identity, error) {
	return (&Verifier{Keys: ks}).Authenticate(ctx, now)
}

// Authenticate verifies the bearer token of an incoming call at time now.
// Its error is a gRPC status whose message tells a client developer what
// to fix, with an ErrorInfo of domain fourkingdoms.auth.v1: UNAUTHENTICATED
// with reason MISSING_TOKEN, TOKEN_EXPIRED, UNKNOWN_KEY, MALFORMED_TOKEN or
// INVALID_TOKEN, or UNAVAILABLE with KEYS_UNAVAILABLE when the token names
// a provider's key that cannot be fetched now (retry later).
func (v *Verifier) Authenticate(ctx context.Context, now time.Time) (Identity, error) {
	tok, err := TokenFromMetadata(ctx)
	if err == nil {
		var id Identity
		id, err = v.Verify(ctx, tok, now)
		if err == nil {
			return id, nil
		}
	}
	code := codes.Unauthenticated
	var msg, reason string
	switch {
	case errors.Is(err, ErrMissingToken):
		msg, reason = "missing token: send metadata \"authorization: Bearer <token>\" (guests get one from fourkingdoms.auth.v1.AuthService/GuestLogin)", ReasonMissingToken
	case errors.Is(err, ErrExpiredToken):
		msg, reason = "token expired: obtain a new token (RefreshSession, or your identity provider) and retry", "TOKEN_EXPIRED"
	case errors.Is(err, ErrUnknownKey):
		msg, reason = "token signed with an unknown key (kid): it was issued by another deployment or with a retired key; obtain a new token", "UNKNOWN_KEY"
	case errors.Is(err, ErrKeysUnavailable):
		code, msg, reason = codes.Unavailable, err.Error()+": retry later", ReasonKeysUnavailable
	case errors.Is(err, ErrMalformedToken):
		msg, reason = err.Error(), "MALFORMED_TOKEN" // already starts with "malformed token: "
	case errors.Is(err, ErrInvalidToken):
		msg, reason = err.Error(), "INVALID_TOKEN" // already starts with "invalid token: "
	default:
		msg, reason = "invalid token: "+err.Error(), "INVALID_TOKEN"
	}
	return Identity{}, rpcerr.Auth.Error(code, reason, msg, nil)
}

// BearerToken returns per-RPC credentials sending a fixed token, for clients
// that obtained a token (e.g. from GuestLogin). With insecure set, the token
// is also sent over plaintext connections; use that only on loopback.
func BearerToken(token string, insecure bool) credentials.PerRPCCredentials {
	return bearer{token: token, insecure: insecure}
}

type bearer struct {
	token    string
	insecure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{MetadataKey: "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return !b.insecure }

// ServiceCredentials returns per-RPC credentials for calls between services:
// a token for the service identity name (role service), signed with ks,
// minted on first use and re-minted once less than a third of its ttl
// remains. now is the clock (time.Now in production). With insecure set,
// tokens are also sent over plaintext connections.
func ServiceCredentials(ks *KeySet, name string, ttl time.Duration, insecure bool, now func() time.Time) (credentials.PerRPCCredentials, error) {
	if !ks.CanSign() {
		return nil, fmt.Errorf("service credentials for %q: %w", name, ErrCannotSign)
	}
	id := Identity{Subject: name, Role: RoleService, DisplayName: name}
	if err := id.validate(); err != nil {
		return nil, err
	}
	if ttl < 3*time.Second {
		return nil, fmt.Errorf("service credentials: ttl %v too short", ttl)
	}
	return &serviceCreds{ks: ks, id: id, ttl: ttl, insecure: insecure, now: now}, nil
}

type serviceCreds struct {
	ks       *KeySet
	id       Identity
	ttl      time.Duration
	insecure bool
	now      func() time.Time

	mu    sync.Mutex
	token string
	exp   time.Time
}

func (s *serviceCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.token == "" || s.exp.Sub(now) < s.ttl/3 {
		tok, exp, err := s.ks.Sign(s.id, now, s.ttl)
		if err != nil {
			return nil, fmt.Errorf("mint service token: %w", err)
		}
		s.token, s.exp = tok, exp
	}
	return map[string]string{MetadataKey: "Bearer " + s.token}, nil
}

func (s *serviceCreds) RequireTransportSecurity() bool { return !s.insecure }
