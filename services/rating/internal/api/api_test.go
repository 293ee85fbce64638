package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// TestMain stops the Redis servers and checks for leaked goroutines.
func TestMain(m *testing.M) { redistest.Main(m) }

func standalone(t *testing.T) redis.UniversalClient {
	c, _ := redistest.Standalone(t)
	return c
}

const pool = "fourkingdoms"

var ruleSets = []string{"fourkingdoms", "chesscom-ffa"}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// serve starts the service on a bufconn gRPC server and returns a client.
func serve(t *testing.T, st *store.Store, policy ladder.Policy) ratingv1.RatingServiceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	New(st, policy, ruleSets, slog.New(slog.NewTextHandler(io.Discard, nil))).Register(gs)
	go gs.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		gs.Stop()
	})
	return ratingv1.NewRatingServiceClient(conn)
}

func result(t testing.TB, match string, at time.Time, order ...string) ladder.Result {
	t.Helper()
	players := make([]ladder.Participant, ladder.Seats)
	ranking := make([]ladder.Seat, ladder.Seats)
	for p, id := range order {
		players[p] = ladder.Participant{PlayerID: id, Name: strings.ToUpper(id), Seat: ladder.Seat(p), Points: 40 - 10*p}
		ranking[p] = ladder.Seat(p)
	}
	res, err := ladder.NewResult(match, pool, at, players, ranking)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

type fixture struct {
	client ratingv1.RatingServiceClient
	store  *store.Store
	policy ladder.Policy
	prefix string // of the store's keys
}

func newFixture(t *testing.T, rdb redis.UniversalClient) *fixture {
	policy := ladder.DefaultPolicy()
	policy.ProvisionalGames = 2
	policy.ProvisionalSigma = 100
	prefix := redistest.Prefix(t)
	st := store.New(rdb, policy, store.Config{Prefix: prefix, Retention: store.DefaultRetention()})
	return &fixture{client: serve(t, st, policy), store: st, policy: policy, prefix: prefix}
}

// seed plays three matches: a, b, c, d finish in that order twice, then
// in reverse order once.
func (fx *fixture) seed(t *testing.T) []ladder.Result {
	t.Helper()
	results := []ladder.Result{
		result(t, "m1", t0, "a", "b", "c", "d"),
		result(t, "m2", t0.Add(time.Hour), "a", "b", "c", "d"),
		result(t, "m3", t0.Add(2*time.Hour), "d", "c", "b", "a"),
	}
	if _, err := fx.store.Apply(t.Context(), results); err != nil {
		t.Fatal(err)
	}
	return results
}

// reasons are the ErrorInfo reasons (domain fourkingdoms.rating.v1) of the
// codes the rating service refuses with.
var reasons = map[codes.Code]string{
	codes.InvalidArgument: reasonInvalid,
	codes.NotFound:        reasonUnknownRuleSet,
	codes.Unavailable:     "STORE_UNAVAILABLE",
	codes.Internal:        "INTERNAL",
}

// wantCode checks err's code, its ErrorInfo, and for INVALID_ARGUMENT a
// BadRequest violation of field.
func wantCode(t *testing.T, err error, code codes.Code, field string) {
	t.Helper()
	wantRefusal(t, err, code, reasons[code], field)
}

// wantRefusal is wantCode with the ErrorInfo reason given.
func wantRefusal(t *testing.T, err error, code codes.Code, reason, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("status = %v, want %v", st, code)
	}
	if info := rpcerr.Info(err); info.GetDomain() != "fourkingdoms.rating.v1" || info.GetReason() != reason {
		t.Errorf("status %v: ErrorInfo %v, want fourkingdoms.rating.v1 %s", st, info, reason)
	}
	if code != codes.InvalidArgument {
		if br := rpcerr.BadRequest(err); br != nil {
			t.Errorf("status %v carries a BadRequest %v", st, br)
		}
		return
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return
				}
			}
		}
	}
	t.Errorf("status %v has no field violation for %q", st, field)
}

func TestGetRating(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, standalone(t))
	fx.seed(t)
	ctx := t.Context()

	players, err := fx.store.Players(ctx, pool, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	a := players[0].Standing
	got, err := fx.client.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: "a", RuleSet: pool})
	if err != nil {
		t.Fatal(err)
	}
	want := &ratingv1.Rating{
		PlayerId: "a", RuleSet: pool, Mu: a.Rating.Mu, Sigma: a.Rating.Sigma,
		DisplayRating: int32(ladder.Display(a.Rating)), GamesPlayed: 3, Provisional: false,
		UpdatedAt: timestamppb.New(t0.Add(2 * time.Hour)), DisplayName: "A",
	}
	if diff := cmp.Diff(want, got.GetRating(), protocmp.Transform()); diff != "" {
		t.Errorf("GetRating(a) (-want +got):\n%s", diff)
	}

	// A player without a rated match in the pool is not found (issue 24:
	// a mistyped id answered a default 1500), in a pool without any match
	// and in one where others played.
	for _, rs := range []string{"chesscom-ffa", pool} {
		_, err = fx.client.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: "newcomer", RuleSet: rs})
		wantRefusal(t, err, codes.NotFound, reasonUnknownPlayer, "")
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, standalone(t))
	fx.seed(t)
	ctx := t.Context()
	many := make([]string, maxBatch+1)
	for i := range many {
		many[i] = fmt.Sprint("p", i)
	}
	lb, err := fx.client.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: pool, PageSize: 1})
	if err != nil || lb.GetNextPageToken() == "" {
		t.Fatalf("leaderboard page: %v, %v", lb, err)
	}
	hist, err := fx.client.GetRatingHistory(ctx, &ratingv1.GetRatingHistoryRequest{RuleSet: pool, PlayerId: "a", PageSize: 1})
	if err != nil || hist.GetNextPageToken() == "" {
		t.Fatalf("history page: %v, %v", hist, err)
	}

	tests := []struct {
		name  string
		call  func() error
		code  codes.Code
		field string
	}{
		{"rating without rule set", func() error {
			_, err := fx.client.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: "a"})
			return err
		}, codes.InvalidArgument, "rule_set"},
		{"rating of unknown rule set", func() error {
			_, err := fx.client.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: "a", RuleSet: "checkers"})
			return err
		}, codes.NotFound, ""},
		{"rating without player", func() error {
			_, err := fx.client.GetRating(ctx, &ratingv1.GetRatingRequest{RuleSet: pool})
			return err
		}, codes.InvalidArgument, "player_id"},
		{"rating of player id with spaces", func() error {
			_, err := fx.client.GetRating(ctx, &ratingv1.GetRatingRequest{PlayerId: "a b", RuleSet: pool})
			return err
		}, codes.InvalidArgument, "player_id"},
		{"batch of none", func() error {
			_, err := fx.client.BatchGetRatings(ctx, &ratingv1.BatchGetRatingsRequest{RuleSet: pool})
			return err
		}, codes.InvalidArgument, "player_ids"},
		{"batch too large", func() error {
			_, err := fx.client.BatchGetRatings(ctx, &ratingv1.BatchGetRatingsRequest{RuleSet: pool, PlayerIds: many})
			return err
		}, codes.InvalidArgument, "player_ids"},
		{"batch with empty id", func() error {
			_, err := fx.client.BatchGetRatings(ctx, &ratingv1.BatchGetRatingsRequest{RuleSet: pool, PlayerIds: []string{"a", ""}})
			return err
		}, codes.InvalidArgument, "player_ids[1]"},
		{"batch asking for too many recent matches", func() error {
			_, err := fx.client.BatchGetRatings(ctx, &ratingv1.BatchGetRatingsRequest{RuleSet: pool, PlayerIds: []string{"a"}, RecentMatches: 11})
			return err
		}, codes.InvalidArgument, "recent_matches"},
		{"leaderboard of unknown rule set", func() error {
			_, err := fx.client.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: "checkers"})
			return err
		}, codes.NotFound, ""},
		{"leaderboard with negative page size", func() error {
			_, err := fx.client.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: pool, PageSize: -1})
			return err
		}, codes.InvalidArgument, "page_size"},
		{"leaderboard with garbage token", func() error {
			_, err := fx.client.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: pool, PageToken: "!!"})
			return err
		}, codes.InvalidArgument, "page_token"},
		{"leaderboard with another pool's token", func() error {
			_, err := fx.client.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: "chesscom-ffa", PageToken: lb.GetNextPageToken()})
			return err
		}, codes.InvalidArgument, "page_token"},
		{"leaderboard with a history token", func() error {
			_, err := fx.client.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: pool, PageToken: hist.GetNextPageToken()})
			return err
		}, codes.InvalidArgument, "page_token"},
		{"leaderboard of an unknown section", func() error {
			_, err := fx.client.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: pool, Section: 7})
			return err
		}, codes.InvalidArgument, "section"},
		{"provisional section with a ranked section's token", func() error {
			_, err := fx.client.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: pool, PageToken: lb.GetNextPageToken(),
				Section: ratingv1.LeaderboardSection_LEADERBOARD_SECTION_PROVISIONAL})
			return err
		}, codes.InvalidArgument, "page_token"},
		{"history with another player's token", func() error {
			_, err := fx.client.GetRatingHistory(ctx, &ratingv1.GetRatingHistoryRequest{RuleSet: pool, PlayerId: "b", PageToken: hist.GetNextPageToken()})
			return err
		}, codes.InvalidArgument, "page_token"},
		{"history with a forged cursor", func() error {
			_, err := fx.client.GetRatingHistory(ctx, &ratingv1.GetRatingHistoryRequest{RuleSet: pool, PlayerId: "a", PageToken: encodeToken("h", pool+"/a", "-3")})
			return err
		}, codes.InvalidArgument, "page_token"},
		{"history of unknown rule set", func() error {
			_, err := fx.client.GetRatingHistory(ctx, &ratingv1.GetRatingHistoryRequest{RuleSet: "checkers", PlayerId: "a"})
			return err
		}, codes.NotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.call(), tt.code, tt.field)
		})
	}
}

func TestBatchGetRatings(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, standalone(t))
	fx.seed(t)
	got, err := fx.client.BatchGetRatings(t.Context(), &ratingv1.BatchGetRatingsRequest{RuleSet: pool, PlayerIds: []string{"d", "zed", "a", "d"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got.GetRatings() {
		ids = append(ids, fmt.Sprintf("%s:%v:%d", r.GetPlayerId(), r.GetIsDefault(), r.GetGamesPlayed()))
	}
	if want := []string{"d:false:3", "zed:true:0", "a:false:3", "d:false:3"}; !cmp.Equal(ids, want) {
		t.Errorf("BatchGetRatings = %v, want %v", ids, want)
	}
	// Names come from the latest rated match; the provisional estimate is
	// the policy's (0 once established).
	zed, a := got.GetRatings()[1], got.GetRatings()[2]
	if zed.GetDisplayName() != "" || a.GetDisplayName() != "A" {
		t.Errorf("display names = %q, %q; want \"\", \"A\"", zed.GetDisplayName(), a.GetDisplayName())
	}
	if want := uint32(fx.policy.GamesToEstablish(fx.policy.New())); want == 0 || zed.GetGamesToEstablish() != want || a.GetGamesToEstablish() != 0 {
		t.Errorf("games to establish = %d (zed), %d (a); want %d, 0", zed.GetGamesToEstablish(), a.GetGamesToEstablish(), want)
	}
}

// BatchGetRatings returns each player's latest matches with the other
// players only when asked, newest first, at most as many as asked.
func TestBatchGetRatingsRecentMatches(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, standalone(t))
	fx.seed(t)
	recent := func(n uint32) []string {
		t.Helper()
		got, err := fx.client.BatchGetRatings(t.Context(), &ratingv1.BatchGetRatingsRequest{RuleSet: pool, PlayerIds: []string{"a", "zed"}, RecentMatches: n})
		if err != nil {
			t.Fatal(err)
		}
		if z := got.GetRatings()[1].GetRecentMatches(); len(z) != 0 {
			t.Errorf("recent matches of an unknown player = %v", z)
		}
		var out []string
		for _, m := range got.GetRatings()[0].GetRecentMatches() {
			out = append(out, fmt.Sprintf("%s@%s:%v", m.GetMatchId(), m.GetFinishedAt().AsTime().Format(time.TimeOnly), m.GetCoPlayerIds()))
		}
		return out
	}
	if got := recent(0); got != nil {
		t.Errorf("recent matches not asked for = %v", got)
	}
	want := []string{"m3@12:00:00:[d c b]", "m2@11:00:00:[b c d]"}
	if got := recent(2); !cmp.Equal(got, want) {
		t.Errorf("2 recent matches = %v, want %v", got, want)
	}
}

func TestLeaderboardPages(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, standalone(t))
	fx.seed(t)
	// e..h have one game: provisional, left out.
	if _, err := fx.store.Apply(t.Context(), []ladder.Result{result(t, "m4", t0, "e", "f", "g", "h")}); err != nil {
		t.Fatal(err)
	}
	var entries []*ratingv1.LeaderboardEntry
	token := ""
	for range 10 {
		page, err := fx.client.GetLeaderboard(t.Context(), &ratingv1.GetLeaderboardRequest{RuleSet: pool, PageSize: 3, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, page.GetEntries()...)
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	players, err := fx.store.Players(t.Context(), pool, []string{"a", "b", "c", "d"})
	if err != nil {
		t.Fatal(err)
	}
	var want []*ratingv1.LeaderboardEntry
	for _, p := range players {
		want = append(want, &ratingv1.LeaderboardEntry{
			Player:        &gamev1.Player{PlayerId: p.ID, DisplayName: strings.ToUpper(p.ID)},
			DisplayRating: int32(ladder.Display(p.Standing.Rating)),
			Mu:            p.Standing.Rating.Mu, Sigma: p.Standing.Rating.Sigma, GamesPlayed: 3,
		})
	}
	// Order: display rating, highest first (the expected order is computed
	// from the stored ratings, not assumed).
	for i := range want {
		for j := i + 1; j < len(want); j++ {
			if want[j].DisplayRating > want[i].DisplayRating {
				want[i], want[j] = want[j], want[i]
			}
		}
		want[i].Rank = uint32(i + 1)
	}
	if diff := cmp.Diff(want, entries, protocmp.Transform()); diff != "" {
		t.Errorf("leaderboard (-want +got):\n%s", diff)
	}
}

func TestRatingHistoryPages(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, standalone(t))
	results := fx.seed(t)
	var got []*ratingv1.RatingHistoryEntry
	token := ""
	for range 10 {
		page, err := fx.client.GetRatingHistory(t.Context(), &ratingv1.GetRatingHistoryRequest{RuleSet: pool, PlayerId: "d", PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.GetEntries()...)
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(got) != 3 {
		t.Fatalf("history has %d entries, want 3", len(got))
	}
	for i, e := range got {
		res := results[len(results)-1-i]
		if e.GetMatchId() != res.MatchID || !e.GetFinishedAt().AsTime().Equal(res.FinishedAt) {
			t.Errorf("entry %d is %s at %v, want %s", i, e.GetMatchId(), e.GetFinishedAt().AsTime(), res.MatchID)
		}
		if e.GetChange() != e.GetRatingAfter()-e.GetRatingBefore() {
			t.Errorf("entry %d: change %d from %d to %d", i, e.GetChange(), e.GetRatingBefore(), e.GetRatingAfter())
		}
		if i > 0 && got[i-1].GetRatingBefore() != e.GetRatingAfter() {
			t.Errorf("entry %d ends at %d but the next starts at %d", i, e.GetRatingAfter(), got[i-1].GetRatingBefore())
		}
	}
	if got[0].GetRank() != 1 || got[1].GetRank() != 4 {
		t.Errorf("ranks = %d, %d; want 1 (m3), 4 (m2)", got[0].GetRank(), got[1].GetRank())
	}
	if got[2].GetRatingBefore() != 1500 {
		t.Errorf("first game starts at %d, want 1500", got[2].GetRatingBefore())
	}
}

func TestStoreDown(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	fx := newFixture(t, rdb)
	_, err = fx.client.GetRating(t.Context(), &ratingv1.GetRatingRequest{PlayerId: "a", RuleSet: pool})
	wantCode(t, err, codes.Unavailable, "")
}

// TestToStatus checks each kind of error toStatus maps, without a server.
func TestToStatus(t *testing.T) {
	t.Parallel()
	s := &Service{log: slog.New(slog.DiscardHandler)}
	tests := []struct {
		err    error
		code   codes.Code
		field  string
		reason string // when not the code's usual reason
	}{
		{err: invalid("rule_set", "required"), code: codes.InvalidArgument, field: "rule_set"},
		{err: fmt.Errorf("batch: %w", invalid("player_ids[1]", "empty")), code: codes.InvalidArgument, field: "player_ids[1]"},
		{err: fmt.Errorf("page: %w", store.ErrInvalidCursor), code: codes.InvalidArgument, field: "page_token"},
		{err: fmt.Errorf("rule set %q: %w", "x", errUnknownRuleSet), code: codes.NotFound},
		{err: fmt.Errorf("player %q: %w", "x", errUnknownPlayer), code: codes.NotFound, reason: reasonUnknownPlayer},
		{err: redis.ErrClosed, code: codes.Unavailable},
		{err: errors.New("bad reply"), code: codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			t.Parallel()
			reason := tt.reason
			if reason == "" {
				reason = reasons[tt.code]
			}
			wantRefusal(t, s.toStatus(t.Context(), tt.err), tt.code, reason, tt.field)
		})
	}
}

// TestLeaderboardSections follows both sections of the leaderboard through
// rated matches (2 games establish a player here): players start in the
// provisional section and move to the ranked one with their establishing
// match; players rated before the provisional section existed (simulated
// by deleting it) are missing from it until the backfill adds them. Every
// step reads both sections in pages of 2 and compares them with entries
// built from the stored standings, best display rating first.
func TestLeaderboardSections(t *testing.T) {
	t.Parallel()
	rdb := standalone(t)
	fx := newFixture(t, rdb)
	ctx := t.Context()
	const (
		ranked      = ratingv1.LeaderboardSection_LEADERBOARD_SECTION_RANKED
		provisional = ratingv1.LeaderboardSection_LEADERBOARD_SECTION_PROVISIONAL
	)
	steps := []struct {
		name     string
		matches  [][]string
		forget   bool // delete the provisional section after the matches
		backfill bool
		ranked   []string
		prov     []string
	}{
		{name: "first game: all provisional", matches: [][]string{{"a", "b", "c", "d"}}, prov: []string{"a", "b", "c", "d"}},
		{name: "second game establishes them", matches: [][]string{{"b", "a", "d", "c"}}, ranked: []string{"a", "b", "c", "d"}},
		{name: "players rated before the section existed are missing", matches: [][]string{{"e", "f", "g", "h"}}, forget: true,
			ranked: []string{"a", "b", "c", "d"}},
		{name: "the backfill lists them", backfill: true, ranked: []string{"a", "b", "c", "d"}, prov: []string{"e", "f", "g", "h"}},
		{name: "backfilled players move with their establishing game", matches: [][]string{{"i", "e", "j", "f"}},
			ranked: []string{"a", "b", "c", "d", "e", "f"}, prov: []string{"g", "h", "i", "j"}},
	}
	read := func(section ratingv1.LeaderboardSection) ([]*ratingv1.LeaderboardEntry, []*ratingv1.GetLeaderboardResponse) {
		var entries []*ratingv1.LeaderboardEntry
		var pages []*ratingv1.GetLeaderboardResponse
		token := ""
		for range 10 {
			page, err := fx.client.GetLeaderboard(ctx, &ratingv1.GetLeaderboardRequest{RuleSet: pool, PageSize: 2, PageToken: token, Section: section})
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, page.GetEntries()...)
			pages = append(pages, page)
			if token = page.GetNextPageToken(); token == "" {
				break
			}
		}
		return entries, pages
	}
	want := func(ids []string, prov bool) []*ratingv1.LeaderboardEntry {
		players, err := fx.store.Players(ctx, pool, ids)
		if err != nil {
			t.Fatal(err)
		}
		var out []*ratingv1.LeaderboardEntry
		for _, p := range players {
			out = append(out, &ratingv1.LeaderboardEntry{
				Player:        &gamev1.Player{PlayerId: p.ID, DisplayName: strings.ToUpper(p.ID)},
				DisplayRating: int32(ladder.Display(p.Standing.Rating)),
				Mu:            p.Standing.Rating.Mu, Sigma: p.Standing.Rating.Sigma, GamesPlayed: uint32(p.Standing.Games),
				Provisional: prov, GamesToEstablish: uint32(fx.policy.GamesToEstablish(p.Standing)),
			})
		}
		slices.SortStableFunc(out, func(a, b *ratingv1.LeaderboardEntry) int { return int(b.GetDisplayRating() - a.GetDisplayRating()) })
		for i, e := range out {
			if i > 0 && out[i-1].GetDisplayRating() == e.GetDisplayRating() {
				t.Fatalf("players %s and %s have equal ratings: the expected order would be a guess", out[i-1].GetPlayer().GetPlayerId(), e.GetPlayer().GetPlayerId())
			}
			e.Rank = uint32(i + 1)
		}
		return out
	}
	at := t0
	for _, step := range steps {
		for _, players := range step.matches {
			at = at.Add(time.Hour)
			if _, err := fx.store.Apply(ctx, []ladder.Result{result(t, "m-"+strings.Join(players, ""), at, players...)}); err != nil {
				t.Fatal(err)
			}
		}
		if step.forget {
			// The section's key (docs/rating.md, "Redis layout").
			if err := rdb.Del(ctx, fx.prefix+"{rt:"+pool+"}:prov").Err(); err != nil {
				t.Fatal(err)
			}
		}
		if step.backfill {
			if n, err := fx.store.Backfill(ctx, pool); err != nil || n != len(step.prov) {
				t.Fatalf("%s: backfill added %d (%v), want %d", step.name, n, err, len(step.prov))
			}
		}
		for _, sec := range []struct {
			section ratingv1.LeaderboardSection
			ids     []string
		}{{ranked, step.ranked}, {provisional, step.prov}, {ratingv1.LeaderboardSection_LEADERBOARD_SECTION_UNSPECIFIED, step.ranked}} {
			got, pages := read(sec.section)
			if diff := cmp.Diff(want(sec.ids, sec.section == provisional), got, protocmp.Transform()); diff != "" {
				t.Errorf("%s: section %v (-want +got):\n%s", step.name, sec.section, diff)
			}
			for _, p := range pages {
				wantSection := sec.section
				if wantSection == ratingv1.LeaderboardSection_LEADERBOARD_SECTION_UNSPECIFIED {
					wantSection = ranked
				}
				if p.GetSection() != wantSection || p.GetSectionSize() != uint32(len(sec.ids)) {
					t.Errorf("%s: a page of section %v says section %v of %d players, want %v of %d", step.name, sec.section, p.GetSection(), p.GetSectionSize(), wantSection, len(sec.ids))
				}
			}
		}
	}
}
