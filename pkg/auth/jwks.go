package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// The token algorithms accepted from an OpenID Connect provider, each tied
// to one key type: a key's type decides the only algorithm a token signed
// with it may name, so a token cannot pick a weaker reading of the key
// (HS256 with the public key as the secret, "none").
const (
	AlgRS256 = "RS256" // RSA PKCS#1 v1.5 with SHA-256, kty "RSA", at least 2048 bits
	AlgES256 = "ES256" // ECDSA P-256 with SHA-256, kty "EC", crv "P-256"
	// EdDSA is AlgEdDSA: Ed25519, kty "OKP", crv "Ed25519".
)

// minRSABits is the smallest RSA modulus accepted (NIST SP 800-57: 2048
// bits until 2030).
const minRSABits = 2048

// jwk is one usable key of a provider's JWKS.
type jwk struct {
	alg string
	key crypto.PublicKey
}

// equal reports whether two keys are the same algorithm and key material.
func (k jwk) equal(o jwk) bool {
	if k.alg != o.alg {
		return false
	}
	e, ok := k.key.(interface{ Equal(crypto.PublicKey) bool })
	return ok && e.Equal(o.key)
}

// jwkJSON is a key as RFC 7517 / RFC 7518 / RFC 8037 write it.
type jwkJSON struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS decodes a JSON Web Key Set and returns its signature keys by
// kid. Keys this package cannot use (encryption keys, other key types or
// curves, an "alg" other than the one their type implies, keys without a
// kid) are skipped and described in skipped, so an operator can see why a
// provider's key is ignored; a malformed key of a usable type, a duplicate
// kid or a set without any usable key is an error.
func parseJWKS(data []byte) (keys map[string]jwk, skipped []string, err error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("jwks: decode JSON: %w", err)
	}
	keys = make(map[string]jwk, len(doc.Keys))
	for i, raw := range doc.Keys {
		var j jwkJSON
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, nil, fmt.Errorf("jwks: key %d: %w", i, err)
		}
		k, why, err := j.parse()
		if err != nil {
			return nil, nil, fmt.Errorf("jwks: key %d (kid %q): %w", i, j.Kid, err)
		}
		if why != "" {
			skipped = append(skipped, fmt.Sprintf("key %d (kid %q): %s", i, j.Kid, why))
			continue
		}
		if _, dup := keys[j.Kid]; dup {
			return nil, nil, fmt.Errorf("jwks: two keys have kid %q", j.Kid)
		}
		keys[j.Kid] = k
	}
	if len(keys) == 0 {
		return nil, skipped, errors.New("jwks: no usable signature key (RS256, ES256 or EdDSA with a kid)")
	}
	return keys, skipped, nil
}

// parse returns the key, or why it is skipped, or an error for a key of a
// usable type whose material is wrong.
func (j jwkJSON) parse() (jwk, string, error) {
	if j.Use != "" && j.Use != "sig" {
		return jwk{}, fmt.Sprintf("use %q is not \"sig\"", j.Use), nil
	}
	if j.Kid == "" {
		return jwk{}, "no kid: tokens name their key by kid", nil
	}
	var alg string
	switch {
	case j.Kty == "RSA":
		alg = AlgRS256
	case j.Kty == "EC" && j.Crv == "P-256":
		alg = AlgES256
	case j.Kty == "OKP" && j.Crv == "Ed25519":
		alg = AlgEdDSA
	default:
		return jwk{}, fmt.Sprintf("kty %q crv %q is not supported (RSA, EC P-256, OKP Ed25519)", j.Kty, j.Crv), nil
	}
	if j.Alg != "" && j.Alg != alg {
		return jwk{}, fmt.Sprintf("alg %q is not accepted (a %s key is accepted for %s only)", j.Alg, j.Kty, alg), nil
	}
	var key crypto.PublicKey
	var err error
	switch alg {
	case AlgRS256:
		key, err = rsaKey(j.N, j.E)
	case AlgES256:
		key, err = ecKey(j.X, j.Y)
	case AlgEdDSA:
		key, err = edKey(j.X)
	}
	if err != nil {
		return jwk{}, "", err
	}
	return jwk{alg: alg, key: key}, "", nil
}

// b64 decodes base64url without padding, as JWK members are written.
func b64(field, s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s: not base64url: %w", field, err)
	}
	return b, nil
}

func rsaKey(n64, e64 string) (*rsa.PublicKey, error) {
	nb, err := b64("n", n64)
	if err != nil {
		return nil, err
	}
	eb, err := b64("e", e64)
	if err != nil {
		return nil, err
	}
	n := new(big.Int).SetBytes(nb)
	if n.BitLen() < minRSABits {
		return nil, fmt.Errorf("RSA modulus of %d bits, at least %d required", n.BitLen(), minRSABits)
	}
	if len(eb) == 0 || len(eb) > 4 {
		return nil, fmt.Errorf("RSA exponent of %d bytes", len(eb))
	}
	e := 0
	for _, b := range eb {
		e = e<<8 | int(b)
	}
	if e < 3 || e%2 == 0 {
		return nil, fmt.Errorf("RSA exponent %d is not an odd number >= 3", e)
	}
	return &rsa.PublicKey{N: n, E: e}, nil
}

func ecKey(x64, y64 string) (*ecdsa.PublicKey, error) {
	x, err := b64("x", x64)
	if err != nil {
		return nil, err
	}
	y, err := b64("y", y64)
	if err != nil {
		return nil, err
	}
	if len(x) != 32 || len(y) != 32 {
		return nil, fmt.Errorf("P-256 coordinates must be 32 bytes, got %d and %d", len(x), len(y))
	}
	// ParseUncompressedPublicKey checks that the point is on the curve:
	// an invalid point is the classic attack on ECDSA verifiers.
	k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		return nil, fmt.Errorf("P-256 key: %w", err)
	}
	return k, nil
}

func edKey(x64 string) (ed25519.PublicKey, error) {
	x, err := b64("x", x64)
	if err != nil {
		return nil, err
	}
	if len(x) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("Ed25519 key must be %d bytes, got %d", ed25519.PublicKeySize, len(x))
	}
	return ed25519.PublicKey(x), nil
}
