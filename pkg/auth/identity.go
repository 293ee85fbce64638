package auth

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

// Role is what a caller may do.
type Role string

// The roles a token can carry.
const (
	RolePlayer   Role = "player"   // a human or bot player; Subject is the player id
	RoleService  Role = "service"  // another backend service; Subject is its name
	RoleOperator Role = "operator" // an administrator
)

func (r Role) valid() bool {
	return r == RolePlayer || r == RoleService || r == RoleOperator
}

// Identity is an authenticated caller.
type Identity struct {
	Subject     string    // player id or service name
	Role        Role      // what the caller may do
	DisplayName string    // shown to other players; may be empty for services
	Bot         bool      // the player is a bot
	ExpiresAt   time.Time // when the token proving this identity expires
	// Account is true when the token is an access token of the
	// deployment's OpenID Connect provider (the player is an account
	// there, not a guest); such identities are never minted by this
	// deployment's keys.
	Account bool
}

func (id Identity) validate() error {
	if id.Subject == "" {
		return fmt.Errorf("identity: empty subject")
	}
	if !id.Role.valid() {
		return fmt.Errorf("identity: unknown role %q", id.Role)
	}
	return nil
}

type identityKey struct{}

// NewContext returns a context carrying id.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the caller's identity, if the call was authenticated.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// ReasonMissingToken is the ErrorInfo reason (domain fourkingdoms.auth.v1)
// of a call without a token.
const ReasonMissingToken = "MISSING_TOKEN"

// NoIdentity returns the UNAUTHENTICATED status error for a call that
// needs a token and has no identity in its context, with an ErrorInfo of
// domain fourkingdoms.auth.v1 and reason MISSING_TOKEN. Handlers return it
// as is.
func NoIdentity() error {
	return rpcerr.Auth.Error(codes.Unauthenticated, ReasonMissingToken, "this call needs a token: send metadata \"authorization: Bearer <token>\"", nil)
}

// RequireRole returns nil if the caller has one of roles. Otherwise it
// returns a gRPC status error with an ErrorInfo of domain
// fourkingdoms.auth.v1: UNAUTHENTICATED (MISSING_TOKEN) without an
// identity, PERMISSION_DENIED (ROLE_NOT_ALLOWED) with the wrong role.
// Handlers return the error as is.
func RequireRole(ctx context.Context, roles ...Role) error {
	id, ok := FromContext(ctx)
	if !ok {
		return NoIdentity()
	}
	if slices.Contains(roles, id.Role) {
		return nil
	}
	return rpcerr.Auth.Error(codes.PermissionDenied, "ROLE_NOT_ALLOWED", fmt.Sprintf("role %q may not make this call (allowed: %v)", id.Role, roles), nil)
}
