package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/servertest"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

// TestHostileCredentials: every forged or broken credential is refused
// with UNAUTHENTICATED and its ErrorInfo on every rating RPC, through the
// real server and its interceptors (the rating API only reads, so there is
// no state to change and no role to refuse: any valid token may read), and
// a request above GRPC_MAX_RECV_MSG_SIZE is refused by the transport.
func TestHostileCredentials(t *testing.T) {
	t.Parallel()
	_, addr := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	keys, keyFile := authtest.PublicKeyFile(t)
	env := map[string]string{
		"REDIS_ADDR": addr, "GRPC_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0",
		"AUTH_KEYS_FILE": keyFile, "INTERNAL_PLAINTEXT": "true", "LOG_LEVEL": "error", "RATE_LIMIT_RPS": "0",
		"RATING_STREAM": prefix + "events", "RATING_DEAD_LETTER_STREAM": prefix + "dead", "RATING_KEY_PREFIX": prefix,
	}
	srv := servertest.Start(t, run, env)
	conn, err := grpc.NewClient(srv.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := ratingv1.NewRatingServiceClient(conn)
	const rs = "fourkingdoms"
	rpcs := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"GetRating", func(ctx context.Context) error {
			_, err := c.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: "p1", RuleSet: rs})
			return err
		}},
		{"BatchGetRatings", func(ctx context.Context) error {
			_, err := c.BatchGetRatings(ctx, &ratingv1.BatchGetRatingsRequest{PlayerIds: []string{"p1"}, RuleSet: rs})
			return err
		}},
		{"GetLeaderboard", func(ctx context.Context) error {
			_, err := c.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: rs})
			return err
		}},
		{"GetRatingHistory", func(ctx context.Context) error {
			_, err := c.GetRatingHistory(ctx, &ratingv1.GetRatingHistoryRequest{PlayerId: "p1", RuleSet: rs})
			return err
		}},
	}
	for _, who := range []auth.Identity{{Subject: "p1", Role: auth.RolePlayer}, {Subject: "matchmaking", Role: auth.RoleService}} {
		for _, h := range authtest.HostileTokens(t, keys, who, time.Now()) {
			for _, rpc := range rpcs {
				t.Run(string(who.Role)+"/"+h.Name+"/"+rpc.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					defer cancel()
					if h.Authorization != "" {
						ctx = metadata.AppendToOutgoingContext(ctx, auth.MetadataKey, h.Authorization)
					}
					authtest.RequireRefused(t, rpc.call(ctx), h)
				})
			}
		}
	}

	// The same calls with a valid token pass authentication (they may
	// still be NOT_FOUND: nobody is rated), so the refusals above are the
	// credentials' doing.
	tok, _, err := keys.Sign(auth.Identity{Subject: "p1", Role: auth.RolePlayer}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, rpc := range rpcs {
		ctx := metadata.AppendToOutgoingContext(t.Context(), auth.MetadataKey, "Bearer "+tok)
		if err := rpc.call(ctx); status.Code(err) != codes.OK && status.Code(err) != codes.NotFound {
			t.Errorf("%s with a valid token: %v", rpc.name, err)
		}
	}

	ctx := metadata.AppendToOutgoingContext(t.Context(), auth.MetadataKey, "Bearer "+tok)
	huge := &ratingv1.BatchGetRatingsRequest{RuleSet: rs, PlayerIds: []string{strings.Repeat("p", 2<<20)}}
	if _, err := c.BatchGetRatings(ctx, huge); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a 2 MiB request: %v, want ResourceExhausted (GRPC_MAX_RECV_MSG_SIZE, 1 MiB)", err)
	}
}
