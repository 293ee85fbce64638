package authtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

// Hostile is a forged or broken credential that every service must refuse
// with UNAUTHENTICATED before any handler runs.
type Hostile struct {
	// Name says what is wrong, for test names.
	Name string
	// Authorization is the whole value of the "authorization" header;
	// empty means the call sends no such header.
	Authorization string
	// Reason is the ErrorInfo reason (domain fourkingdoms.auth.v1) the
	// refusal must carry.
	Reason string
}

// HostileTokens returns credentials that claim the identity id but must
// each be refused by a service trusting keys (the set the service was
// given, whose first key is used for the tokens that are well signed but
// invalid otherwise): a key not in the set (under a kid the set has, and
// under one it lacks), "alg": "none", HS256 with the public key as the HMAC
// secret, expired, not yet valid, issued in the future, another issuer,
// no token, and malformed headers.
func HostileTokens(tb testing.TB, keys *auth.KeySet, id auth.Identity, now time.Time) []Hostile {
	tb.Helper()
	trusted := keys.Keys()[0]
	if trusted.Private == nil {
		tb.Fatal("authtest.HostileTokens: the key set must hold its private key, to sign the tokens that fail for another reason")
	}
	_, foreign, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	good := claimsOf(id, now, time.Hour)
	expired := claimsOf(id, now.Add(-2*time.Hour), time.Hour)
	notYet := claimsOf(id, now, time.Hour)
	notYet.NotBefore = jwt.NewNumericDate(now.Add(10 * time.Minute))
	future := claimsOf(id, now.Add(10*time.Minute), time.Hour)
	otherIssuer := claimsOf(id, now, time.Hour)
	otherIssuer.Issuer = "someone-else"

	bearer := func(tok string) string { return "Bearer " + tok }
	sign := func(c jwt.Claims, kid string, key ed25519.PrivateKey) string {
		t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
		t.Header["kid"] = kid
		s, err := t.SignedString(key)
		if err != nil {
			tb.Fatal(err)
		}
		return bearer(s)
	}
	// The public key as a verifier holds it, used as an HMAC secret: the
	// classic key-confusion attack on libraries that let the token pick
	// its algorithm.
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, good)
	hs.Header["kid"] = trusted.ID
	hsTok, err := hs.SignedString([]byte(trusted.Public))
	if err != nil {
		tb.Fatal(err)
	}
	return []Hostile{
		{"ForeignKeyKnownKid", sign(good, trusted.ID, foreign), "INVALID_TOKEN"},
		{"ForeignKeyUnknownKid", sign(good, "not-in-the-set", foreign), "UNKNOWN_KEY"},
		{"AlgNone", bearer(unsigned(tb, "none", trusted.ID, good)), "INVALID_TOKEN"},
		{"HS256WithPublicKey", bearer(hsTok), "INVALID_TOKEN"},
		{"Expired", sign(expired, trusted.ID, trusted.Private), "TOKEN_EXPIRED"},
		{"NotYetValid", sign(notYet, trusted.ID, trusted.Private), "INVALID_TOKEN"},
		{"IssuedInFuture", sign(future, trusted.ID, trusted.Private), "INVALID_TOKEN"},
		{"OtherIssuer", sign(otherIssuer, trusted.ID, trusted.Private), "INVALID_TOKEN"},
		{"NoToken", "", auth.ReasonMissingToken},
		{"EmptyBearer", "Bearer ", auth.ReasonMissingToken},
		{"BasicScheme", "Basic dXNlcjpwYXNz", "MALFORMED_TOKEN"},
		{"NotAJWT", bearer("not.a-jwt"), "MALFORMED_TOKEN"},
	}
}

// RequireRefused fails tb unless err is the UNAUTHENTICATED refusal of h,
// with its ErrorInfo (domain fourkingdoms.auth.v1).
func RequireRefused(tb testing.TB, err error, h Hostile) {
	tb.Helper()
	RequireAuthError(tb, err, codes.Unauthenticated, h.Reason)
}

// RequireAuthError fails tb unless err has code and an ErrorInfo of domain
// fourkingdoms.auth.v1 with reason.
func RequireAuthError(tb testing.TB, err error, code codes.Code, reason string) {
	tb.Helper()
	if status.Code(err) != code {
		tb.Fatalf("got %v, want %v", err, code)
	}
	ei := rpcerr.Info(err)
	if ei.GetDomain() != string(rpcerr.Auth) || ei.GetReason() != reason {
		tb.Fatalf("ErrorInfo = %s/%s, want %s/%s (error %v)", ei.GetDomain(), ei.GetReason(), rpcerr.Auth, reason, err)
	}
}

func claimsOf(id auth.Identity, iat time.Time, ttl time.Duration) *tokenClaims {
	return &tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    auth.Issuer,
			Subject:   id.Subject,
			IssuedAt:  jwt.NewNumericDate(iat),
			ExpiresAt: jwt.NewNumericDate(iat.Add(ttl)),
		},
		Role: id.Role,
		Name: id.DisplayName,
	}
}

// tokenClaims mirrors the payload the deployment's tokens carry.
type tokenClaims struct {
	jwt.RegisteredClaims
	Role auth.Role `json:"role"`
	Name string    `json:"name,omitempty"`
}

// unsigned builds a token with the header's alg set to alg and an empty
// signature, as "alg": "none" tokens are.
func unsigned(tb testing.TB, alg, kid string, c jwt.Claims) string {
	tb.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": alg, "typ": "JWT", "kid": kid}) + "." + enc(c) + "."
}
