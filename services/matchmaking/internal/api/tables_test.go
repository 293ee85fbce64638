package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/matchmaker"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// fakeMatches is a match service in memory, idempotent by request id as
// the real one.
type fakeMatches struct {
	mu       sync.Mutex
	byReq    map[string]matchmaker.Match
	requests []matchmaker.MatchRequest // one per match created
}

func (f *fakeMatches) CreateMatch(_ context.Context, req matchmaker.MatchRequest) (matchmaker.Match, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.byReq[req.RequestID]; ok {
		return m, nil
	}
	m := matchmaker.Match{ID: fmt.Sprintf("m%d", len(f.byReq)+1), Seats: map[string]int{}}
	for i, p := range req.Players {
		m.Seats[p.ID] = i + 1
	}
	if f.byReq == nil {
		f.byReq = map[string]matchmaker.Match{}
	}
	f.byReq[req.RequestID] = m
	f.requests = append(f.requests, req)
	return m, nil
}

func (f *fakeMatches) created() []matchmaker.MatchRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]matchmaker.MatchRequest(nil), f.requests...)
}

// forEachRedisTables runs f on both Redis kinds with a fresh fake match
// service.
func forEachRedisTables(t *testing.T, f func(t *testing.T, h *harness, m *fakeMatches)) {
	t.Helper()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			m := &fakeMatches{}
			set := testAPISettings
			set.Tables.Matches = m
			f(t, newHarness(t, kind, set), m)
		})
	}
}

func tc55() *gamev1.TimeControl { return &gamev1.TimeControl{Name: "5+5"} }

// lobbyBots puts n bots of level into the bot lobby, as a bot pool does.
func (h *harness) lobbyBots(t *testing.T, level string, n int) []string {
	t.Helper()
	var tickets []string
	for i := range n {
		tok := h.token(t, auth.Identity{Subject: fmt.Sprintf("bot-%s-%d", level, i), Role: auth.RolePlayer, DisplayName: "Bot", Bot: true})
		resp, err := h.mm.Enqueue(t.Context(), &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: store.LobbyQueue(level)}}, as(tok))
		if err != nil {
			t.Fatalf("bot enqueues in the lobby: %v", err)
		}
		tickets = append(tickets, resp.GetTicket().GetTicketId())
	}
	return tickets
}

func TestCreateTable(t *testing.T) {
	t.Parallel()
	forEachRedisTables(t, func(t *testing.T, h *harness, _ *fakeMatches) {
		ctx := t.Context()
		host := h.guest(t, "host")
		seat := func(s gamev1.Seat, mode matchmakingv1.SeatMode, level string) *matchmakingv1.TableSeat {
			return &matchmakingv1.TableSeat{Seat: s, Mode: mode, BotLevel: level}
		}
		bot := matchmakingv1.SeatMode_SEAT_MODE_BOT
		refusals := []struct {
			name  string
			req   *matchmakingv1.CreateTableRequest
			field string
		}{
			{"unknown rule set", &matchmakingv1.CreateTableRequest{RuleSet: "go", TimeControl: tc55()}, "rule_set"},
			{"no time control", &matchmakingv1.CreateTableRequest{}, "time_control"},
			{"bad time control", &matchmakingv1.CreateTableRequest{TimeControl: &gamev1.TimeControl{Name: "forever"}}, "time_control"},
			{"seat listed twice", &matchmakingv1.CreateTableRequest{TimeControl: tc55(), Seats: []*matchmakingv1.TableSeat{
				seat(gamev1.Seat_SEAT_BLUE, bot, "greedy"), seat(gamev1.Seat_SEAT_BLUE, bot, "greedy")}}, "seats[1].seat"},
			{"no seat", &matchmakingv1.CreateTableRequest{TimeControl: tc55(), Seats: []*matchmakingv1.TableSeat{{}}}, "seats[0].seat"},
			{"unknown bot level", &matchmakingv1.CreateTableRequest{TimeControl: tc55(), Seats: []*matchmakingv1.TableSeat{
				seat(gamev1.Seat_SEAT_BLUE, bot, "genius")}}, "seats[0].bot_level"},
			{"every seat a bot", &matchmakingv1.CreateTableRequest{TimeControl: tc55(), Seats: []*matchmakingv1.TableSeat{
				seat(1, bot, "greedy"), seat(2, bot, "greedy"), seat(3, bot, "greedy"), seat(4, bot, "greedy")}}, "seats"},
			{"host on a bot seat", &matchmakingv1.CreateTableRequest{TimeControl: tc55(), HostSeat: gamev1.Seat_SEAT_BLUE, Seats: []*matchmakingv1.TableSeat{
				seat(gamev1.Seat_SEAT_BLUE, bot, "greedy")}}, "host_seat"},
			{"host seat out of range", &matchmakingv1.CreateTableRequest{TimeControl: tc55(), HostSeat: 9}, "host_seat"},
		}
		for _, r := range refusals {
			_, err := h.mm.CreateTable(ctx, r.req, as(host.GetToken()))
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("%s: %v, want INVALID_ARGUMENT", r.name, err)
				continue
			}
			checkRefusal(t, err, "fourkingdoms.matchmaking.v1/INVALID_ARGUMENT", r.field)
		}

		resp, err := h.mm.CreateTable(ctx, &matchmakingv1.CreateTableRequest{TimeControl: tc55(), Rated: true, HostSeat: gamev1.Seat_SEAT_YELLOW,
			Seats: []*matchmakingv1.TableSeat{seat(gamev1.Seat_SEAT_GREEN, bot, "random")}}, as(host.GetToken()))
		if err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
		tb := resp.GetTable()
		code, err := store.ParseCode(tb.GetCode())
		if err != nil || len(tb.GetCode()) != 14 || tb.GetCode()[4] != '-' {
			t.Errorf("code %q: want 12 characters in groups of four (%v)", tb.GetCode(), err)
		}
		if tb.GetLink() != "https://fk.example/#table="+code {
			t.Errorf("link %q", tb.GetLink())
		}
		if tb.GetState() != matchmakingv1.TableState_TABLE_STATE_OPEN || tb.GetHostPlayerId() != host.GetPlayerId() || !tb.GetRated() ||
			tb.GetSeats()[2].GetPlayer().GetPlayerId() != host.GetPlayerId() || tb.GetSeats()[3].GetMode() != bot || tb.GetSeats()[3].GetBotLevel() != "random" ||
			tb.GetTimeControl().GetName() != "5+5" || tb.GetVersion() != 1 {
			t.Errorf("table = %v", tb)
		}
		// One table or one ticket.
		_, err = h.mm.CreateTable(ctx, &matchmakingv1.CreateTableRequest{TimeControl: tc55()}, as(host.GetToken()))
		checkCode(t, "a second table", err, codes.FailedPrecondition, "ALREADY_SEATED")
		_, err = h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, as(host.GetToken()))
		checkCode(t, "Enqueue while seated", err, codes.FailedPrecondition, "ALREADY_SEATED")
		// Only bots may wait in the lobby.
		_, err = h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: store.LobbyQueue("greedy")}}, as(h.guest(t, "p").GetToken()))
		checkCode(t, "a person in the bot lobby", err, codes.NotFound, "QUEUE_NOT_FOUND")
	})
}

func checkCode(t *testing.T, what string, err error, code codes.Code, reason string) {
	t.Helper()
	if status.Code(err) != code {
		t.Errorf("%s: %v, want %v", what, err, code)
		return
	}
	checkRefusal(t, err, "fourkingdoms.matchmaking.v1/"+reason, "")
}

func TestJoinLeaveStart(t *testing.T) {
	t.Parallel()
	forEachRedisTables(t, func(t *testing.T, h *harness, m *fakeMatches) {
		ctx := t.Context()
		host, a, b, c := h.guest(t, "host"), h.guest(t, "a"), h.guest(t, "b"), h.guest(t, "c")
		resp, err := h.mm.CreateTable(ctx, &matchmakingv1.CreateTableRequest{TimeControl: tc55(),
			Seats: []*matchmakingv1.TableSeat{{Seat: gamev1.Seat_SEAT_GREEN, Mode: matchmakingv1.SeatMode_SEAT_MODE_BOT, BotLevel: "greedy"}}}, as(host.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		display := resp.GetTable().GetCode()
		typed := strings.ToLower(strings.ReplaceAll(display, "-", ""))
		joined, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: typed, Seat: gamev1.Seat_SEAT_YELLOW}, as(a.GetToken()))
		if err != nil || joined.GetSeat() != gamev1.Seat_SEAT_YELLOW || joined.GetTable().GetVersion() != 2 {
			t.Fatalf("JoinTable = %v, %v", joined, err)
		}
		version := func() uint64 {
			w, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: display}, as(a.GetToken()))
			if err != nil {
				t.Fatalf("re-join: %v", err)
			}
			return w.GetTable().GetVersion()
		}
		refusals := []struct {
			name   string
			call   func() error
			code   codes.Code
			reason string
		}{
			{"malformed code", func() error {
				_, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: "abc"}, as(b.GetToken()))
				return err
			}, codes.InvalidArgument, "INVALID_ARGUMENT"},
			{"unknown code", func() error {
				_, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: "0000-0000-0000"}, as(b.GetToken()))
				return err
			}, codes.NotFound, "TABLE_NOT_FOUND"},
			{"taken seat", func() error {
				_, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: display, Seat: gamev1.Seat_SEAT_YELLOW}, as(b.GetToken()))
				return err
			}, codes.FailedPrecondition, "SEAT_TAKEN"},
			{"bot seat", func() error {
				_, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: display, Seat: gamev1.Seat_SEAT_GREEN}, as(b.GetToken()))
				return err
			}, codes.FailedPrecondition, "SEAT_TAKEN"},
			{"seat out of range", func() error {
				_, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: display, Seat: 7}, as(b.GetToken()))
				return err
			}, codes.InvalidArgument, "INVALID_ARGUMENT"},
			{"start by a guest", func() error {
				_, err := h.mm.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: display}, as(a.GetToken()))
				return err
			}, codes.PermissionDenied, "NOT_HOST"},
			{"start with a free seat", func() error {
				_, err := h.mm.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: display}, as(host.GetToken()))
				return err
			}, codes.FailedPrecondition, "SEATS_OPEN"},
			{"start without a free bot", func() error {
				_, err := h.mm.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: display, FillWithBots: true}, as(host.GetToken()))
				return err
			}, codes.Unavailable, "NO_FREE_BOTS"},
			{"fill with an unknown level", func() error {
				_, err := h.mm.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: display, FillWithBots: true, FillBotLevel: "genius"}, as(host.GetToken()))
				return err
			}, codes.InvalidArgument, "INVALID_ARGUMENT"},
		}
		for _, r := range refusals {
			before := version()
			err := r.call()
			if status.Code(err) != r.code {
				t.Errorf("%s: %v, want %v", r.name, err, r.code)
			} else if r.code != codes.InvalidArgument {
				checkRefusal(t, err, "fourkingdoms.matchmaking.v1/"+r.reason, "")
			}
			if after := version(); after != before {
				t.Errorf("%s changed the table: version %d -> %d", r.name, before, after)
			}
		}
		if _, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: display}, as(b.GetToken())); err != nil {
			t.Fatal(err)
		}
		_, err = h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: display}, as(c.GetToken()))
		checkCode(t, "a full table", err, codes.FailedPrecondition, "TABLE_FULL")

		// The host leaves: a (joined first) hosts; the host comes back.
		left, err := h.mm.LeaveTable(ctx, &matchmakingv1.LeaveTableRequest{Code: display}, as(host.GetToken()))
		if err != nil || left.GetTable().GetHostPlayerId() != a.GetPlayerId() {
			t.Fatalf("host leaves = %v, %v; want a as host", left, err)
		}
		if _, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: display}, as(host.GetToken())); err != nil {
			t.Fatal(err)
		}
		bots := h.lobbyBots(t, "greedy", 1)
		started, err := h.mm.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: display}, as(a.GetToken()))
		if err != nil {
			t.Fatalf("StartTable: %v", err)
		}
		st := started.GetTable()
		if st.GetState() != matchmakingv1.TableState_TABLE_STATE_STARTED || st.GetMatchId() == "" || st.GetSeats()[3].GetPlayer().GetIsBot() != true {
			t.Errorf("started table = %v", st)
		}
		reqs := m.created()
		if len(reqs) != 1 || !reqs[0].Unrated || reqs[0].Players[3].ID != "bot-greedy-0" || reqs[0].Players[2].ID != a.GetPlayerId() {
			t.Errorf("matches created = %+v; want one unrated match with the bot on Green", reqs)
		}
		bt, err := h.store.Ticket(ctx, bots[0])
		if err != nil || bt.State != store.Matched || bt.MatchID != st.GetMatchId() || bt.Seat != 4 {
			t.Errorf("bot ticket = %+v, %v; want matched to %s on Green", bt, err, st.GetMatchId())
		}
		_, err = h.mm.LeaveTable(ctx, &matchmakingv1.LeaveTableRequest{Code: display}, as(b.GetToken()))
		checkCode(t, "leaving a started table", err, codes.FailedPrecondition, "TABLE_STARTED")
		// The players are free again.
		if _, err := h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "fourkingdoms/5+5"}}, as(b.GetToken())); err != nil {
			t.Errorf("Enqueue after the start: %v", err)
		}
	})
}

// Concurrent StartTable calls (a double click, two devices) start one
// match, and all of them answer with it.
func TestConcurrentStartTable(t *testing.T) {
	t.Parallel()
	forEachRedisTables(t, func(t *testing.T, h *harness, m *fakeMatches) {
		ctx := t.Context()
		host := h.guest(t, "host")
		resp, err := h.mm.CreateTable(ctx, &matchmakingv1.CreateTableRequest{TimeControl: tc55(), Rated: true}, as(host.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		h.lobbyBots(t, "random", 4)
		var wg sync.WaitGroup
		ids := make([]string, 6)
		for i := range ids {
			wg.Go(func() {
				r, err := h.mm.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: resp.GetTable().GetCode(), FillWithBots: true, FillBotLevel: "random"}, as(host.GetToken()))
				if err != nil {
					t.Errorf("StartTable %d: %v", i, err)
					return
				}
				ids[i] = r.GetTable().GetMatchId()
			})
		}
		wg.Wait()
		reqs := m.created()
		if len(reqs) != 1 || reqs[0].Unrated {
			t.Fatalf("%d matches created (%+v), want one rated match", len(reqs), reqs)
		}
		for i, id := range ids {
			if id != ids[0] || id == "" {
				t.Errorf("call %d answered match %q, call 0 %q", i, id, ids[0])
			}
		}
		// Three bots were taken, one is still free in the lobby.
		if w, _ := h.store.Waiting(ctx, store.LobbyQueue("random")); len(w) != 1 {
			t.Errorf("%d bots left in the lobby, want 1", len(w))
		}
	})
}

func TestWatchTable(t *testing.T) {
	t.Parallel()
	forEachRedisTables(t, func(t *testing.T, h *harness, _ *fakeMatches) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		host, a := h.guest(t, "host"), h.guest(t, "a")
		resp, err := h.mm.CreateTable(ctx, &matchmakingv1.CreateTableRequest{TimeControl: tc55()}, as(host.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		code := resp.GetTable().GetCode()
		stream, err := h.mm.WatchTable(ctx, &matchmakingv1.WatchTableRequest{Code: code}, as(a.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		updates := make(chan *matchmakingv1.Table, 16)
		ended := make(chan error, 1)
		go func() {
			for {
				u, err := stream.Recv()
				if err != nil {
					ended <- err // checked before anything else is reported
					close(updates)
					return
				}
				updates <- u.GetTable()
			}
		}()
		first := <-updates
		if first.GetVersion() != 1 || first.GetState() != matchmakingv1.TableState_TABLE_STATE_OPEN {
			t.Fatalf("first update = %v", first)
		}
		if _, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: code}, as(a.GetToken())); err != nil {
			t.Fatal(err)
		}
		if u := <-updates; u.GetVersion() != 2 || u.GetSeats()[1].GetPlayer().GetPlayerId() != a.GetPlayerId() {
			t.Fatalf("after the join = %v", u)
		}
		h.lobbyBots(t, "greedy", 2)
		if _, err := h.mm.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: code, FillWithBots: true}, as(host.GetToken())); err != nil {
			t.Fatal(err)
		}
		var last *matchmakingv1.Table
		for u := range updates {
			last = u
		}
		if err := <-ended; !errors.Is(err, io.EOF) {
			t.Errorf("stream ended with %v, want OK", err)
		}
		if last.GetState() != matchmakingv1.TableState_TABLE_STATE_STARTED || last.GetMatchId() == "" {
			t.Errorf("last update = %v, want started with a match", last)
		}
		// Watching a started table sends it once and ends.
		again, err := h.mm.WatchTable(ctx, &matchmakingv1.WatchTableRequest{Code: code}, as(a.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		if u, err := again.Recv(); err != nil || u.GetTable().GetMatchId() != last.GetMatchId() {
			t.Errorf("watching the started table: %v, %v", u, err)
		}
		if _, err := again.Recv(); !errors.Is(err, io.EOF) {
			t.Errorf("second Recv = %v, want EOF", err)
		}
	})
}

func TestCodeGuessLimit(t *testing.T) {
	t.Parallel()
	forEachRedisTables(t, func(t *testing.T, h *harness, _ *fakeMatches) {
		ctx := t.Context()
		g := h.guest(t, "guesser")
		lim := testAPISettings.Tables.Guesses
		for i := range lim.Max {
			_, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: fmt.Sprintf("0000-0000-%04d", i)}, as(g.GetToken()))
			checkCode(t, "an unknown code", err, codes.NotFound, "TABLE_NOT_FOUND")
		}
		calls := map[string]func() error{
			"JoinTable": func() error {
				_, err := h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: "0000-0000-0009"}, as(g.GetToken()))
				return err
			},
			"WatchTable": func() error {
				s, err := h.mm.WatchTable(ctx, &matchmakingv1.WatchTableRequest{Code: "0000-0000-0009"}, as(g.GetToken()))
				if err != nil {
					return err
				}
				_, err = s.Recv()
				return err
			},
		}
		for name, call := range calls {
			err := call()
			checkCode(t, name+" past the limit", err, codes.ResourceExhausted, "TOO_MANY_GUESSES")
			var retry *errdetails.RetryInfo
			for _, d := range status.Convert(err).Details() {
				if r, ok := d.(*errdetails.RetryInfo); ok {
					retry = r
				}
			}
			if d := retry.GetRetryDelay().AsDuration(); d <= 0 || d > lim.Window {
				t.Errorf("%s: RetryInfo %v, want a delay within the window %v", name, retry, lim.Window)
			}
		}
	})
}

// The last human leaving closes the table: its watchers get CLOSED and
// their streams end with OK.
func TestWatchTableEndsWhenClosed(t *testing.T) {
	t.Parallel()
	forEachRedisTables(t, func(t *testing.T, h *harness, _ *fakeMatches) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		host := h.guest(t, "host")
		resp, err := h.mm.CreateTable(ctx, &matchmakingv1.CreateTableRequest{TimeControl: tc55()}, as(host.GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		code := resp.GetTable().GetCode()
		stream, err := h.mm.WatchTable(ctx, &matchmakingv1.WatchTableRequest{Code: code}, as(h.guest(t, "w").GetToken()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
		if _, err := h.mm.LeaveTable(ctx, &matchmakingv1.LeaveTableRequest{Code: code}, as(host.GetToken())); err != nil {
			t.Fatal(err)
		}
		u, err := stream.Recv()
		if err != nil || u.GetTable().GetState() != matchmakingv1.TableState_TABLE_STATE_CLOSED {
			t.Fatalf("after the host left: %v, %v; want CLOSED", u, err)
		}
		if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
			t.Errorf("after CLOSED: %v, want the end of the stream", err)
		}
		_, err = h.mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: code}, as(host.GetToken()))
		checkCode(t, "joining a closed table", err, codes.NotFound, "TABLE_NOT_FOUND")
	})
}
