package main

import (
	"context"
	"maps"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// TestAccountsThroughTheService runs the service with an OpenID Connect
// provider configured, as main does: a provider's account enqueues as
// its derived player id, and a guest that renews its session with
// RefreshSession (no player token needed) is still the same player: its
// live ticket is returned to it.
func TestAccountsThroughTheService(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("accounts")
	if err != nil {
		t.Fatal(err)
	}
	backend, _, _ := startBackends(t, keys)
	idp := authtest.NewProvider(t)
	env := baseEnv(t, keys, backend)
	maps.Copy(env, idp.Env())
	_, env["REDIS_ADDR"] = redistest.Standalone(t)
	conn := startService(t, env)
	authc := authv1.NewAuthServiceClient(conn)
	mm := matchmakingv1.NewMatchmakingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	enqueue := func(token string) *matchmakingv1.EnqueueResponse {
		t.Helper()
		r, err := mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/1|15 d"}},
			grpc.PerRPCCredentials(auth.BearerToken(token, true)))
		if err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		return r
	}

	acct := enqueue(idp.Token(t, "user-7", "Seven", time.Hour))
	if want := auth.OIDCPlayerID(idp.Issuer, "user-7"); acct.GetTicket().GetPlayerId() != want {
		t.Errorf("account's ticket belongs to %q, want %q", acct.GetTicket().GetPlayerId(), want)
	}

	login, err := authc.GuestLogin(ctx, &authv1.GuestLoginRequest{DisplayName: "Returner"})
	if err != nil {
		t.Fatal(err)
	}
	first := enqueue(login.GetToken())
	back, err := authc.RefreshSession(ctx, &authv1.RefreshSessionRequest{RefreshToken: login.GetRefreshToken()})
	if err != nil {
		t.Fatalf("RefreshSession without a player token: %v", err)
	}
	again := enqueue(back.GetToken())
	if !again.GetExisting() || again.GetTicket().GetTicketId() != first.GetTicket().GetTicketId() {
		t.Errorf("after the refresh Enqueue = %v, want the guest's live ticket %s", again, first.GetTicket().GetTicketId())
	}
	if _, err := authc.RevokeSession(ctx, &authv1.RevokeSessionRequest{RefreshToken: back.GetRefreshToken()}); err != nil {
		t.Fatalf("RevokeSession without a player token: %v", err)
	}
}
