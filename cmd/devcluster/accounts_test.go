package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
)

// TestProviderAccountPlaysAndKeepsItsRating configures the three services
// with an OpenID Connect provider (a JWKS server in this test): an
// account plays a whole game with the terminal client holding the
// provider's access token, the game rates it under the player id derived
// from issuer and subject, and a new token from the provider (the
// provider's own refresh) is the same player with the same rating.
func TestProviderAccountPlaysAndKeepsItsRating(t *testing.T) {
	idp := authtest.NewProvider(t)
	for k, v := range idp.Env() {
		t.Setenv(k, v) // the launcher passes its environment to the services
	}
	l := launch(t, func(string) string { return "" })
	want := auth.OIDCPlayerID(idp.Issuer, "acct-e2e")
	useToken := func(token string) {
		t.Helper()
		// The session file fk keeps (cmd/fk/session.go), holding the
		// provider's token: fk sends whatever token it holds.
		home := filepath.Join(l.dir, "home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(map[string]any{"player_id": want, "display_name": "Provider Player", "token": token, "expires_at": time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "session.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	useToken(idp.Token(t, "acct-e2e", "Provider Player", time.Hour))
	res := l.play()
	if res.PlayerID != want || res.Players[res.Seat] != want {
		t.Fatalf("played as %q (players %v), want the account's id %q", res.PlayerID, res.Players, want)
	}
	games := map[string]uint32{}
	for _, id := range res.Players {
		games[id] = 1
	}
	l.waitRatings(games)
	before := l.getRating(want)
	if before.GetDisplayName() != "Provider Player" {
		t.Errorf("rating's display name %q, want the provider's preferred_username", before.GetDisplayName())
	}

	useToken(idp.Token(t, "acct-e2e", "Provider Player", 2*time.Hour)) // another token of the account
	if got := l.fk("rating"); !strings.Contains(got, "Provider Player") || !strings.Contains(got, "1 games") {
		t.Errorf("fk rating with the new token said %q, want the account's one game", got)
	}
	if after := l.getRating(want); after.GetDisplayRating() != before.GetDisplayRating() || after.GetGamesPlayed() != 1 {
		t.Errorf("rating after the new token %v, before %v", after, before)
	}
	l.shutdown()
}
