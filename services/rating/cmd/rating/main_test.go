package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// TestMain stops the Redis servers and checks for leaked goroutines.
func TestMain(m *testing.M) { redistest.Main(m) }

func TestRunServesAndConsumes(t *testing.T) {
	rdb, addr := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	keys, keyFile := authtest.PublicKeyFile(t)
	grpcAddr, adminAddr := redistest.FreeAddr(t), redistest.FreeAddr(t)
	env := map[string]string{
		"REDIS_ADDR":                addr,
		"AUTH_KEYS_FILE":            keyFile,
		"INTERNAL_PLAINTEXT":        "true",
		"GRPC_ADDR":                 grpcAddr,
		"ADMIN_ADDR":                adminAddr,
		"RATING_STREAM":             prefix + "events",
		"RATING_DEAD_LETTER_STREAM": prefix + "dead",
		"RATING_LINK_STREAM":        prefix + "links",
		"RATING_KEY_PREFIX":         prefix,
		"HOSTNAME":                  "rating-test",
		"LOG_LEVEL":                 "warn",
	}
	// A pool rated before the leaderboard had a provisional section: the
	// service's start fills it (the backfill).
	old := store.New(rdb, ladder.DefaultPolicy(), store.Config{Prefix: prefix, Retention: store.DefaultRetention()})
	var oldPlayers []ladder.Participant
	for i := range ladder.Seats {
		oldPlayers = append(oldPlayers, ladder.Participant{PlayerID: fmt.Sprint("old", i), Seat: ladder.Seat(i), Points: 40 - 10*i})
	}
	oldResult, err := ladder.NewResult("old-1", "fourkingdoms", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), oldPlayers,
		[]ladder.Seat{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Apply(t.Context(), []ladder.Result{oldResult}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(t.Context(), prefix+"{rt:fourkingdoms}:prov").Err(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out strings.Builder
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-rating-block=100ms"}, func(k string) string { return env[k] }, &lockedWriter{w: &out, mu: &mu}, nil)
	}()

	ev := &eventsv1.MatchFinished{
		MatchId:    "main-1",
		RuleSet:    "fourkingdoms",
		FinishedAt: timestamppb.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)),
		Result:     &gamev1.Result{Termination: gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING},
	}
	seats := []gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN}
	for i, s := range seats {
		ev.Players = append(ev.Players, &gamev1.SeatPlayer{Seat: s, Player: &gamev1.Player{PlayerId: fmt.Sprint("p", i)}})
		ev.Result.Points = append(ev.Result.Points, &gamev1.SeatPoints{Seat: s, Points: int32(10 * i)})
	}
	ev.Result.Ranking = []gamev1.Seat{gamev1.Seat_SEAT_GREEN, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_RED}
	// Published as the match service does (package eventstream).
	values, err := eventstream.MatchFinished().Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: prefix + "events", Values: values}).Err(); err != nil {
		t.Fatal(err)
	}

	token, _, err := keys.Sign(auth.Identity{Subject: "p3", Role: auth.RolePlayer}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(auth.BearerToken(token, true)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := ratingv1.NewRatingServiceClient(conn)

	var got *ratingv1.Rating
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.GetRating(t.Context(), &ratingv1.GetRatingRequest{PlayerId: "p3", RuleSet: "fourkingdoms"})
		if err == nil && !resp.GetRating().GetIsDefault() {
			got = resp.GetRating()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rating of the winner never appeared: %v, %v", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.GetGamesPlayed() != 1 || got.GetMu() <= 25 {
		t.Errorf("winner's rating = %v", got)
	}
	// Both the players of the backfill and those of the consumed match
	// are in the provisional section.
	for {
		lb, err := client.GetLeaderboard(t.Context(), &ratingv1.GetLeaderboardRequest{RuleSet: "fourkingdoms",
			Section: ratingv1.LeaderboardSection_LEADERBOARD_SECTION_PROVISIONAL})
		if err == nil && lb.GetSectionSize() == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the provisional section never held the 4 backfilled and 4 new players: %v, %v", lb, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The consumer's metrics are exported with the server's.
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(body), `rating_consumer_events_total{`) || !strings.Contains(string(body), `outcome="applied"`) {
		t.Errorf("/metrics lacks the consumer's event counter (err %v):\n%.2000s", err, body)
	}

	// Without a token the call is refused by the shared interceptors.
	anon, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	_, err = ratingv1.NewRatingServiceClient(anon).GetRating(t.Context(), &ratingv1.GetRatingRequest{PlayerId: "p3", RuleSet: "fourkingdoms"})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("call without token: %v, want Unauthenticated", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestRunBadConfig(t *testing.T) {
	env := map[string]string{"RATING_WORKERS": "0", "AUTH_KEYS_FILE": "x", "INTERNAL_PLAINTEXT": "true"}
	var out strings.Builder
	err := run(t.Context(), nil, func(k string) string { return env[k] }, &out, nil)
	if err == nil || !strings.Contains(err.Error(), "workers") {
		t.Errorf("run with 0 workers = %v, want a config error about workers", err)
	}
}

func TestRunBadStoreSettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"marker retention under an hour", map[string]string{"RATING_MARKER_RETENTION": "10m"}, "marker retention 10m0s must be at least an hour"},
		{"history shorter than the markers", map[string]string{"RATING_HISTORY_RETENTION": "48h"}, "history retention 48h0m0s must be 0 (keep for good) or at least the marker retention 168h0m0s"},
		{"history shorter than longer markers", map[string]string{"RATING_MARKER_RETENTION": "720h", "RATING_HISTORY_RETENTION": "700h"}, "history retention 700h0m0s must be"},
		{"braces in the key prefix", map[string]string{"RATING_KEY_PREFIX": "a{b}"}, `key prefix "a{b}" must not contain braces`},
		{"negative wait replicas", map[string]string{"RATING_WAIT_REPLICAS": "-1"}, "wait replicas -1 must not be negative"},
		{"waiting without a timeout", map[string]string{"RATING_WAIT_REPLICAS": "1", "RATING_WAIT_TIMEOUT": "0s"}, "wait timeout 0s must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.env["AUTH_KEYS_FILE"] = "x"
			var out strings.Builder
			err := run(t.Context(), nil, func(k string) string { return tt.env[k] }, &out, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run with %v = %v, want a config error containing %q", tt.env, err, tt.want)
			}
		})
	}
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
