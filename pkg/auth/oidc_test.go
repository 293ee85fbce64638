package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

const (
	testIssuer   = "https://idp.example.test"
	testAudience = "fourkingdoms-api"
)

// provider is an OpenID Connect provider for tests: signing keys by kid,
// a JWKS endpoint serving their public parts, and a count of fetches.
type provider struct {
	srv *httptest.Server

	mu      sync.Mutex
	keys    map[string]providerKey
	fetches int
	failing bool
}

type providerKey struct {
	alg    string
	signer crypto.Signer
}

func newProvider(t *testing.T) *provider {
	t.Helper()
	p := &provider{keys: map[string]providerKey{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serveJWKS))
	t.Cleanup(func() {
		p.srv.Client().CloseIdleConnections()
		p.srv.Close()
	})
	return p
}

func (p *provider) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fetches++
	if p.failing {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	var keys []map[string]string
	for kid, k := range p.keys {
		keys = append(keys, publicJWK(kid, k))
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
}

func publicJWK(kid string, k providerKey) map[string]string {
	enc := base64.RawURLEncoding.EncodeToString
	switch pub := k.signer.Public().(type) {
	case *rsa.PublicKey:
		return map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": enc(pub.N.Bytes()), "e": enc(big.NewInt(int64(pub.E)).Bytes())}
	case *ecdsa.PublicKey:
		b, _ := pub.Bytes()
		return map[string]string{"kty": "EC", "kid": kid, "crv": "P-256", "x": enc(b[1:33]), "y": enc(b[33:])}
	case ed25519.PublicKey:
		return map[string]string{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": enc(pub)}
	}
	panic("unknown key type")
}

// add creates a key of alg named kid and publishes it.
func (p *provider) add(t *testing.T, kid, alg string) {
	t.Helper()
	var s crypto.Signer
	var err error
	switch alg {
	case AlgRS256:
		s, err = rsa.GenerateKey(rand.Reader, 2048)
	case AlgES256:
		s, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case AlgEdDSA:
		_, s, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[kid] = providerKey{alg: alg, signer: s}
}

func (p *provider) remove(kid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.keys, kid)
}

func (p *provider) setFailing(f bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failing = f
}

func (p *provider) fetchCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fetches
}

// claims returns valid claims of subject at t0, which tests change.
func validClaims(sub string) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": testIssuer, "aud": testAudience, "sub": sub,
		"iat": t0.Unix(), "exp": t0.Add(time.Hour).Unix(), "preferred_username": "alice",
	}
}

// sign signs c with the key kid, in that key's algorithm.
func (p *provider) sign(t *testing.T, kid string, c jwt.MapClaims) string {
	t.Helper()
	p.mu.Lock()
	k, ok := p.keys[kid]
	p.mu.Unlock()
	if !ok {
		t.Fatalf("no key %q", kid)
	}
	return signWith(t, k, kid, c)
}

func signWith(t *testing.T, k providerKey, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(k.alg), c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k.signer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fakeClock is the rate limit's clock, moved by the test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newOIDC(t *testing.T, p *provider) (*OIDC, *fakeClock) {
	t.Helper()
	cfg := DefaultOIDCConfig()
	cfg.Issuer, cfg.Audience, cfg.JWKSURL = testIssuer, testAudience, p.srv.URL+"/jwks"
	o, err := NewOIDC(cfg, p.srv.Client(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{now: t0}
	o.clock = clk.Now
	return o, clk
}

func TestOIDCAcceptsEachAlgorithm(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	for _, alg := range []string{AlgRS256, AlgES256, AlgEdDSA} {
		p.add(t, "k-"+alg, alg)
	}
	o, _ := newOIDC(t, p)
	for _, alg := range []string{AlgRS256, AlgES256, AlgEdDSA} {
		t.Run(alg, func(t *testing.T) {
			id, err := o.Verify(t.Context(), p.sign(t, "k-"+alg, validClaims("user-1")), t0)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			want := Identity{Subject: OIDCPlayerID(testIssuer, "user-1"), Role: RolePlayer, DisplayName: "alice", ExpiresAt: t0.Add(time.Hour), Account: true}
			if id != want {
				t.Fatalf("Verify = %+v, want %+v", id, want)
			}
		})
	}
	// The first token fetched the set; the other two found their keys in it.
	if n := p.fetchCount(); n != 1 {
		t.Errorf("JWKS fetched %d times, want 1", n)
	}
}

func TestOIDCRefusals(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	p.add(t, "rsa", AlgRS256)
	p.add(t, "ec", AlgES256)
	o, _ := newOIDC(t, p)
	with := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := validClaims("user-1")
		change(c)
		return c
	}
	p.mu.Lock()
	rsaKey := p.keys["rsa"]
	p.mu.Unlock()
	rsaPub := rsaKey.signer.Public().(*rsa.PublicKey)
	enc := base64.RawURLEncoding.EncodeToString

	// alg none: a header and payload with an empty signature.
	noneTok := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, validClaims("user-1"))
		tok.Header["kid"] = "rsa"
		s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}()
	// HS256 with the RSA public key (as the JWKS publishes it, and as PEM
	// bytes would be) as the HMAC secret: the classic confusion attack.
	hsTok := func(secret []byte) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, validClaims("user-1"))
		tok.Header["kid"] = "rsa"
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// A token naming the RSA key but signed by another RSA key.
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forged := signWith(t, providerKey{alg: AlgRS256, signer: otherRSA}, "rsa", validClaims("user-1"))
	// An ES256 signature under a kid whose key is RSA.
	p.mu.Lock()
	ecKey := p.keys["ec"]
	p.mu.Unlock()
	mismatched := signWith(t, ecKey, "rsa", validClaims("user-1"))
	// The payload of a valid token changed after signing.
	valid := p.sign(t, "rsa", validClaims("user-1"))
	parts := strings.Split(valid, ".")
	parts[1] = enc([]byte(`{"iss":"` + testIssuer + `","aud":"` + testAudience + `","sub":"admin","exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `}`))
	tampered := strings.Join(parts, ".")

	tests := []struct {
		name    string
		token   string
		wantErr error
		wantMsg string
	}{
		{"alg none", noneTok, ErrInvalidToken, "signing method none is invalid"},
		{"HS256 with the JWK modulus as secret", hsTok(rsaPub.N.Bytes()), ErrInvalidToken, "signing method HS256 is invalid"},
		{"HS256 with the JWKS JSON as secret", hsTok([]byte(`{"kty":"RSA","n":"` + enc(rsaPub.N.Bytes()) + `","e":"AQAB"}`)), ErrInvalidToken, "signing method HS256 is invalid"},
		{"signed by another key", forged, ErrInvalidToken, "signature is invalid"},
		{"algorithm of another key type", mismatched, ErrInvalidToken, `alg "ES256" does not match key "rsa"`},
		{"payload changed", tampered, ErrInvalidToken, "signature is invalid"},
		{"wrong issuer", p.sign(t, "rsa", with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), ErrInvalidToken, "issuer must be"},
		{"wrong audience", p.sign(t, "rsa", with(func(c jwt.MapClaims) { c["aud"] = "another-app" })), ErrInvalidToken, "audience must include"},
		{"no audience", p.sign(t, "rsa", with(func(c jwt.MapClaims) { delete(c, "aud") })), ErrInvalidToken, "aud claim is required"},
		{"expired", p.sign(t, "rsa", with(func(c jwt.MapClaims) { c["exp"] = t0.Add(-time.Minute).Unix() })), ErrExpiredToken, "token expired"},
		{"no expiry", p.sign(t, "rsa", with(func(c jwt.MapClaims) { delete(c, "exp") })), ErrInvalidToken, "exp"},
		{"not valid yet", p.sign(t, "rsa", with(func(c jwt.MapClaims) { c["nbf"] = t0.Add(time.Minute).Unix() })), ErrInvalidToken, "not valid yet"},
		{"issued in the future", p.sign(t, "rsa", with(func(c jwt.MapClaims) { c["iat"] = t0.Add(time.Minute).Unix() })), ErrInvalidToken, "issued in the future"},
		{"no subject", p.sign(t, "rsa", with(func(c jwt.MapClaims) { delete(c, "sub") })), ErrInvalidToken, "no sub claim"},
		{"no kid", strings.Replace(valid, parts[0], enc([]byte(`{"alg":"RS256","typ":"JWT"}`)), 1), ErrMalformedToken, "no kid"},
		{"unknown kid", signWith(t, providerKey{alg: AlgRS256, signer: otherRSA}, "nope", validClaims("user-1")), ErrUnknownKey, `"nope"`},
		{"garbage", "not.a.jwt", ErrMalformedToken, "malformed"},
		{"empty", "", ErrMissingToken, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := o.Verify(t.Context(), tt.token, t0)
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Verify err = %v, want %v containing %q", err, tt.wantErr, tt.wantMsg)
			}
		})
	}
	// Just inside the clock skew, expiry and nbf still pass.
	skewed := p.sign(t, "rsa", with(func(c jwt.MapClaims) {
		c["exp"] = t0.Add(-ClockSkew / 2).Unix()
		c["nbf"] = t0.Add(ClockSkew / 2).Unix()
	}))
	if _, err := o.Verify(t.Context(), skewed, t0); err != nil {
		t.Errorf("token within the clock skew: %v", err)
	}
}

// TestOIDCRefusalStatuses checks what a client sees through the verifier
// the services use: the code, the ErrorInfo reason, and a message saying
// what is wrong once.
func TestOIDCRefusalStatuses(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	p.add(t, "rsa", AlgRS256)
	o, clk := newOIDC(t, p)
	own := mustKeys(t, "own")
	v := &Verifier{Keys: own, OIDC: o}
	guest, _, err := own.Sign(Identity{Subject: "g-guest", Role: RolePlayer}, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	wrongAud := validClaims("u")
	wrongAud["aud"] = "x"
	tests := []struct {
		name   string
		token  string
		code   codes.Code
		reason string
		msg    string
	}{
		{"provider token", p.sign(t, "rsa", validClaims("u")), codes.OK, "", ""},
		{"own token", guest, codes.OK, "", ""},
		{"wrong audience", p.sign(t, "rsa", wrongAud), codes.Unauthenticated, "INVALID_TOKEN", "invalid token: audience must include \"fourkingdoms-api\""},
		{"foreign issuer", signWith(t, p.keys["rsa"], "rsa", func() jwt.MapClaims { c := validClaims("u"); c["iss"] = "https://other"; return c }()), codes.Unauthenticated, "INVALID_TOKEN", "invalid token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := metadata.NewIncomingContext(t.Context(), metadata.Pairs("authorization", "Bearer "+tt.token))
			id, err := v.Authenticate(ctx, t0)
			if status.Code(err) != tt.code {
				t.Fatalf("Authenticate = %+v, %v; want %v", id, err, tt.code)
			}
			if tt.code == codes.OK {
				return
			}
			if info := rpcerr.Info(err); info.GetDomain() != string(rpcerr.Auth) || info.GetReason() != tt.reason {
				t.Errorf("ErrorInfo %v, want %s %s", info, rpcerr.Auth, tt.reason)
			}
			msg := status.Convert(err).Message()
			if !strings.HasPrefix(msg, tt.msg) || strings.Count(msg, "invalid token") != 1 {
				t.Errorf("message %q, want it to start with %q and say \"invalid token\" once", msg, tt.msg)
			}
		})
	}

	// The provider down and the key not cached: UNAVAILABLE, retryable.
	p.add(t, "new", AlgES256)
	p.setFailing(true)
	clk.Advance(o.cfg.MinRefreshInterval)
	ctx := metadata.NewIncomingContext(t.Context(), metadata.Pairs("authorization", "Bearer "+p.sign(t, "new", validClaims("u"))))
	_, err = v.Authenticate(ctx, t0)
	if status.Code(err) != codes.Unavailable || rpcerr.Info(err).GetReason() != ReasonKeysUnavailable {
		t.Fatalf("provider down: %v, want UNAVAILABLE %s", err, ReasonKeysUnavailable)
	}
}

// TestOIDCKeyRotation follows a provider's rotation: a token signed with
// a new key makes one fetch, however many arrive at once; after the old
// key is withdrawn from the JWKS, its tokens (even ones verified before)
// are refused once the set has been fetched again.
func TestOIDCKeyRotation(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	p.add(t, "old", AlgRS256)
	o, clk := newOIDC(t, p)
	oldTok := p.sign(t, "old", validClaims("u"))
	if _, err := o.Verify(t.Context(), oldTok, t0); err != nil {
		t.Fatal(err)
	}
	if n := p.fetchCount(); n != 1 {
		t.Fatalf("fetches after the first token: %d, want 1", n)
	}

	p.add(t, "new", AlgES256)
	clk.Advance(o.cfg.MinRefreshInterval) // the provider published the key a while ago
	newTok := p.sign(t, "new", validClaims("u"))
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			if _, err := o.Verify(context.Background(), newTok, t0); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("token of the new key: %v", err)
	}
	if n := p.fetchCount(); n != 2 {
		t.Fatalf("fetches after 32 concurrent tokens of a new key: %d, want 2", n)
	}

	p.remove("old")
	if _, err := o.Verify(t.Context(), oldTok, t0); err != nil {
		t.Fatalf("old key before the next refresh: %v (it is still cached, as it should be)", err)
	}
	clk.Advance(o.cfg.MinRefreshInterval)
	if err := o.refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Verify(t.Context(), oldTok, t0); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("token of the withdrawn key after a refresh: %v, want %v", err, ErrUnknownKey)
	}
	if _, err := o.Verify(t.Context(), newTok, t0); err != nil {
		t.Fatalf("token of the new key after the refresh: %v", err)
	}
}

// TestOIDCRefreshRateLimit sends a stampede of tokens naming unknown key
// ids: the provider sees one fetch per MinRefreshInterval, not one per
// token, and a failed fetch keeps the keys already held.
func TestOIDCRefreshRateLimit(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	p.add(t, "k", AlgEdDSA)
	o, clk := newOIDC(t, p)
	good := p.sign(t, "k", validClaims("u"))
	if _, err := o.Verify(t.Context(), good, t0); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	k := p.keys["k"]
	p.mu.Unlock()
	stampede := func() {
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				tok := signWith(t, k, fmt.Sprintf("random-%d", i), validClaims("u"))
				if _, err := o.Verify(context.Background(), tok, t0); !errors.Is(err, ErrUnknownKey) {
					t.Errorf("unknown kid: %v, want %v", err, ErrUnknownKey)
				}
			})
		}
		wg.Wait()
	}
	stampede()
	if n := p.fetchCount(); n != 1 {
		t.Fatalf("fetches after 200 unknown kids within the minimum interval: %d, want 1 (the first token's)", n)
	}
	clk.Advance(o.cfg.MinRefreshInterval - time.Second)
	stampede()
	if n := p.fetchCount(); n != 1 {
		t.Fatalf("fetches before the minimum interval passed: %d, want 1", n)
	}
	clk.Advance(time.Second)
	stampede()
	if n := p.fetchCount(); n != 2 {
		t.Fatalf("fetches once the minimum interval passed: %d, want 2", n)
	}

	// The provider fails: known keys still work, the timer's refresh is
	// limited as well.
	p.setFailing(true)
	clk.Advance(o.cfg.MinRefreshInterval)
	if err := o.refresh(t.Context()); err == nil {
		t.Fatal("refresh with the provider down succeeded")
	}
	if err := o.refresh(t.Context()); err == nil {
		t.Fatal("a rate-limited refresh must report the last fetch's failure")
	}
	if n := p.fetchCount(); n != 3 {
		t.Fatalf("fetches: %d, want 3", n)
	}
	if _, err := o.Verify(t.Context(), good, t0); err != nil {
		t.Fatalf("known key while the provider is down: %v", err)
	}
}

// TestOIDCRunFetchesAndStops checks the refresher goroutine: it fetches at
// start and returns when its context ends (TestMain checks for leaks).
func TestOIDCRunFetchesAndStops(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	p.add(t, "k", AlgES256)
	o, _ := newOIDC(t, p)
	o.clock = time.Now
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for o.cur.Load().keys == nil {
		if time.Now().After(deadline) {
			t.Fatal("Run did not fetch the keys")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if n := p.fetchCount(); n != 1 {
		t.Errorf("fetches: %d, want 1", n)
	}
}

func TestOIDCPlayerID(t *testing.T) {
	t.Parallel()
	a := OIDCPlayerID("https://idp.example", "123")
	if a != OIDCPlayerID("https://idp.example", "123") {
		t.Fatal("not stable")
	}
	if len(a) != 26 || !strings.HasPrefix(a, OIDCPlayerIDPrefix) || strings.ToLower(a) != a {
		t.Fatalf("id %q: want %q and 24 lowercase base32 characters", a, OIDCPlayerIDPrefix)
	}
	distinct := map[string]bool{a: true}
	for _, other := range [][2]string{{"https://idp.example/", "123"}, {"https://idp.example", "1234"}, {"https://idp.example1", "23"}, {"https://other", "123"}} {
		id := OIDCPlayerID(other[0], other[1])
		if distinct[id] {
			t.Errorf("OIDCPlayerID%q collides", other)
		}
		distinct[id] = true
	}
}

func TestOIDCDisplayName(t *testing.T) {
	t.Parallel()
	tests := []struct{ preferred, name, want string }{
		{"alice", "Alice A.", "alice"},
		{"", "Alice A.", "Alice A."},
		{"  \u200b\x07 ", "Bob", "Bob"},
		{strings.Repeat("é", 40), "", strings.Repeat("é", MaxDisplayName)},
		{"", "", "Player-ABCD"},
	}
	for _, tt := range tests {
		if got := oidcDisplayName("o-abcdefgh", tt.preferred, tt.name); got != tt.want {
			t.Errorf("oidcDisplayName(%q, %q) = %q, want %q", tt.preferred, tt.name, got, tt.want)
		}
	}
}

func TestOIDCConfigValidate(t *testing.T) {
	t.Parallel()
	ok := DefaultOIDCConfig()
	ok.Issuer, ok.Audience, ok.JWKSURL = "https://idp", "api", "https://idp/jwks"
	tests := []struct {
		name   string
		change func(*OIDCConfig)
		want   string // substring of the error; empty: valid
	}{
		{"valid", func(*OIDCConfig) {}, ""},
		{"off", func(c *OIDCConfig) { *c = DefaultOIDCConfig() }, ""},
		{"loopback http", func(c *OIDCConfig) { c.JWKSURL = "http://127.0.0.1:9/jwks" }, ""},
		{"half configured", func(c *OIDCConfig) { c.Issuer = "" }, "need OIDC_ISSUER"},
		{"no audience", func(c *OIDCConfig) { c.Audience = "" }, "audience is required"},
		{"plain http", func(c *OIDCConfig) { c.JWKSURL = "http://idp/jwks" }, "must be https"},
		{"no url", func(c *OIDCConfig) { c.JWKSURL = "" }, "JWKS URL is required"},
		{"own issuer", func(c *OIDCConfig) { c.Issuer = Issuer }, "own token issuer"},
		{"refresh below minimum", func(c *OIDCConfig) { c.RefreshInterval = time.Second }, "must be >="},
		{"no minimum", func(c *OIDCConfig) { c.MinRefreshInterval = 0 }, "must be positive"},
	}
	for _, tt := range tests {
		c := ok
		tt.change(&c)
		err := c.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Validate = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestParseJWKS(t *testing.T) {
	t.Parallel()
	ed := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		name     string
		doc      string
		kids     int
		skipped  int
		errorHas string
	}{
		{"one Ed25519", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"` + ed + `"}]}`, 1, 0, ""},
		{"encryption key skipped", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"` + ed + `"},{"kty":"RSA","use":"enc","kid":"e"}]}`, 1, 1, ""},
		{"other algorithm skipped", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"` + ed + `"},{"kty":"RSA","alg":"PS256","kid":"p","n":"AQAB","e":"AQAB"}]}`, 1, 1, ""},
		{"other curve skipped", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"` + ed + `"},{"kty":"EC","crv":"P-384","kid":"c"}]}`, 1, 1, ""},
		{"no kid skipped", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"` + ed + `"},{"kty":"OKP","crv":"Ed25519","x":"` + ed + `"}]}`, 1, 1, ""},
		{"nothing usable", `{"keys":[{"kty":"oct","kid":"s","k":"c2VjcmV0"}]}`, 0, 0, "no usable"},
		{"duplicate kid", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"` + ed + `"},{"kty":"OKP","crv":"Ed25519","kid":"a","x":"` + ed + `"}]}`, 0, 0, "two keys"},
		{"short RSA", `{"keys":[{"kty":"RSA","kid":"r","n":"` + base64.RawURLEncoding.EncodeToString(make([]byte, 128)) + `","e":"AQAB"}]}`, 0, 0, "at least 2048"},
		{"EC point off the curve", `{"keys":[{"kty":"EC","crv":"P-256","kid":"c","x":"` + ed + `","y":"` + ed + `"}]}`, 0, 0, "P-256 key"},
		{"short Ed25519", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"AAAA"}]}`, 0, 0, "32 bytes"},
		{"not JSON", `{`, 0, 0, "decode JSON"},
	}
	for _, tt := range tests {
		keys, skipped, err := parseJWKS([]byte(tt.doc))
		if tt.errorHas != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errorHas) {
				t.Errorf("%s: err = %v, want %q", tt.name, err, tt.errorHas)
			}
			continue
		}
		if err != nil || len(keys) != tt.kids || len(skipped) != tt.skipped {
			t.Errorf("%s: %d keys, skipped %q, err %v; want %d keys, %d skipped", tt.name, len(keys), skipped, err, tt.kids, tt.skipped)
		}
	}
}

func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"c","x":"","y":""}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, _, err := parseJWKS(data)
		if err == nil && len(keys) == 0 {
			t.Fatal("no error and no keys")
		}
		for kid, k := range keys {
			if kid == "" || k.key == nil || (k.alg != AlgRS256 && k.alg != AlgES256 && k.alg != AlgEdDSA) {
				t.Fatalf("key %q: %+v", kid, k)
			}
		}
	})
}
