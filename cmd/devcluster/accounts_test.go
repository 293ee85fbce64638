package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// TestProviderAccountPlaysAndKeepsItsRating configures the three services
// with an OpenID Connect provider (a JWKS server in this test): an
// account plays a whole game with the terminal client holding the
// provider's access token, the game rates it under the player id derived
// from issuer and subject, and a new token from the provider (the
// provider's own refresh) is the same player with the same rating. Then a
// guest plays a rated game and links itself to another account with
// `fk link`: that account has the guest's rating.
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

	// A guest plays a rated game, then links itself to a new account with
	// `fk link`: the account has the guest's rating.
	if got := l.fk("login", "--name", "Linking Guest"); !strings.Contains(got, "signed in as Linking Guest") {
		t.Fatalf("login said %q", got)
	}
	guest := l.play()
	l.waitRatings(map[string]uint32{guest.PlayerID: 1})
	guestRating := l.getRating(guest.PlayerID)
	tokenFile := filepath.Join(l.dir, "idp-token")
	if err := os.WriteFile(tokenFile, []byte(idp.Token(t, "acct-linked", "Linked Account", time.Hour)), 0o600); err != nil {
		t.Fatal(err)
	}
	account := auth.OIDCPlayerID(idp.Issuer, "acct-linked")
	if got := l.fk("link", "--token-file", tokenFile); !strings.Contains(got, "to account "+account) {
		t.Fatalf("fk link said %q", got)
	}
	linked := l.waitRating(account)
	if linked.GetGamesPlayed() != 1 || linked.GetDisplayRating() != guestRating.GetDisplayRating() || linked.GetDisplayName() != "Linked Account" {
		t.Errorf("account after the link %v, want the guest's rating %v under the account's name", linked, guestRating)
	}
	if got := l.fk("rating"); !strings.Contains(got, "Linked Account") || !strings.Contains(got, "1 games") {
		t.Errorf("fk rating after the link said %q, want the account with the guest's game", got)
	}
	l.shutdown()
}

// waitRating waits until the rating service knows id (the link is applied
// asynchronously) and returns its rating.
func (l *launched) waitRating(id string) *ratingv1.Rating {
	l.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := l.rating.GetRating(l.ctx, &ratingv1.GetRatingRequest{PlayerId: id, RuleSet: ruleSet})
		if err == nil {
			return r.GetRating()
		}
		if status.Code(err) != codes.NotFound || time.Now().After(deadline) {
			l.t.Fatalf("rating of %s: %v", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
