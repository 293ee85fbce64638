package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// AlgEdDSA is the only signing algorithm key sets and tokens use.
const AlgEdDSA = "EdDSA"

// Key is one Ed25519 key of a key set. Private is nil when the holder may
// only verify tokens signed with it.
type Key struct {
	ID      string
	Public  ed25519.PublicKey
	Private ed25519.PrivateKey
}

// KeySet is an immutable set of keys identified by their ID ("kid").
// The signing key is the first key of the set that has a private key, so a
// rotation puts the new key first.
type KeySet struct {
	keys    []Key
	byID    map[string]int
	signing int // index into keys, -1 if the set cannot sign
	cache   verified
}

// NewKeySet builds a key set. It rejects duplicate or empty IDs, keys of the
// wrong size, and private keys that do not match their public key.
func NewKeySet(keys ...Key) (*KeySet, error) {
	if len(keys) == 0 {
		return nil, errors.New("key set: no keys")
	}
	ks := &KeySet{byID: make(map[string]int, len(keys)), signing: -1}
	for i, k := range keys {
		if k.ID == "" {
			return nil, fmt.Errorf("key set: key %d has no kid", i)
		}
		if _, dup := ks.byID[k.ID]; dup {
			return nil, fmt.Errorf("key set: duplicate kid %q", k.ID)
		}
		if len(k.Public) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("key set: key %q: public key must be %d bytes, got %d", k.ID, ed25519.PublicKeySize, len(k.Public))
		}
		if k.Private != nil {
			if len(k.Private) != ed25519.PrivateKeySize {
				return nil, fmt.Errorf("key set: key %q: private key must be %d bytes, got %d", k.ID, ed25519.PrivateKeySize, len(k.Private))
			}
			if !k.Public.Equal(k.Private.Public()) {
				return nil, fmt.Errorf("key set: key %q: private key does not match public key", k.ID)
			}
			if ks.signing < 0 {
				ks.signing = i
			}
		}
		ks.byID[k.ID] = i
		ks.keys = append(ks.keys, k)
	}
	return ks, nil
}

// GenerateKeySet returns a key set with one fresh signing key named kid.
// It is meant for development and tests; production key sets are generated
// once and distributed as a secret.
func GenerateKeySet(kid string) (*KeySet, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	return NewKeySet(Key{ID: kid, Public: pub, Private: priv})
}

// CanSign reports whether the set holds a private key.
func (ks *KeySet) CanSign() bool { return ks.signing >= 0 }

// Keys returns a copy of the keys in file order.
func (ks *KeySet) Keys() []Key { return append([]Key(nil), ks.keys...) }

// PublicOnly returns the same set without private keys, for services that
// must verify but never sign.
func (ks *KeySet) PublicOnly() *KeySet {
	keys := ks.Keys()
	for i := range keys {
		keys[i].Private = nil
	}
	pub, _ := NewKeySet(keys...) // cannot fail: the keys were valid
	return pub
}

// Merge returns one set with the keys of sets, in order: the signing key
// of the result is the first key with a private key. A key present in
// several sets must be the same key each time; its private part is kept if
// any set has it. A key rotation builds each stage's sets with it (see
// docs/operations.md, "Token keys").
func Merge(sets ...*KeySet) (*KeySet, error) {
	var keys []Key
	at := map[string]int{}
	for _, ks := range sets {
		for _, k := range ks.keys {
			i, seen := at[k.ID]
			if !seen {
				at[k.ID] = len(keys)
				keys = append(keys, k)
				continue
			}
			if !keys[i].Public.Equal(k.Public) {
				return nil, fmt.Errorf("merge key sets: two different keys have kid %q", k.ID)
			}
			if keys[i].Private == nil {
				keys[i].Private = k.Private
			}
		}
	}
	return NewKeySet(keys...)
}

func (ks *KeySet) lookup(kid string) (Key, bool) {
	i, ok := ks.byID[kid]
	if !ok {
		return Key{}, false
	}
	return ks.keys[i], true
}

// fileKey is one key in the JSON key set file.
type fileKey struct {
	ID      string `json:"kid"`
	Alg     string `json:"alg"`
	Public  string `json:"public"`
	Private string `json:"private,omitempty"` // base64 of the 32-byte seed
}

type fileKeySet struct {
	Keys []fileKey `json:"keys"`
}

// ParseKeySet decodes a key set from its JSON form:
//
//	{"keys":[{"kid":"2026-11","alg":"EdDSA","public":"<base64>","private":"<base64 seed, optional>"}]}
//
// Keys are standard base64 (with padding); the private key is the 32-byte
// Ed25519 seed.
func ParseKeySet(data []byte) (*KeySet, error) {
	var f fileKeySet
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("key set: decode JSON: %w", err)
	}
	keys := make([]Key, 0, len(f.Keys))
	for i, fk := range f.Keys {
		if fk.Alg != AlgEdDSA {
			return nil, fmt.Errorf("key set: key %d (%q): alg must be %q, got %q", i, fk.ID, AlgEdDSA, fk.Alg)
		}
		pub, err := base64.StdEncoding.DecodeString(fk.Public)
		if err != nil {
			return nil, fmt.Errorf("key set: key %q: public: %w", fk.ID, err)
		}
		k := Key{ID: fk.ID, Public: ed25519.PublicKey(pub)}
		if fk.Private != "" {
			seed, err := base64.StdEncoding.DecodeString(fk.Private)
			if err != nil {
				return nil, fmt.Errorf("key set: key %q: private: %w", fk.ID, err)
			}
			if len(seed) != ed25519.SeedSize {
				return nil, fmt.Errorf("key set: key %q: private seed must be %d bytes, got %d", fk.ID, ed25519.SeedSize, len(seed))
			}
			k.Private = ed25519.NewKeyFromSeed(seed)
		}
		keys = append(keys, k)
	}
	return NewKeySet(keys...)
}

// MarshalJSON encodes the set in the file format read by [ParseKeySet],
// including private keys.
func (ks *KeySet) MarshalJSON() ([]byte, error) {
	f := fileKeySet{Keys: make([]fileKey, 0, len(ks.keys))}
	for _, k := range ks.keys {
		fk := fileKey{ID: k.ID, Alg: AlgEdDSA, Public: base64.StdEncoding.EncodeToString(k.Public)}
		if k.Private != nil {
			fk.Private = base64.StdEncoding.EncodeToString(k.Private.Seed())
		}
		f.Keys = append(f.Keys, fk)
	}
	return json.MarshalIndent(f, "", "  ")
}

// LoadFile reads a key set file.
func LoadFile(path string) (*KeySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key set: %w", err)
	}
	ks, err := ParseKeySet(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ks, nil
}

// WriteFile writes the set (private keys included) to path with mode 0600,
// creating the parent directory if needed. The file is replaced atomically.
func (ks *KeySet) WriteFile(path string) error {
	data, err := ks.MarshalJSON()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write key set: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".keyset-*")
	if err != nil {
		return fmt.Errorf("write key set: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write key set: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write key set: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write key set: %w", err)
	}
	return nil
}
