package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is the "iss" claim of every token; tokens from another issuer are
// rejected.
const Issuer = "fourkingdoms"

// ClockSkew is the leeway allowed when checking "exp", "nbf" and "iat", so
// services whose clocks differ slightly still accept each other's tokens.
const ClockSkew = 5 * time.Second

// Errors returned by [KeySet.Verify], distinguishable with errors.Is.
var (
	ErrMissingToken   = errors.New("missing token")
	ErrMalformedToken = errors.New("malformed token")
	ErrExpiredToken   = errors.New("token expired")
	ErrUnknownKey     = errors.New("token signed with an unknown key id")
	ErrInvalidToken   = errors.New("invalid token")
	ErrCannotSign     = errors.New("key set has no private key")
)

// claims is the JWT payload.
type claims struct {
	jwt.RegisteredClaims
	Role Role   `json:"role"`
	Name string `json:"name,omitempty"`
	Bot  bool   `json:"bot,omitempty"`
}

// Sign mints a token for id that expires ttl after now. The token's expiry
// is returned alongside it.
func (ks *KeySet) Sign(id Identity, now time.Time, ttl time.Duration) (string, time.Time, error) {
	if !ks.CanSign() {
		return "", time.Time{}, ErrCannotSign
	}
	if err := id.validate(); err != nil {
		return "", time.Time{}, err
	}
	if ttl <= 0 {
		return "", time.Time{}, fmt.Errorf("sign token: ttl must be positive, got %v", ttl)
	}
	key := ks.keys[ks.signing]
	exp := now.Add(ttl).Truncate(time.Second).UTC()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Subject:   id.Subject,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
		},
		Role: id.Role,
		Name: id.DisplayName,
		Bot:  id.Bot,
	})
	tok.Header["kid"] = key.ID
	s, err := tok.SignedString(key.Private)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign token: %w", err)
	}
	return s, exp, nil
}

// Verify checks a token's signature (by its "kid"), issuer and expiry at
// time now and returns the identity it carries. Errors wrap one of
// ErrMissingToken, ErrMalformedToken, ErrExpiredToken, ErrUnknownKey or
// ErrInvalidToken.
func (ks *KeySet) Verify(token string, now time.Time) (Identity, error) {
	if token == "" {
		return Identity{}, ErrMissingToken
	}
	if id, ok := ks.cache.get(token); ok {
		if expired(id, now) {
			return Identity{}, ErrExpiredToken
		}
		return id, nil
	}
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, fmt.Errorf("%w: no kid header", ErrMalformedToken)
		}
		k, ok := ks.lookup(kid)
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
		}
		return k.Public, nil
	},
		jwt.WithValidMethods([]string{AlgEdDSA}),
		jwt.WithIssuer(Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(ClockSkew),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	switch {
	case err == nil:
	case errors.Is(err, ErrUnknownKey), errors.Is(err, ErrMalformedToken):
		return Identity{}, err
	case errors.Is(err, jwt.ErrTokenMalformed):
		return Identity{}, fmt.Errorf("%w: %v", ErrMalformedToken, err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return Identity{}, ErrExpiredToken
	default:
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	id := Identity{Subject: c.Subject, Role: c.Role, DisplayName: c.Name, Bot: c.Bot}
	if c.ExpiresAt != nil {
		id.ExpiresAt = c.ExpiresAt.Time.UTC()
	}
	if err := id.validate(); err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	ks.cache.put(token, id, now)
	return id, nil
}
