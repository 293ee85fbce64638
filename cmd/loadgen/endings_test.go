package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/cmd/internal/client"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// Constructed start positions for the endings (CreateMatch takes a start
// FEN4 and a zombie seed from services).
const (
	// Blue is a zombie; Red's Re5xKe10 captures its king.
	fenKingCapture = "R-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/4,bK,9/14/14/gK,13/14/4,rR,9/14/14/14/7,rK,6-{zombie:0,1,0,0}"
	// Green's zombie king (alone on a4) is boxed in by Red's rook and
	// knight: stalemated when its turn comes after Yellow's move. Under
	// chesscom-ffa its stalemate pays the live seats (bonus_points).
	fenZombieKingStalemate = "Y-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/1,rR,12/14/14/13,bK/14/2,rN,11/14/gK,13/14/14/7,rK,6-{zombie:0,0,0,1}"
	// Yellow and Green out; Red's Qc4-b5 mates Blue, the last opponent.
	fenRedMatesBlue = "R-0,0,1,1-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/14/14/13,gK/14/1,bP,12/bK,13/1,rR,rQ,11/14/14/7,rK,6"
)

// testEndings plays games that end by king capture, stalemate, mate and
// time loss, under both rule sets, through the match service at addr.
// Each is followed from its start by a spectator and by Red's player
// through the event-contract checker (client.FollowOptions.Check: every
// event replayed with the rules engine, the legal moves offered to Red, the
// PGN4 export re-imported, the stream from version 1 compared with the
// live one), and once more after its end (the checker then fetches the
// history from version 1). Every follow must end without a violation.
func testEndings(ctx context.Context, t *testing.T, addr, keysFile string) {
	ks, err := auth.LoadFile(keysFile)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(id string, role auth.Role) grpc.CallOption {
		tok, _, err := ks.Sign(auth.Identity{Subject: id, Role: role, Bot: role == auth.RolePlayer}, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return grpc.PerRPCCredentials(auth.BearerToken(tok, true))
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	mc := matchv1.NewMatchServiceClient(cc)
	svc := sign("endings", auth.RoleService)

	tests := []struct {
		name        string
		fen4        string
		timeControl string
		steps       []string // "Red Re5xKe10", "Yellow resigns"
		exit        gamev1.ExitReason
		want        gamev1.Termination
	}{
		{"king capture", fenKingCapture, "5+0", []string{"Red Re5xKe10", "Yellow resigns", "Green resigns"},
			gamev1.ExitReason_EXIT_REASON_KING_CAPTURED, gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING},
		{"stalemate", fenZombieKingStalemate, "5+0", []string{"Yellow Kg14-f14", "Blue resigns", "Yellow resigns"},
			gamev1.ExitReason_EXIT_REASON_STALEMATED, gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING},
		{"mate", fenRedMatesBlue, "5+0", []string{"Red Qc4-b5"},
			gamev1.ExitReason_EXIT_REASON_MATED, gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT},
		// Nobody moves: Red, Blue and Yellow flag in turn (1.2 s each).
		{"time loss", "", "0.02+0", nil,
			gamev1.ExitReason_EXIT_REASON_TIMED_OUT, gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING},
	}
	for _, rs := range []string{"fourkingdoms", "chesscom-ffa"} {
		for _, tt := range tests {
			t.Run(rs+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
				defer cancel()
				prefix := strings.NewReplacer(" ", "-", "/", "-").Replace(rs + "-" + tt.name)
				req := &matchv1.CreateMatchRequest{RequestId: fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()), RuleSet: rs,
					TimeControl: &gamev1.TimeControl{Name: tt.timeControl}, Seed: proto.Uint64(1),
					// Endings, not aborts: seats that never moved lose on time.
					FirstMoveAbort: proto.Bool(false)}
				if tt.fen4 != "" {
					req.StartFen4 = proto.String(tt.fen4)
				}
				seats := map[string]gamev1.Seat{}
				var toks [4]grpc.CallOption
				for s := gamev1.Seat_SEAT_RED; s <= gamev1.Seat_SEAT_GREEN; s++ {
					id := fmt.Sprintf("%s-%d", prefix, s)
					req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: s, Player: &gamev1.Player{PlayerId: id, IsBot: true}})
					toks[s-1] = sign(id, auth.RolePlayer)
					seats[strings.TrimPrefix(s.String(), "SEAT_")] = s
				}
				created, err := mc.CreateMatch(ctx, req, svc)
				if err != nil {
					t.Fatalf("CreateMatch: %v", err)
				}
				id := created.GetMatch().GetMatchId()

				// The followers start before the first move.
				type outcome struct {
					final *matchv1.Match
					exits []gamev1.ExitReason
					err   error
				}
				// follow starts a follower and returns once it has its first
				// snapshot, so that it sees every later event live.
				follow := func(tok grpc.CallOption, seat gamev1.Seat) <-chan outcome {
					ch := make(chan outcome, 1)
					started := make(chan struct{})
					var once sync.Once
					c := &client.Client{Match: tokenClient{mc, tok}}
					go func() {
						defer once.Do(func() { close(started) })
						var o outcome
						o.final, o.err = c.Follow(ctx, id, client.FollowOptions{Check: true, Seat: seat}, func(u client.Update) error {
							once.Do(func() { close(started) })
							if el := u.Event.GetPlayerEliminated(); el != nil {
								o.exits = append(o.exits, el.GetElimination().GetReason())
							}
							if u.Event.GetPlayerTimedOut() != nil {
								o.exits = append(o.exits, gamev1.ExitReason_EXIT_REASON_TIMED_OUT)
							}
							return nil
						})
						ch <- o
					}()
					<-started
					return ch
				}
				spectator := follow(sign(prefix+"-spectator", auth.RolePlayer), gamev1.Seat_SEAT_UNSPECIFIED)
				red := follow(toks[0], gamev1.Seat_SEAT_RED)

				for _, st := range tt.steps {
					who, what, _ := strings.Cut(st, " ")
					s, ok := seats[strings.ToUpper(who)]
					if !ok {
						t.Fatalf("step %q: no seat %q", st, who)
					}
					if what == "resigns" {
						_, err = mc.Resign(ctx, &matchv1.ResignRequest{MatchId: id}, toks[s-1])
					} else {
						_, err = mc.MakeMove(ctx, &matchv1.MakeMoveRequest{MatchId: id, Move: what}, toks[s-1])
					}
					if err != nil {
						t.Fatalf("step %q: %v", st, err)
					}
				}
				var wg sync.WaitGroup
				for name, ch := range map[string]<-chan outcome{"spectator": spectator, "Red": red} {
					wg.Go(func() {
						o := <-ch
						if o.err != nil {
							t.Errorf("%s's follow: %v", name, o.err)
							return
						}
						if got := o.final.GetResult().GetTermination(); got != tt.want {
							t.Errorf("%s: termination %v, want %v", name, got, tt.want)
						}
						if !containsExit(o.exits, tt.exit) {
							t.Errorf("%s saw exits %v, want %v among them", name, o.exits, tt.exit)
						}
					})
				}
				wg.Wait()
				// A late spectator: its checker fetches the history.
				if o := <-follow(sign(prefix+"-late", auth.RolePlayer), gamev1.Seat_SEAT_UNSPECIFIED); o.err != nil {
					t.Errorf("late spectator's follow: %v", o.err)
				}
			})
		}
	}
}

func containsExit(exits []gamev1.ExitReason, e gamev1.ExitReason) bool {
	for _, x := range exits {
		if x == e {
			return true
		}
	}
	return false
}

// tokenClient sends tok with every call of the match client it wraps.
type tokenClient struct {
	matchv1.MatchServiceClient
	tok grpc.CallOption
}

func (c tokenClient) WatchMatch(ctx context.Context, in *matchv1.WatchMatchRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[matchv1.WatchMatchResponse], error) {
	return c.MatchServiceClient.WatchMatch(ctx, in, append(opts, c.tok)...)
}

func (c tokenClient) GetMatch(ctx context.Context, in *matchv1.GetMatchRequest, opts ...grpc.CallOption) (*matchv1.GetMatchResponse, error) {
	return c.MatchServiceClient.GetMatch(ctx, in, append(opts, c.tok)...)
}

func (c tokenClient) ExportGame(ctx context.Context, in *matchv1.ExportGameRequest, opts ...grpc.CallOption) (*matchv1.ExportGameResponse, error) {
	return c.MatchServiceClient.ExportGame(ctx, in, append(opts, c.tok)...)
}
