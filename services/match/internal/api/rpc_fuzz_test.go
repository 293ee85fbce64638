package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr/rpcfuzz"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// The handler-level fuzz targets of MatchService (FuzzClaimWin, with its
// own mirror of the rules, is in claim_fuzz_test.go). Each runs one RPC
// with any request that unmarshals, from a seed corpus captured from a
// real game driven through the same handlers (rpcfuzz), as any caller:
//
//	who%8: 0 no identity, 1-4 the player of Red..Green, 5 a stranger,
//	       6 a service, 7 an operator
//	pick%4: 0, 3 a fresh match, after (pick>>2)%4 plies of the recorded
//	       game; 1 a finished match; 2 the request's own match id
//
// No answer is INTERNAL or UNKNOWN, every refusal has an ErrorInfo, a
// refusal leaves both matches as they were, and a read never changes them.
//
//	go test ./internal/api -run '^$' -fuzz FuzzMakeMove -fuzztime 60s -parallel 1

// matchFuzz is the fixture: the API on a real Redis and the recorded game.
type matchFuzz struct {
	rdb      redis.UniversalClient
	srv      *Server
	seq      atomic.Int64
	moves    []string // the recorded game's first plies
	finished string   // a finished match
	finPl    [4]string
	traffic  []proto.Message // every request of the recorded flow
}

func newMatchFuzz(f *testing.F) *matchFuzz {
	rdb, _ := redistest.Standalone(f)
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(f)
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := match.New(st, nil, match.DefaultConfig(), log, time.Now)
	if err != nil {
		f.Fatal(err)
	}
	srv, err := New(svc, log, nil, 0)
	if err != nil {
		f.Fatal(err)
	}
	h := &matchFuzz{rdb: rdb, srv: srv}
	h.record(f)
	return h
}

// record drives a real game through the handlers and keeps its requests
// as the seed corpus: creation, moves read from legal_moves, premoves set
// and cleared, export, a watch, a claim, resignations and an abort.
func (h *matchFuzz) record(f *testing.F) {
	ctx := f.Context()
	id, pl := h.create(ctx, "record")
	var players [4]context.Context
	for s := range 4 {
		players[s] = as(ctx, pl[s], auth.RolePlayer)
	}
	keep := func(req proto.Message) { h.traffic = append(h.traffic, proto.Clone(req)) }
	for ply := range 8 {
		s := ply % 4
		m, err := h.srv.GetMatch(players[s], &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			f.Fatal(err)
		}
		keep(&matchv1.GetMatchRequest{MatchId: id})
		next := (s + 1) % 4
		if legal := m.GetMatch().GetLegalMoves(); len(legal) > 0 {
			pre := &matchv1.SetPremovesRequest{MatchId: id, Moves: []string{"a1-a2"}, Seat: gamev1.Seat(next + 1)}
			if _, err := h.srv.SetPremoves(players[next], pre); err == nil {
				keep(pre)
				clr := &matchv1.ClearPremovesRequest{MatchId: id, Seat: gamev1.Seat(next + 1)}
				if _, err := h.srv.ClearPremoves(players[next], clr); err != nil {
					f.Fatal(err)
				}
				keep(clr)
			}
			ep := uint32(ply)
			req := &matchv1.MakeMoveRequest{MatchId: id, Move: legal[ply%len(legal)], ClientMoveId: fmt.Sprintf("mv-%d", ply), ExpectedPly: &ep}
			if _, err := h.srv.MakeMove(players[s], req); err != nil {
				f.Fatal(err)
			}
			keep(req)
			h.moves = append(h.moves, req.GetMove())
		}
	}
	// A round-trip measurement: both calls, the second with a real token.
	ping, err := h.srv.Ping(players[0], &matchv1.PingRequest{MatchId: id})
	if err != nil {
		f.Fatal(err)
	}
	keep(&matchv1.PingRequest{MatchId: id})
	keep(&matchv1.PingRequest{MatchId: id, Token: ping.GetToken()})
	if _, err := h.srv.Ping(players[0], &matchv1.PingRequest{MatchId: id, Token: ping.GetToken()}); err != nil {
		f.Fatal(err)
	}
	keep(&matchv1.WatchMatchRequest{MatchId: id, FromVersion: 3})
	keep(&matchv1.ExportGameRequest{MatchId: id})
	if _, err := h.srv.ExportGame(players[0], &matchv1.ExportGameRequest{MatchId: id}); err != nil {
		f.Fatal(err)
	}
	keep(&matchv1.ClaimWinRequest{MatchId: id})
	for s := range 3 {
		req := &matchv1.ResignRequest{MatchId: id}
		if _, err := h.srv.Resign(players[s], req); err != nil {
			f.Fatal(err)
		}
		keep(req)
	}
	h.finished, h.finPl = id, pl
	other, _ := h.create(ctx, "aborted")
	req := &matchv1.AbortMatchRequest{MatchId: other, Reason: "players did not show up"}
	if _, err := h.srv.AbortMatch(as(ctx, "operator", auth.RoleOperator), req); err != nil {
		f.Fatal(err)
	}
	keep(req)
}

// create creates a match of four new players as the matchmaker would.
func (h *matchFuzz) create(ctx context.Context, name string) (string, [4]string) {
	n := h.seq.Add(1)
	req := &matchv1.CreateMatchRequest{RequestId: fmt.Sprintf("%s-%d", name, n), TimeControl: &gamev1.TimeControl{Name: "60+0"}, Seed: new(uint64)}
	var pl [4]string
	for s := range 4 {
		pl[s] = fmt.Sprintf("p%d-%d", n, s)
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: pl[s], DisplayName: pl[s]}})
	}
	if len(h.traffic) == 0 {
		h.traffic = append(h.traffic, proto.Clone(req))
	}
	resp, err := h.srv.CreateMatch(as(ctx, "matchmaker", auth.RoleService), req)
	if err != nil {
		panic(fmt.Sprintf("CreateMatch: %v", err)) // the fixture, not the fuzz input
	}
	return resp.GetMatch().GetMatchId(), pl
}

func as(ctx context.Context, subject string, role auth.Role) context.Context {
	return auth.NewContext(ctx, auth.Identity{Subject: subject, Role: role})
}

// seeds are the recorded requests of type Req, each for every kind of
// caller and target, plus Req's edge cases.
func seeds[Req proto.Message](h *matchFuzz, edge ...Req) []rpcfuzz.Input[Req] {
	var in []rpcfuzz.Input[Req]
	for i, m := range h.traffic {
		req, ok := m.(Req)
		if !ok {
			continue
		}
		for who := range uint8(8) {
			in = append(in, rpcfuzz.Input[Req]{Who: who, Pick: uint8(i%4)<<2 | who%4, Req: req})
		}
	}
	for i, req := range edge {
		in = append(in, rpcfuzz.Input[Req]{Who: uint8(i), Pick: uint8(i), Req: req})
	}
	return in
}

// call runs one input: it points the request at its target (through the
// request's match_id field), picks the caller, runs rpc, and checks the
// answer and the matches' state.
func call[Req proto.Message](t *testing.T, h *matchFuzz, in rpcfuzz.Input[Req], name string, read bool, rpc func(context.Context, Req) error) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	id, pl := h.finished, h.finPl
	if p := in.Pick % 4; p == 0 || p == 3 {
		id, pl = h.create(ctx, "fuzz")
		for ply, mv := range h.moves[:int(in.Pick>>2)%4] {
			if _, err := h.srv.MakeMove(as(ctx, pl[ply%4], auth.RolePlayer), &matchv1.MakeMoveRequest{MatchId: id, Move: mv}); err != nil {
				t.Fatalf("replaying %s: %v", mv, err)
			}
		}
	}
	if in.Pick%4 != 2 {
		fd := in.Req.ProtoReflect().Descriptor().Fields().ByName("match_id")
		in.Req.ProtoReflect().Set(fd, protoreflect.ValueOfString(id))
	}
	switch w := in.Who % 8; w {
	case 1, 2, 3, 4:
		ctx = as(ctx, pl[w-1], auth.RolePlayer)
	case 5:
		ctx = as(ctx, "stranger", auth.RolePlayer)
	case 6:
		ctx = as(ctx, "matchmaker", auth.RoleService)
	case 7:
		ctx = as(ctx, "operator", auth.RoleOperator)
	}
	before := h.state(t, id, pl)
	fin := h.state(t, h.finished, h.finPl)
	err := rpc(ctx, in.Req)
	refused := rpcfuzz.Check(t, name, in.Req, err)
	if !refused && !read {
		return
	}
	if after := h.state(t, id, pl); after != before {
		t.Fatalf("%s(%v) = %v changed the match:\n%s\n->\n%s", name, in.Req, err, before, after)
	}
	if after := h.state(t, h.finished, h.finPl); after != fin {
		t.Fatalf("%s(%v) = %v changed the finished match:\n%s\n->\n%s", name, in.Req, err, fin, after)
	}
}

// state is what a refusal must not change: the match's version, status,
// position and every player's premove queue.
func (h *matchFuzz) state(t *testing.T, id string, pl [4]string) string {
	var s string
	for _, p := range pl {
		m, err := h.srv.GetMatch(as(context.Background(), p, auth.RolePlayer), &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatalf("GetMatch(%s) as %s: %v", id, p, err)
		}
		s += fmt.Sprintf("v%d %v %s %v\n", m.GetMatch().GetVersion(), m.GetMatch().GetStatus(), m.GetMatch().GetFen4(), m.GetMatch().GetPremoves())
	}
	return s
}

func FuzzCreateMatch(f *testing.F) {
	h := newMatchFuzz(f)
	tc := &gamev1.TimeControl{Name: "10+5"}
	rpcfuzz.Fuzz(f, func() *matchv1.CreateMatchRequest { return new(matchv1.CreateMatchRequest) },
		seeds(h, &matchv1.CreateMatchRequest{}, &matchv1.CreateMatchRequest{RequestId: "x", TimeControl: tc},
			&matchv1.CreateMatchRequest{RequestId: "y", TimeControl: tc, RuleSet: "nope", StartFen4: new(string)}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.CreateMatchRequest]) {
			// CreateMatch names no match: its state is the key count.
			ctx := t.Context()
			switch in.Who % 4 {
			case 1:
				ctx = as(ctx, "p1", auth.RolePlayer)
			case 2:
				ctx = as(ctx, "matchmaker", auth.RoleService)
			case 3:
				ctx = as(ctx, "operator", auth.RoleOperator)
			}
			before := h.rdb.DBSize(ctx).Val()
			_, err := h.srv.CreateMatch(ctx, in.Req)
			if rpcfuzz.Check(t, "CreateMatch", in.Req, err) {
				if after := h.rdb.DBSize(context.Background()).Val(); after != before {
					t.Fatalf("refused CreateMatch(%v) = %v: keys %d -> %d", in.Req, err, before, after)
				}
			}
		})
}

func FuzzGetMatch(f *testing.F) {
	h := newMatchFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchv1.GetMatchRequest { return new(matchv1.GetMatchRequest) },
		seeds(h, &matchv1.GetMatchRequest{}, &matchv1.GetMatchRequest{MatchId: "m/../x"}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.GetMatchRequest]) {
			call(t, h, in, "GetMatch", true, func(ctx context.Context, r *matchv1.GetMatchRequest) error {
				_, err := h.srv.GetMatch(ctx, r)
				return err
			})
		})
}

func FuzzMakeMove(f *testing.F) {
	h := newMatchFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchv1.MakeMoveRequest { return new(matchv1.MakeMoveRequest) },
		seeds(h, &matchv1.MakeMoveRequest{}, &matchv1.MakeMoveRequest{Move: "z99-a0"}, &matchv1.MakeMoveRequest{Move: "O-O-O"},
			&matchv1.MakeMoveRequest{Move: "h2-h3", ExpectedPly: new(uint32(1 << 31))}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.MakeMoveRequest]) {
			call(t, h, in, "MakeMove", false, func(ctx context.Context, r *matchv1.MakeMoveRequest) error {
				_, err := h.srv.MakeMove(ctx, r)
				return err
			})
		})
}

func FuzzResign(f *testing.F) {
	h := newMatchFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchv1.ResignRequest { return new(matchv1.ResignRequest) },
		seeds(h, &matchv1.ResignRequest{}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.ResignRequest]) {
			call(t, h, in, "Resign", false, func(ctx context.Context, r *matchv1.ResignRequest) error {
				_, err := h.srv.Resign(ctx, r)
				return err
			})
		})
}

func FuzzSetPremoves(f *testing.F) {
	h := newMatchFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchv1.SetPremovesRequest { return new(matchv1.SetPremovesRequest) },
		seeds(h, &matchv1.SetPremovesRequest{}, &matchv1.SetPremovesRequest{Seat: 9, Moves: []string{""}},
			&matchv1.SetPremovesRequest{Seat: 2, Moves: []string{"a1-a2", "a1-a2", "a1-a2", "a1-a2"}}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.SetPremovesRequest]) {
			call(t, h, in, "SetPremoves", false, func(ctx context.Context, r *matchv1.SetPremovesRequest) error {
				_, err := h.srv.SetPremoves(ctx, r)
				return err
			})
		})
}

func FuzzClearPremoves(f *testing.F) {
	h := newMatchFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchv1.ClearPremovesRequest { return new(matchv1.ClearPremovesRequest) },
		seeds(h, &matchv1.ClearPremovesRequest{}, &matchv1.ClearPremovesRequest{Seat: -1}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.ClearPremovesRequest]) {
			call(t, h, in, "ClearPremoves", false, func(ctx context.Context, r *matchv1.ClearPremovesRequest) error {
				_, err := h.srv.ClearPremoves(ctx, r)
				return err
			})
		})
}

// FuzzPing: a Ping never changes a match (its round trips live beside
// it), whatever the token.
func FuzzPing(f *testing.F) {
	h := newMatchFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchv1.PingRequest { return new(matchv1.PingRequest) },
		seeds(h, &matchv1.PingRequest{}, &matchv1.PingRequest{Token: []byte{1}}, &matchv1.PingRequest{Token: make([]byte, 25)},
			&matchv1.PingRequest{Token: append([]byte{1}, make([]byte, 24)...)}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.PingRequest]) {
			call(t, h, in, "Ping", true, func(ctx context.Context, r *matchv1.PingRequest) error {
				_, err := h.srv.Ping(ctx, r)
				return err
			})
		})
}

// FuzzWatchMatch watches for 20 ms: the backlog, then the wait ends in the
// caller's own deadline.
func FuzzWatchMatch(f *testing.F) {
	h := newMatchFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchv1.WatchMatchRequest { return new(matchv1.WatchMatchRequest) },
		seeds(h, &matchv1.WatchMatchRequest{}, &matchv1.WatchMatchRequest{FromVersion: 1 << 63}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.WatchMatchRequest]) {
			call(t, h, in, "WatchMatch", true, func(ctx context.Context, r *matchv1.WatchMatchRequest) error {
				ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
				defer cancel()
				return h.srv.WatchMatch(r, &fuzzStream{ctx: ctx})
			})
		})
}

// fuzzStream is the server side of a WatchMatch stream, discarding what
// it is sent.
type fuzzStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *fuzzStream) Context() context.Context               { return s.ctx }
func (s *fuzzStream) Send(*matchv1.WatchMatchResponse) error { return s.ctx.Err() }
func (s *fuzzStream) SetHeader(metadata.MD) error            { return nil }

func FuzzExportGame(f *testing.F) {
	h := newMatchFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchv1.ExportGameRequest { return new(matchv1.ExportGameRequest) },
		seeds(h, &matchv1.ExportGameRequest{}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.ExportGameRequest]) {
			call(t, h, in, "ExportGame", true, func(ctx context.Context, r *matchv1.ExportGameRequest) error {
				_, err := h.srv.ExportGame(ctx, r)
				return err
			})
		})
}

func FuzzAbortMatch(f *testing.F) {
	h := newMatchFuzz(f)
	rpcfuzz.Fuzz(f, func() *matchv1.AbortMatchRequest { return new(matchv1.AbortMatchRequest) },
		seeds(h, &matchv1.AbortMatchRequest{}, &matchv1.AbortMatchRequest{Reason: string(make([]byte, 5000))}),
		func(t *testing.T, in rpcfuzz.Input[*matchv1.AbortMatchRequest]) {
			call(t, h, in, "AbortMatch", false, func(ctx context.Context, r *matchv1.AbortMatchRequest) error {
				_, err := h.srv.AbortMatch(ctx, r)
				return err
			})
		})
}
