package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchmakingv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/matchmaking/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/matchmaker"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/queues"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/remote"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// TableSettings are the settings of the private tables.
type TableSettings struct {
	// Store holds the idle TTL and the closed tables' retention.
	Store store.TableSettings
	// Guesses limits the unknown codes a player may try.
	Guesses store.GuessLimit
	// PublicURL is the web client's public address; a table's link is
	// "<PublicURL>/#table=<CODE>" (none when empty).
	PublicURL string
	// Matches creates the tables' matches (nil: StartTable is UNAVAILABLE).
	Matches matchmaker.Matches
	// CreateTimeout bounds the CreateMatch call of a start.
	CreateTimeout time.Duration
}

// defaultFillLevel is the bot level of StartTable's fill_with_bots when
// fill_bot_level is empty (the proto's documented default).
const defaultFillLevel = "greedy"

// Reasons of the table refusals not in the refusals table.
const (
	reasonGuesses   = "TOO_MANY_GUESSES"
	reasonNoBots    = "NO_FREE_BOTS"
	reasonNoMatches = "MATCH_SERVICE_UNAVAILABLE"
)

// tableCode reads a request's invite code and applies the guess limit: a
// player who tried too many unknown codes is refused before the lookup.
func (s *Matchmaking) tableCode(ctx context.Context, player, raw string) (string, error) {
	code, err := store.ParseCode(raw)
	if err != nil {
		return "", invalidArgument("code", err.Error())
	}
	ok, wait, err := s.store.GuessesLeft(ctx, player, s.set.Tables.Guesses)
	if err != nil {
		return "", s.toStatus(ctx, "read code guesses", err)
	}
	if !ok {
		return "", tooManyGuesses(wait, s.set.Tables.Guesses)
	}
	return code, nil
}

func tooManyGuesses(wait time.Duration, lim store.GuessLimit) error {
	return rpcerr.Matchmaking.Error(codes.ResourceExhausted, reasonGuesses,
		fmt.Sprintf("too many unknown invite codes (at most %d per %v): retry after the delay in RetryInfo", lim.Max, lim.Window),
		nil, &errdetails.RetryInfo{RetryDelay: durationpb.New(wait)})
}

// tableStatus maps a table operation's error, counting an unknown code
// against the caller's guesses.
func (s *Matchmaking) tableStatus(ctx context.Context, op, player string, err error) error {
	if errors.Is(err, store.ErrTableNotFound) {
		if cerr := s.store.CountGuess(ctx, player, s.set.Tables.Guesses); cerr != nil {
			s.log.WarnContext(ctx, "counting a code guess failed", "player", player, "err", cerr)
		}
	}
	return s.toStatus(ctx, op, err)
}

// CreateTable implements MatchmakingService.CreateTable.
func (s *Matchmaking) CreateTable(ctx context.Context, req *matchmakingv1.CreateTableRequest) (*matchmakingv1.CreateTableResponse, error) {
	id, err := player(ctx)
	if err != nil {
		return nil, err
	}
	t, hostSeat, err := s.newTable(req)
	if err != nil {
		return nil, err
	}
	host := store.Player{ID: id.Subject, DisplayName: id.DisplayName, Bot: id.Bot}
	t, err = s.store.CreateTable(ctx, t, host, hostSeat, s.set.Tables.Store, s.now())
	if err != nil {
		return nil, s.toStatus(ctx, "create table", err)
	}
	return &matchmakingv1.CreateTableResponse{Table: s.tableProto(t)}, nil
}

// newTable validates a CreateTable request into a table record and the
// host's seat index.
func (s *Matchmaking) newTable(req *matchmakingv1.CreateTableRequest) (*store.Table, int, error) {
	ruleSet := cmp.Or(req.GetRuleSet(), "fourkingdoms")
	if !slices.ContainsFunc(s.queues, func(q queues.Queue) bool { return q.RuleSet == ruleSet }) {
		return nil, 0, invalidArgument("rule_set", fmt.Sprintf("unknown rule set %q: ListQueues shows the rule sets played here", ruleSet))
	}
	tc, err := timecontrol.FromMessage(req.GetTimeControl())
	if err != nil {
		return nil, 0, invalidArgument("time_control", err.Error()+`: name the time control ("5+5") or give its durations`)
	}
	t := &store.Table{RuleSet: ruleSet, Rated: req.GetRated(), Clock: store.Clock{
		InitialMs: tc.Initial.Milliseconds(), IncrementMs: tc.Increment.Milliseconds(), DelayMs: tc.Delay.Milliseconds(),
	}}
	var listed [4]bool
	for i, seat := range req.GetSeats() {
		field := "seats[" + strconv.Itoa(i) + "]"
		n := int(seat.GetSeat())
		if n < 1 || n > 4 {
			return nil, 0, invalidArgument(field+".seat", "name the seat: RED, BLUE, YELLOW or GREEN")
		}
		if listed[n-1] {
			return nil, 0, invalidArgument(field+".seat", seat.GetSeat().String()+" is listed twice")
		}
		listed[n-1] = true
		switch seat.GetMode() {
		case matchmakingv1.SeatMode_SEAT_MODE_UNSPECIFIED, matchmakingv1.SeatMode_SEAT_MODE_OPEN:
		case matchmakingv1.SeatMode_SEAT_MODE_BOT:
			if !slices.Contains(s.set.BotLevels, seat.GetBotLevel()) {
				return nil, 0, invalidArgument(field+".bot_level", fmt.Sprintf("unknown bot level %q: the levels are %v", seat.GetBotLevel(), s.set.BotLevels))
			}
			t.Seats[n-1] = store.TableSeat{Bot: true, Level: seat.GetBotLevel()}
		default:
			return nil, 0, invalidArgument(field+".mode", "unknown seat mode")
		}
	}
	hostSeat := -1
	switch hs := int(req.GetHostSeat()); {
	case hs == 0:
		hostSeat = slices.IndexFunc(t.Seats[:], func(s store.TableSeat) bool { return !s.Bot })
		if hostSeat < 0 {
			return nil, 0, invalidArgument("seats", "every seat is a bot's: leave one open for the host")
		}
	case hs < 1 || hs > 4:
		return nil, 0, invalidArgument("host_seat", "name the seat: RED, BLUE, YELLOW or GREEN")
	case t.Seats[hs-1].Bot:
		return nil, 0, invalidArgument("host_seat", "the host's seat is a bot seat: give the host an open seat")
	default:
		hostSeat = hs - 1
	}
	return t, hostSeat, nil
}

// JoinTable implements MatchmakingService.JoinTable.
func (s *Matchmaking) JoinTable(ctx context.Context, req *matchmakingv1.JoinTableRequest) (*matchmakingv1.JoinTableResponse, error) {
	id, err := player(ctx)
	if err != nil {
		return nil, err
	}
	code, err := s.tableCode(ctx, id.Subject, req.GetCode())
	if err != nil {
		return nil, err
	}
	seat := int(req.GetSeat())
	if seat < 0 || seat > 4 {
		return nil, invalidArgument("seat", "name the seat: RED, BLUE, YELLOW or GREEN, or none for the first free one")
	}
	p := store.Player{ID: id.Subject, DisplayName: id.DisplayName, Bot: id.Bot}
	t, err := s.store.JoinTable(ctx, code, p, seat-1, s.set.Tables.Store, s.now())
	if err != nil {
		return nil, s.tableStatus(ctx, "join table", id.Subject, err)
	}
	return &matchmakingv1.JoinTableResponse{Table: s.tableProto(t), Seat: gamev1.Seat(t.SeatOf(id.Subject) + 1)}, nil
}

// LeaveTable implements MatchmakingService.LeaveTable.
func (s *Matchmaking) LeaveTable(ctx context.Context, req *matchmakingv1.LeaveTableRequest) (*matchmakingv1.LeaveTableResponse, error) {
	id, err := player(ctx)
	if err != nil {
		return nil, err
	}
	code, err := s.tableCode(ctx, id.Subject, req.GetCode())
	if err != nil {
		return nil, err
	}
	t, err := s.store.LeaveTable(ctx, code, id.Subject, s.set.Tables.Store, s.now())
	if err != nil {
		return nil, s.tableStatus(ctx, "leave table", id.Subject, err)
	}
	return &matchmakingv1.LeaveTableResponse{Table: s.tableProto(t)}, nil
}

// maxStartAttempts bounds StartTable's retries when the table changes
// between planning and recording the start.
const maxStartAttempts = 5

// StartTable implements MatchmakingService.StartTable.
//
// The start is recorded in the table first (BeginStart: the CreateMatch
// request id, the seed and the bots reserved for it), then the match is
// created, the bots' tickets matched, and the table marked started. Each
// step is idempotent, and a table found starting is completed from its
// record: a retry (on any instance, after this one was killed anywhere in
// between) or a concurrent call creates the same match, never a second.
func (s *Matchmaking) StartTable(ctx context.Context, req *matchmakingv1.StartTableRequest) (*matchmakingv1.StartTableResponse, error) {
	id, err := player(ctx)
	if err != nil {
		return nil, err
	}
	code, err := s.tableCode(ctx, id.Subject, req.GetCode())
	if err != nil {
		return nil, err
	}
	fill := cmp.Or(req.GetFillBotLevel(), defaultFillLevel)
	if req.GetFillWithBots() && !slices.Contains(s.set.BotLevels, fill) {
		return nil, invalidArgument("fill_bot_level", fmt.Sprintf("unknown bot level %q: the levels are %v", fill, s.set.BotLevels))
	}
	if s.set.Tables.Matches == nil {
		return nil, rpcerr.Matchmaking.Error(codes.Unavailable, reasonNoMatches, "the match service is not configured here", nil)
	}
	// The rest must finish even if the caller goes away: a recorded start
	// is best completed by the call that recorded it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.set.Tables.CreateTimeout+5*time.Second)
	defer cancel()
	for attempt := 0; attempt < maxStartAttempts; attempt++ {
		t, err := s.store.Table(ctx, code)
		if err != nil {
			return nil, s.tableStatus(ctx, "start table", id.Subject, err)
		}
		switch {
		case t.State == store.TableClosed:
			return nil, s.tableStatus(ctx, "start table", id.Subject, store.ErrTableNotFound)
		case t.Host != id.Subject:
			return nil, s.toStatus(ctx, "start table", store.ErrNotHost)
		case t.State == store.TableStarted:
			return &matchmakingv1.StartTableResponse{Table: s.tableProto(t)}, nil
		case t.State == store.TableOpen:
			t, err = s.beginStart(ctx, t, id.Subject, req.GetFillWithBots(), fill)
			if errors.Is(err, store.ErrTableChanged) {
				continue
			}
			if err != nil {
				return nil, err
			}
		}
		t, err = s.completeStart(ctx, t)
		if err != nil {
			return nil, err
		}
		return &matchmakingv1.StartTableResponse{Table: s.tableProto(t)}, nil
	}
	return nil, s.toStatus(ctx, "start table", store.ErrTableChanged)
}

// beginStart plans the start of open table t (the bots of its bot seats
// and, with fill, of its free open seats), reserves the bots and records
// the start. It returns the table as recorded: with this start, or with
// the one another call recorded first.
func (s *Matchmaking) beginStart(ctx context.Context, t *store.Table, host string, fill bool, fillLevel string) (*store.Table, error) {
	need := map[string][]int{} // bot level -> seat indexes
	for i, seat := range t.Seats {
		switch {
		case seat.Bot:
			need[seat.Level] = append(need[seat.Level], i)
		case seat.Player == nil && !fill:
			return nil, s.toStatus(ctx, "start table", store.ErrSeatsOpen)
		case seat.Player == nil:
			need[fillLevel] = append(need[fillLevel], i)
		}
	}
	// One holder per table version: calls planning on the same version
	// share the same bots; a plan on an outdated version is thrown away
	// without touching anyone else's.
	start := store.TableStart{
		RequestID: t.RequestID() + "-v" + strconv.FormatInt(t.Version, 10),
		Seed:      strconv.FormatUint(rand.Uint64(), 10),
		Bots:      map[string]store.StartBot{},
	}
	release := func() {
		for level := range need {
			if err := s.store.ReleaseBots(ctx, level, start.RequestID); err != nil {
				s.log.WarnContext(ctx, "releasing reserved bots failed", "table", t.Code, "level", level, "err", err)
			}
		}
	}
	for level, seats := range need {
		bots, err := s.store.ReserveBots(ctx, level, start.RequestID, len(seats))
		if errors.Is(err, store.ErrNoBots) {
			release()
			return nil, rpcerr.Matchmaking.Error(codes.Unavailable, reasonNoBots,
				fmt.Sprintf("no free bot of level %q for %d seat(s) right now: retry in a while, or start when players took the seats", level, len(seats)), nil)
		}
		if err != nil {
			release()
			return nil, s.toStatus(ctx, "reserve bots", err)
		}
		for i, b := range bots {
			start.Bots[strconv.Itoa(seats[i])] = store.StartBot{Level: level, TicketID: b.TicketID, Player: b.Player}
		}
	}
	got, err := s.store.BeginStart(ctx, t.Code, host, t.Version, start, s.set.Tables.Store, s.now())
	if err != nil {
		release()
		if errors.Is(err, store.ErrTableChanged) {
			return nil, err
		}
		return nil, s.toStatus(ctx, "start table", err)
	}
	if got.Start == nil || got.Start.RequestID != start.RequestID {
		release() // another call's start was recorded first
	}
	return got, nil
}

// completeStart creates the match of a starting table from its recorded
// start, matches its bots' tickets and marks the table started; for a
// started table it does nothing.
func (s *Matchmaking) completeStart(ctx context.Context, t *store.Table) (*store.Table, error) {
	if t.State != store.TableStarting || t.Start == nil {
		return t, nil
	}
	seed, _ := strconv.ParseUint(t.Start.Seed, 10, 64)
	req := matchmaker.MatchRequest{
		RequestID: t.Start.RequestID,
		RuleSet:   t.RuleSet,
		TimeControl: timecontrol.TimeControl{
			Initial:   time.Duration(t.Clock.InitialMs) * time.Millisecond,
			Increment: time.Duration(t.Clock.IncrementMs) * time.Millisecond,
			Delay:     time.Duration(t.Clock.DelayMs) * time.Millisecond,
		},
		Seed:    seed,
		Unrated: !t.Rated,
	}
	for i, seat := range t.Seats {
		if b, ok := t.Start.Bots[strconv.Itoa(i)]; ok {
			req.Players[i] = b.Player
			continue
		}
		if seat.Player == nil {
			return nil, s.toStatus(ctx, "start table", fmt.Errorf("table %s: seat %d of a recorded start is empty", t.Code, i+1))
		}
		req.Players[i] = *seat.Player
	}
	cctx, cancel := context.WithTimeout(ctx, s.set.Tables.CreateTimeout)
	m, err := s.set.Tables.Matches.CreateMatch(cctx, req)
	cancel()
	if err != nil {
		s.log.WarnContext(ctx, "creating a table's match failed", "table", t.Code, "request", req.RequestID, "err", err)
		return nil, rpcerr.Matchmaking.Error(codes.Unavailable, reasonNoMatches, "the match service did not create the match: retry StartTable (it starts the same match)", nil)
	}
	byLevel := map[string]map[string]int{}
	for _, b := range t.Start.Bots {
		if byLevel[b.Level] == nil {
			byLevel[b.Level] = map[string]int{}
		}
		byLevel[b.Level][b.TicketID] = m.Seats[b.Player.ID]
	}
	for level, seats := range byLevel {
		if err := s.store.CompleteBots(ctx, level, t.Start.RequestID, m.ID, seats); err != nil {
			return nil, s.toStatus(ctx, "match table bots", err)
		}
	}
	t, err = s.store.FinishStart(ctx, t.Code, m.ID, s.set.Tables.Store, s.now())
	if err != nil {
		return nil, s.toStatus(ctx, "finish table start", err)
	}
	return t, nil
}

// WatchTable implements MatchmakingService.WatchTable: the table at once,
// then after every change, until it started or closed. It reads the table
// when Events wakes it and every WatchPoll.
func (s *Matchmaking) WatchTable(req *matchmakingv1.WatchTableRequest, stream matchmakingv1.MatchmakingService_WatchTableServer) error {
	stream, stop := guard(s, stream, droppedTable)
	defer stop()
	ctx := stream.Context()
	id, err := player(ctx)
	if err != nil {
		return err
	}
	code, err := s.tableCode(ctx, id.Subject, req.GetCode())
	if err != nil {
		return err
	}
	var wake <-chan struct{}
	if s.events != nil {
		ch, stop := s.events.watch(tableWatchKey(code))
		defer stop()
		wake = ch
	}
	poll := time.NewTicker(s.set.WatchPoll)
	defer poll.Stop()
	var last *store.Table
	for {
		t, err := s.store.Table(ctx, code)
		switch {
		case errors.Is(err, store.ErrTableNotFound) && last == nil:
			return s.tableStatus(ctx, "watch table", id.Subject, err)
		case errors.Is(err, store.ErrTableNotFound):
			// It expired while watched: idle tables close.
			last.State, last.Version = store.TableClosed, last.Version+1
			return stream.Send(&matchmakingv1.WatchTableResponse{Table: s.tableProto(last)})
		case err != nil:
			return s.toStatus(ctx, "watch table", err)
		}
		if last == nil || t.Version != last.Version {
			if err := stream.Send(&matchmakingv1.WatchTableResponse{Table: s.tableProto(t)}); err != nil {
				return err
			}
			if t.State == store.TableStarted || t.State == store.TableClosed {
				return nil
			}
		}
		last = t
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-poll.C:
		case <-wake:
		}
	}
}

// tableWatchKey is a table's key among Events' waiters (ticket ids never
// contain ':').
func tableWatchKey(code string) string { return "table:" + code }

// tableProto is a table as clients see it.
func (s *Matchmaking) tableProto(t *store.Table) *matchmakingv1.Table {
	out := &matchmakingv1.Table{
		Code:         store.DisplayCode(t.Code),
		HostPlayerId: t.Host,
		RuleSet:      t.RuleSet,
		TimeControl: remote.TimeControl(timecontrol.TimeControl{
			Initial:   time.Duration(t.Clock.InitialMs) * time.Millisecond,
			Increment: time.Duration(t.Clock.IncrementMs) * time.Millisecond,
			Delay:     time.Duration(t.Clock.DelayMs) * time.Millisecond,
		}),
		Rated:     t.Rated,
		MatchId:   t.MatchID,
		ExpiresAt: timestamppb.New(time.UnixMilli(t.ExpiresMs)),
		Version:   uint64(t.Version),
	}
	if s.set.Tables.PublicURL != "" {
		out.Link = s.set.Tables.PublicURL + "/#table=" + t.Code
	}
	switch t.State {
	case store.TableOpen, store.TableStarting:
		// Starting is internal: to the players the table is still open
		// until its match exists.
		out.State = matchmakingv1.TableState_TABLE_STATE_OPEN
	case store.TableStarted:
		out.State = matchmakingv1.TableState_TABLE_STATE_STARTED
	case store.TableClosed:
		out.State = matchmakingv1.TableState_TABLE_STATE_CLOSED
	}
	for i, seat := range t.Seats {
		ps := &matchmakingv1.TableSeat{Seat: gamev1.Seat(i + 1), Mode: matchmakingv1.SeatMode_SEAT_MODE_OPEN}
		if seat.Bot {
			ps.Mode, ps.BotLevel = matchmakingv1.SeatMode_SEAT_MODE_BOT, seat.Level
		}
		if seat.Player != nil {
			ps.Player = &gamev1.Player{PlayerId: seat.Player.ID, DisplayName: seat.Player.DisplayName, IsBot: seat.Player.Bot}
		}
		out.Seats = append(out.Seats, ps)
	}
	return out
}
