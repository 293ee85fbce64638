package authtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
)

// Provider is an OpenID Connect provider for tests: an Ed25519 signing key
// and an HTTP server publishing it as a JWKS. Point a service at it with
// [Provider.Config] (OIDC_ISSUER, OIDC_AUDIENCE, OIDC_JWKS_URL) and sign
// in with [Provider.Token].
type Provider struct {
	// Issuer and Audience are the tokens' "iss" and "aud".
	Issuer, Audience string

	srv *httptest.Server
	mu  sync.Mutex
	kid string
	key ed25519.PrivateKey
}

// NewProvider starts a provider, stopped when tb ends.
func NewProvider(tb testing.TB) *Provider {
	tb.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Provider{Issuer: "https://idp.test", Audience: "fourkingdoms-test", kid: "idp-1", key: key}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serveJWKS))
	tb.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

func (p *Provider) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.Header().Set("Content-Type", "application/jwk-set+json")
	_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
		"kty": "OKP", "crv": "Ed25519", "use": "sig", "kid": p.kid,
		"x": base64.RawURLEncoding.EncodeToString(p.key.Public().(ed25519.PublicKey)),
	}}})
}

// JWKSURL returns the address of the provider's key set.
func (p *Provider) JWKSURL() string { return p.srv.URL + "/jwks" }

// Config returns the services' settings for this provider.
func (p *Provider) Config() auth.OIDCConfig {
	c := auth.DefaultOIDCConfig()
	c.Issuer, c.Audience, c.JWKSURL = p.Issuer, p.Audience, p.JWKSURL()
	return c
}

// Env returns the same settings as environment variables.
func (p *Provider) Env() map[string]string {
	return map[string]string{"OIDC_ISSUER": p.Issuer, "OIDC_AUDIENCE": p.Audience, "OIDC_JWKS_URL": p.JWKSURL()}
}

// Token signs an access token for the account sub, named name, valid for
// ttl from now. Its player id is auth.OIDCPlayerID(p.Issuer, sub).
func (p *Provider) Token(tb testing.TB, sub, name string, ttl time.Duration) string {
	tb.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": p.Issuer, "aud": p.Audience, "sub": sub, "preferred_username": name,
		"iat": now.Unix(), "exp": now.Add(ttl).Unix(),
	})
	tok.Header["kid"] = p.kid
	s, err := tok.SignedString(p.key)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
