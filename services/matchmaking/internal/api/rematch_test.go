package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/rematch"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/remote"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// fakeMatchService is the match service in memory: finished matches to rematch,
// and CreateMatch deduplicated by request id as the real one does.
type fakeMatchService struct {
	mu      sync.Mutex
	matches map[string]*matchv1.Match
	byReq   map[string]string
	created []*matchv1.CreateMatchRequest // the requests that created a match
	fail    error                         // returned by Create when set
}

func newFakeMatchService() *fakeMatchService {
	return &fakeMatchService{matches: map[string]*matchv1.Match{}, byReq: map[string]string{}}
}

func (f *fakeMatchService) Get(_ context.Context, id string) (*matchv1.Match, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.matches[id]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", id, remote.ErrMatchNotFound)
	}
	return proto.Clone(m).(*matchv1.Match), nil
}

func (f *fakeMatchService) Create(_ context.Context, req *matchv1.CreateMatchRequest) (*matchv1.Match, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	if id, ok := f.byReq[req.GetRequestId()]; ok {
		return proto.Clone(f.matches[id]).(*matchv1.Match), nil
	}
	id := fmt.Sprintf("m%d", len(f.matches)+1)
	m := &matchv1.Match{MatchId: id, Status: matchv1.MatchStatus_MATCH_STATUS_ACTIVE, RuleSet: req.GetRuleSet(),
		TimeControl: req.GetTimeControl(), Unrated: req.GetUnrated()}
	for _, sp := range req.GetPlayers() {
		m.Seats = append(m.Seats, &matchv1.SeatState{Seat: sp.GetSeat(), Player: sp.GetPlayer()})
	}
	slices.SortFunc(m.Seats, func(a, b *matchv1.SeatState) int { return int(a.GetSeat()) - int(b.GetSeat()) })
	f.matches[id], f.byReq[req.GetRequestId()] = m, id
	f.created = append(f.created, proto.Clone(req).(*matchv1.CreateMatchRequest))
	return proto.Clone(m).(*matchv1.Match), nil
}

// add stores a match of the four players (Red, Blue, Yellow, Green; a
// name starting with "Bot " is a bot) in status st.
func (f *fakeMatchService) add(id string, st matchv1.MatchStatus, players [4]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := &matchv1.Match{MatchId: id, Status: st, RuleSet: "chesscom-ffa", Unrated: true,
		TimeControl: &gamev1.TimeControl{Name: "1+15d"}}
	for i, p := range players {
		bot := len(p) > 4 && p[:4] == "Bot "
		m.Seats = append(m.Seats, &matchv1.SeatState{Seat: gamev1.Seat(i + 1),
			Player: &gamev1.Player{PlayerId: p, DisplayName: p, IsBot: bot}})
	}
	f.matches[id] = m
}

func (f *fakeMatchService) creations() []*matchv1.CreateMatchRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.created)
}

// rematchSettings are the API settings with rematches on a fake match
// service, a window and a fast watch poll.
func rematchSettings(fm *fakeMatchService) Settings {
	set := testAPISettings
	set.Matches, set.RematchPoll, set.BotLevels = fm, 20*time.Millisecond, []string{"random", "greedy"}
	return set
}

// withWindow gives the harness a rematch store with the given window.
func withWindow(window time.Duration) func(*Settings, redis.UniversalClient, string) {
	return func(set *Settings, rdb redis.UniversalClient, prefix string) {
		set.Rematches = rematch.New(rdb, prefix, window)
	}
}

var fourHumans = [4]string{"h-red", "h-blue", "h-yellow", "h-green"}

func (h *harness) offer(t testing.TB, player, match string) (*matchmakingv1.Rematch, error) {
	t.Helper()
	resp, err := h.mm.OfferRematch(context.Background(), &matchmakingv1.OfferRematchRequest{MatchId: match},
		as(h.token(t, auth.Identity{Subject: player, DisplayName: player, Role: auth.RolePlayer})))
	return resp.GetRematch(), err
}

func (h *harness) decline(t testing.TB, player, match string) (*matchmakingv1.Rematch, error) {
	t.Helper()
	resp, err := h.mm.DeclineRematch(context.Background(), &matchmakingv1.DeclineRematchRequest{MatchId: match},
		as(h.token(t, auth.Identity{Subject: player, DisplayName: player, Role: auth.RolePlayer})))
	return resp.GetRematch(), err
}

// offerState is what a refusal must not change: the offer's hash and its
// existence (other tests share the Redis, so the key count is no measure).
func (h *harness) offerState(t testing.TB, match string) string {
	t.Helper()
	ctx := context.Background()
	key := h.prefix + "mm:rematch:{" + match + "}"
	hash, err := h.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := h.rdb.Exists(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("exists %d, offer %v", n, hash)
}

func TestOfferRematchRefusals(t *testing.T) {
	t.Parallel()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			fm := newFakeMatchService()
			h := newHarness(t, kind, rematchSettings(fm), withWindow(time.Minute))
			fm.add("fin", matchv1.MatchStatus_MATCH_STATUS_FINISHED, fourHumans)
			fm.add("live", matchv1.MatchStatus_MATCH_STATUS_ACTIVE, fourHumans)
			fm.add("aborted", matchv1.MatchStatus_MATCH_STATUS_ABORTED, fourHumans)
			fm.add("declined", matchv1.MatchStatus_MATCH_STATUS_FINISHED, fourHumans)
			fm.add("expired", matchv1.MatchStatus_MATCH_STATUS_FINISHED, fourHumans)
			fm.add("bots", matchv1.MatchStatus_MATCH_STATUS_FINISHED, [4]string{"h-red", "Bot Greedy 1", "Bot Greedy 2", "Bot Greedy 3"})
			if _, err := h.decline(t, "h-green", "declined"); err != nil {
				t.Fatal(err)
			}
			// An offer whose window passed: made "two minutes ago".
			st := rematch.New(h.rdb, h.prefix, time.Minute)
			if _, err := st.Offer(t.Context(), "expired", "h-red", fourHumans[:], time.Now().Add(-2*time.Minute)); err != nil {
				t.Fatal(err)
			}
			seated := "h-yellow"
			if _, err := h.mm.Enqueue(t.Context(), &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: testQueues[0].Name()}},
				as(h.token(t, auth.Identity{Subject: seated, Role: auth.RolePlayer}))); err != nil {
				t.Fatal(err)
			}
			atTable := "h-green"
			if _, err := h.mm.CreateTable(t.Context(), &matchmakingv1.CreateTableRequest{TimeControl: &gamev1.TimeControl{Name: "5+5"}},
				as(h.token(t, auth.Identity{Subject: atTable, Role: auth.RolePlayer}))); err != nil {
				t.Fatal(err)
			}
			service := as(h.token(t, auth.Identity{Subject: "matchmaker", Role: auth.RoleService}))
			for _, tc := range []struct {
				name, player, match string
				code                codes.Code
				reason              string
			}{
				{"no match id", "h-red", "", codes.InvalidArgument, "INVALID_ARGUMENT"},
				{"unknown match", "h-red", "nope", codes.NotFound, reasonMatchNotFound},
				{"not a player", "stranger", "fin", codes.PermissionDenied, reasonNotAPlayer},
				{"a bot of the match", "Bot Greedy 1", "bots", codes.PermissionDenied, reasonNotAPlayer},
				{"match still played", "h-red", "live", codes.FailedPrecondition, reasonNotFinished},
				{"match aborted", "h-red", "aborted", codes.FailedPrecondition, reasonNotFinished},
				{"live ticket", seated, "fin", codes.FailedPrecondition, reasonAlreadySeated},
				{"seat at an open table", atTable, "fin", codes.FailedPrecondition, reasonAlreadySeated},
				{"declined", "h-red", "declined", codes.FailedPrecondition, reasonDeclined},
				{"expired", "h-blue", "expired", codes.FailedPrecondition, reasonExpired},
			} {
				before := h.offerState(t, tc.match)
				_, err := h.offer(t, tc.player, tc.match)
				if status.Code(err) != tc.code || rpcerr.Info(err).GetReason() != tc.reason {
					t.Errorf("%s: OfferRematch = %v, want %v %s", tc.name, err, tc.code, tc.reason)
				}
				if status.Convert(err).Message() == "" {
					t.Errorf("%s: refusal without a message", tc.name)
				}
				after := h.offerState(t, tc.match)
				if tc.reason == reasonExpired {
					// The refusal records what the window decided (O to X);
					// nothing else changes.
					continue
				}
				if after != before {
					t.Errorf("%s: the refusal wrote: %s -> %s", tc.name, before, after)
				}
			}
			// Decline has the same checks, and refuses a started offer.
			for _, tc := range []struct {
				name, player, match string
				code                codes.Code
				reason              string
			}{
				{"unknown match", "h-red", "nope", codes.NotFound, reasonMatchNotFound},
				{"not a player", "stranger", "fin", codes.PermissionDenied, reasonNotAPlayer},
				{"match still played", "h-red", "live", codes.FailedPrecondition, reasonNotFinished},
				{"expired", "h-red", "expired", codes.FailedPrecondition, reasonExpired},
			} {
				before := h.offerState(t, tc.match)
				_, err := h.decline(t, tc.player, tc.match)
				if status.Code(err) != tc.code || rpcerr.Info(err).GetReason() != tc.reason {
					t.Errorf("%s: DeclineRematch = %v, want %v %s", tc.name, err, tc.code, tc.reason)
				}
				if after := h.offerState(t, tc.match); after != before {
					t.Errorf("%s: the refusal wrote: %s -> %s", tc.name, before, after)
				}
			}
			// A service or no token at all is no player.
			if _, err := h.mm.OfferRematch(t.Context(), &matchmakingv1.OfferRematchRequest{MatchId: "fin"}, service); status.Code(err) != codes.PermissionDenied {
				t.Errorf("OfferRematch as a service = %v, want PermissionDenied", err)
			}
			if _, err := h.mm.OfferRematch(t.Context(), &matchmakingv1.OfferRematchRequest{MatchId: "fin"}); status.Code(err) != codes.Unauthenticated {
				t.Errorf("OfferRematch without a token = %v, want Unauthenticated", err)
			}
			if n := len(fm.creations()); n != 0 {
				t.Errorf("%d matches created by refused calls", n)
			}
		})
	}
}

// TestRematchAllAccept: the offer waits for every human, then exactly one
// match starts with the seats rotated, a new seed and the same options.
func TestRematchAllAccept(t *testing.T) {
	t.Parallel()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			fm := newFakeMatchService()
			h := newHarness(t, kind, rematchSettings(fm), withWindow(time.Minute))
			fm.add("old", matchv1.MatchStatus_MATCH_STATUS_FINISHED, fourHumans)
			for i, p := range fourHumans[:3] {
				r, err := h.offer(t, p, "old")
				if err != nil {
					t.Fatalf("%s offers: %v", p, err)
				}
				if r.GetState() != matchmakingv1.RematchState_REMATCH_STATE_OFFERED || len(r.GetAcceptedPlayerIds()) != i+1 ||
					!slices.Equal(r.GetPlayerIds(), fourHumans[:]) || r.GetNewMatchId() != "" {
					t.Fatalf("after %s's offer: %v", p, r)
				}
				if d := time.Until(r.GetExpiresAt().AsTime()); d < 50*time.Second || d > time.Minute {
					t.Errorf("offer expires in %v, want about a minute", d)
				}
			}
			// Offering again changes nothing.
			if r, err := h.offer(t, "h-red", "old"); err != nil || len(r.GetAcceptedPlayerIds()) != 3 {
				t.Fatalf("repeated offer = %v, %v", r, err)
			}
			if n := len(fm.creations()); n != 0 {
				t.Fatalf("%d matches created before every human accepted", n)
			}
			r, err := h.offer(t, "h-green", "old")
			if err != nil {
				t.Fatal(err)
			}
			if r.GetState() != matchmakingv1.RematchState_REMATCH_STATE_STARTED || r.GetNewMatchId() == "" {
				t.Fatalf("after the last accept: %v", r)
			}
			again, err := h.offer(t, "h-blue", "old")
			if err != nil || again.GetNewMatchId() != r.GetNewMatchId() || again.GetState() != matchmakingv1.RematchState_REMATCH_STATE_STARTED {
				t.Fatalf("offer after the start = %v, %v", again, err)
			}
			if _, err := h.decline(t, "h-blue", "old"); rpcerr.Info(err).GetReason() != reasonStarted {
				t.Errorf("decline after the start = %v, want %s", err, reasonStarted)
			}
			cr := fm.creations()
			if len(cr) != 1 {
				t.Fatalf("%d matches created, want 1", len(cr))
			}
			got := cr[0]
			if got.GetRequestId() != rematch.RequestID("old") || got.Seed != nil || got.GetRuleSet() != "chesscom-ffa" ||
				got.GetTimeControl().GetName() != "1+15d" || !got.GetUnrated() {
				t.Errorf("CreateMatch request = %v", got)
			}
			nm, _ := fm.Get(t.Context(), r.GetNewMatchId())
			// Red's player plays Blue, Blue's Yellow, Yellow's Green, Green's Red.
			want := []string{"h-green", "h-red", "h-blue", "h-yellow"}
			for i, ss := range nm.GetSeats() {
				if ss.GetSeat() != gamev1.Seat(i+1) || ss.GetPlayer().GetPlayerId() != want[i] {
					t.Errorf("new match seat %v: %s, want %s", ss.GetSeat(), ss.GetPlayer().GetPlayerId(), want[i])
				}
			}
		})
	}
}

// TestRematchConcurrentLastAccepts: the last humans accepting at once
// (each twice) start one match, which every answer names.
func TestRematchConcurrentLastAccepts(t *testing.T) {
	t.Parallel()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			fm := newFakeMatchService()
			h := newHarness(t, kind, rematchSettings(fm), withWindow(time.Minute))
			fm.add("old", matchv1.MatchStatus_MATCH_STATUS_FINISHED, fourHumans)
			for _, p := range fourHumans[:2] {
				if _, err := h.offer(t, p, "old"); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			ids := make([]string, 4)
			errs := make([]error, 4)
			for i := range 4 {
				wg.Go(func() {
					r, err := h.offer(t, fourHumans[2+i%2], "old")
					ids[i], errs[i] = r.GetNewMatchId(), err
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if n := len(fm.creations()); n != 1 {
				t.Fatalf("%d matches created, want 1", n)
			}
			// A caller whose offer made A but another caller's start won
			// may answer before recording it; the record names one match.
			final, err := h.offer(t, "h-red", "old")
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				if id != "" && id != final.GetNewMatchId() {
					t.Errorf("answer %d names %s, the offer %s", i, id, final.GetNewMatchId())
				}
			}
		})
	}
}

// watchAll reads a WatchRematch stream to its end and returns the
// offers sent; the stream's end is checked here, before returning.
func watchAll(t *testing.T, h *harness, player, match string) ([]*matchmakingv1.Rematch, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := h.mm.WatchRematch(ctx, &matchmakingv1.WatchRematchRequest{MatchId: match},
		as(h.token(t, auth.Identity{Subject: player, Role: auth.RolePlayer})))
	if err != nil {
		return nil, err
	}
	var out []*matchmakingv1.Rematch
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, resp.GetRematch())
	}
}

// TestWatchRematch: a watcher gets the offer at once and every change,
// and the stream ends with OK when the rematch starts, is declined or
// expires.
func TestWatchRematch(t *testing.T) {
	t.Parallel()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			fm := newFakeMatchService()
			h := newHarness(t, kind, rematchSettings(fm), withWindow(time.Second))
			for _, id := range []string{"started", "declined", "expired"} {
				fm.add(id, matchv1.MatchStatus_MATCH_STATUS_FINISHED, fourHumans)
			}
			if _, err := watchAll(t, h, "h-red", "started"); status.Code(err) != codes.NotFound || rpcerr.Info(err).GetReason() != reasonRematchNotFound {
				t.Errorf("watch before any offer = %v, want NotFound %s", err, reasonRematchNotFound)
			}
			for _, id := range []string{"started", "declined", "expired"} {
				if _, err := h.offer(t, "h-red", id); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := watchAll(t, h, "stranger", "started"); status.Code(err) != codes.PermissionDenied {
				t.Errorf("a stranger's watch = %v, want PermissionDenied", err)
			}
			type result struct {
				seen []*matchmakingv1.Rematch
				err  error
			}
			results := map[string]chan result{}
			for _, id := range []string{"started", "declined", "expired"} {
				ch := make(chan result, 1)
				results[id] = ch
				go func() {
					seen, err := watchAll(t, h, "h-blue", id)
					ch <- result{seen, err}
				}()
			}
			time.Sleep(100 * time.Millisecond) // the watchers' first reads
			for _, p := range fourHumans[1:] {
				if _, err := h.offer(t, p, "started"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := h.decline(t, "h-yellow", "declined"); err != nil {
				t.Fatal(err)
			}
			for id, want := range map[string]matchmakingv1.RematchState{
				"started": matchmakingv1.RematchState_REMATCH_STATE_STARTED, "declined": matchmakingv1.RematchState_REMATCH_STATE_DECLINED,
				"expired": matchmakingv1.RematchState_REMATCH_STATE_EXPIRED,
			} {
				r := <-results[id]
				if r.err != nil {
					t.Fatalf("%s: watch ended with %v", id, r.err)
				}
				if len(r.seen) < 2 || r.seen[0].GetState() != matchmakingv1.RematchState_REMATCH_STATE_OFFERED ||
					len(r.seen[0].GetAcceptedPlayerIds()) != 1 || r.seen[len(r.seen)-1].GetState() != want {
					t.Fatalf("%s: watched %v", id, r.seen)
				}
				last := r.seen[len(r.seen)-1]
				switch id {
				case "started":
					if last.GetNewMatchId() == "" {
						t.Errorf("started without a match: %v", last)
					}
				case "declined":
					if last.GetDeclinedBy() != "h-yellow" {
						t.Errorf("declined by %q, want h-yellow", last.GetDeclinedBy())
					}
				}
			}
			if _, err := h.offer(t, "h-blue", "declined"); rpcerr.Info(err).GetReason() != reasonDeclined {
				t.Errorf("offer after the decline = %v, want %s", err, reasonDeclined)
			}
		})
	}
}

// TestRematchWithBots: bot seats of the rematch go to fresh bots of the
// same level from the bot lobby, whose tickets follow them to the match;
// with no bot free the start waits and a later offer completes it.
func TestRematchWithBots(t *testing.T) {
	t.Parallel()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			fm := newFakeMatchService()
			h := newHarness(t, kind, rematchSettings(fm), withWindow(time.Minute))
			fm.add("old", matchv1.MatchStatus_MATCH_STATUS_FINISHED, [4]string{"h-red", "Bot Random 1", "h-yellow", "Bot Greedy 2"})
			if _, err := h.offer(t, "h-red", "old"); err != nil {
				t.Fatal(err)
			}
			_, err := h.offer(t, "h-yellow", "old")
			if status.Code(err) != codes.Unavailable || rpcerr.Info(err).GetReason() != reasonNoBots {
				t.Fatalf("last accept with an empty lobby = %v, want Unavailable %s", err, reasonNoBots)
			}
			// A bot of each level parks in its lobby.
			tickets := map[string]string{}
			for _, b := range []struct{ id, level string }{{"bot-g", "greedy"}, {"bot-r", "random"}} {
				tk, _, err := h.store.Enqueue(t.Context(), store.LobbyQueue(b.level), store.Player{ID: b.id, DisplayName: b.id, Bot: true}, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				tickets[b.id] = tk.ID
			}
			r, err := h.offer(t, "h-yellow", "old")
			if err != nil || r.GetState() != matchmakingv1.RematchState_REMATCH_STATE_STARTED {
				t.Fatalf("offer with bots waiting = %v, %v", r, err)
			}
			nm, _ := fm.Get(t.Context(), r.GetNewMatchId())
			// Old Red (human) plays Blue; old Blue (random bot) seat goes to
			// Yellow; old Green (greedy bot) to Red.
			want := map[gamev1.Seat]string{gamev1.Seat_SEAT_RED: "bot-g", gamev1.Seat_SEAT_BLUE: "h-red",
				gamev1.Seat_SEAT_YELLOW: "bot-r", gamev1.Seat_SEAT_GREEN: "h-yellow"}
			for _, ss := range nm.GetSeats() {
				if ss.GetPlayer().GetPlayerId() != want[ss.GetSeat()] {
					t.Errorf("seat %v: %s, want %s", ss.GetSeat(), ss.GetPlayer().GetPlayerId(), want[ss.GetSeat()])
				}
			}
			for bot, seat := range map[string]gamev1.Seat{"bot-g": gamev1.Seat_SEAT_RED, "bot-r": gamev1.Seat_SEAT_YELLOW} {
				tk, err := h.store.Ticket(t.Context(), tickets[bot])
				if err != nil {
					t.Fatal(err)
				}
				if tk.State != store.Matched || tk.MatchID != r.GetNewMatchId() || tk.Seat != int(seat) {
					t.Errorf("%s's ticket = %+v, want matched to %s as %v", bot, tk, r.GetNewMatchId(), seat)
				}
			}
			if n := len(fm.creations()); n != 1 {
				t.Errorf("%d matches created, want 1", n)
			}
		})
	}
}

// TestWatchRematchFinishesAStart: the match service fails the last
// accept's creation; a watcher that sees every human accepted for a while
// creates the match itself, once the match service is back.
func TestWatchRematchFinishesAStart(t *testing.T) {
	t.Parallel()
	kind := redistest.Kinds()[0]
	fm := newFakeMatchService()
	h := newHarness(t, kind, rematchSettings(fm), withWindow(time.Minute))
	fm.add("old", matchv1.MatchStatus_MATCH_STATUS_FINISHED, fourHumans)
	for _, p := range fourHumans[:3] {
		if _, err := h.offer(t, p, "old"); err != nil {
			t.Fatal(err)
		}
	}
	fm.mu.Lock()
	fm.fail = errors.New("match service down")
	fm.mu.Unlock()
	if _, err := h.offer(t, "h-green", "old"); status.Code(err) != codes.Unavailable || rpcerr.Info(err).GetReason() != reasonNoMatches {
		t.Fatalf("last accept with the match service down = %v, want Unavailable %s", err, reasonNoMatches)
	}
	fm.mu.Lock()
	fm.fail = nil
	fm.mu.Unlock()
	seen, err := watchAll(t, h, "h-blue", "old")
	if err != nil {
		t.Fatal(err)
	}
	last := seen[len(seen)-1]
	if seen[0].GetState() != matchmakingv1.RematchState_REMATCH_STATE_OFFERED || len(seen[0].GetAcceptedPlayerIds()) != 4 ||
		last.GetState() != matchmakingv1.RematchState_REMATCH_STATE_STARTED || last.GetNewMatchId() == "" {
		t.Fatalf("watched %v", seen)
	}
	if n := len(fm.creations()); n != 1 {
		t.Errorf("%d matches created, want 1", n)
	}
}
