package auth

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// deployment is what one stage of a key rotation gives the services: the
// signing set for matchmaking (which mints tokens) and the public set for
// match and rating. Both go through files, as the services read them.
type deployment struct {
	name            string
	signing         *KeySet // matchmaking's: signs and verifies
	verifiersPublic *KeySet // match's and rating's
}

func stage(t *testing.T, name string, signing *KeySet) deployment {
	t.Helper()
	dir := t.TempDir()
	load := func(ks *KeySet, file string) *KeySet {
		t.Helper()
		path := filepath.Join(dir, file)
		if err := ks.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		got, err := LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	d := deployment{name: name, signing: load(signing, "keys.json"), verifiersPublic: load(signing.PublicOnly(), "public-keys.json")}
	if !d.signing.CanSign() || d.verifiersPublic.CanSign() {
		t.Fatalf("%s: the signing set must sign and the public set must not", name)
	}
	return d
}

func merge(t *testing.T, sets ...*KeySet) *KeySet {
	t.Helper()
	ks, err := Merge(sets...)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestRotationStepByStep follows docs/operations.md ("Token keys: rotation")
// stage by stage, with each rollout's overlap: while a stage rolls out, pods
// of the stage before and of the new one serve side by side, so every token
// that a signer of either stage mints must be accepted by every service of
// either stage. After the rollout a token of the new key is accepted
// everywhere, and one of the old key still is until it expires.
func TestRotationStepByStep(t *testing.T) {
	t.Parallel()
	k1 := mustKeys(t, "2026-11")
	k2 := mustKeys(t, "2026-12")
	const ttl = 24 * time.Hour // the longest token lifetime (GUEST_TOKEN_TTL)

	// Stage 0: K1 signs. Stage 1: K2's public key joins every set, K1 still
	// signs. Stage 2: K2 signs, K1 stays public. Stage 3 (after ttl): K2 only.
	stages := []deployment{
		stage(t, "0 before", k1),
		stage(t, "1 new public key everywhere", merge(t, k1, k2.PublicOnly())),
		stage(t, "2 new key signs", merge(t, k2, k1.PublicOnly())),
		stage(t, "3 old key removed", k2),
	}
	id := Identity{Subject: "p-1", Role: RolePlayer}
	now := t0
	mint := func(d deployment) (string, string) {
		t.Helper()
		tok, _, err := d.signing.Sign(id, now, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok, d.signing.keys[d.signing.signing].ID
	}
	verifiers := func(d deployment) map[string]*KeySet {
		return map[string]*KeySet{"matchmaking": d.signing, "match": d.verifiersPublic, "rating": d.verifiersPublic}
	}
	for i := 1; i < len(stages); i++ {
		before, after := stages[i-1], stages[i]
		if i == 3 {
			now = now.Add(ttl + ClockSkew) // every token of K1 has expired
		}
		t.Run(fmt.Sprintf("rollout of stage %s", after.name), func(t *testing.T) {
			for _, signer := range []deployment{before, after} {
				tok, kid := mint(signer)
				for _, d := range []deployment{before, after} {
					for svc, ks := range verifiers(d) {
						if _, err := ks.Verify(tok, now); err != nil {
							t.Errorf("a token of %s (stage %s) refused by %s of stage %s: %v", kid, signer.name, svc, d.name, err)
						}
					}
				}
			}
		})
	}

	// The old key's token, minted before the rotation, against the sets of
	// stage 2: accepted until it expires, then refused as expired.
	oldTok, _, err := stages[0].signing.Sign(id, t0, ttl)
	if err != nil {
		t.Fatal(err)
	}
	newTok, kid := mint(stages[2])
	if kid != "2026-12" {
		t.Fatalf("stage 2 signs with %s, want the new key", kid)
	}
	for svc, ks := range verifiers(stages[2]) {
		if _, err := ks.Verify(newTok, now); err != nil {
			t.Errorf("after the rollout, %s refused a token of the new key: %v", svc, err)
		}
		if _, err := ks.Verify(oldTok, t0.Add(ttl-time.Minute)); err != nil {
			t.Errorf("%s refused a token of the old key before its expiry: %v", svc, err)
		}
		if _, err := ks.Verify(oldTok, t0.Add(ttl+ClockSkew)); !errors.Is(err, ErrExpiredToken) {
			t.Errorf("%s on the old key's token after its expiry: %v, want ErrExpiredToken", svc, err)
		}
	}
	for svc, ks := range verifiers(stages[3]) {
		if _, err := ks.Verify(oldTok, t0); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("stage 3: %s on a token of the removed key: %v, want ErrUnknownKey", svc, err)
		}
	}
}

// Skipping stage 1 is the mistake the order prevents: matchmaking signing
// with a key that match and rating do not know yet.
func TestRotationOutOfOrderRefusesNewTokens(t *testing.T) {
	t.Parallel()
	k1 := mustKeys(t, "2026-11")
	k2 := mustKeys(t, "2026-12")
	tok, _, err := merge(t, k2, k1.PublicOnly()).Sign(Identity{Subject: "p-1", Role: RolePlayer}, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k1.PublicOnly().Verify(tok, t0); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("a verifier without the new key: %v, want ErrUnknownKey", err)
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	k1 := mustKeys(t, "a")
	k2 := mustKeys(t, "b")
	m := merge(t, k1.PublicOnly(), k2, k1)
	if got := m.keys[m.signing].ID; got != "a" {
		// "a" comes first and gets its private key from the third set.
		t.Errorf("signing key %q, want a", got)
	}
	if len(m.Keys()) != 2 {
		t.Errorf("%d keys, want 2", len(m.Keys()))
	}
	if _, err := Merge(k1, mustKeys(t, "a")); err == nil {
		t.Error("two different keys with one kid merged")
	}
}
