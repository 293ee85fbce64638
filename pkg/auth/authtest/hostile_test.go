package authtest

import (
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
)

// TestHostileTokensRefused: each hostile credential is refused by the
// verifier of a key set that accepts a well-signed token of the same
// identity, so a service test that sees them refused tests the service's
// wiring, not a broken forgery.
func TestHostileTokensRefused(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("test")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	id := auth.Identity{Subject: "p-1", Role: auth.RolePlayer, DisplayName: "p-1"}
	v := &auth.Verifier{Keys: keys.PublicOnly()}
	call := func(authz string) (auth.Identity, error) {
		md := metadata.MD{}
		if authz != "" {
			md.Set(auth.MetadataKey, authz)
		}
		return v.Authenticate(metadata.NewIncomingContext(t.Context(), md), now)
	}
	good, _, err := keys.Sign(id, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := call("Bearer " + good); err != nil || got.Subject != id.Subject {
		t.Fatalf("well-signed token: %+v, %v", got, err)
	}
	for _, h := range HostileTokens(t, keys, id, now) {
		t.Run(h.Name, func(t *testing.T) {
			_, err := call(h.Authorization)
			RequireRefused(t, err, h)
		})
	}
}
