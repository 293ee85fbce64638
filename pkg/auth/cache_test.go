package auth

import (
	"errors"
	"testing"
	"time"
)

// A token served from the verified cache must still expire exactly when an uncached verification
// says it does, and a cache hit must never make another (tampered) token acceptable.
func TestVerifyCachedTokenStillExpires(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, "k1")
	tok, exp, err := ks.Sign(Identity{Subject: "p-1", Role: RolePlayer}, t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Verify(tok, t0); err != nil {
		t.Fatalf("first Verify: %v", err)
	}
	if _, ok := ks.cache.get(tok); !ok {
		t.Fatal("a verified token was not cached")
	}
	if _, err := ks.Verify(tok, exp.Add(ClockSkew-time.Millisecond)); err != nil {
		t.Fatalf("Verify within the skew after expiry: %v", err)
	}
	fresh := mustKeysFrom(t, ks)
	for _, k := range []*KeySet{ks, fresh} { // cached and uncached must agree
		if _, err := k.Verify(tok, exp.Add(ClockSkew)); !errors.Is(err, ErrExpiredToken) {
			t.Fatalf("Verify after expiry + skew = %v, want ErrExpiredToken", err)
		}
	}
	tampered := tok[:len(tok)-2] + "AA"
	if tampered == tok {
		tampered = tok[:len(tok)-2] + "BB"
	}
	if _, err := ks.Verify(tampered, t0); err == nil {
		t.Fatal("a tampered token verified")
	}
}

func TestVerifiedCacheIsBounded(t *testing.T) {
	t.Parallel()
	var v verified
	id := Identity{Subject: "p", Role: RolePlayer, ExpiresAt: t0.Add(time.Hour)}
	for i := range verifiedCap + 10 {
		v.put(string(rune(i))+"tok", id, t0)
	}
	if n := len(v.ids); n > verifiedCap {
		t.Fatalf("cache holds %d tokens, cap %d", n, verifiedCap)
	}
}

// mustKeysFrom returns a key set with the same keys and an empty cache.
func mustKeysFrom(t *testing.T, ks *KeySet) *KeySet {
	t.Helper()
	k, err := NewKeySet(ks.Keys()...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func BenchmarkVerify(b *testing.B) {
	ks, err := GenerateKeySet("k1")
	if err != nil {
		b.Fatal(err)
	}
	tok, _, err := ks.Sign(Identity{Subject: "p-1", Role: RolePlayer}, t0, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ks.Verify(tok, t0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ks.cache.mu.Lock()
			clear(ks.cache.ids)
			ks.cache.mu.Unlock()
			if _, err := ks.Verify(tok, t0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
