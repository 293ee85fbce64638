package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// ReasonKeysUnavailable is the ErrorInfo reason (domain
// fourkingdoms.auth.v1, code UNAVAILABLE) of a token whose provider key
// cannot be fetched now.
const ReasonKeysUnavailable = "KEYS_UNAVAILABLE"

// Verifier verifies the tokens a service accepts: the deployment's own,
// signed with Keys, and, when OIDC is set, the access tokens of an
// external OpenID Connect provider. A token goes to the provider's
// verifier when its "iss" claim is the provider's issuer, to Keys
// otherwise; each then checks the issuer, keys and algorithms of its own,
// so reading "iss" before the signature is checked decides only which
// checks apply, never whether they pass.
type Verifier struct {
	Keys *KeySet
	OIDC *OIDC // nil: the deployment's own tokens only
}

// Verify checks token at time now and returns the identity it carries;
// errors are those of [KeySet.Verify] and [OIDC.Verify].
func (v *Verifier) Verify(ctx context.Context, token string, now time.Time) (Identity, error) {
	if v.OIDC == nil {
		return v.Keys.Verify(token, now)
	}
	// The deployment's own tokens (every service token, every guest) skip
	// reading the payload once verified.
	if _, ok := v.Keys.cache.get(token); !ok && peekIssuer(token) == v.OIDC.Issuer() {
		return v.OIDC.Verify(ctx, token, now)
	}
	return v.Keys.Verify(token, now)
}

// peekIssuer returns the "iss" claim of a JWT without verifying anything,
// or "" when the token cannot be read.
func peekIssuer(token string) string {
	_, rest, ok := strings.Cut(token, ".")
	if !ok {
		return ""
	}
	payload, _, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	data, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return ""
	}
	var c struct {
		Iss string `json:"iss"`
	}
	if json.Unmarshal(data, &c) != nil {
		return ""
	}
	return c.Iss
}
