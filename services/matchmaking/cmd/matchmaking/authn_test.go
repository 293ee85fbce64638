package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	authv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/auth/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
)

// TestHostileCredentials: every forged or broken credential is refused
// with UNAUTHENTICATED and its ErrorInfo on every matchmaking RPC, through
// the real server and its interceptors; valid tokens of the wrong role or
// of another player are PERMISSION_DENIED; and none of them changes a
// ticket. The forgeries claim the owner of a live ticket, so one accepted
// by mistake would cancel it.
func TestHostileCredentials(t *testing.T) {
	t.Parallel()
	keys, err := auth.GenerateKeySet("test")
	if err != nil {
		t.Fatal(err)
	}
	backend, _, _ := startBackends(t, keys)
	env := baseEnv(t, keys, backend)
	_, env["REDIS_ADDR"] = redistest.Standalone(t)
	conn := startService(t, env)
	mm := matchmakingv1.NewMatchmakingServiceClient(conn)
	authc := authv1.NewAuthServiceClient(conn)
	guest, err := authc.GuestLogin(t.Context(), &authv1.GuestLoginRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const queue = "fourkingdoms/5+5"
	as := func(subject string, role auth.Role) grpc.CallOption {
		tok, _, err := keys.Sign(auth.Identity{Subject: subject, Role: role, DisplayName: subject}, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return grpc.PerRPCCredentials(auth.BearerToken(tok, true))
	}
	owner, other := as("p-owner", auth.RolePlayer), as("p-other", auth.RolePlayer)
	enq := &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: queue}}
	first, err := mm.Enqueue(t.Context(), enq, owner)
	if err != nil {
		t.Fatal(err)
	}
	ticket := first.GetTicket().GetTicketId()

	rpcs := []struct {
		name string
		call func(ctx context.Context, opts ...grpc.CallOption) error
	}{
		{"Enqueue", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.Enqueue(ctx, enq, opts...)
			return err
		}},
		{"CancelTicket", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.CancelTicket(ctx, &matchmakingv1.CancelTicketRequest{TicketId: ticket}, opts...)
			return err
		}},
		{"WatchTicket", func(ctx context.Context, opts ...grpc.CallOption) error {
			s, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: ticket}, opts...)
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}},
		{"GetQueueStats", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.GetQueueStats(ctx, &matchmakingv1.GetQueueStatsRequest{}, opts...)
			return err
		}},
		{"ListQueues", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.ListQueues(ctx, &matchmakingv1.ListQueuesRequest{}, opts...)
			return err
		}},
		// The table RPCs, on a table code nobody holds: a forged token
		// must be refused before the lookup (and before it counts as a
		// guess).
		{"CreateTable", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.CreateTable(ctx, &matchmakingv1.CreateTableRequest{TimeControl: &gamev1.TimeControl{Name: "5+5"}}, opts...)
			return err
		}},
		{"JoinTable", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.JoinTable(ctx, &matchmakingv1.JoinTableRequest{Code: "0000-0000-0000"}, opts...)
			return err
		}},
		{"LeaveTable", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.LeaveTable(ctx, &matchmakingv1.LeaveTableRequest{Code: "0000-0000-0000"}, opts...)
			return err
		}},
		{"StartTable", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.StartTable(ctx, &matchmakingv1.StartTableRequest{Code: "0000-0000-0000"}, opts...)
			return err
		}},
		{"WatchTable", func(ctx context.Context, opts ...grpc.CallOption) error {
			s, err := mm.WatchTable(ctx, &matchmakingv1.WatchTableRequest{Code: "0000-0000-0000"}, opts...)
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}},
		{"OfferRematch", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.OfferRematch(ctx, &matchmakingv1.OfferRematchRequest{MatchId: "m"}, opts...)
			return err
		}},
		{"DeclineRematch", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := mm.DeclineRematch(ctx, &matchmakingv1.DeclineRematchRequest{MatchId: "m"}, opts...)
			return err
		}},
		{"WatchRematch", func(ctx context.Context, opts ...grpc.CallOption) error {
			s, err := mm.WatchRematch(ctx, &matchmakingv1.WatchRematchRequest{MatchId: "m"}, opts...)
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}},
		// The one AuthService RPC that needs a token: a forgery accepted
		// by mistake would take the guest over.
		{"LinkGuest", func(ctx context.Context, opts ...grpc.CallOption) error {
			_, err := authc.LinkGuest(ctx, &authv1.LinkGuestRequest{RefreshToken: guest.GetRefreshToken()}, opts...)
			return err
		}},
	}
	for _, h := range authtest.HostileTokens(t, keys, auth.Identity{Subject: "p-owner", Role: auth.RolePlayer, DisplayName: "p-owner"}, time.Now()) {
		for _, rpc := range rpcs {
			t.Run(h.Name+"/"+rpc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				if h.Authorization != "" {
					ctx = metadata.AppendToOutgoingContext(ctx, auth.MetadataKey, h.Authorization)
				}
				authtest.RequireRefused(t, rpc.call(ctx), h)
			})
		}
	}

	denied := []struct {
		name, reason string // reason: "domain/REASON" of the ErrorInfo
		call         func(ctx context.Context) error
	}{
		{"another player cancels the ticket", "fourkingdoms.matchmaking.v1/NOT_TICKET_OWNER", func(ctx context.Context) error {
			_, err := mm.CancelTicket(ctx, &matchmakingv1.CancelTicketRequest{TicketId: ticket}, other)
			return err
		}},
		{"another player watches the ticket", "fourkingdoms.matchmaking.v1/NOT_TICKET_OWNER", func(ctx context.Context) error {
			s, err := mm.WatchTicket(ctx, &matchmakingv1.WatchTicketRequest{TicketId: ticket}, other)
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}},
		{"a service enqueues", "fourkingdoms.auth.v1/ROLE_NOT_ALLOWED", func(ctx context.Context) error {
			_, err := mm.Enqueue(ctx, enq, as("matchmaker", auth.RoleService))
			return err
		}},
		{"an operator enqueues", "fourkingdoms.auth.v1/ROLE_NOT_ALLOWED", func(ctx context.Context) error {
			_, err := mm.Enqueue(ctx, enq, as("op", auth.RoleOperator))
			return err
		}},
		{"a guest links a guest", "fourkingdoms.auth.v1/ACCOUNT_REQUIRED", func(ctx context.Context) error {
			_, err := authc.LinkGuest(ctx, &authv1.LinkGuestRequest{RefreshToken: guest.GetRefreshToken()}, owner)
			return err
		}},
	}
	for _, tc := range denied {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := tc.call(ctx)
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("got %v, want PermissionDenied", err)
			}
			if ei := rpcerr.Info(err); ei.GetDomain()+"/"+ei.GetReason() != tc.reason {
				t.Fatalf("ErrorInfo %s/%s, want %s", ei.GetDomain(), ei.GetReason(), tc.reason)
			}
		})
	}

	// A request above GRPC_MAX_RECV_MSG_SIZE (1 MiB) is refused by the
	// transport before any handler runs.
	huge := &matchmakingv1.EnqueueRequest{Target: &matchmakingv1.EnqueueRequest_Queue{Queue: strings.Repeat("q", 2<<20)}}
	if _, err := mm.Enqueue(t.Context(), huge, other); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a 2 MiB Enqueue: %v, want ResourceExhausted", err)
	}

	// The owner's ticket is still the live one, and nobody else got one.
	again, err := mm.Enqueue(t.Context(), enq, owner)
	if err != nil || !again.GetExisting() || again.GetTicket().GetTicketId() != ticket {
		t.Fatalf("owner's Enqueue after the refusals = %v, %v; want its live ticket %s", again, err, ticket)
	}
	stats, err := mm.GetQueueStats(t.Context(), &matchmakingv1.GetQueueStatsRequest{Queues: []string{queue}}, owner)
	if err != nil {
		t.Fatal(err)
	}
	if n := stats.GetStats()[0].GetPlayersWaiting(); n != 1 {
		t.Fatalf("%d players waiting after the refusals, want 1 (the owner)", n)
	}
	// The guest was not taken over: its session still refreshes.
	if _, err := authc.RefreshSession(t.Context(), &authv1.RefreshSessionRequest{RefreshToken: guest.GetRefreshToken()}); err != nil {
		t.Fatalf("the guest's RefreshSession after the refusals: %v", err)
	}
}
