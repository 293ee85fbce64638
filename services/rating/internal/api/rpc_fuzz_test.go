package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr/rpcfuzz"
	ratingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/rating/v1"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// The handler-level fuzz targets of RatingService. Each runs one RPC on
// the real store on a real Redis holding three rated matches, with any
// request that unmarshals, from a seed corpus captured from a real
// client's reads (rpcfuzz), as any caller (who%4: none, a rated player, a
// service, an operator; the RPCs are open to every authenticated caller,
// and the server's interceptor refuses the rest before the handler):
//
//	pick%3: 0 a rated player and the pool, 1 the pool, 2 the request as is
//
// No answer is INTERNAL or UNKNOWN, every refusal has an ErrorInfo, and
// no call writes: every key of the store is as it was (the RPCs are
// read-only).
//
//	go test ./internal/api -run '^$' -fuzz FuzzGetRating -fuzztime 60s -parallel 1

// ratingFuzz is the fixture: the service and the recorded reads.
type ratingFuzz struct {
	rdb     redis.UniversalClient
	prefix  string
	svc     *Service
	traffic []proto.Message
}

func newRatingFuzz(f *testing.F) *ratingFuzz {
	rdb, _ := redistest.Standalone(f)
	policy := ladder.DefaultPolicy()
	policy.ProvisionalGames = 2
	prefix := redistest.Prefix(f)
	st := store.New(rdb, policy, store.Config{Prefix: prefix, Retention: store.DefaultRetention()})
	if _, err := st.Apply(f.Context(), []ladder.Result{
		result(f, "m1", t0, "a", "b", "c", "d"),
		result(f, "m2", t0.Add(time.Hour), "a", "b", "c", "e"),
		result(f, "m3", t0.Add(2*time.Hour), "d", "c", "b", "a"),
	}); err != nil {
		f.Fatal(err)
	}
	x := &ratingFuzz{rdb: rdb, prefix: prefix, svc: New(st, policy, ruleSets, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	x.record(f)
	return x
}

// record reads as a client does: a rating, a batch with recent matches,
// the leaderboard's sections page by page, a history page by page.
func (x *ratingFuzz) record(f *testing.F) {
	ctx := f.Context()
	keep := func(req proto.Message, err error) {
		if err != nil {
			f.Fatalf("%v: %v", req, err)
		}
		x.traffic = append(x.traffic, proto.Clone(req))
	}
	r := &ratingv1.GetRatingRequest{PlayerId: "a", RuleSet: pool}
	_, err := x.svc.GetRating(ctx, r)
	keep(r, err)
	b := &ratingv1.BatchGetRatingsRequest{PlayerIds: []string{"a", "b", "c", "d", "e", "nobody"}, RuleSet: pool, RecentMatches: 2}
	_, err = x.svc.BatchGetRatings(ctx, b)
	keep(b, err)
	for _, sec := range []ratingv1.LeaderboardSection{ratingv1.LeaderboardSection_LEADERBOARD_SECTION_RANKED, ratingv1.LeaderboardSection_LEADERBOARD_SECTION_PROVISIONAL} {
		l := &ratingv1.GetLeaderboardRequest{RuleSet: pool, PageSize: 2, Section: sec}
		for {
			resp, err := x.svc.GetLeaderboard(ctx, l)
			keep(l, err)
			if resp.GetNextPageToken() == "" {
				break
			}
			l = &ratingv1.GetLeaderboardRequest{RuleSet: pool, PageSize: 2, Section: sec, PageToken: resp.GetNextPageToken()}
		}
	}
	h := &ratingv1.GetRatingHistoryRequest{PlayerId: "a", RuleSet: pool, PageSize: 1}
	for {
		resp, err := x.svc.GetRatingHistory(ctx, h)
		keep(h, err)
		if resp.GetNextPageToken() == "" {
			break
		}
		h = &ratingv1.GetRatingHistoryRequest{PlayerId: "a", RuleSet: pool, PageSize: 1, PageToken: resp.GetNextPageToken()}
	}
}

// fuzz runs one RPC's target: seeds of the RPC's request type, the input
// pointed at its target, the call, the checks.
func fuzz[Req proto.Message](f *testing.F, name string, newReq func() Req, edge []Req, rpc func(*Service, context.Context, Req) error) {
	x := newRatingFuzz(f)
	var seeds []rpcfuzz.Input[Req]
	for _, m := range x.traffic {
		if req, ok := m.(Req); ok {
			edge = append(edge, req)
		}
	}
	for _, req := range edge {
		for who := range uint8(4) {
			seeds = append(seeds, rpcfuzz.Input[Req]{Who: who, Pick: who % 3, Req: req})
		}
	}
	rpcfuzz.Fuzz(f, newReq, seeds, func(t *testing.T, in rpcfuzz.Input[Req]) {
		fields := in.Req.ProtoReflect().Descriptor().Fields()
		if in.Pick%3 == 0 {
			if fd := fields.ByName("player_id"); fd != nil {
				in.Req.ProtoReflect().Set(fd, protoreflect.ValueOfString("a"))
			}
			if fd := fields.ByName("player_ids"); fd != nil {
				in.Req.ProtoReflect().Mutable(fd).List().Append(protoreflect.ValueOfString("a"))
			}
		}
		if in.Pick%3 != 2 {
			in.Req.ProtoReflect().Set(fields.ByName("rule_set"), protoreflect.ValueOfString(pool))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		switch in.Who % 4 {
		case 1:
			ctx = auth.NewContext(ctx, auth.Identity{Subject: "a", Role: auth.RolePlayer})
		case 2:
			ctx = auth.NewContext(ctx, auth.Identity{Subject: "matchmaker", Role: auth.RoleService})
		case 3:
			ctx = auth.NewContext(ctx, auth.Identity{Subject: "operator", Role: auth.RoleOperator})
		}
		before := x.state(t)
		err := rpc(x.svc, ctx, in.Req)
		rpcfuzz.Check(t, name, in.Req, err)
		if after := x.state(t); after != before {
			t.Fatalf("%s(%v) = %v wrote:\n%s\n->\n%s", name, in.Req, err, before, after)
		}
	})
}

// state is every key of the store with its serialized value.
func (x *ratingFuzz) state(t *testing.T) string {
	ctx := context.Background()
	keys, err := x.rdb.Keys(ctx, x.prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	s := ""
	for _, k := range keys {
		v, err := x.rdb.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		s += fmt.Sprintf("%s %x\n", k, v)
	}
	return s
}

func FuzzGetRating(f *testing.F) {
	fuzz(f, "GetRating", func() *ratingv1.GetRatingRequest { return new(ratingv1.GetRatingRequest) },
		[]*ratingv1.GetRatingRequest{{}, {PlayerId: "{a}", RuleSet: "chesscom-ffa"}, {PlayerId: "a", RuleSet: "fourkingdoms/x"}},
		(*Service).getRating)
}

func FuzzBatchGetRatings(f *testing.F) {
	fuzz(f, "BatchGetRatings", func() *ratingv1.BatchGetRatingsRequest { return new(ratingv1.BatchGetRatingsRequest) },
		[]*ratingv1.BatchGetRatingsRequest{{}, {PlayerIds: []string{"a", "a", ""}, RecentMatches: 1 << 31}, {PlayerIds: make([]string, 1000)}},
		(*Service).batchGetRatings)
}

func FuzzGetLeaderboard(f *testing.F) {
	fuzz(f, "GetLeaderboard", func() *ratingv1.GetLeaderboardRequest { return new(ratingv1.GetLeaderboardRequest) },
		[]*ratingv1.GetLeaderboardRequest{{}, {PageSize: -1}, {PageSize: 1 << 30, PageToken: "!!"}, {Section: 99}},
		(*Service).getLeaderboard)
}

func FuzzGetRatingHistory(f *testing.F) {
	fuzz(f, "GetRatingHistory", func() *ratingv1.GetRatingHistoryRequest { return new(ratingv1.GetRatingHistoryRequest) },
		[]*ratingv1.GetRatingHistoryRequest{{}, {PlayerId: "a", PageSize: -5}, {PlayerId: "a", PageToken: "AAAA"}},
		(*Service).getRatingHistory)
}

// The RPCs with only an error, for fuzz.
func (s *Service) getRating(ctx context.Context, r *ratingv1.GetRatingRequest) error {
	_, err := s.GetRating(ctx, r)
	return err
}

func (s *Service) batchGetRatings(ctx context.Context, r *ratingv1.BatchGetRatingsRequest) error {
	_, err := s.BatchGetRatings(ctx, r)
	return err
}

func (s *Service) getLeaderboard(ctx context.Context, r *ratingv1.GetLeaderboardRequest) error {
	_, err := s.GetLeaderboard(ctx, r)
	return err
}

func (s *Service) getRatingHistory(ctx context.Context, r *ratingv1.GetRatingHistoryRequest) error {
	_, err := s.GetRatingHistory(ctx, r)
	return err
}
