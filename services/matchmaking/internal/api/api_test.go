package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/grouping"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/matchmaker"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/queues"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/sessions"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

var testQueues = []queues.Queue{
	{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: 5 * time.Minute, Increment: 5 * time.Second}},
	{RuleSet: "fourkingdoms", TimeControl: timecontrol.TimeControl{Initial: time.Minute, Delay: 15 * time.Second}, BotFillAfter: 20 * time.Second},
}

var testAPISettings = Settings{
	TicketTTL:      10 * time.Minute,
	Window:         grouping.Window{Initial: 50, GrowthPerSecond: 5, ProvisionalFactor: 2, Max: 500},
	WatchPoll:      20 * time.Millisecond,
	SearchingEvery: time.Hour, // one searching update, then only changes
	StatsWindow:    5 * time.Minute,
	BotLevels:      []string{"random", "greedy"},
	Tables: TableSettings{
		Store:         store.TableSettings{IdleTTL: 30 * time.Minute, ClosedRetention: time.Minute},
		Guesses:       store.GuessLimit{Max: 5, Window: time.Minute},
		PublicURL:     "https://fk.example",
		CreateTimeout: 5 * time.Second,
	},
}

// harness is the API served by the real server bootstrap on loopback.
type harness struct {
	store *store.Store
	// rdb and prefix are the harness's Redis and key prefix.
	rdb    redis.UniversalClient
	prefix string
	keys   *auth.KeySet
	conn   *grpc.ClientConn
	mm     matchmakingv1.MatchmakingServiceClient
	auth   authv1.AuthServiceClient
	// idp is the OpenID Connect provider the server accepts tokens of.
	idp *authtest.Provider
	// links is the stream of PlayerLinked events.
	links string
}

// newHarness serves the API with set; opts may complete set with what
// needs the harness's Redis (rematchHarness does).
func newHarness(t testing.TB, kind redistest.Kind, set Settings, opts ...func(*Settings, redis.UniversalClient, string)) *harness {
	t.Helper()
	rdb, prefix := kind.Client(t)
	for _, o := range opts {
		o(&set, rdb, prefix)
	}
	names := make([]string, len(testQueues))
	for i, q := range testQueues {
		names[i] = q.Name()
	}
	st := store.New(rdb, prefix, names, store.Settings{
		TicketTTL: 10 * time.Minute, Retention: 10 * time.Minute, FormationTimeout: 30 * time.Second,
		PointerGrace: 5 * time.Second, WaitSamples: 1000, BotLevels: set.BotLevels,
	})
	for _, l := range set.BotLevels {
		names = append(names, store.LobbyQueue(l))
	}
	keys, keyFile := authtest.KeyFile(t)
	idp := authtest.NewProvider(t)
	cfg := server.DefaultConfig("matchmaking")
	cfg.GRPCAddr, cfg.AdminAddr, cfg.AuthKeysFile, cfg.RateLimitRPS = "127.0.0.1:0", "127.0.0.1:0", keyFile, 0
	cfg.OIDC = idp.Config()
	cfg.TLS.Plaintext = true
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(t.Context(), cfg, log, server.Options{PublicMethods: PublicAuthMethods(), MintsTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	links := prefix + "links"
	guests, err := NewAuth(srv.Keys(), time.Hour, sessions.New(rdb, prefix, sessions.DefaultSettings()), sessions.NewLinkStream(rdb, links, 0, sessions.Wait{}), log)
	if err != nil {
		t.Fatal(err)
	}
	authv1.RegisterAuthServiceServer(srv.GRPC(), guests)
	events := NewEvents(log, srv.Report)
	mm, err := NewMatchmaking(set, st, testQueues, events, log)
	if err != nil {
		t.Fatal(err)
	}
	matchmakingv1.RegisterMatchmakingServiceServer(srv.GRPC(), mm)
	srv.Go("ticket-events", func(ctx context.Context) error { return events.Run(ctx, st, names) })
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	select {
	case <-events.Subscribed():
	case <-time.After(10 * time.Second):
		t.Fatal("ticket events not subscribed")
	}
	conn, err := grpc.NewClient(srv.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &harness{
		store: st, keys: keys, conn: conn, idp: idp, rdb: rdb, prefix: prefix, links: links,
		mm:   matchmakingv1.NewMatchmakingServiceClient(conn),
		auth: authv1.NewAuthServiceClient(conn),
	}
}

// as returns a call option sending token.
func as(token string) grpc.CallOption {
	return grpc.PerRPCCredentials(auth.BearerToken(token, true))
}

func (h *harness) guest(t testing.TB, name string) *authv1.GuestLoginResponse {
	t.Helper()
	resp, err := h.auth.GuestLogin(context.Background(), &authv1.GuestLoginRequest{DisplayName: name})
	if err != nil {
		t.Fatalf("GuestLogin(%q): %v", name, err)
	}
	return resp
}

func (h *harness) token(t testing.TB, id auth.Identity) string {
	t.Helper()
	tok, _, err := h.keys.Sign(id, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func forEachRedis(t *testing.T, f func(t *testing.T, h *harness)) {
	t.Helper()
	forEachRedisWith(t, testAPISettings, f)
}

func forEachRedisWith(t *testing.T, set Settings, f func(t *testing.T, h *harness)) {
	t.Helper()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			f(t, newHarness(t, kind, set))
		})
	}
}

func TestGuestLogin(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		a := h.guest(t, "  Alice ")
		b := h.guest(t, "")
		if a.GetDisplayName() != "Alice" || !strings.HasPrefix(b.GetDisplayName(), "Guest-") || a.GetPlayerId() == b.GetPlayerId() {
			t.Errorf("logins = %v / %v", a, b)
		}
		id, err := h.keys.Verify(a.GetToken(), time.Now())
		if err != nil || id.Subject != a.GetPlayerId() || id.Role != auth.RolePlayer || id.DisplayName != "Alice" {
			t.Errorf("token identity = %+v, %v", id, err)
		}
		if d := time.Until(a.GetExpiresAt().AsTime()); d < 59*time.Minute || d > time.Hour+time.Minute {
			t.Errorf("token expires in %v, want about an hour", d)
		}
		for _, bad := range []string{strings.Repeat("x", 33), "bell\a", "new\nline", "zero\u200bwidth"} {
			_, err := h.auth.GuestLogin(ctx, &authv1.GuestLoginRequest{DisplayName: bad})
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("GuestLogin(%q) = %v, want InvalidArgument", bad, err)
			}
			checkRefusal(t, err, "fourkingdoms.auth.v1/INVALID_ARGUMENT", "display_name")
		}
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		alice := h.guest(t, "alice")
		bob := h.guest(t, "bob")
		aliceTicket, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, as(alice.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		service := h.token(t, auth.Identity{Subject: "match", Role: auth.RoleService})
		expired, _, _ := h.keys.Sign(auth.Identity{Subject: "old", Role: auth.RolePlayer}, time.Now().Add(-2*time.Hour), time.Hour)
		q := func(name string) *matchmakingv1.EnqueueRequest {
			return &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: name}}
		}
		tests := []struct {
			name string
			call func() error
			want codes.Code
			// The ErrorInfo (domain/reason) and, for INVALID_ARGUMENT, the
			// BadRequest field.
			reason, field string
		}{
			{"enqueue without a token", func() error { _, err := h.mm.Enqueue(ctx, q("fourkingdoms/5+5")); return err }, codes.Unauthenticated, "fourkingdoms.auth.v1/MISSING_TOKEN", ""},
			{"enqueue with an expired token", func() error { _, err := h.mm.Enqueue(ctx, q("fourkingdoms/5+5"), as(expired)); return err }, codes.Unauthenticated, "fourkingdoms.auth.v1/TOKEN_EXPIRED", ""},
			{"enqueue with a garbage token", func() error { _, err := h.mm.Enqueue(ctx, q("fourkingdoms/5+5"), as("nope")); return err }, codes.Unauthenticated, "fourkingdoms.auth.v1/MALFORMED_TOKEN", ""},
			{"enqueue as a service", func() error { _, err := h.mm.Enqueue(ctx, q("fourkingdoms/5+5"), as(service)); return err }, codes.PermissionDenied, "fourkingdoms.auth.v1/ROLE_NOT_ALLOWED", ""},
			{"enqueue in an unknown queue", func() error { _, err := h.mm.Enqueue(ctx, q("fourkingdoms/9+9"), as(bob.GetToken())); return err }, codes.NotFound, "fourkingdoms.matchmaking.v1/QUEUE_NOT_FOUND", ""},
			{"enqueue naming no queue", func() error {
				_, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{}, as(bob.GetToken()))
				return err
			}, codes.InvalidArgument, "fourkingdoms.matchmaking.v1/INVALID_ARGUMENT", "target"},
			{"enqueue with a key without time control", func() error {
				_, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Key{Key: &matchmakingv1.QueueKey{}}}, as(bob.GetToken()))
				return err
			}, codes.InvalidArgument, "fourkingdoms.matchmaking.v1/INVALID_ARGUMENT", "key.time_control"},
			{"enqueue by durations of no queue", func() error {
				_, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Key{Key: &matchmakingv1.QueueKey{
					TimeControl: &gamev1.TimeControl{Initial: durationpb.New(3 * time.Minute)},
				}}}, as(bob.GetToken()))
				return err
			}, codes.NotFound, "fourkingdoms.matchmaking.v1/QUEUE_NOT_FOUND", ""},
			{"cancel someone else's ticket", func() error {
				_, err := h.mm.CancelTicket(ctx, &matchmakingv1.CancelTicketRequest{TicketId: aliceTicket.GetTicket().GetTicketId()}, as(bob.GetToken()))
				return err
			}, codes.PermissionDenied, "fourkingdoms.matchmaking.v1/NOT_TICKET_OWNER", ""},
			{"cancel an unknown ticket", func() error {
				_, err := h.mm.CancelTicket(ctx, &matchmakingv1.CancelTicketRequest{TicketId: "zzz.00000000"}, as(bob.GetToken()))
				return err
			}, codes.NotFound, "fourkingdoms.matchmaking.v1/TICKET_NOT_FOUND", ""},
			{"cancel without an id", func() error {
				_, err := h.mm.CancelTicket(ctx, &matchmakingv1.CancelTicketRequest{}, as(bob.GetToken()))
				return err
			}, codes.InvalidArgument, "fourkingdoms.matchmaking.v1/INVALID_ARGUMENT", "ticket_id"},
			{"watch someone else's ticket", func() error {
				return firstWatchError(ctx, h.mm, aliceTicket.GetTicket().GetTicketId(), bob.GetToken())
			}, codes.PermissionDenied, "fourkingdoms.matchmaking.v1/NOT_TICKET_OWNER", ""},
			{"watch an unknown ticket", func() error { return firstWatchError(ctx, h.mm, "nope", bob.GetToken()) }, codes.NotFound, "fourkingdoms.matchmaking.v1/TICKET_NOT_FOUND", ""},
			{"watch without a token", func() error { return firstWatchError(ctx, h.mm, aliceTicket.GetTicket().GetTicketId(), "") }, codes.Unauthenticated, "fourkingdoms.auth.v1/MISSING_TOKEN", ""},
			{"stats of an unknown queue", func() error {
				_, err := h.mm.GetQueueStats(ctx, &matchmakingv1.GetQueueStatsRequest{Queues: []string{"x/1+0"}}, as(bob.GetToken()))
				return err
			}, codes.NotFound, "fourkingdoms.matchmaking.v1/QUEUE_NOT_FOUND", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.call()
				if status.Code(err) != tt.want {
					t.Errorf("error = %v, want %v", err, tt.want)
				}
				checkRefusal(t, err, tt.reason, tt.field)
			})
		}
		// Alice's ticket is untouched by all of that.
		tk, err := h.store.Ticket(ctx, aliceTicket.GetTicket().GetTicketId())
		if err != nil || tk.State != store.Searching {
			t.Errorf("alice's ticket = %+v, %v; want searching", tk, err)
		}
	})
}

// checkRefusal checks the details of a refusal: an ErrorInfo of reason
// ("domain/REASON") and, for INVALID_ARGUMENT, a BadRequest naming field.
func checkRefusal(t *testing.T, err error, reason, field string) {
	t.Helper()
	if info := rpcerr.Info(err); info.GetDomain()+"/"+info.GetReason() != reason {
		t.Errorf("%v: ErrorInfo %v, want %s", err, info, reason)
	}
	br := rpcerr.BadRequest(err)
	if status.Code(err) != codes.InvalidArgument {
		if br != nil {
			t.Errorf("%v carries a BadRequest %v", err, br)
		}
		return
	}
	if v := br.GetFieldViolations(); len(v) != 1 || v[0].GetField() != field || v[0].GetDescription() == "" {
		t.Errorf("%v: BadRequest %v, want one violation of %q", err, br, field)
	}
}

// TestStatusTable checks every entry of toStatus's refusals table, and the
// store errors it leaves to redisconn.Status: each refusal carries its
// ErrorInfo of domain fourkingdoms.matchmaking.v1.
func TestStatusTable(t *testing.T) {
	t.Parallel()
	s := &Matchmaking{log: slog.New(slog.DiscardHandler)}
	type row struct {
		err    error
		code   codes.Code
		reason string
	}
	rows := []row{
		{errors.New("bad reply"), codes.Internal, "INTERNAL"},
		{redis.ErrClosed, codes.Unavailable, "STORE_UNAVAILABLE"},
	}
	for _, r := range refusals {
		rows = append(rows, row{r.err, r.code, r.reason})
	}
	for _, r := range rows {
		t.Run(r.reason+"/"+r.err.Error(), func(t *testing.T) {
			t.Parallel()
			err := s.toStatus(t.Context(), "test", fmt.Errorf("context: %w", r.err))
			if status.Code(err) != r.code {
				t.Errorf("code %v, want %v", status.Code(err), r.code)
			}
			checkRefusal(t, err, "fourkingdoms.matchmaking.v1/"+r.reason, "")
		})
	}
	checkRefusal(t, invalidArgument("queue", "empty"), "fourkingdoms.matchmaking.v1/INVALID_ARGUMENT", "queue")
	checkRefusal(t, noQueue("x/1+0"), "fourkingdoms.matchmaking.v1/QUEUE_NOT_FOUND", "")
}

func firstWatchError(ctx context.Context, mm matchmakingv1.MatchmakingServiceClient, ticket, token string) error {
	var opts []grpc.CallOption
	if token != "" {
		opts = append(opts, as(token))
	}
	stream, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: ticket}, opts...)
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

func TestEnqueueCancelWatch(t *testing.T) {
	t.Parallel()
	forEachRedis(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		carol := h.guest(t, "carol")
		first, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Key{Key: &matchmakingv1.QueueKey{
			TimeControl: &gamev1.TimeControl{Name: "5+5"},
		}}}, as(carol.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		tk := first.GetTicket()
		if first.GetExisting() || tk.GetQueue() != "fourkingdoms/5+5" || tk.GetPlayerId() != carol.GetPlayerId() ||
			tk.GetState() != matchmakingv1.TicketState_TICKET_STATE_SEARCHING ||
			tk.GetExpiresAt().AsTime().Sub(tk.GetCreatedAt().AsTime()) != testAPISettings.TicketTTL {
			t.Fatalf("Enqueue = %v", first)
		}
		// Second ticket: the live one comes back, here asked for by the
		// durations of the other queue's time control.
		byDurations, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Key{Key: &matchmakingv1.QueueKey{
			TimeControl: &gamev1.TimeControl{Initial: durationpb.New(time.Minute), Delay: durationpb.New(15 * time.Second), Mode: gamev1.TimeControlMode_TIME_CONTROL_MODE_DELAY},
		}}}, as(carol.GetToken()))
		if err != nil || !byDurations.GetExisting() || byDurations.GetTicket().GetTicketId() != tk.GetTicketId() {
			t.Fatalf("Enqueue by durations = %v, %v; want the existing ticket", byDurations, err)
		}
		// A name that is not canonical names the same time control.
		byName, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Key{Key: &matchmakingv1.QueueKey{
			TimeControl: &gamev1.TimeControl{Name: "05+5.0"},
		}}}, as(carol.GetToken()))
		if err != nil || !byName.GetExisting() || byName.GetTicket().GetTicketId() != tk.GetTicketId() {
			t.Fatalf("Enqueue by a non-canonical name = %v, %v; want the existing ticket", byName, err)
		}
		second, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/1|15 d"}}, as(carol.GetToken()))
		if err != nil || !second.GetExisting() || second.GetTicket().GetTicketId() != tk.GetTicketId() {
			t.Fatalf("second Enqueue = %v, %v; want the existing ticket", second, err)
		}

		stream, err := h.mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: tk.GetTicketId()}, as(carol.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		up, err := stream.Recv()
		if err != nil || up.GetSearching() == nil {
			t.Fatalf("first update = %v, %v; want searching", up, err)
		}
		var wg sync.WaitGroup
		var final *matchmakingv1.WatchTicketResponse
		var finalErr error
		wg.Go(func() {
			final, finalErr = stream.Recv()
			if finalErr == nil {
				if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
					finalErr = err
				}
			}
		})
		cancelled, err := h.mm.CancelTicket(ctx, &matchmakingv1.CancelTicketRequest{TicketId: tk.GetTicketId()}, as(carol.GetToken()))
		if err != nil || cancelled.GetTicket().GetState() != matchmakingv1.TicketState_TICKET_STATE_CANCELLED {
			t.Fatalf("CancelTicket = %v, %v", cancelled, err)
		}
		wg.Wait()
		if finalErr != nil || final.GetCancelled() == nil {
			t.Errorf("final update = %v, %v; want cancelled, then the end of the stream", final, finalErr)
		}

		list, err := h.mm.ListQueues(ctx, &matchmakingv1.ListQueuesRequest{}, as(carol.GetToken()))
		if err != nil || len(list.GetQueues()) != 2 || list.GetQueues()[1].GetName() != "fourkingdoms/1|15 d" ||
			!list.GetQueues()[1].GetBotFill() || list.GetQueues()[1].GetTimeControl().GetMode() != gamev1.TimeControlMode_TIME_CONTROL_MODE_DELAY {
			t.Errorf("ListQueues = %v, %v", list, err)
		}
		stats, err := h.mm.GetQueueStats(ctx, &matchmakingv1.GetQueueStatsRequest{}, as(carol.GetToken()))
		if err != nil || len(stats.GetStats()) != 2 || stats.GetStats()[0].GetPlayersWaiting() != 0 {
			t.Errorf("GetQueueStats = %v, %v", stats, err)
		}
	})
}

// TestWatchWokenByEvents: with polling practically off, the final update
// still arrives at once, woken through pub/sub.
func TestWatchWokenByEvents(t *testing.T) {
	t.Parallel()
	set := testAPISettings
	set.WatchPoll, set.SearchingEvery = time.Hour, time.Hour
	forEachRedisWith(t, set, func(t *testing.T, h *harness) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		dave := h.guest(t, "dave")
		enq, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, as(dave.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		id := enq.GetTicket().GetTicketId()
		stream, err := h.mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: id}, as(dave.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		if up, err := stream.Recv(); err != nil || up.GetSearching() == nil {
			t.Fatalf("first update = %v, %v", up, err)
		}
		// Expire it as a formation round would.
		if n, err := h.store.Expire(ctx, "fourkingdoms/5+5", []string{id}); err != nil || n != 1 {
			t.Fatalf("Expire = %d, %v", n, err)
		}
		up, err := stream.Recv()
		if err != nil || up.GetExpired() == nil {
			t.Fatalf("update after expiry = %v, %v; want expired", up, err)
		}
	})
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	tests := []struct {
		p    float64
		in   []time.Duration
		want time.Duration
	}{
		{0.5, ds, 50 * time.Second},
		{0.9, ds, 90 * time.Second},
		{0.99, ds, 99 * time.Second},
		{0.99, ds[:1], time.Second},
		{0.5, nil, 0},
	}
	for _, tt := range tests {
		if got := percentile(tt.in, tt.p); got != tt.want {
			t.Errorf("percentile(%d values, %v) = %v, want %v", len(tt.in), tt.p, got, tt.want)
		}
	}
}

// fakeRatings answers every lookup with rating, or fails with err.
type fakeRatings struct {
	rating matchmaker.Rating
	err    error
}

func (f fakeRatings) BatchRatings(_ context.Context, _ string, ids []string, _ int) (map[string]matchmaker.Rating, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := make(map[string]matchmaker.Rating, len(ids))
	for _, id := range ids {
		out[id] = f.rating
	}
	return out, nil
}

// TestFirstSearchingHasWindow: the first searching update comes before
// any formation round rated the ticket, and still carries the rating
// window (issue 24: clients showed "opponents rated 0-0"): from the
// stream's own lookup, from the default when the lookup fails, and from the
// round's rating once there is one.
func TestFirstSearchingHasWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		ratings matchmaker.Ratings
		stored  *matchmaker.Rating // a formation round's rating, recorded before watching
		want    matchmaker.Rating
	}{
		{name: "looked up", ratings: fakeRatings{rating: matchmaker.Rating{Value: 1830}}, want: matchmaker.Rating{Value: 1830}},
		{name: "looked up provisional", ratings: fakeRatings{rating: matchmaker.Rating{Value: 1620, Provisional: true}}, want: matchmaker.Rating{Value: 1620, Provisional: true}},
		{name: "lookup fails", ratings: fakeRatings{err: errors.New("rating service down")}, want: matchmaker.Rating{Value: 1500, Provisional: true}},
		{name: "no lookup", want: matchmaker.Rating{Value: 1500, Provisional: true}},
		{name: "rated by a round", ratings: fakeRatings{rating: matchmaker.Rating{Value: 1830}},
			stored: &matchmaker.Rating{Value: 2010}, want: matchmaker.Rating{Value: 2010}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set := testAPISettings
			set.Ratings, set.DefaultRating = tt.ratings, 1500
			h := newHarness(t, redistest.Kinds()[0], set)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			erin := h.guest(t, "erin")
			enq, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, as(erin.GetToken()))
			if err != nil {
				t.Fatal(err)
			}
			tk := enq.GetTicket()
			if tt.stored != nil {
				e := store.Entry{TicketID: tk.GetTicketId(), Rating: tt.stored.Value, Provisional: tt.stored.Provisional, Rated: true}
				if err := h.store.SetRatings(ctx, tk.GetQueue(), []store.Entry{e}); err != nil {
					t.Fatal(err)
				}
			}
			stream, err := h.mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: tk.GetTicketId()}, as(erin.GetToken()))
			if err != nil {
				t.Fatal(err)
			}
			up, err := stream.Recv()
			if err != nil || up.GetSearching() == nil {
				t.Fatalf("first update = %v, %v; want searching", up, err)
			}
			s := up.GetSearching()
			hw := set.Window.HalfWidth(s.GetWaited().AsDuration(), tt.want.Provisional)
			lo, hi := int32(math.Floor(tt.want.Value-hw)), int32(math.Ceil(tt.want.Value+hw))
			if s.GetRatingWindowLow() != lo || s.GetRatingWindowHigh() != hi {
				t.Errorf("first window = %d-%d, want %d-%d (rating %v)", s.GetRatingWindowLow(), s.GetRatingWindowHigh(), lo, hi, tt.want)
			}
		})
	}
}
