package auth

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func mustKeys(t *testing.T, kid string) *KeySet {
	t.Helper()
	ks, err := GenerateKeySet(kid)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, "k1")
	want := Identity{Subject: "p-42", Role: RolePlayer, DisplayName: "Ada", Bot: true}
	tok, exp, err := ks.Sign(want, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want.ExpiresAt = exp
	got, err := ks.Verify(tok, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Verify = %+v, want %+v", got, want)
	}
}

func TestVerifyErrors(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, "k1")
	other := mustKeys(t, "k1") // same kid, different key
	unknown := mustKeys(t, "k9")
	id := Identity{Subject: "p-1", Role: RolePlayer}
	sign := func(ks *KeySet) string {
		tok, _, err := ks.Sign(id, t0, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := sign(ks)
	tests := []struct {
		name  string
		token string
		at    time.Time
		want  error
	}{
		{"empty", "", t0, ErrMissingToken},
		{"garbage", "not-a-jwt", t0, ErrMalformedToken},
		{"expired", good, t0.Add(time.Hour + ClockSkew + time.Second), ErrExpiredToken},
		{"unknown kid", sign(unknown), t0, ErrUnknownKey},
		{"wrong signature", sign(other), t0, ErrInvalidToken},
		{"tampered", good[:len(good)-4] + "AAAA", t0, ErrInvalidToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ks.Verify(tt.token, tt.at)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	old := mustKeys(t, "old")
	next := mustKeys(t, "new")
	// During rotation every service has both keys; the new one signs.
	both, err := NewKeySet(next.Keys()[0], old.PublicOnly().Keys()[0])
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{Subject: "match", Role: RoleService}
	oldTok, _, _ := old.Sign(id, t0, time.Hour)
	newTok, _, err := both.Sign(id, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{oldTok, newTok} {
		if _, err := both.Verify(tok, t0); err != nil {
			t.Errorf("Verify during rotation: %v", err)
		}
	}
	if _, err := old.Verify(newTok, t0); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("old set verifying new token: err = %v, want ErrUnknownKey", err)
	}
	if _, _, err := old.PublicOnly().Sign(id, t0, time.Hour); !errors.Is(err, ErrCannotSign) {
		t.Errorf("public-only Sign err = %v, want ErrCannotSign", err)
	}
}

func TestFileRoundTrip(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, "k1")
	path := filepath.Join(t.TempDir(), "dev", "keys.json")
	if err := ks.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := loaded.Sign(Identity{Subject: "s", Role: RoleOperator}, t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Verify(tok, t0); err != nil {
		t.Fatalf("original set rejects token of loaded set: %v", err)
	}
}

func TestParseKeySetErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"not json":     `{`,
		"no keys":      `{"keys":[]}`,
		"wrong alg":    `{"keys":[{"kid":"a","alg":"RS256","public":"AAAA"}]}`,
		"short public": `{"keys":[{"kid":"a","alg":"EdDSA","public":"AAAA"}]}`,
		"bad base64":   `{"keys":[{"kid":"a","alg":"EdDSA","public":"!!"}]}`,
		"no kid":       `{"keys":[{"alg":"EdDSA","public":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := ParseKeySet([]byte(in)); err == nil {
				t.Fatal("ParseKeySet succeeded, want error")
			}
		})
	}
}

func FuzzParseKeySet(f *testing.F) {
	ks, _ := GenerateKeySet("seed")
	data, _ := ks.MarshalJSON()
	f.Add(data)
	f.Add([]byte(`{"keys":[{"kid":"a","alg":"EdDSA","public":"AAAA"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ks, err := ParseKeySet(data)
		if err != nil {
			return
		}
		again, err := ks.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseKeySet(again); err != nil {
			t.Fatalf("re-parse of marshalled set: %v", err)
		}
	})
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, "k1")
	tok, _, _ := ks.Sign(Identity{Subject: "p", Role: RolePlayer}, t0, time.Hour)
	expired, _, _ := ks.Sign(Identity{Subject: "p", Role: RolePlayer}, t0.Add(-2*time.Hour), time.Hour)
	foreign, _, _ := mustKeys(t, "k9").Sign(Identity{Subject: "p", Role: RolePlayer}, t0, time.Hour)
	tests := []struct {
		name    string
		md      metadata.MD
		wantMsg string // substring; empty means success
		reason  string // of the ErrorInfo, domain fourkingdoms.auth.v1
	}{
		{"ok", metadata.Pairs("authorization", "Bearer "+tok), "", ""},
		{"lowercase scheme", metadata.Pairs("authorization", "bearer "+tok), "", ""},
		{"missing", metadata.MD{}, "missing token", "MISSING_TOKEN"},
		{"basic scheme", metadata.Pairs("authorization", "Basic abc"), "malformed token", "MALFORMED_TOKEN"},
		{"garbage", metadata.Pairs("authorization", "Bearer xyz"), "malformed token", "MALFORMED_TOKEN"},
		{"expired", metadata.Pairs("authorization", "Bearer "+expired), "token expired", "TOKEN_EXPIRED"},
		{"unknown key", metadata.Pairs("authorization", "Bearer "+foreign), "unknown key", "UNKNOWN_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := metadata.NewIncomingContext(context.Background(), tt.md)
			id, err := ks.Authenticate(ctx, t0)
			if tt.wantMsg == "" {
				if err != nil || id.Subject != "p" {
					t.Fatalf("Authenticate = %+v, %v", id, err)
				}
				return
			}
			if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Authenticate err = %v, want UNAUTHENTICATED containing %q", err, tt.wantMsg)
			}
			if info := rpcerr.Info(err); info.GetDomain() != "fourkingdoms.auth.v1" || info.GetReason() != tt.reason {
				t.Errorf("Authenticate ErrorInfo %v, want fourkingdoms.auth.v1 %s", info, tt.reason)
			}
			// A client shows the message as it is: the reason must not be said twice.
			if msg := status.Convert(err).Message(); strings.Count(msg, tt.wantMsg) != 1 {
				t.Errorf("Authenticate message %q says %q %d times, want once", msg, tt.wantMsg, strings.Count(msg, tt.wantMsg))
			}
		})
	}
}

func TestRequireRole(t *testing.T) {
	t.Parallel()
	ctx := NewContext(context.Background(), Identity{Subject: "p", Role: RolePlayer})
	if err := RequireRole(ctx, RolePlayer, RoleOperator); err != nil {
		t.Errorf("player allowed: %v", err)
	}
	tests := []struct {
		name   string
		err    error
		code   codes.Code
		reason string
	}{
		{"player as operator", RequireRole(ctx, RoleOperator), codes.PermissionDenied, "ROLE_NOT_ALLOWED"},
		{"anonymous", RequireRole(context.Background(), RolePlayer), codes.Unauthenticated, "MISSING_TOKEN"},
		{"no identity", NoIdentity(), codes.Unauthenticated, "MISSING_TOKEN"},
	}
	for _, tt := range tests {
		if got := status.Code(tt.err); got != tt.code {
			t.Errorf("%s: code %v, want %v", tt.name, got, tt.code)
		}
		if info := rpcerr.Info(tt.err); info.GetDomain() != "fourkingdoms.auth.v1" || info.GetReason() != tt.reason {
			t.Errorf("%s: ErrorInfo %v, want fourkingdoms.auth.v1 %s", tt.name, info, tt.reason)
		}
	}
}

func TestServiceCredentialsRefresh(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, "k1")
	now := t0
	creds, err := ServiceCredentials(ks, "matchmaking", time.Minute, true, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	get := func() string {
		md, err := creds.GetRequestMetadata(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return md["authorization"]
	}
	first := get()
	now = now.Add(10 * time.Second)
	if get() != first {
		t.Error("token re-minted while still fresh")
	}
	now = now.Add(35 * time.Second) // 15 s left < ttl/3
	second := get()
	if second == first {
		t.Error("token not re-minted near expiry")
	}
	id, err := ks.Verify(strings.TrimPrefix(second, "Bearer "), now.Add(30*time.Second))
	if err != nil || id.Role != RoleService || id.Subject != "matchmaking" {
		t.Fatalf("refreshed token: %+v, %v", id, err)
	}
}
