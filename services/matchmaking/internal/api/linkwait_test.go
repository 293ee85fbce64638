package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/sessions"
)

// TestLinkGuestWaitsForReplicas: with Wait.Replicas (MM_WAIT_REPLICAS) a
// link counts only once a replica holds it. On a master without a replica
// (the standalone server) LinkGuest answers UNAVAILABLE and publishes
// nothing, so the rating service never merges a guest whose link a
// failover could take back; on the cluster, whose masters have a replica
// each, it links and publishes the event once. A retry of the unconfirmed
// link, once replicas are not asked for, answers as a first link would.
func TestLinkGuestWaitsForReplicas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		redis    func(testing.TB) redis.UniversalClient
		wait     sessions.Wait
		wantCode codes.Code
		// wantEvents is the number of PlayerLinked events published.
		wantEvents int
	}{
		{"no replica", func(t testing.TB) redis.UniversalClient { c, _ := redistest.Standalone(t); return c },
			sessions.Wait{Replicas: 1, Timeout: 100 * time.Millisecond}, codes.Unavailable, 0},
		{"a replica each", func(t testing.TB) redis.UniversalClient { c, _ := redistest.Cluster(t); return c },
			sessions.Wait{Replicas: 1, Timeout: 10 * time.Second}, codes.OK, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb := tt.redis(t)
			prefix := redistest.Prefix(t)
			set := sessions.DefaultSettings()
			set.Wait = tt.wait
			store := sessions.New(rdb, prefix, set)
			stream := prefix + "links"
			keys, _ := authtest.KeyFile(t)
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			a, err := NewAuth(keys, time.Hour, store, sessions.NewLinkStream(rdb, stream, 0, tt.wait), log)
			if err != nil {
				t.Fatal(err)
			}
			refresh, _, err := store.Create(ctx, sessions.Session{PlayerID: "g-waits", DisplayName: "Guest"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			account := auth.NewContext(ctx, auth.Identity{Subject: "acct-waits", Role: auth.RolePlayer, DisplayName: "Account", Account: true})
			req := &authv1.LinkGuestRequest{RefreshToken: refresh}

			got, err := a.LinkGuest(account, req)
			if status.Code(err) != tt.wantCode {
				t.Fatalf("LinkGuest = %v, %v; want %v", got, err, tt.wantCode)
			}
			if err != nil {
				checkRefusal(t, err, "fourkingdoms.auth.v1/STORE_UNAVAILABLE", "")
			} else if got.GetGuestPlayerId() != "g-waits" || got.GetPlayerId() != "acct-waits" {
				t.Fatalf("LinkGuest = %v, want guest g-waits linked to acct-waits", got)
			}
			if n := streamLen(t, rdb, stream); n != int64(tt.wantEvents) {
				t.Fatalf("%d PlayerLinked events published, want %d", n, tt.wantEvents)
			}
			if err == nil {
				return
			}
			// The client retries; here without asking for replicas, as
			// after MM_WAIT_REPLICAS is lowered.
			set.Wait = sessions.Wait{}
			b, err := NewAuth(keys, time.Hour, sessions.New(rdb, prefix, set), sessions.NewLinkStream(rdb, stream, 0, set.Wait), log)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := b.LinkGuest(account, req); err != nil || got.GetGuestPlayerId() != "g-waits" {
				t.Fatalf("retried LinkGuest = %v, %v; want the guest linked", got, err)
			}
			if n := streamLen(t, rdb, stream); n != 1 {
				t.Fatalf("%d PlayerLinked events after the retry, want 1", n)
			}
		})
	}
}

func streamLen(t *testing.T, rdb redis.UniversalClient, stream string) int64 {
	t.Helper()
	n, err := rdb.XLen(context.Background(), stream).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return n
}
