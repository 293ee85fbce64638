package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr/rpcfuzz"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// The handler-level fuzz targets of MatchmakingService and AuthService
// (FuzzRefreshSession in auth_test.go fuzzes the token parsing alone). Each
// calls one RPC through the real server bootstrap (interceptors, token
// checks) on a real Redis, with any request that unmarshals, from a seed
// corpus captured from a real queue flow (rpcfuzz), as any caller:
//
//	who%5: 0 no token, 1 the fresh guest (owner of the fresh ticket and
//	       session), 2 another player (an account of the OpenID Connect
//	       provider, the one caller LinkGuest accepts), 3 a service,
//	       4 an operator
//	pick%3: 0 the fresh guest's ticket / refresh token, 1 a cancelled
//	       ticket / a rotated-away refresh token, 2 the request's own
//
// No answer is INTERNAL or UNKNOWN, every refusal has an ErrorInfo, a
// refusal writes nothing (the key count and the fresh ticket are as they
// were) and the read-only RPCs never write. The one refusal that writes is
// by design: a rotated-away refresh token revokes its session
// (REFRESH_TOKEN_REUSED, docs/security.md).
//
//	go test ./internal/api -run '^$' -fuzz FuzzEnqueue -fuzztime 60s -parallel 1

// mmFuzz is the fixture: the served API and the recorded queue flow.
type mmFuzz struct {
	h       *harness
	rdb     redis.UniversalClient
	seq     atomic.Int64
	tokens  [5]string // who%5 -> token; [1] is set per input
	oldTk   string    // a cancelled ticket
	oldRT   string    // a rotated-away refresh token
	code    string    // an open table another player hosts
	traffic []proto.Message
	// fm is the match service in memory for rematches; oldMatch a
	// finished match whose rematch was declined.
	fm       *fakeMatchService
	oldMatch string
}

func newMMFuzz(f *testing.F) *mmFuzz {
	kind := redistest.Kinds()[0]
	rdb, _ := kind.Client(f)
	fm := newFakeMatchService()
	set := rematchSettings(fm)
	set.Tables.Matches = &fakeMatches{}
	x := &mmFuzz{h: newHarness(f, kind, set, withWindow(time.Minute)), rdb: rdb, fm: fm}
	x.tokens[2] = x.h.idp.Token(f, "stranger", "Stranger", 24*time.Hour)
	x.tokens[3] = x.h.token(f, auth.Identity{Subject: "matchmaker", Role: auth.RoleService})
	x.tokens[4] = x.h.token(f, auth.Identity{Subject: "operator", Role: auth.RoleOperator})
	x.record(f)
	return x
}

// record drives the flow of a guest who logs in, lists the queues, joins
// one by name and one by key, watches, cancels, renames and refreshes,
// keeping every request.
func (x *mmFuzz) record(f *testing.F) {
	ctx := f.Context()
	keep := func(req proto.Message) { x.traffic = append(x.traffic, proto.Clone(req)) }
	login := &authv1.GuestLoginRequest{DisplayName: "Recorded"}
	g, err := x.h.auth.GuestLogin(ctx, login)
	if err != nil {
		f.Fatal(err)
	}
	keep(login)
	tok := as(g.GetToken())
	queues, err := x.h.mm.ListQueues(ctx, &matchmakingv1.ListQueuesRequest{}, tok)
	if err != nil {
		f.Fatal(err)
	}
	keep(&matchmakingv1.ListQueuesRequest{})
	stats := &matchmakingv1.GetQueueStatsRequest{}
	for _, q := range queues.GetQueues() {
		stats.Queues = append(stats.Queues, q.GetName())
	}
	if _, err := x.h.mm.GetQueueStats(ctx, stats, tok); err != nil {
		f.Fatal(err)
	}
	keep(stats)
	keep(&matchmakingv1.GetQueueStatsRequest{})
	for _, req := range []*matchmakingv1.EnqueueRequest{
		{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: queues.GetQueues()[0].GetName()}},
		{Target: &matchmakingv1.EnqueueRequest_Key{Key: &matchmakingv1.QueueKey{RuleSet: "fourkingdoms", TimeControl: &gamev1.TimeControl{Name: testQueues[1].TimeControl.Name()}}}},
	} {
		e, err := x.h.mm.Enqueue(ctx, req, tok)
		if err != nil {
			f.Fatalf("Enqueue(%v): %v", req, err)
		}
		keep(req)
		id := e.GetTicket().GetTicketId()
		keep(&matchmakingv1.WatchTicketRequest{TicketId: id})
		cancel := &matchmakingv1.CancelTicketRequest{TicketId: id}
		if _, err := x.h.mm.CancelTicket(ctx, cancel, tok); err != nil {
			f.Fatal(err)
		}
		keep(cancel)
		x.oldTk = id
	}
	rename := &authv1.SetDisplayNameRequest{RefreshToken: g.GetRefreshToken(), DisplayName: "Renamed"}
	r, err := x.h.auth.SetDisplayName(ctx, rename)
	if err != nil {
		f.Fatal(err)
	}
	keep(rename)
	refresh := &authv1.RefreshSessionRequest{RefreshToken: r.GetRefreshToken()}
	if _, err := x.h.auth.RefreshSession(ctx, refresh); err != nil {
		f.Fatal(err)
	}
	keep(refresh)
	keep(&authv1.RevokeSessionRequest{RefreshToken: r.GetRefreshToken()})
	keep(&authv1.LinkGuestRequest{RefreshToken: r.GetRefreshToken()})
	x.oldRT = r.GetRefreshToken()

	// A table: a host opens it with a bot seat, the recorded guest joins,
	// watches, tries to start it (not the host) and leaves.
	host := as(x.h.token(f, auth.Identity{Subject: "fuzz-host", Role: auth.RolePlayer, DisplayName: "Host"}))
	create := &matchmakingv1.CreateTableRequest{TimeControl: &gamev1.TimeControl{Name: "5+5"}, HostSeat: gamev1.Seat_SEAT_BLUE,
		Seats: []*matchmakingv1.TableSeat{{Seat: gamev1.Seat_SEAT_GREEN, Mode: matchmakingv1.SeatMode_SEAT_MODE_BOT, BotLevel: "greedy"}}}
	tb, err := x.h.mm.CreateTable(ctx, create, host)
	if err != nil {
		f.Fatal(err)
	}
	keep(create)
	x.code = tb.GetTable().GetCode()
	join := &matchmakingv1.JoinTableRequest{Code: x.code, Seat: gamev1.Seat_SEAT_RED}
	if _, err := x.h.mm.JoinTable(ctx, join, tok); err != nil {
		f.Fatal(err)
	}
	keep(join)
	keep(&matchmakingv1.WatchTableRequest{Code: x.code})
	keep(&matchmakingv1.StartTableRequest{Code: x.code, FillWithBots: true, FillBotLevel: "random"})
	leave := &matchmakingv1.LeaveTableRequest{Code: x.code}
	if _, err := x.h.mm.LeaveTable(ctx, leave, tok); err != nil {
		f.Fatal(err)
	}
	keep(leave)

	// A finished match of the guest's: offered, watched, declined.
	x.oldMatch = "recorded"
	x.fm.add(x.oldMatch, matchv1.MatchStatus_MATCH_STATUS_FINISHED, [4]string{g.GetPlayerId(), "p2", "p3", "p4"})
	offer := &matchmakingv1.OfferRematchRequest{MatchId: x.oldMatch}
	if _, err := x.h.mm.OfferRematch(ctx, offer, tok); err != nil {
		f.Fatal(err)
	}
	keep(offer)
	keep(&matchmakingv1.WatchRematchRequest{MatchId: x.oldMatch})
	decline := &matchmakingv1.DeclineRematchRequest{MatchId: x.oldMatch}
	if _, err := x.h.mm.DeclineRematch(ctx, decline, tok); err != nil {
		f.Fatal(err)
	}
	keep(decline)
}

// mmSeeds are the recorded requests of type Req for every caller and
// target, plus Req's edge cases.
func mmSeeds[Req proto.Message](x *mmFuzz, edge ...Req) []rpcfuzz.Input[Req] {
	var in []rpcfuzz.Input[Req]
	for _, m := range x.traffic {
		if req, ok := m.(Req); ok {
			for who := range uint8(5) {
				in = append(in, rpcfuzz.Input[Req]{Who: who, Pick: who % 3, Req: req})
			}
		}
	}
	for i, req := range edge {
		in = append(in, rpcfuzz.Input[Req]{Who: uint8(i), Pick: 2, Req: req})
	}
	return in
}

// mmCall runs one input: a fresh guest with a fresh ticket, the request
// pointed at its target, the call as the picked caller, then the checks.
func mmCall[Req proto.Message](t *testing.T, x *mmFuzz, in rpcfuzz.Input[Req], name string, read bool, rpc func(context.Context, Req, grpc.CallOption) error) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	g, err := x.h.auth.GuestLogin(ctx, &authv1.GuestLoginRequest{DisplayName: fmt.Sprintf("Fuzz %d", x.seq.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	e, err := x.h.mm.Enqueue(ctx, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: testQueues[0].Name()}}, as(g.GetToken()))
	if err != nil {
		t.Fatal(err)
	}
	ticket := e.GetTicket().GetTicketId()
	// A finished match of the fresh guest's, with no offer yet.
	match := fmt.Sprintf("fuzz-%d", x.seq.Add(1))
	x.fm.add(match, matchv1.MatchStatus_MATCH_STATUS_FINISHED, [4]string{g.GetPlayerId(), "p2", "p3", "p4"})
	tk, rt := ticket, g.GetRefreshToken()
	if in.Pick%3 == 1 {
		tk, rt, match = x.oldTk, x.oldRT, x.oldMatch
	}
	if in.Pick%3 != 2 {
		fields := in.Req.ProtoReflect().Descriptor().Fields()
		if fd := fields.ByName("ticket_id"); fd != nil {
			in.Req.ProtoReflect().Set(fd, protoreflect.ValueOfString(tk))
		}
		if fd := fields.ByName("refresh_token"); fd != nil {
			in.Req.ProtoReflect().Set(fd, protoreflect.ValueOfString(rt))
		}
		if fd := fields.ByName("code"); fd != nil {
			in.Req.ProtoReflect().Set(fd, protoreflect.ValueOfString(x.code))
		}
		if fd := fields.ByName("match_id"); fd != nil {
			in.Req.ProtoReflect().Set(fd, protoreflect.ValueOfString(match))
		}
	}
	opt := grpc.EmptyCallOption{}
	var call grpc.CallOption = opt
	switch w := in.Who % 5; w {
	case 1:
		call = as(g.GetToken())
	case 2, 3, 4:
		call = as(x.tokens[w])
	}
	before := x.state(t, ticket)
	err = rpc(ctx, in.Req, call)
	refused := rpcfuzz.Check(t, name, in.Req, err)
	// By design, two refusals write: a reused refresh token revokes its
	// session, and an unknown table code counts against the caller's
	// guesses (TOO_MANY_GUESSES).
	if reason := rpcerr.Info(err).GetReason(); (!refused && !read) || reason == ReasonRefreshReused || reason == "TABLE_NOT_FOUND" {
		return
	}
	if after := x.state(t, ticket); after != before {
		t.Fatalf("%s(%v) = %v wrote:\n%s\n->\n%s", name, in.Req, err, before, after)
	}
}

// state is what a refusal must not change: the key count and the fresh
// ticket.
func (x *mmFuzz) state(t *testing.T, ticket string) string {
	tk, err := x.h.store.Ticket(context.Background(), ticket)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d keys, ticket %+v", x.rdb.DBSize(context.Background()).Val(), tk)
}

func FuzzEnqueue(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.EnqueueRequest { return new(matchmakingv1.EnqueueRequest) },
		mmSeeds(x, &matchmakingv1.EnqueueRequest{}, &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: "nope/1+0"}},
			&matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Key{Key: &matchmakingv1.QueueKey{TimeControl: &gamev1.TimeControl{Name: "-1+99999999999"}}}},
			&matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Key{}}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.EnqueueRequest]) {
			mmCall(t, x, in, "Enqueue", false, func(ctx context.Context, r *matchmakingv1.EnqueueRequest, o grpc.CallOption) error {
				_, err := x.h.mm.Enqueue(ctx, r, o)
				return err
			})
		})
}

func FuzzCancelTicket(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.CancelTicketRequest { return new(matchmakingv1.CancelTicketRequest) },
		mmSeeds(x, &matchmakingv1.CancelTicketRequest{}, &matchmakingv1.CancelTicketRequest{TicketId: "{x}:y"}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.CancelTicketRequest]) {
			mmCall(t, x, in, "CancelTicket", false, func(ctx context.Context, r *matchmakingv1.CancelTicketRequest, o grpc.CallOption) error {
				_, err := x.h.mm.CancelTicket(ctx, r, o)
				return err
			})
		})
}

// FuzzWatchTicket watches for 50 ms: the first update, then the wait ends
// in the caller's own deadline.
func FuzzWatchTicket(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.WatchTicketRequest { return new(matchmakingv1.WatchTicketRequest) },
		mmSeeds(x, &matchmakingv1.WatchTicketRequest{}, &matchmakingv1.WatchTicketRequest{TicketId: "fourkingdoms/1+15d:zz"}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.WatchTicketRequest]) {
			mmCall(t, x, in, "WatchTicket", true, func(ctx context.Context, r *matchmakingv1.WatchTicketRequest, o grpc.CallOption) error {
				ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				s, err := x.h.mm.WatchTicket(ctx, r, o)
				if err != nil {
					return err
				}
				for {
					if _, err := s.Recv(); err != nil {
						if errors.Is(err, io.EOF) {
							return nil
						}
						return err
					}
				}
			})
		})
}

func FuzzGetQueueStats(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.GetQueueStatsRequest { return new(matchmakingv1.GetQueueStatsRequest) },
		mmSeeds(x, &matchmakingv1.GetQueueStatsRequest{Queues: []string{"", "nope", testQueues[0].Name(), testQueues[0].Name()}}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.GetQueueStatsRequest]) {
			mmCall(t, x, in, "GetQueueStats", true, func(ctx context.Context, r *matchmakingv1.GetQueueStatsRequest, o grpc.CallOption) error {
				_, err := x.h.mm.GetQueueStats(ctx, r, o)
				return err
			})
		})
}

func FuzzListQueues(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.ListQueuesRequest { return new(matchmakingv1.ListQueuesRequest) },
		mmSeeds[*matchmakingv1.ListQueuesRequest](x),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.ListQueuesRequest]) {
			mmCall(t, x, in, "ListQueues", true, func(ctx context.Context, r *matchmakingv1.ListQueuesRequest, o grpc.CallOption) error {
				_, err := x.h.mm.ListQueues(ctx, r, o)
				return err
			})
		})
}

func FuzzGuestLogin(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *authv1.GuestLoginRequest { return new(authv1.GuestLoginRequest) },
		mmSeeds(x, &authv1.GuestLoginRequest{DisplayName: "Bot Greedy 1"}, &authv1.GuestLoginRequest{DisplayName: " \u200b "}),
		func(t *testing.T, in rpcfuzz.Input[*authv1.GuestLoginRequest]) {
			mmCall(t, x, in, "GuestLogin", false, func(ctx context.Context, r *authv1.GuestLoginRequest, o grpc.CallOption) error {
				_, err := x.h.auth.GuestLogin(ctx, r, o)
				return err
			})
		})
}

func FuzzRefreshSessionRPC(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *authv1.RefreshSessionRequest { return new(authv1.RefreshSessionRequest) },
		mmSeeds(x, &authv1.RefreshSessionRequest{}, &authv1.RefreshSessionRequest{RefreshToken: "fks1.x.y"}),
		func(t *testing.T, in rpcfuzz.Input[*authv1.RefreshSessionRequest]) {
			mmCall(t, x, in, "RefreshSession", false, func(ctx context.Context, r *authv1.RefreshSessionRequest, o grpc.CallOption) error {
				_, err := x.h.auth.RefreshSession(ctx, r, o)
				return err
			})
		})
}

func FuzzSetDisplayName(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *authv1.SetDisplayNameRequest { return new(authv1.SetDisplayNameRequest) },
		mmSeeds(x, &authv1.SetDisplayNameRequest{}, &authv1.SetDisplayNameRequest{DisplayName: "bot-greedy-4"}),
		func(t *testing.T, in rpcfuzz.Input[*authv1.SetDisplayNameRequest]) {
			mmCall(t, x, in, "SetDisplayName", false, func(ctx context.Context, r *authv1.SetDisplayNameRequest, o grpc.CallOption) error {
				_, err := x.h.auth.SetDisplayName(ctx, r, o)
				return err
			})
		})
}

func FuzzRevokeSession(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *authv1.RevokeSessionRequest { return new(authv1.RevokeSessionRequest) },
		mmSeeds(x, &authv1.RevokeSessionRequest{}, &authv1.RevokeSessionRequest{RefreshToken: "fks1..."}),
		func(t *testing.T, in rpcfuzz.Input[*authv1.RevokeSessionRequest]) {
			mmCall(t, x, in, "RevokeSession", false, func(ctx context.Context, r *authv1.RevokeSessionRequest, o grpc.CallOption) error {
				_, err := x.h.auth.RevokeSession(ctx, r, o)
				return err
			})
		})
}

func FuzzLinkGuest(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *authv1.LinkGuestRequest { return new(authv1.LinkGuestRequest) },
		mmSeeds(x, &authv1.LinkGuestRequest{}, &authv1.LinkGuestRequest{RefreshToken: "fks1.}{.x"}),
		func(t *testing.T, in rpcfuzz.Input[*authv1.LinkGuestRequest]) {
			mmCall(t, x, in, "LinkGuest", false, func(ctx context.Context, r *authv1.LinkGuestRequest, o grpc.CallOption) error {
				_, err := x.h.auth.LinkGuest(ctx, r, o)
				return err
			})
		})
}

// The table RPCs. Pick 0 and 1 aim at the open table "fuzz-host" hosts
// (the fresh guest has a live ticket, so it is refused ALREADY_SEATED where
// seating matters), pick 2 at the request's own code.

func FuzzCreateTable(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.CreateTableRequest { return new(matchmakingv1.CreateTableRequest) },
		mmSeeds(x, &matchmakingv1.CreateTableRequest{}, &matchmakingv1.CreateTableRequest{RuleSet: "{x}", TimeControl: &gamev1.TimeControl{Name: "5+5"}, HostSeat: 99},
			&matchmakingv1.CreateTableRequest{TimeControl: &gamev1.TimeControl{Name: "5+5"}, Seats: []*matchmakingv1.TableSeat{{Seat: 1, Mode: 2, BotLevel: "{x}"}, {Seat: 1}}}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.CreateTableRequest]) {
			mmCall(t, x, in, "CreateTable", false, func(ctx context.Context, r *matchmakingv1.CreateTableRequest, o grpc.CallOption) error {
				_, err := x.h.mm.CreateTable(ctx, r, o)
				return err
			})
		})
}

func FuzzJoinTable(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.JoinTableRequest { return new(matchmakingv1.JoinTableRequest) },
		mmSeeds(x, &matchmakingv1.JoinTableRequest{}, &matchmakingv1.JoinTableRequest{Code: "ilo0-0000-000u", Seat: -3}, &matchmakingv1.JoinTableRequest{Code: "{abcd}efgh-ij"}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.JoinTableRequest]) {
			mmCall(t, x, in, "JoinTable", false, func(ctx context.Context, r *matchmakingv1.JoinTableRequest, o grpc.CallOption) error {
				_, err := x.h.mm.JoinTable(ctx, r, o)
				return err
			})
		})
}

func FuzzLeaveTable(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.LeaveTableRequest { return new(matchmakingv1.LeaveTableRequest) },
		mmSeeds(x, &matchmakingv1.LeaveTableRequest{}, &matchmakingv1.LeaveTableRequest{Code: "0000 0000 0000"}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.LeaveTableRequest]) {
			mmCall(t, x, in, "LeaveTable", false, func(ctx context.Context, r *matchmakingv1.LeaveTableRequest, o grpc.CallOption) error {
				_, err := x.h.mm.LeaveTable(ctx, r, o)
				return err
			})
		})
}

func FuzzStartTable(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.StartTableRequest { return new(matchmakingv1.StartTableRequest) },
		mmSeeds(x, &matchmakingv1.StartTableRequest{}, &matchmakingv1.StartTableRequest{Code: "0000-0000-0000", FillWithBots: true, FillBotLevel: "{x}"}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.StartTableRequest]) {
			mmCall(t, x, in, "StartTable", false, func(ctx context.Context, r *matchmakingv1.StartTableRequest, o grpc.CallOption) error {
				_, err := x.h.mm.StartTable(ctx, r, o)
				return err
			})
		})
}

// FuzzWatchTable watches for 50 ms, as FuzzWatchTicket.
func FuzzWatchTable(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.WatchTableRequest { return new(matchmakingv1.WatchTableRequest) },
		mmSeeds(x, &matchmakingv1.WatchTableRequest{}, &matchmakingv1.WatchTableRequest{Code: "ZZZZ-ZZZZ-ZZZZ"}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.WatchTableRequest]) {
			mmCall(t, x, in, "WatchTable", true, func(ctx context.Context, r *matchmakingv1.WatchTableRequest, o grpc.CallOption) error {
				ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				s, err := x.h.mm.WatchTable(ctx, r, o)
				if err != nil {
					return err
				}
				for {
					if _, err := s.Recv(); err != nil {
						if errors.Is(err, io.EOF) {
							return nil
						}
						return err
					}
				}
			})
		})
}

// The rematch RPCs. Pick 0 aims at a finished match of the fresh guest's
// with no offer yet (the guest has a live ticket, so its own offer is
// refused ALREADY_SEATED), pick 1 at a match whose rematch was declined,
// pick 2 at the request's own match id.

func FuzzOfferRematch(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.OfferRematchRequest { return new(matchmakingv1.OfferRematchRequest) },
		mmSeeds(x, &matchmakingv1.OfferRematchRequest{}, &matchmakingv1.OfferRematchRequest{MatchId: "{x}"}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.OfferRematchRequest]) {
			mmCall(t, x, in, "OfferRematch", false, func(ctx context.Context, r *matchmakingv1.OfferRematchRequest, o grpc.CallOption) error {
				_, err := x.h.mm.OfferRematch(ctx, r, o)
				return err
			})
		})
}

func FuzzDeclineRematch(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.DeclineRematchRequest { return new(matchmakingv1.DeclineRematchRequest) },
		mmSeeds(x, &matchmakingv1.DeclineRematchRequest{}, &matchmakingv1.DeclineRematchRequest{MatchId: strings.Repeat("m", 65)}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.DeclineRematchRequest]) {
			mmCall(t, x, in, "DeclineRematch", false, func(ctx context.Context, r *matchmakingv1.DeclineRematchRequest, o grpc.CallOption) error {
				_, err := x.h.mm.DeclineRematch(ctx, r, o)
				return err
			})
		})
}

// FuzzWatchRematch watches for 50 ms, as FuzzWatchTicket.
func FuzzWatchRematch(f *testing.F) {
	x := newMMFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchmakingv1.WatchRematchRequest { return new(matchmakingv1.WatchRematchRequest) },
		mmSeeds(x, &matchmakingv1.WatchRematchRequest{}, &matchmakingv1.WatchRematchRequest{MatchId: "nope"}),
		func(t *testing.T, in rpcfuzz.Input[*matchmakingv1.WatchRematchRequest]) {
			mmCall(t, x, in, "WatchRematch", true, func(ctx context.Context, r *matchmakingv1.WatchRematchRequest, o grpc.CallOption) error {
				ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				s, err := x.h.mm.WatchRematch(ctx, r, o)
				if err != nil {
					return err
				}
				for {
					if _, err := s.Recv(); err != nil {
						if errors.Is(err, io.EOF) {
							return nil
						}
						return err
					}
				}
			})
		})
}
