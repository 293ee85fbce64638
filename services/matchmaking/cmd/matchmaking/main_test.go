package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// fakeMatchService stands in for the match service over real gRPC: it
// checks the caller's service token, creates matches idempotently by
// request id and answers GetMatch.
type fakeMatchService struct {
	matchv1.UnimplementedMatchServiceServer
	mu      sync.Mutex
	byReq   map[string]*matchv1.Match
	byID    map[string]*matchv1.Match
	creates int
	// stall, if set, is called after a new match was stored and before
	// the answer: a test kills the caller there.
	stall func(ctx context.Context)
}

func (f *fakeMatchService) CreateMatch(ctx context.Context, req *matchv1.CreateMatchRequest) (*matchv1.CreateMatchResponse, error) {
	if err := auth.RequireRole(ctx, auth.RoleService); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates++
	if m, ok := f.byReq[req.GetRequestId()]; ok {
		return &matchv1.CreateMatchResponse{Match: m}, nil
	}
	if len(req.GetPlayers()) != 4 || req.GetTimeControl().GetName() == "" || req.GetRequestId() == "" {
		return nil, status.Error(codes.InvalidArgument, "bad request")
	}
	m := &matchv1.Match{
		MatchId: fmt.Sprintf("match-%d", len(f.byID)+1), Status: matchv1.MatchStatus_MATCH_STATUS_ACTIVE,
		RuleSet: req.GetRuleSet(), TimeControl: req.GetTimeControl(),
	}
	seen := map[gamev1.Seat]bool{}
	for _, sp := range req.GetPlayers() {
		if seen[sp.GetSeat()] || sp.GetSeat() == gamev1.Seat_SEAT_UNSPECIFIED {
			return nil, status.Error(codes.InvalidArgument, "seats must be distinct")
		}
		seen[sp.GetSeat()] = true
		m.Seats = append(m.Seats, &matchv1.SeatState{Seat: sp.GetSeat(), Player: sp.GetPlayer(), Status: gamev1.SeatStatus_SEAT_STATUS_LIVE})
	}
	f.byReq[req.GetRequestId()], f.byID[m.GetMatchId()] = m, m
	if f.stall != nil {
		f.mu.Unlock()
		f.stall(ctx)
		f.mu.Lock()
	}
	return &matchv1.CreateMatchResponse{Match: m}, nil
}

func (f *fakeMatchService) GetMatch(ctx context.Context, req *matchv1.GetMatchRequest) (*matchv1.GetMatchResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.byID[req.GetMatchId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such match")
	}
	return &matchv1.GetMatchResponse{Match: m}, nil
}

// fakeRatingService knows nobody: everyone gets the default, with the
// recent matches set in recent (all of them, whatever the request asks).
type fakeRatingService struct {
	ratingv1.UnimplementedRatingServiceServer
	mu     sync.Mutex
	calls  int
	recent map[string][]*ratingv1.RecentMatch
	// recentAsked is the recent_matches of the latest call that set it.
	recentAsked uint32
}

func (f *fakeRatingService) BatchGetRatings(ctx context.Context, req *ratingv1.BatchGetRatingsRequest) (*ratingv1.BatchGetRatingsResponse, error) {
	if err := auth.RequireRole(ctx, auth.RoleService); err != nil {
		return nil, err
	}
	if n := len(req.GetPlayerIds()); n == 0 || n > 100 {
		return nil, status.Errorf(codes.InvalidArgument, "1 to 100 players, got %d", n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if n := req.GetRecentMatches(); n > 0 {
		f.recentAsked = n
	}
	resp := &ratingv1.BatchGetRatingsResponse{}
	for _, id := range req.GetPlayerIds() {
		r := &ratingv1.Rating{
			PlayerId: id, RuleSet: req.GetRuleSet(), Mu: 25, Sigma: 25.0 / 3, DisplayRating: 1500,
			Provisional: true, IsDefault: true,
		}
		if req.GetRecentMatches() > 0 {
			r.RecentMatches = f.recent[id]
		}
		resp.Ratings = append(resp.Ratings, r)
	}
	return resp, nil
}

// startBackends serves the fake match and rating services on loopback,
// authenticating callers with keys.
func startBackends(t *testing.T, keys *auth.KeySet) (string, *fakeMatchService, *fakeRatingService) {
	t.Helper()
	authn := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		id, err := keys.Authenticate(ctx, time.Now())
		if err != nil {
			return nil, err
		}
		return h(auth.NewContext(ctx, id), req)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(authn))
	match := &fakeMatchService{byReq: map[string]*matchv1.Match{}, byID: map[string]*matchv1.Match{}}
	rating := &fakeRatingService{}
	matchv1.RegisterMatchServiceServer(srv, match)
	ratingv1.RegisterRatingServiceServer(srv, rating)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return lis.Addr().String(), match, rating
}

// logWatcher receives the service's JSON log and reports the gRPC address
// from its "serving" line.
type logWatcher struct {
	w    *io.PipeWriter
	addr chan string
	done chan struct{}
}

func newLogWatcher(t *testing.T) *logWatcher {
	r, w := io.Pipe()
	lw := &logWatcher{w: w, addr: make(chan string, 1), done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct {
				Msg   string `json:"msg"`
				Level string `json:"level"`
				Addr  string `json:"grpc_addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				lw.addr <- line.Addr
			}
			if line.Level == "ERROR" {
				t.Logf("service log: %s", sc.Text())
			}
		}
		io.Copy(io.Discard, r)
	}()
	return lw
}

// startService runs the service (run, as main does) with env and returns a
// client connection to it.
func startService(t *testing.T, env map[string]string) *grpc.ClientConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	lw := newLogWatcher(t)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, lw.w, nil)
		lw.w.Close()
	}()
	var addr string
	select {
	case addr = <-lw.addr:
	case err := <-done:
		cancel()
		t.Fatalf("run ended before serving: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("service did not start")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		<-lw.done
	})
	return conn
}

func baseEnv(t *testing.T, keys *auth.KeySet, backend string) map[string]string {
	keyFile := filepath.Join(t.TempDir(), "keys.json")
	if err := keys.WriteFile(keyFile); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"GRPC_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "AUTH_KEYS_FILE": keyFile, "INTERNAL_PLAINTEXT": "true",
		"RATE_LIMIT_RPS": "0", "MATCH_ADDR": backend, "RATING_ADDR": backend,
		"MM_REDIS_KEY_PREFIX": redistest.Prefix(t), "MM_ROUND_INTERVAL": "50ms", "MM_WATCH_POLL": "20ms",
		"SHUTDOWN_TIMEOUT": "5s",
	}
}

// TestEndToEnd: four guests log in, enqueue, and each WatchTicket reports
// the same match with four different seats; the match exists in the match
// service (a fake served over real gRPC: the real one cannot be imported
// across modules) with those players in those seats.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"standalone", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			keys, err := auth.GenerateKeySet("e2e")
			if err != nil {
				t.Fatal(err)
			}
			backend, matchSvc, ratingSvc := startBackends(t, keys)
			env := baseEnv(t, keys, backend)
			if kind == "standalone" {
				_, addr := redistest.Standalone(t)
				env["REDIS_ADDR"] = addr
			} else {
				_, addrs := redistest.Cluster(t)
				env["REDIS_CLUSTER_ADDRS"] = strings.Join(addrs, ",")
			}
			conn := startService(t, env)
			authc := authv1.NewAuthServiceClient(conn)
			mm := matchmakingv1.NewMatchmakingServiceClient(conn)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			type result struct {
				player string
				up     *matchmakingv1.Matched
				err    error
			}
			results := make(chan result, 4)
			for i := range 4 {
				login, err := authc.GuestLogin(ctx, &authv1.GuestLoginRequest{DisplayName: fmt.Sprintf("player %d", i)})
				if err != nil {
					t.Fatal(err)
				}
				creds := grpc.PerRPCCredentials(auth.BearerToken(login.GetToken(), true))
				enq, err := mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, creds)
				if err != nil {
					t.Fatal(err)
				}
				stream, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: enq.GetTicket().GetTicketId()}, creds)
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					for {
						up, err := stream.Recv()
						if err != nil {
							results <- result{player: login.GetPlayerId(), err: err}
							return
						}
						if m := up.GetMatched(); m != nil {
							// The end of the stream is awaited before the
							// result is reported: once all four results are
							// in, the test returns and cancels ctx, which
							// would otherwise race the server's EOF.
							if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
								t.Errorf("after the matched update: %v, want the end of the stream", err)
							}
							results <- result{player: login.GetPlayerId(), up: m}
							return
						}
					}
				}()
			}
			seats := map[gamev1.Seat]string{}
			var matchID string
			for range 4 {
				r := <-results
				if r.err != nil {
					t.Fatalf("watch of %s: %v", r.player, r.err)
				}
				if matchID == "" {
					matchID = r.up.GetMatchId()
				}
				if r.up.GetMatchId() != matchID {
					t.Errorf("%s matched into %s, others into %s", r.player, r.up.GetMatchId(), matchID)
				}
				if prev, dup := seats[r.up.GetSeat()]; dup || r.up.GetSeat() == gamev1.Seat_SEAT_UNSPECIFIED {
					t.Errorf("seat %v given to %s and %s", r.up.GetSeat(), prev, r.player)
				}
				seats[r.up.GetSeat()] = r.player
			}
			got, err := matchSvc.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: matchID})
			if err != nil {
				t.Fatalf("the match does not exist: %v", err)
			}
			for _, s := range got.GetMatch().GetSeats() {
				if seats[s.GetSeat()] != s.GetPlayer().GetPlayerId() || s.GetPlayer().GetIsBot() {
					t.Errorf("match seat %v holds %v, the ticket said %s", s.GetSeat(), s.GetPlayer(), seats[s.GetSeat()])
				}
			}
			if got.GetMatch().GetTimeControl().GetName() != "5+5" || got.GetMatch().GetRuleSet() != "fourkingdoms" {
				t.Errorf("match = %v, want fourkingdoms 5+5", got.GetMatch())
			}
			ratingSvc.mu.Lock()
			if ratingSvc.calls == 0 {
				t.Error("the rating service was never asked")
			}
			ratingSvc.mu.Unlock()

			stats, err := mm.GetQueueStats(ctx, &matchmakingv1.GetQueueStatsRequest{Queues: []string{"fourkingdoms/5+5"}},
				grpc.PerRPCCredentials(auth.BearerToken(mustToken(t, keys), true)))
			if err != nil || stats.GetStats()[0].GetMatchesPerMinute() <= 0 || stats.GetStats()[0].GetWaitP99().AsDuration() <= 0 {
				t.Errorf("GetQueueStats = %v, %v; want the match counted", stats, err)
			}
		})
	}
}

// TestEndToEndAntiTeaming: two guests whose latest game (as the rating
// service reports it) they played together two minutes ago queue with two
// others and are not grouped; when a fifth guest queues, one of the two
// plays with the other three and the fifth, and the other keeps waiting.
func TestEndToEndAntiTeaming(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("e2e")
	if err != nil {
		t.Fatal(err)
	}
	backend, matchSvc, ratingSvc := startBackends(t, keys)
	env := baseEnv(t, keys, backend)
	_, env["REDIS_ADDR"] = redistest.Standalone(t)
	conn := startService(t, env)
	authc := authv1.NewAuthServiceClient(conn)
	mm := matchmakingv1.NewMatchmakingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ids := make([]string, 5)
	creds := make([]grpc.CallOption, 5)
	for i := range ids {
		login, err := authc.GuestLogin(ctx, &authv1.GuestLoginRequest{DisplayName: fmt.Sprintf("player %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i], creds[i] = login.GetPlayerId(), grpc.PerRPCCredentials(auth.BearerToken(login.GetToken(), true))
	}
	ratingSvc.mu.Lock()
	ratingSvc.recent = map[string][]*ratingv1.RecentMatch{ids[0]: {{
		MatchId: "earlier", FinishedAt: timestamppb.New(time.Now().Add(-2 * time.Minute)), CoPlayerIds: []string{"x", ids[1], "y"},
	}}}
	ratingSvc.mu.Unlock()

	type result struct {
		player int
		up     *matchmakingv1.Matched
		err    error
	}
	results := make(chan result, 5)
	enqueue := func(i int) {
		enq, err := mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, creds[i])
		if err != nil {
			t.Fatal(err)
		}
		stream, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: enq.GetTicket().GetTicketId()}, creds[i])
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				up, err := stream.Recv()
				if err != nil {
					results <- result{player: i, err: err}
					return
				}
				if m := up.GetMatched(); m != nil {
					if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
						t.Errorf("after the matched update: %v, want the end of the stream", err)
					}
					results <- result{player: i, up: m}
					return
				}
			}
		}()
	}
	for i := range 4 {
		enqueue(i)
	}
	// Rounds run every 50 ms: without anti-teaming these four would be
	// matched now.
	select {
	case r := <-results:
		t.Fatalf("player %d matched (%v, %v) while 0 and 1 must be kept apart", r.player, r.up, r.err)
	case <-time.After(time.Second):
	}
	enqueue(4)
	matched := map[int]bool{}
	var matchID string
	for range 4 {
		r := <-results
		if r.err != nil {
			t.Fatalf("watch of player %d: %v", r.player, r.err)
		}
		matched[r.player] = true
		if matchID == "" {
			matchID = r.up.GetMatchId()
		}
		if r.up.GetMatchId() != matchID {
			t.Errorf("player %d matched into %s, others into %s", r.player, r.up.GetMatchId(), matchID)
		}
	}
	if matched[0] == matched[1] || !matched[2] || !matched[3] || !matched[4] {
		t.Errorf("matched players %v: want exactly one of 0 and 1, with 2, 3 and 4", matched)
	}
	if _, err := matchSvc.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: matchID}); err != nil {
		t.Errorf("the match does not exist: %v", err)
	}
	ratingSvc.mu.Lock()
	if ratingSvc.recentAsked != 6 {
		t.Errorf("the rating service was asked for %d recent matches, want 6 (twice the default 3)", ratingSvc.recentAsked)
	}
	ratingSvc.mu.Unlock()
}

func mustToken(t *testing.T, keys *auth.KeySet) string {
	t.Helper()
	tok, _, err := keys.Sign(auth.Identity{Subject: "ops", Role: auth.RoleOperator}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestRunRejectsBadConfig(t *testing.T) {
	t.Parallel()
	keys, _ := auth.GenerateKeySet("cfg")
	env := baseEnv(t, keys, "127.0.0.1:1")
	env["MM_QUEUES"] = "fourkingdoms 5"
	env["MM_FORMATION_TIMEOUT"] = "1s"
	err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "queues") || !strings.Contains(err.Error(), "formation timeout") {
		t.Errorf("run = %v, want errors naming the queues and the formation timeout", err)
	}
}
