package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
)

// ErrKeysUnavailable means a token names a key that is not cached and the
// provider's JWKS could not be fetched: retrying later may succeed.
var ErrKeysUnavailable = errors.New("the identity provider's keys cannot be fetched")

// OIDCConfig selects an external OpenID Connect provider whose access
// tokens every service accepts besides its own tokens. The zero value (no
// issuer) turns it off.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL, exactly as its tokens' "iss"
	// claim writes it ("https://accounts.example.com"). Empty: off.
	Issuer string
	// Audience is the value the tokens' "aud" claim must contain: the
	// API's identifier (or client id) registered at the provider.
	Audience string
	// JWKSURL is the provider's JSON Web Key Set ("jwks_uri" of its
	// discovery document). https, or http on a loopback host only.
	JWKSURL string
	// RefreshInterval is how often the key set is fetched again, so that
	// a key the provider removed stops being accepted.
	RefreshInterval time.Duration
	// MinRefreshInterval is the least time between two fetches, whatever
	// asks for them: tokens naming unknown key ids cannot make the
	// services hammer the provider.
	MinRefreshInterval time.Duration
}

// DefaultOIDCConfig returns the defaults: off, keys fetched hourly, at
// most every 30 seconds.
func DefaultOIDCConfig() OIDCConfig {
	return OIDCConfig{RefreshInterval: time.Hour, MinRefreshInterval: 30 * time.Second}
}

// Enabled reports whether a provider is configured.
func (c OIDCConfig) Enabled() bool { return c.Issuer != "" }

// Validate reports every invalid setting; a disabled config must leave
// the audience and JWKS URL empty too, so that a half-configured provider
// is caught at start rather than silently ignored.
func (c OIDCConfig) Validate() error {
	if !c.Enabled() {
		if c.Audience != "" || c.JWKSURL != "" {
			return errors.New("oidc: OIDC_AUDIENCE and OIDC_JWKS_URL need OIDC_ISSUER")
		}
		return nil
	}
	var errs []error
	if c.Issuer == Issuer {
		errs = append(errs, fmt.Errorf("oidc: issuer %q is this deployment's own token issuer", Issuer))
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("oidc: audience is required (OIDC_AUDIENCE): without it tokens issued to any other application of the provider would be accepted"))
	}
	if err := checkJWKSURL(c.JWKSURL); err != nil {
		errs = append(errs, err)
	}
	if c.MinRefreshInterval <= 0 {
		errs = append(errs, fmt.Errorf("oidc: minimum JWKS refresh interval must be positive, got %v", c.MinRefreshInterval))
	}
	if c.RefreshInterval < c.MinRefreshInterval {
		errs = append(errs, fmt.Errorf("oidc: JWKS refresh interval (%v) must be >= the minimum refresh interval (%v)", c.RefreshInterval, c.MinRefreshInterval))
	}
	return errors.Join(errs...)
}

func checkJWKSURL(s string) error {
	if s == "" {
		return errors.New("oidc: JWKS URL is required (OIDC_JWKS_URL)")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("oidc: JWKS URL: %w", err)
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("oidc: JWKS URL %q must be https (http only on a loopback host): the keys decide who may sign in", s)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fetchTimeout bounds one JWKS fetch, including a call that waits for it.
const fetchTimeout = 10 * time.Second

// maxJWKSBytes bounds the JWKS document read; real ones are a few KiB.
const maxJWKSBytes = 1 << 20

// OIDC verifies access tokens of an external OpenID Connect provider
// against its published keys (JWKS), which it fetches and caches.
//
// The keys are fetched by [OIDC.Run] at start and every RefreshInterval,
// and on demand when a token names a key id not in the cache; every fetch,
// whatever asked for it, waits for MinRefreshInterval since the previous
// attempt, and calls that need one while a fetch runs share it. A failed
// fetch keeps the keys already held. A key the provider removed is refused
// from the next successful fetch on, even for tokens verified before (the
// verified-token cache belongs to one key set).
type OIDC struct {
	cfg    OIDCConfig
	client *http.Client
	log    *slog.Logger
	clock  func() time.Time // the rate limit's clock; time.Now but in tests

	cur atomic.Pointer[oidcKeys]

	mu          sync.Mutex
	lastAttempt time.Time
	lastErr     error         // of the last fetch; nil after a success
	fetching    chan struct{} // closed when the running fetch ends; nil when none runs
	fetches     int           // fetches made, for tests and logs
}

// oidcKeys is one fetched key set with the tokens verified against it.
type oidcKeys struct {
	keys  map[string]jwk
	cache verified
}

// NewOIDC returns a verifier for cfg (which must be enabled and valid).
// client makes the JWKS requests (nil: a client with a 10 s timeout).
func NewOIDC(cfg OIDCConfig, client *http.Client, log *slog.Logger) (*OIDC, error) {
	if !cfg.Enabled() {
		return nil, errors.New("oidc: no issuer configured")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	o := &OIDC{cfg: cfg, client: client, log: log, clock: time.Now}
	o.cur.Store(&oidcKeys{})
	return o, nil
}

// Issuer returns the provider's issuer.
func (o *OIDC) Issuer() string { return o.cfg.Issuer }

// Run keeps the keys fresh until ctx ends: it fetches them at once, then
// every RefreshInterval; after a failed fetch it tries again sooner, with
// a backoff from MinRefreshInterval up to RefreshInterval. It returns nil
// when ctx ends. Failures are logged, not returned: tokens of the
// deployment's own keys work without the provider.
func (o *OIDC) Run(ctx context.Context) error {
	b := backoff.New(backoff.Policy{Initial: o.cfg.MinRefreshInterval, Max: o.cfg.RefreshInterval})
	for {
		wait := o.cfg.RefreshInterval
		if err := o.refresh(ctx); err != nil {
			wait = b.Next()
			o.log.WarnContext(ctx, "oidc keys not fetched", "jwks_url", o.cfg.JWKSURL, "error", err, "retry_in", wait)
		} else {
			b.Reset()
		}
		if backoff.Sleep(ctx, wait) != nil {
			return nil
		}
	}
}

// refresh fetches the keys unless the last attempt was less than
// MinRefreshInterval ago, or joins the fetch already running. It returns
// the error of the last fetch (which may be an earlier one).
func (o *OIDC) refresh(ctx context.Context) error {
	o.mu.Lock()
	if ch := o.fetching; ch != nil {
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.lastErr
	}
	now := o.clock()
	if !o.lastAttempt.IsZero() && now.Sub(o.lastAttempt) < o.cfg.MinRefreshInterval {
		defer o.mu.Unlock()
		return o.lastErr
	}
	o.lastAttempt = now
	ch := make(chan struct{})
	o.fetching = ch
	o.fetches++
	o.mu.Unlock()

	// Not the caller's context: other calls wait for this fetch, and one
	// caller going away must not fail it for them.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	err := o.fetch(fctx)
	cancel()

	o.mu.Lock()
	o.lastErr = err
	o.fetching = nil
	close(ch)
	o.mu.Unlock()
	return err
}

// fetch downloads and installs the key set.
func (o *OIDC) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.cfg.JWKSURL, nil)
	if err != nil {
		return fmt.Errorf("jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch jwks: %s answered %s", o.cfg.JWKSURL, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("fetch jwks: %w", err)
	}
	if len(data) > maxJWKSBytes {
		return fmt.Errorf("fetch jwks: document larger than %d bytes", maxJWKSBytes)
	}
	keys, skipped, err := parseJWKS(data)
	if err != nil {
		return err
	}
	old := o.cur.Load()
	if sameKeys(old.keys, keys) {
		return nil // keep the verified tokens
	}
	o.cur.Store(&oidcKeys{keys: keys})
	kids := make([]string, 0, len(keys))
	for kid := range keys {
		kids = append(kids, kid)
	}
	o.log.InfoContext(ctx, "oidc keys updated", "issuer", o.cfg.Issuer, "kids", kids, "skipped", skipped)
	return nil
}

func sameKeys(a, b map[string]jwk) bool {
	if len(a) != len(b) {
		return false
	}
	for kid, k := range a {
		o, ok := b[kid]
		if !ok || !k.equal(o) {
			return false
		}
	}
	return true
}

// lookup returns the key named kid, fetching the key set once (within the
// rate limit) when it is not cached.
func (o *OIDC) lookup(ctx context.Context, kid string) (jwk, *oidcKeys, error) {
	ks := o.cur.Load()
	if k, ok := ks.keys[kid]; ok {
		return k, ks, nil
	}
	err := o.refresh(ctx)
	ks = o.cur.Load()
	if k, ok := ks.keys[kid]; ok {
		return k, ks, nil
	}
	if err != nil {
		return jwk{}, nil, fmt.Errorf("%w: %v", ErrKeysUnavailable, err)
	}
	return jwk{}, nil, fmt.Errorf("%w %q (not in the provider's key set)", ErrUnknownKey, kid)
}

// oidcClaims is the part of a provider's access token this package reads.
type oidcClaims struct {
	jwt.RegisteredClaims
	PreferredUsername string `json:"preferred_username"`
	Name              string `json:"name"`
}

// Verify checks a provider's token at time now: its signature with the
// provider's key named by "kid", its algorithm (the key's own), issuer,
// audience, expiry ("exp" required), "nbf" and "iat" (clock skew
// [ClockSkew]). The identity is a player whose Subject is
// [OIDCPlayerID](issuer, sub). Errors wrap ErrMissingToken,
// ErrMalformedToken, ErrExpiredToken, ErrUnknownKey, ErrKeysUnavailable
// or ErrInvalidToken.
func (o *OIDC) Verify(ctx context.Context, token string, now time.Time) (Identity, error) {
	if token == "" {
		return Identity{}, ErrMissingToken
	}
	if ks := o.cur.Load(); ks.keys != nil {
		if id, ok := ks.cache.get(token); ok {
			if expired(id, now) {
				return Identity{}, ErrExpiredToken
			}
			return id, nil
		}
	}
	var c oidcClaims
	var keys *oidcKeys
	var lookupErr error
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, fmt.Errorf("%w: no kid header", ErrMalformedToken)
		}
		k, ks, err := o.lookup(ctx, kid)
		if err != nil {
			lookupErr = err
			return nil, err
		}
		// The key decides the algorithm: an RSA key verifies RS256 only,
		// never HS256 with the public key read as a secret.
		if alg := t.Method.Alg(); alg != k.alg {
			return nil, fmt.Errorf("%w: alg %q does not match key %q (%s)", ErrInvalidToken, alg, kid, k.alg)
		}
		keys = ks
		return k.key, nil
	},
		jwt.WithValidMethods([]string{AlgRS256, AlgES256, AlgEdDSA}),
		jwt.WithIssuer(o.cfg.Issuer),
		jwt.WithAudience(o.cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(ClockSkew),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	switch {
	case err == nil:
	case lookupErr != nil:
		return Identity{}, lookupErr
	case errors.Is(err, ErrMalformedToken), errors.Is(err, ErrInvalidToken):
		return Identity{}, err
	case errors.Is(err, jwt.ErrTokenMalformed):
		return Identity{}, fmt.Errorf("%w: %v", ErrMalformedToken, err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return Identity{}, ErrExpiredToken
	case errors.Is(err, jwt.ErrTokenSignatureInvalid) && strings.Contains(err.Error(), "signing method"):
		return Identity{}, fmt.Errorf("%w: %v (accepted: %s, %s, %s)", ErrInvalidToken, err, AlgRS256, AlgES256, AlgEdDSA)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return Identity{}, fmt.Errorf("%w: issuer must be %q", ErrInvalidToken, o.cfg.Issuer)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return Identity{}, fmt.Errorf("%w: audience must include %q", ErrInvalidToken, o.cfg.Audience)
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return Identity{}, fmt.Errorf("%w: not valid yet (nbf is in the future)", ErrInvalidToken)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return Identity{}, fmt.Errorf("%w: issued in the future (iat)", ErrInvalidToken)
	default:
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if c.Subject == "" {
		return Identity{}, fmt.Errorf("%w: no sub claim", ErrInvalidToken)
	}
	pid := OIDCPlayerID(o.cfg.Issuer, c.Subject)
	id := Identity{
		Subject:     pid,
		Role:        RolePlayer,
		DisplayName: oidcDisplayName(pid, c.PreferredUsername, c.Name),
		ExpiresAt:   c.ExpiresAt.Time.UTC(),
		Account:     true,
	}
	keys.cache.put(token, id, now)
	return id, nil
}

// OIDCPlayerIDPrefix starts every player id derived from a provider's
// account; guest ids start with "g-", so the two never collide.
const OIDCPlayerIDPrefix = "o-"

var playerIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// OIDCPlayerID returns the player id of the account sub of issuer:
//
//	"o-" + lowercase(base32(SHA-256(issuer + "\x00" + sub))[:24])
//
// that is the first 120 bits of the hash, 24 base32 characters. It is
// stable (the same account is the same player on every service, across
// restarts and key rotations), distinct per issuer (the NUL cannot occur
// in either part of a valid token's claims, so no two pairs hash the same
// input), and never a guest id ("g-" + 16 characters).
func OIDCPlayerID(issuer, sub string) string {
	h := sha256.Sum256([]byte(issuer + "\x00" + sub))
	return OIDCPlayerIDPrefix + strings.ToLower(playerIDEncoding.EncodeToString(h[:15]))
}

// MaxDisplayName is the longest display name, in characters.
const MaxDisplayName = 32

// oidcDisplayName picks the account's name for other players to see: the
// preferred username, else the name, cleaned of control and invisible
// characters and cut to MaxDisplayName; else "Player-" and four characters
// of the player id.
func oidcDisplayName(playerID string, candidates ...string) string {
	for _, s := range candidates {
		var b strings.Builder
		n := 0
		for _, r := range s {
			if r == utf8.RuneError || unicode.IsControl(r) || (!unicode.IsPrint(r) && r != ' ') {
				continue
			}
			if n == MaxDisplayName {
				break
			}
			b.WriteRune(r)
			n++
		}
		if name := strings.TrimSpace(b.String()); name != "" {
			return name
		}
	}
	return "Player-" + strings.ToUpper(playerID[len(OIDCPlayerIDPrefix):len(OIDCPlayerIDPrefix)+4])
}
