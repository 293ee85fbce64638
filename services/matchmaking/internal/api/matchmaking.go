// Package api implements the gRPC services the matchmaking service serves:
// fourkingdoms.matchmaking.v1.MatchmakingService and
// fourkingdoms.auth.v1.AuthService (guest login). Handlers check the caller,
// translate between protobuf and the store, and map errors to gRPC status
// codes in one place (toStatus).
package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/stall"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/grouping"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/matchmaker"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/queues"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/rematch"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/remote"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// Settings are the API's own settings.
type Settings struct {
	// TicketTTL is how long a ticket may search (for expires_at).
	TicketTTL time.Duration
	// Window is the queues' rating window (for the searching updates).
	Window grouping.Window
	// WatchPoll is how often WatchTicket reads the ticket besides being
	// woken by Events.
	WatchPoll time.Duration
	// SearchingEvery is how often WatchTicket repeats a searching update.
	SearchingEvery time.Duration
	// StatsWindow is the window GetQueueStats reports on.
	StatsWindow time.Duration
	// Ratings looks up the rating of a ticket that no formation round has
	// rated yet, so that its first searching update already carries the
	// rating window (the matchmaker's own lookup: remote.Ratings). Nil, or
	// a failed lookup, gives DefaultRating as provisional: what the
	// matchmaker itself uses when the rating service fails.
	Ratings matchmaker.Ratings
	// DefaultRating is the matchmaker's fallback rating (see Ratings).
	DefaultRating float64
	// BotLevels are the bot levels with a lobby (store.LobbyQueue): the
	// levels a private table's bot seats may ask for.
	BotLevels []string
	// Tables are the private tables' settings.
	Tables TableSettings
	// Matches reads finished matches and creates their rematches
	// (remote.Matches); Rematches keeps the offers. With either nil the
	// rematch RPCs answer UNIMPLEMENTED.
	Matches   Matches
	Rematches *rematch.Store
	// RematchPoll is how often a WatchRematch stream reads its offer.
	RematchPoll time.Duration
	// SendTimeout is how long a send of a stream (WatchTicket, WatchTable,
	// WatchRematch) may wait for a client that does not read before the
	// stream ends with RESOURCE_EXHAUSTED SLOW_CONSUMER (pkg/stall); 0:
	// until the client reads or leaves.
	SendTimeout time.Duration
	// Meter receives the API's metrics (matchmaking_watch_dropped_total);
	// nil: none.
	Meter metric.Meter
}

// Matchmaking implements matchmakingv1.MatchmakingServiceServer.
type Matchmaking struct {
	matchmakingv1.UnimplementedMatchmakingServiceServer

	set    Settings
	store  *store.Store
	queues []queues.Queue
	events *Events
	log    *slog.Logger
	now    func() time.Time
	// stalled is the status of a stream ended by its send timeout, built
	// once: every stream's guard shares it.
	stalled *status.Status
	// dropped counts the streams ended that way, by stream
	// (matchmaking_watch_dropped_total, as the match service's
	// match_watch_dropped_total{reason="slow_consumer"}).
	dropped metric.Int64Counter
}

// NewMatchmaking returns the matchmaking API over st for the configured
// queues. events wakes WatchTicket streams (its Run must be running); with
// nil they only poll.
func NewMatchmaking(set Settings, st *store.Store, qs []queues.Queue, events *Events, log *slog.Logger) (*Matchmaking, error) {
	meter := set.Meter
	if meter == nil {
		meter = noop.NewMeterProvider().Meter("")
	}
	dropped, err := meter.Int64Counter("matchmaking.watch.dropped", metric.WithUnit("{stream}"),
		metric.WithDescription("Streams (WatchTicket, WatchTable, WatchRematch) the server ended because the client read nothing for MM_WATCH_SEND_TIMEOUT (RESOURCE_EXHAUSTED SLOW_CONSUMER), by stream."))
	if err != nil {
		return nil, fmt.Errorf("matchmaking.watch.dropped metric: %w", err)
	}
	return &Matchmaking{set: set, store: st, queues: qs, events: events, log: log, now: time.Now, dropped: dropped,
		stalled: status.Convert(rpcerr.Matchmaking.Error(codes.ResourceExhausted, reasonSlow,
			"the stream ended: the client read nothing for too long; watch again", nil))}, nil
}

// The streams of matchmaking_watch_dropped_total.
var (
	droppedTicket  = metric.WithAttributes(attribute.String("stream", "ticket"), attribute.String("reason", "slow_consumer"))
	droppedTable   = metric.WithAttributes(attribute.String("stream", "table"), attribute.String("reason", "slow_consumer"))
	droppedRematch = metric.WithAttributes(attribute.String("stream", "rematch"), attribute.String("reason", "slow_consumer"))
)

// guard returns stream with its sends bounded by Settings.SendTimeout,
// and the stop the handler must defer: it counts the stream in
// matchmaking_watch_dropped_total (with which) if its guard ended it.
func guard[T any](s *Matchmaking, stream grpc.ServerStreamingServer[T], which metric.AddOption) (grpc.ServerStreamingServer[T], func()) {
	g := stall.New(stream.Context(), s.set.SendTimeout, s.stalled)
	return stall.Stream(stream, g), func() {
		g.Stop()
		if g.Stalled() {
			s.dropped.Add(context.WithoutCancel(stream.Context()), 1, which)
		}
	}
}

func (s *Matchmaking) queue(name string) (queues.Queue, bool) {
	i := slices.IndexFunc(s.queues, func(q queues.Queue) bool { return q.Name() == name })
	if i < 0 {
		return queues.Queue{}, false
	}
	return s.queues[i], true
}

// lobbyFor reports whether queue is the bot lobby of a configured level
// and the caller a bot: only bots wait there (store.ReserveBots takes them
// for private tables' bot seats); to anyone else the lobby does not exist.
func (s *Matchmaking) lobbyFor(queue string, id auth.Identity) bool {
	level, ok := store.LobbyLevel(queue)
	return ok && id.Bot && slices.Contains(s.set.BotLevels, level)
}

// player returns the calling player, or a status error.
func player(ctx context.Context) (auth.Identity, error) {
	if err := auth.RequireRole(ctx, auth.RolePlayer); err != nil {
		return auth.Identity{}, err
	}
	id, _ := auth.FromContext(ctx)
	return id, nil
}

// Enqueue implements MatchmakingService.Enqueue.
func (s *Matchmaking) Enqueue(ctx context.Context, req *matchmakingv1.EnqueueRequest) (*matchmakingv1.EnqueueResponse, error) {
	id, err := player(ctx)
	if err != nil {
		return nil, err
	}
	var name string
	switch t := req.GetTarget().(type) {
	case *matchmakingv1.EnqueueRequest_Queue:
		name = t.Queue
	case *matchmakingv1.EnqueueRequest_Key:
		ruleSet := cmp.Or(t.Key.GetRuleSet(), "fourkingdoms")
		tc, err := timecontrol.FromMessage(t.Key.GetTimeControl())
		if err != nil {
			return nil, invalidArgument("key.time_control", err.Error()+`: name the time control ("5+5") or give its durations`)
		}
		name = ruleSet + "/" + tc.Name()
	default:
		return nil, invalidArgument("target", "name the queue (queue) or its rule set and time control (key)")
	}
	if name == "" {
		return nil, invalidArgument("queue", "the queue name is empty")
	}
	if _, ok := s.queue(name); !ok && !s.lobbyFor(name, id) {
		return nil, noQueue(name)
	}
	tk, existing, err := s.store.Enqueue(ctx, name, store.Player{ID: id.Subject, DisplayName: id.DisplayName, Bot: id.Bot}, s.now())
	if err != nil {
		return nil, s.toStatus(ctx, "enqueue", err)
	}
	return &matchmakingv1.EnqueueResponse{Ticket: s.ticketProto(tk), Existing: existing}, nil
}

// CancelTicket implements MatchmakingService.CancelTicket.
func (s *Matchmaking) CancelTicket(ctx context.Context, req *matchmakingv1.CancelTicketRequest) (*matchmakingv1.CancelTicketResponse, error) {
	id, err := player(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetTicketId() == "" {
		return nil, invalidArgument("ticket_id", "the ticket id is empty")
	}
	tk, err := s.store.Cancel(ctx, req.GetTicketId(), id.Subject)
	if err != nil {
		return nil, s.toStatus(ctx, "cancel ticket", err)
	}
	return &matchmakingv1.CancelTicketResponse{Ticket: s.ticketProto(tk)}, nil
}

// WatchTicket implements MatchmakingService.WatchTicket: a searching update
// at once and every SearchingEvery, then the final update, then the stream
// ends. It reads the ticket when Events wakes it and every WatchPoll.
func (s *Matchmaking) WatchTicket(req *matchmakingv1.WatchTicketRequest, stream matchmakingv1.MatchmakingService_WatchTicketServer) error {
	stream, stop := guard(s, stream, droppedTicket)
	defer stop()
	ctx := stream.Context()
	id, err := player(ctx)
	if err != nil {
		return err
	}
	if req.GetTicketId() == "" {
		return invalidArgument("ticket_id", "the ticket id is empty")
	}
	var wake <-chan struct{} // nil without events: never ready
	if s.events != nil {
		// Registered before the first read, so a final state reached
		// after that read always wakes this stream.
		ch, stop := s.events.watch(req.GetTicketId())
		defer stop()
		wake = ch
	}
	// The poll also paces the searching updates.
	poll := time.NewTicker(min(s.set.WatchPoll, s.set.SearchingEvery))
	defer poll.Stop()
	var lastSearching time.Time
	var own *matchmaker.Rating // this stream's lookup while the ticket is unrated
	for first := true; ; first = false {
		tk, err := s.store.Ticket(ctx, req.GetTicketId())
		if err != nil {
			return s.toStatus(ctx, "watch ticket", err)
		}
		if first && tk.PlayerID != id.Subject {
			return s.toStatus(ctx, "watch ticket", store.ErrNotOwner)
		}
		resp := &matchmakingv1.WatchTicketResponse{TicketId: tk.ID}
		now := s.now()
		switch tk.State {
		case store.Matched:
			resp.Update = &matchmakingv1.WatchTicketResponse_Matched{Matched: &matchmakingv1.Matched{
				MatchId: tk.MatchID, Seat: gamev1.Seat(tk.Seat),
			}}
		case store.Cancelled:
			resp.Update = &matchmakingv1.WatchTicketResponse_Cancelled{Cancelled: &matchmakingv1.Cancelled{}}
		case store.Expired:
			resp.Update = &matchmakingv1.WatchTicketResponse_Expired{Expired: &matchmakingv1.Expired{}}
		default:
			if now.Sub(lastSearching) >= s.set.SearchingEvery {
				lastSearching = now
				if !tk.Rated && own == nil {
					r := s.lookup(ctx, tk)
					own = &r
				}
				resp.Update = &matchmakingv1.WatchTicketResponse_Searching{Searching: s.searching(tk, own, now)}
			}
		}
		if resp.Update != nil {
			if err := stream.Send(resp); err != nil {
				return err
			}
			if !tk.State.Live() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-poll.C:
		case <-wake:
		}
	}
}

// searching describes a waiting ticket: its wait, and the rating window it
// accepts now. Until a formation round has rated the ticket, the window is
// computed from own, the stream's own lookup of the same rating: the first
// update comes before the first round (issue 24: it had no window).
func (s *Matchmaking) searching(tk store.Ticket, own *matchmaker.Rating, now time.Time) *matchmakingv1.Searching {
	wait := now.Sub(tk.EnqueuedAt)
	out := &matchmakingv1.Searching{Waited: durationpb.New(max(wait, 0))}
	rating, provisional := tk.Rating, tk.Provisional
	if !tk.Rated && own != nil {
		rating, provisional = own.Value, own.Provisional
	}
	hw := s.set.Window.HalfWidth(wait, provisional)
	out.RatingWindowLow = int32(math.Floor(rating - hw))
	out.RatingWindowHigh = int32(math.Ceil(rating + hw))
	return out
}

// lookupTimeout bounds the rating lookup of a searching update.
const lookupTimeout = 2 * time.Second

// lookup returns the rating of an unrated ticket's player as the next
// formation round will see it: the rating service's answer, or the default
// as a provisional rating when it fails (logged, not returned: the update
// is still useful, and the round will rate the ticket anyway).
func (s *Matchmaking) lookup(ctx context.Context, tk store.Ticket) matchmaker.Rating {
	def := matchmaker.Rating{Value: s.set.DefaultRating, Provisional: true}
	q, ok := s.queue(tk.Queue)
	if !ok || s.set.Ratings == nil {
		return def
	}
	// Bounded: a slow rating service must not hold the update back long.
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	// The round looks the co-players up itself (and keeps them); the
	// update needs only the rating.
	got, err := s.set.Ratings.BatchRatings(ctx, q.RuleSet, []string{tk.PlayerID}, 0)
	if err != nil {
		s.log.WarnContext(ctx, "rating lookup for a searching update failed, using the default", "ticket", tk.ID, "err", err)
		return def
	}
	if r, ok := got[tk.PlayerID]; ok {
		return r
	}
	return def
}

// GetQueueStats implements MatchmakingService.GetQueueStats.
func (s *Matchmaking) GetQueueStats(ctx context.Context, req *matchmakingv1.GetQueueStatsRequest) (*matchmakingv1.GetQueueStatsResponse, error) {
	if err := auth.RequireRole(ctx, auth.RolePlayer, auth.RoleService, auth.RoleOperator); err != nil {
		return nil, err
	}
	var names []string
	for _, n := range req.GetQueues() {
		if _, ok := s.queue(n); !ok {
			return nil, noQueue(n)
		}
	}
	for _, q := range s.queues { // in configuration order
		if len(req.GetQueues()) == 0 || slices.Contains(req.GetQueues(), q.Name()) {
			names = append(names, q.Name())
		}
	}
	now := s.now()
	resp := &matchmakingv1.GetQueueStatsResponse{}
	for _, name := range names {
		st, err := s.store.QueueStats(ctx, name, s.set.StatsWindow, now)
		if err != nil {
			return nil, s.toStatus(ctx, "queue stats", err)
		}
		slices.Sort(st.Waits)
		resp.Stats = append(resp.Stats, &matchmakingv1.QueueStats{
			Queue:            name,
			PlayersWaiting:   uint32(st.Waiting),
			MatchesPerMinute: float64(st.Formed) / s.set.StatsWindow.Minutes(),
			WaitP50:          durationpb.New(percentile(st.Waits, 0.50)),
			WaitP90:          durationpb.New(percentile(st.Waits, 0.90)),
			WaitP99:          durationpb.New(percentile(st.Waits, 0.99)),
			Window:           durationpb.New(s.set.StatsWindow),
			ComputedAt:       timestamppb.New(now),
		})
	}
	return resp, nil
}

// percentile returns the nearest-rank percentile of sorted values (zero for
// none).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// ListQueues implements MatchmakingService.ListQueues.
func (s *Matchmaking) ListQueues(ctx context.Context, _ *matchmakingv1.ListQueuesRequest) (*matchmakingv1.ListQueuesResponse, error) {
	if err := auth.RequireRole(ctx, auth.RolePlayer, auth.RoleService, auth.RoleOperator); err != nil {
		return nil, err
	}
	resp := &matchmakingv1.ListQueuesResponse{}
	for _, q := range s.queues {
		pq := &matchmakingv1.Queue{
			Name:        q.Name(),
			RuleSet:     q.RuleSet,
			TimeControl: remote.TimeControl(q.TimeControl),
			BotFill:     q.BotFillAfter > 0,
		}
		if q.BotFillAfter > 0 {
			pq.BotFillAfter = durationpb.New(q.BotFillAfter)
		}
		resp.Queues = append(resp.Queues, pq)
	}
	return resp, nil
}

func (s *Matchmaking) ticketProto(tk store.Ticket) *matchmakingv1.Ticket {
	out := &matchmakingv1.Ticket{
		TicketId:  tk.ID,
		PlayerId:  tk.PlayerID,
		Queue:     tk.Queue,
		CreatedAt: timestamppb.New(tk.EnqueuedAt),
		ExpiresAt: timestamppb.New(tk.ExpiresAt),
		MatchId:   tk.MatchID,
		Seat:      gamev1.Seat(tk.Seat),
	}
	switch tk.State {
	case store.Searching, store.Forming:
		// Forming is internal: to the player the ticket still searches.
		out.State = matchmakingv1.TicketState_TICKET_STATE_SEARCHING
	case store.Matched:
		out.State = matchmakingv1.TicketState_TICKET_STATE_MATCHED
	case store.Cancelled:
		out.State = matchmakingv1.TicketState_TICKET_STATE_CANCELLED
	case store.Expired:
		out.State = matchmakingv1.TicketState_TICKET_STATE_EXPIRED
	}
	return out
}

// invalidArgument is the refusal of a request whose field fails
// validation: INVALID_ARGUMENT, reason INVALID_ARGUMENT, with a BadRequest
// naming field.
func invalidArgument(field, desc string) error {
	return rpcerr.Matchmaking.Invalid(reasonInvalid, rpcerr.Field(nil, field, desc), field)
}

// noQueue is the refusal of a request naming a queue that is not
// configured.
func noQueue(name string) error {
	return rpcerr.Matchmaking.Error(codes.NotFound, reasonNoQueue, fmt.Sprintf("no queue %q: ListQueues lists the queues", name), nil)
}

// The ErrorInfo reasons (domain fourkingdoms.matchmaking.v1) that are not
// in the refusals table.
const (
	reasonInvalid = "INVALID_ARGUMENT"
	reasonNoQueue = "QUEUE_NOT_FOUND"
	// reasonSlow ends a stream whose client read nothing for the send
	// timeout (RESOURCE_EXHAUSTED).
	reasonSlow = "SLOW_CONSUMER"
)

// refusals is the table of toStatus: the store errors a client is told
// about, each with its code, ErrorInfo reason and message (docs/api.md lists
// the same). The first entry whose error matches wins.
var refusals = []struct {
	err    error
	code   codes.Code
	reason string
	msg    string
}{
	{store.ErrNotFound, codes.NotFound, "TICKET_NOT_FOUND", "no such ticket (unknown, or finished long ago)"},
	{store.ErrUnknownQueue, codes.NotFound, reasonNoQueue, "no such queue: ListQueues lists the queues"},
	{store.ErrNotOwner, codes.PermissionDenied, "NOT_TICKET_OWNER", "this ticket belongs to another player"},
	{store.ErrMatched, codes.FailedPrecondition, "TICKET_MATCHED", "the ticket is already matched: play the match or resign"},
	{store.ErrForming, codes.FailedPrecondition, "TICKET_FORMING", "a match is being formed with this ticket: watch the ticket"},
	{store.ErrContention, codes.Aborted, "CONFLICT", "concurrent requests for this player: retry"},
	{store.ErrTableNotFound, codes.NotFound, "TABLE_NOT_FOUND", "no table has this code (a table closes when idle or when its last player leaves)"},
	{store.ErrTableFull, codes.FailedPrecondition, "TABLE_FULL", "every open seat of this table is taken"},
	{store.ErrSeatTaken, codes.FailedPrecondition, "SEAT_TAKEN", "this seat is taken or is a bot's: ask for another seat, or for none to get the first free one"},
	{store.ErrTableStarted, codes.FailedPrecondition, "TABLE_STARTED", "the table's match has begun (or is being created): watch the table for the match id, or resign"},
	{store.ErrSeated, codes.FailedPrecondition, "ALREADY_SEATED", "you already have a live ticket or a seat at an open table: cancel the ticket or leave the table first"},
	{store.ErrNotHost, codes.PermissionDenied, "NOT_HOST", "only the table's host may start it"},
	{store.ErrSeatsOpen, codes.FailedPrecondition, "SEATS_OPEN", "open seats are still free: wait for players, or start with fill_with_bots"},
	{store.ErrTableChanged, codes.Aborted, "CONFLICT", "the table kept changing while starting: retry"},
}

// toStatus maps store errors to gRPC status: the one place this service
// decides codes, by the refusals table, then redisconn.Status (by
// redisconn.Classify):
//
//	context errors       CANCELED / DEADLINE_EXCEEDED
//	Redis unreachable    UNAVAILABLE, STORE_UNAVAILABLE (logged as a warning)
//	anything else        INTERNAL, INTERNAL (logged; generic message)
//
// Every refusal carries an ErrorInfo of domain fourkingdoms.matchmaking.v1.
func (s *Matchmaking) toStatus(ctx context.Context, op string, err error) error {
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return rpcerr.Matchmaking.Error(r.code, r.reason, r.msg, nil)
		}
	}
	return redisconn.Status(ctx, s.log, err, rpcerr.Matchmaking, "matchmaking storage", "op", op)
}
