// Package match implements the match service's domain logic on the rules
// engine and the Redis store: creating matches, applying moves,
// resignations, time losses and aborts, building views (snapshots) and
// events. It returns its own types (View, Outcome, WatchItem); the wire
// responses are built by the transport. The events are the exception: they
// are stored as fourkingdoms.events.v1.MatchEvent and handed out as stored.
//
// Consistency: every change is computed from a known version of the match
// (the instance's cached, decoded game, or a fresh read) and stored with one
// versioned commit; a commit that finds another version gets that state back
// in the same reply and the change is recomputed from it, up to
// Config.MaxAttempts times (then ErrConflict). Within an instance, changes to
// one match are serialised by the cache entry's mutex (the cache never drops
// an entry in use, so all callers of a match share one), so racing is only
// ever between instances.
//
// Clocks follow docs/rules.md section 10 with the server's clock: the mover's
// time runs from the commit that gave them the turn to the commit of their
// move. Each commit stores the running clock's deadline in the partition's
// deadline set, which the Keeper scans (see keeper.go).
package match

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// Config tunes the service.
type Config struct {
	// FirstMoveLimit is the time a player has for their first move (docs/rules.md section 10).
	FirstMoveLimit time.Duration
	// MaxAttempts bounds how often a change is recomputed after losing a race.
	MaxAttempts int
	// CacheSize bounds the number of decoded games kept per instance.
	CacheSize int
	// PremoveCost is what a premove is charged on its seat's clock
	// (docs/rules.md section 10).
	PremoveCost time.Duration
	// SpectatorDelay is how many plies behind the live game callers who
	// hold no seat see a running match (0: live; see visibility.go).
	SpectatorDelay int
	// DisconnectAfter is how long a seated player who opened a watch
	// stream may have none open before the others are told they are
	// disconnected (presence.go).
	DisconnectAfter time.Duration
	// DisconnectGrace is the longest grace a disconnected player gets
	// before running out of time (scaled down by the time control and
	// halved before the seat's first move: disconnectGrace); 0 turns
	// presence tracking off.
	DisconnectGrace time.Duration
	// OutageCreditMax caps the time given back to the seat to move after
	// an outage of the match's keeper range (outage.go); 0 gives none.
	OutageCreditMax time.Duration
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{FirstMoveLimit: 30 * time.Second, MaxAttempts: 8, CacheSize: 20000, PremoveCost: 100 * time.Millisecond,
		SpectatorDelay: DefaultSpectatorDelay, DisconnectAfter: 5 * time.Second, DisconnectGrace: time.Minute,
		OutageCreditMax: time.Minute}
}

// Validate reports settings the service cannot work with.
func (c Config) Validate() error {
	switch {
	case c.FirstMoveLimit <= 0:
		return errors.New("first move limit must be positive")
	case c.MaxAttempts < 1:
		return errors.New("max attempts must be at least 1")
	case c.CacheSize < 1:
		return errors.New("cache size must be at least 1")
	case c.PremoveCost < time.Millisecond || c.PremoveCost > time.Minute:
		return fmt.Errorf("premove cost %v: must be from 1ms to 1m", c.PremoveCost)
	case c.SpectatorDelay < 0 || c.SpectatorDelay > maxSpectatorDelay:
		return fmt.Errorf("spectator delay must be 0 to %d plies", maxSpectatorDelay)
	case c.DisconnectAfter < 100*time.Millisecond || c.DisconnectAfter > time.Minute:
		return fmt.Errorf("disconnect delay %v: must be from 100ms to 1m", c.DisconnectAfter)
	case c.DisconnectGrace < 0 || c.DisconnectGrace > time.Hour:
		return fmt.Errorf("disconnect grace %v: must be from 0 (off) to 1h", c.DisconnectGrace)
	case c.OutageCreditMax < 0 || c.OutageCreditMax > time.Hour:
		return fmt.Errorf("outage credit cap %v: must be from 0 (none) to 1h", c.OutageCreditMax)
	}
	return nil
}

// Caller is who makes a request.
type Caller struct {
	// ID is the player id (or service/operator name).
	ID string
	// Service and Operator are the caller's roles besides player.
	Service, Operator bool
}

// Limits on request fields.
const (
	maxRequestIDLen = 128
	maxMoveIDLen    = 64
	maxMoveTextLen  = 32
	maxPlayerIDLen  = 128
	maxNameLen      = 64
	maxReasonLen    = 512
	maxFEN4Len      = 4096
)

// Service is the match service's domain logic.
type Service struct {
	store *store.Store
	hub   *fanout.Hub
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	cache *cache
	// presence counts the player watch streams this instance holds.
	presence *presence
	// pingKeys caches the key of Ping tokens (ping.go).
	pingKeys pingKeys
	// outages is what this instance knows of its partitions' Redis
	// outages (outage.go), from the keeper's scans and failed moves.
	outages *outageBook
}

// New returns a Service on st; hub delivers live events to Watch (nil for
// a service that is never watched). now is the clock (time.Now in
// production).
func New(st *store.Store, hub *fanout.Hub, cfg Config, log *slog.Logger, now func() time.Time) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("match config: %w", err)
	}
	return &Service{store: st, hub: hub, cfg: cfg, log: log, now: now, cache: newCache(cfg.CacheSize),
		presence: newPresence(), outages: newOutageBook()}, nil
}

// Outcome is what a move or a resignation did.
type Outcome struct {
	// Events are the match events it caused, in version order, as they
	// are stored and published.
	Events []*eventsv1.MatchEvent
	// Version is the match version after the last event.
	Version uint64
	// Ply is the ply after the last event.
	Ply int
	// Over reports that the match ended with it.
	Over bool
	// ToMove is the seat to move now, unless Over.
	ToMove rules.Seat
	// Result is the match's result when Over (the one its GameOver event
	// carries), in the events' vocabulary.
	Result *gamev1.Result
}

// clockNow is the service clock at millisecond precision, the precision
// the store keeps, so a cached state equals a decoded one.
func (s *Service) clockNow() time.Time { return time.UnixMilli(s.now().UnixMilli()) }

// entry is a cached, decoded match. Its mutex serialises all changes to the
// match made through this instance.
type entry struct {
	mu sync.Mutex
	// refs counts the callers between cache.lock and unlock (holding mu or
	// waiting for it). It is only increased under cache.mu, so an entry the
	// cache sees at zero there cannot be taken while it is being evicted.
	refs    atomic.Int32
	id      string
	loaded  bool
	version uint64
	stamp   string
	game    *rules.Game
	rec     record
	created *eventsv1.MatchEvent
	// players holds each seat's player id, from created: every call asks
	// which seats its caller holds, and the proto is a pointer chase away.
	players [rules.NumSeats]string
	tc      timecontrol.TimeControl
	// delayed is the match as delayed viewers last saw it (visibility.go),
	// kept so that it advances instead of being replayed from the start.
	delayed *delayedState
	// rtts are the match's round-trip estimates as last read, at rttsRead
	// (ping.go: moves without a think time read them at most once per
	// rttReadEvery).
	rtts     map[int]store.RoundTrip
	rttsRead time.Time
}

// setState decodes a stored state into the entry (Meta only when present).
func (e *entry) setState(st store.State) error {
	e.loaded = false
	if len(st.Meta) > 0 || e.created == nil {
		ev := &eventsv1.MatchEvent{}
		if err := proto.Unmarshal(st.Meta, ev); err != nil || ev.GetMatchCreated() == nil {
			return fmt.Errorf("decode match %s metadata: %v", e.id, err)
		}
		e.created, e.tc = ev, storedTimeControl(ev.GetMatchCreated().GetTimeControl())
		e.players = [rules.NumSeats]string{}
		for _, sp := range ev.GetMatchCreated().GetPlayers() {
			if seat, ok := wire.SeatOf(sp.GetSeat()); ok {
				e.players[seat] = sp.GetPlayer().GetPlayerId()
			}
		}
	}
	g := new(rules.Game)
	if err := g.UnmarshalBinary(st.Game); err != nil {
		return fmt.Errorf("decode match %s game: %w", e.id, err)
	}
	var rec record
	if err := rec.unmarshal(st.Clock); err != nil {
		return fmt.Errorf("decode match %s record: %w", e.id, err)
	}
	e.game, e.rec, e.version, e.stamp, e.loaded = g, rec, st.Version, st.Stamp, true
	return nil
}

// seatsOf returns the seats the caller plays in the match.
func (e *entry) seatsOf(c Caller) []rules.Seat {
	var out []rules.Seat
	for s, id := range e.players {
		if id == c.ID && id != "" {
			out = append(out, rules.Seat(s))
		}
	}
	return out
}

// cache keeps decoded games by match id. It is bounded: when full, it drops
// arbitrary entries that nobody holds (a dropped entry is simply reloaded
// when needed). An entry in use is never dropped, so two callers of one
// match always share its mutex; with more matches in use at once than the
// bound, the cache grows past it until they are released.
type cache struct {
	mu  sync.Mutex
	m   map[string]*entry
	max int
}

func newCache(max int) *cache { return &cache{m: make(map[string]*entry), max: max} }

// lock returns the locked entry of a match; the caller releases it with
// unlock.
func (c *cache) lock(id string) *entry {
	c.mu.Lock()
	e := c.m[id]
	if e == nil {
		if len(c.m) >= c.max {
			c.evict(max(len(c.m)/16, 1))
		}
		e = &entry{id: id}
		c.m[id] = e
	}
	e.refs.Add(1)
	c.mu.Unlock()
	e.mu.Lock()
	return e
}

// evict drops up to n entries that nobody holds; c.mu is held.
func (c *cache) evict(n int) {
	for k, e := range c.m {
		if e.refs.Load() != 0 {
			continue
		}
		delete(c.m, k)
		if n--; n == 0 {
			return
		}
	}
}

// unlock releases an entry returned by cache.lock.
func (e *entry) unlock() {
	e.mu.Unlock()
	e.refs.Add(-1)
}

// load reads a match fresh from the store into a locked entry; with a move
// key it also returns the stored answer to that move (nil if none).
func (s *Service) load(ctx context.Context, e *entry, moveKey string) ([]byte, error) {
	var st store.State
	var reply []byte
	var err error
	if moveKey != "" {
		st, reply, err = s.store.LoadWithReply(ctx, e.id, moveKey)
	} else {
		st, err = s.store.Load(ctx, e.id)
	}
	if errors.Is(err, store.ErrNotFound) {
		e.loaded = false
		return nil, ErrNotFound
	}
	if err != nil {
		e.loaded = false
		return nil, err
	}
	if st.Version == e.version && st.Stamp == e.stamp && e.loaded {
		return reply, nil
	}
	return reply, e.setState(st)
}

// change is a computed state change, ready to commit.
type change struct {
	events []*eventsv1.MatchEvent
	rec    record
	// replyMove, when set, stores the outcome under the move key, prefixed
	// by this move text.
	replyMove string
	// out is what the caller gets back.
	out Outcome
	// err is returned after the change was committed (a time loss found
	// while applying a move).
	err error
	// notices are the premove queues the change set or dropped, published
	// to their owners' watchers only.
	notices []Premoves
}

// mutate computes a change with apply from the entry's state and commits
// it, recomputing after lost races. apply must not change the entry except
// its game (which it may advance) and the round trips it caches
// (roundTrip); on any failure the entry is reloaded.
// It returns the committed change, or the stored reply of a repeated move.
func (s *Service) mutate(ctx context.Context, id, moveKey string, apply func(e *entry, now time.Time) (*change, error)) (*change, []byte, error) {
	if _, err := store.PartitionOf(id); err != nil {
		return nil, nil, ErrNotFound
	}
	e := s.cache.lock(id)
	defer e.unlock()
	fresh := false
	if !e.loaded {
		reply, err := s.load(ctx, e, moveKey)
		if err != nil || reply != nil {
			return nil, reply, err
		}
		fresh = true
	}
	for range s.cfg.MaxAttempts {
		now := s.clockNow()
		ch, err := apply(e, now)
		if err != nil {
			if fresh {
				return nil, nil, err
			}
			// The cached state may be stale, or this is a retry of a move
			// that was applied: decide on a fresh read.
			e.loaded = false
			reply, lerr := s.load(ctx, e, moveKey)
			if lerr != nil || reply != nil {
				return nil, reply, lerr
			}
			fresh = true
			continue
		}
		res, err := s.commit(ctx, e, ch, moveKey)
		if err != nil {
			e.loaded = false
			return nil, nil, err
		}
		switch res.Outcome {
		case store.Applied:
			e.version, e.stamp, e.rec = res.Version, res.Stamp, ch.rec
			return ch, nil, ch.err
		case store.Duplicate:
			e.loaded = false
			return nil, res.Reply, nil
		case store.Conflict:
			if err := e.setState(res.State); err != nil {
				return nil, nil, err
			}
			fresh = true
		}
	}
	e.loaded = false
	return nil, nil, ErrConflict
}

func (s *Service) commit(ctx context.Context, e *entry, ch *change, moveKey string) (store.Result, error) {
	game, err := e.game.MarshalBinary()
	if err != nil {
		return store.Result{}, fmt.Errorf("encode game %s: %w", e.id, err)
	}
	c := store.Change{Expected: e.version, ExpectedStamp: e.stamp, Game: game, Clock: ch.rec.marshal()}
	for i := range ch.notices {
		c.Private = append(c.Private, encodeNotice(&ch.notices[i]))
	}
	for _, ev := range ch.events {
		b, err := marshal(ev)
		if err != nil {
			return store.Result{}, err
		}
		c.Events = append(c.Events, b)
	}
	if ch.replyMove != "" && moveKey != "" {
		reply, err := encodeReply(ch.replyMove, &ch.out, c.Events)
		if err != nil {
			return store.Result{}, err
		}
		c.MoveKey, c.Reply = moveKey, reply
	}
	c.Deadline, _ = ch.rec.Clocks.Deadline(e.tc, s.cfg.FirstMoveLimit)
	if ch.rec.Status != StatusActive {
		c.Finished, c.Deadline = true, time.Time{}
		// Only a rated finished match goes to the outbox (and on to the
		// rating stream): an unrated one, like an aborted one, writes no
		// outbox entry at all, so the relay has nothing to skip and its
		// bookkeeping is the same as for every other entry.
		if ch.rec.Status == StatusFinished && !e.created.GetMatchCreated().GetUnrated() {
			fin, err := marshal(s.finishedRecord(e, ch.rec))
			if err != nil {
				return store.Result{}, err
			}
			c.FinishedData = fin
		}
		// A first-move abort goes to the outbox too (rated or not): the
		// matchmaker puts the other players back in their queue.
		if ab := abandonedRecord(e, ch); ab != nil {
			data, err := marshal(ab)
			if err != nil {
				return store.Result{}, err
			}
			c.AbandonedData = data
		}
	}
	return s.store.Commit(ctx, e.id, c)
}

func (s *Service) finishedRecord(e *entry, rec record) *eventsv1.MatchFinished {
	mc := e.created.GetMatchCreated()
	return &eventsv1.MatchFinished{
		MatchId: e.id, RuleSet: mc.GetRuleSet(), TimeControl: mc.GetTimeControl(), Players: mc.GetPlayers(),
		Result: wire.Result(e.game), StartedAt: e.created.GetOccurredAt(), FinishedAt: timestamppb.New(rec.FinishedAt),
		Plies: uint32(e.game.Ply()),
	}
}

// abandonedRecord is the MatchAbandoned record of a change that aborts the
// match for a missed first move (outOfTime), or nil: operator aborts and
// every other change are not published.
func abandonedRecord(e *entry, ch *change) *eventsv1.MatchAbandoned {
	for _, ev := range ch.events {
		ab := ev.GetMatchAborted()
		if ab == nil || ab.GetFirstMoveMissed() == gamev1.Seat_SEAT_UNSPECIFIED {
			continue
		}
		mc := e.created.GetMatchCreated()
		return &eventsv1.MatchAbandoned{
			MatchId: e.id, RuleSet: mc.GetRuleSet(), TimeControl: mc.GetTimeControl(), Players: mc.GetPlayers(),
			MissedSeat: ab.GetFirstMoveMissed(), OccurredAt: ev.GetOccurredAt(),
		}
	}
	return nil
}

var marshalOpts = proto.MarshalOptions{Deterministic: true}

func marshal(m proto.Message) ([]byte, error) {
	b, err := marshalOpts.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", m, err)
	}
	return b, nil
}

// Create starts a match (service callers only); repeating a request id
// returns the match it created.
func (s *Service) Create(ctx context.Context, c Caller, req *matchv1.CreateMatchRequest) (*View, error) {
	if !c.Service {
		return nil, fmt.Errorf("%w: only services create matches", ErrForbidden)
	}
	if n := len(req.GetRequestId()); n == 0 || n > maxRequestIDLen {
		return nil, rpcerr.Field(ErrInvalid, "request_id", fmt.Sprintf("must have 1 to %d bytes", maxRequestIDLen))
	}
	players, err := validatePlayers(req.GetPlayers())
	if err != nil {
		return nil, err
	}
	name := req.GetRuleSet()
	if name == "" {
		name = "fourkingdoms"
	}
	rs, ok := rules.RuleSetByName(name)
	if !ok {
		return nil, rpcerr.Field(ErrInvalid, "rule_set", fmt.Sprintf("%q is not one of %v", name, rules.RuleSetNames()))
	}
	// The rule set's options (docs/rules.md 8.3); the game's encoding keeps
	// them, so every instance replays the match with them.
	if req.ClaimWin != nil {
		rs.ClaimWin = req.GetClaimWin()
	}
	if req.AutoClaimWin != nil {
		rs.AutoClaimWin = req.GetAutoClaimWin()
	}
	tc, tcPB, err := parseTimeControl(req.GetTimeControl())
	if err != nil {
		return nil, err
	}
	if len(req.GetStartFen4()) > maxFEN4Len {
		return nil, rpcerr.Field(ErrInvalid, "start_fen4", fmt.Sprintf("longer than %d bytes", maxFEN4Len))
	}
	seed := req.GetSeed()
	if req.Seed == nil {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	g, err := rules.NewGame(rs, seed, req.GetStartFen4())
	if err != nil {
		return nil, rpcerr.Field(ErrInvalid, "start_fen4", err.Error())
	}
	if g.Over() {
		return nil, rpcerr.Field(ErrInvalid, "start_fen4", "the game is already over in that position")
	}
	now := s.clockNow()
	id := store.NewIDFor(req.GetRequestId())
	rec := record{Status: StatusActive, Clocks: newClocks(tc, g.ToMove(), now)}
	created := &eventsv1.MatchEvent{MatchId: id, Version: 1, Ply: uint32(g.Ply()), OccurredAt: timestamppb.New(now),
		Event: &eventsv1.MatchEvent_MatchCreated{MatchCreated: &eventsv1.MatchCreated{
			RuleSet: rs.Name, TimeControl: tcPB, Players: players, Fen4: g.FEN4(), ToMove: wire.Seat(g.ToMove()),
			Clocks: clocksPB(&rec.Clocks, tc, s.cfg.FirstMoveLimit, now), ClaimWin: &rs.ClaimWin, AutoClaimWin: &rs.AutoClaimWin,
			// Unrated is kept with the rest of the match's immutable
			// metadata (this event, stored once as the match's meta).
			Unrated:        req.GetUnrated(),
			FirstMoveAbort: proto.Bool(req.FirstMoveAbort == nil || req.GetFirstMoveAbort())}}}

	meta, err := marshal(created)
	if err != nil {
		return nil, err
	}
	game, err := g.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("encode game: %w", err)
	}
	deadline, _ := rec.Clocks.Deadline(tc, s.cfg.FirstMoveLimit)
	got, made, err := s.store.Create(ctx, id, store.NewMatch{RequestID: req.GetRequestId(), Game: game,
		Clock: rec.marshal(), Meta: meta, Event: meta, Deadline: deadline})
	if err != nil {
		return nil, err
	}
	if made {
		s.log.InfoContext(ctx, "match created", "match", id, "rule_set", rs.Name, "time_control", tcPB.GetName())
	}
	return s.Get(ctx, c, got)
}

func validatePlayers(in []*gamev1.SeatPlayer) ([]*gamev1.SeatPlayer, error) {
	if len(in) != rules.NumSeats {
		return nil, rpcerr.Field(ErrInvalid, "players", fmt.Sprintf("want exactly %d, have %d", rules.NumSeats, len(in)))
	}
	out := make([]*gamev1.SeatPlayer, rules.NumSeats)
	ids := map[string]bool{}
	for i, sp := range in {
		s, ok := wire.SeatOf(sp.GetSeat())
		if !ok {
			return nil, rpcerr.Field(ErrInvalid, fmt.Sprintf("players[%d].seat", i), "not a seat")
		}
		if out[s] != nil {
			return nil, rpcerr.Field(ErrInvalid, fmt.Sprintf("players[%d].seat", i), sp.GetSeat().String()+" given twice")
		}
		p := sp.GetPlayer()
		if n := len(p.GetPlayerId()); n == 0 || n > maxPlayerIDLen {
			return nil, rpcerr.Field(ErrInvalid, fmt.Sprintf("players[%d].player.player_id", i), fmt.Sprintf("must have 1 to %d bytes", maxPlayerIDLen))
		}
		if len(p.GetDisplayName()) > maxNameLen {
			return nil, rpcerr.Field(ErrInvalid, fmt.Sprintf("players[%d].player.display_name", i), fmt.Sprintf("longer than %d bytes", maxNameLen))
		}
		if ids[p.GetPlayerId()] {
			return nil, rpcerr.Field(ErrInvalid, fmt.Sprintf("players[%d].player.player_id", i), fmt.Sprintf("player %q holds two seats", p.GetPlayerId()))
		}
		ids[p.GetPlayerId()] = true
		out[s] = &gamev1.SeatPlayer{Seat: sp.GetSeat(), Player: &gamev1.Player{PlayerId: p.GetPlayerId(),
			DisplayName: p.GetDisplayName(), IsBot: p.GetIsBot()}}
	}
	return out, nil
}

// Get returns a fresh view of a match as seen by the caller: live, or
// behind by the spectator delay (visibility.go).
func (s *Service) Get(ctx context.Context, c Caller, id string) (*View, error) {
	if _, err := store.PartitionOf(id); err != nil {
		return nil, ErrNotFound
	}
	v, _, err := s.getVisible(ctx, c, id)
	return v, err
}

// legalFor lists the caller's legal moves if they hold the live seat to move.
func (s *Service) legalFor(e *entry, c Caller) []string {
	if e.rec.Status != StatusActive {
		return nil
	}
	for _, seat := range e.seatsOf(c) {
		if seat == e.game.ToMove() {
			moves := e.game.LegalMoves(seat)
			out := make([]string, len(moves))
			for i, m := range moves {
				out[i] = e.game.MoveText(m)
			}
			return out
		}
	}
	return nil
}

// MakeMove applies the caller's move (and the zombie moves that follow).
func (s *Service) MakeMove(ctx context.Context, c Caller, req *matchv1.MakeMoveRequest) (Outcome, error) {
	if len(req.GetMove()) == 0 || len(req.GetMove()) > maxMoveTextLen {
		return Outcome{}, rpcerr.Field(ErrInvalid, "move", fmt.Sprintf("must have 1 to %d bytes", maxMoveTextLen))
	}
	if len(req.GetClientMoveId()) > maxMoveIDLen {
		return Outcome{}, rpcerr.Field(ErrInvalid, "client_move_id", fmt.Sprintf("longer than %d bytes", maxMoveIDLen))
	}
	think, measured, err := thinkTime(req)
	if err != nil {
		return Outcome{}, err
	}
	moveKey := ""
	if req.GetClientMoveId() != "" {
		moveKey = c.ID + "\x00" + req.GetClientMoveId()
	}
	p, perr := store.PartitionOf(req.GetMatchId())
	tried := s.clockNow()
	var at time.Time // when the change committed was computed
	ch, stored, err := s.mutate(ctx, req.GetMatchId(), moveKey, func(e *entry, now time.Time) (*change, error) {
		at = now
		seats := e.seatsOf(c)
		if len(seats) == 0 {
			return nil, ErrNotPlayer
		}
		if e.rec.Status != StatusActive {
			return nil, ErrFinished
		}
		g := e.game
		if req.ExpectedPly != nil && int(req.GetExpectedPly()) != g.Ply() {
			return nil, &PlyMismatchError{Expected: int(req.GetExpectedPly()), Current: g.Ply()}
		}
		seat := seats[0]
		for _, x := range seats {
			if x == g.ToMove() {
				seat = x
			}
		}
		if seat != g.ToMove() {
			// A caller none of whose seats is live (resigned, timed out
			// or out) learns that, not whose turn it is: it will never
			// move again (docs/api.md).
			if !slices.ContainsFunc(seats, func(x rules.Seat) bool { return g.Status(x) == rules.Live }) {
				return nil, fmt.Errorf("%w: %s", rules.ErrSeatNotLive, seat)
			}
			return nil, fmt.Errorf("%w: %s to move", rules.ErrNotYourTurn, g.ToMove())
		}
		// A Redis outage of the partition in this turn is not the
		// mover's time, and a deadline it pushed is not a loss: the
		// credit goes in this commit, before the move (outage.go).
		rec := e.rec
		var pre []*eventsv1.MatchEvent
		if rec.Clocks.Running == int(seat) {
			credit, err := s.creditOnMove(ctx, e, p, now)
			if err != nil {
				return nil, err
			}
			if credit > 0 {
				pre = append(pre, s.credit(e, &rec, credit, now))
			}
		}
		if d, _ := rec.Clocks.Deadline(e.tc, s.cfg.FirstMoveLimit); !d.IsZero() && now.After(d) {
			ch, err := s.outOfTime(e, now, seat)
			if err != nil {
				return nil, err
			}
			ch.err = ErrTimeRanOut
			return ch, nil
		}
		before := g.Points()
		_, eff, err := g.PlayText(seat, req.GetMove())
		if err != nil {
			return nil, err
		}
		// Lag compensation (lag.go): the turn is charged as if it had
		// started comp later, comp being at most the seat's quota. The lag
		// is the turn less the claimed think time, or else the seat's
		// round trip (never more than the turn).
		var elapsed, comp time.Duration
		if rec.Clocks.Running == int(seat) {
			elapsed = now.Sub(rec.Clocks.TurnStart)
			lag, known := elapsed-think, measured
			if !measured {
				// The seat's measured round trip (ping.go), if current.
				if rtt, ok := s.roundTrip(ctx, e, seat, now); ok {
					lag, known = min(rtt, elapsed), true
				}
			}
			comp = rec.Clocks.lagStep(e.tc, seat, lag, known)
			rec.Clocks.TurnStart = rec.Clocks.TurnStart.Add(comp)
		}
		rec.Clocks.follow(e.tc, g, now, true, true)
		s.finish(g, &rec, now)
		events := eventsOf(e.id, g, &eff, before, e.version+1+uint64(len(pre)), now, clocksPB(&rec.Clocks, e.tc, s.cfg.FirstMoveLimit, now), &rec)
		setCharge(events, elapsed-comp, comp)
		events, notices := s.settlePremoves(e, &rec, now, append(pre, events...))
		out := Outcome{Events: events, Version: e.version + uint64(len(events)), Ply: g.Ply(), Over: g.Over(), ToMove: g.ToMove()}
		if out.Over {
			out.Result = wire.Result(g)
		}
		return &change{events: events, rec: rec, out: out, replyMove: req.GetMove(), notices: notices}, nil
	})
	// The outage book (outage.go): a commit (or a stored reply read) is
	// the partition served, ending an outage; a Redis error is the
	// partition failing, from this first failed attempt.
	switch {
	case perr != nil:
	case ch != nil || stored != nil:
		s.outages.served(p, req.GetMatchId(), cmp.Or(at, s.clockNow()))
	case redisconn.Transient(err):
		s.outages.failing(p, tried)
	}
	if stored != nil {
		return decodeStoredReply(stored, req.GetMove())
	}
	if err != nil {
		return Outcome{}, err
	}
	return ch.out, nil
}

// maxThinkTime bounds a claimed think time: longer than any clock, it only
// means "no lag" (the lag is never negative), so larger values are clamped.
const maxThinkTime = 1000 * time.Hour

// thinkTime returns the request's claimed think time and whether it has
// one. A negative or malformed duration is refused; one above the server's
// measure simply means no lag.
func thinkTime(req *matchv1.MakeMoveRequest) (time.Duration, bool, error) {
	d := req.GetClientThinkTime()
	if d == nil {
		return 0, false, nil
	}
	if err := d.CheckValid(); err != nil {
		return 0, false, rpcerr.Field(ErrInvalid, "client_think_time", "must be a valid duration (seconds and nanos of the same sign, nanos below 1e9)")
	}
	if d.GetSeconds() < 0 || d.GetNanos() < 0 {
		return 0, false, rpcerr.Field(ErrInvalid, "client_think_time", "must not be negative")
	}
	if d.GetSeconds() >= int64(maxThinkTime/time.Second) {
		return maxThinkTime, true, nil
	}
	return d.AsDuration(), true, nil
}

// setCharge records on the first MoveApplied of events (the mover's; the
// zombie moves after it are charged to no clock) the time its clock was
// charged and the lag compensation given.
func setCharge(events []*eventsv1.MatchEvent, charged, comp time.Duration) {
	for _, ev := range events {
		if m := ev.GetMoveApplied(); m != nil {
			m.TimeCharged = durationpb.New(charged)
			if comp > 0 {
				m.LagCompensation = durationpb.New(comp)
			}
			return
		}
	}
}

// encodeReply encodes a stored answer: the move text, a zero byte, then
// the outcome as a fourkingdoms.match.v1.MakeMoveResponse (the stored form,
// kept so that answers stored by earlier versions still decode). It writes
// the fields directly, in field order as a deterministic marshal would: the
// events are already encoded for the commit, so they are appended as field
// 1 instead of being marshalled a second time (protobuf merges fields in any
// order).
func encodeReply(move string, out *Outcome, events [][]byte) ([]byte, error) {
	var result []byte
	if out.Result != nil {
		var err error
		if result, err = marshal(out.Result); err != nil {
			return nil, err
		}
	}
	n := len(move) + 1 + 4*binary.MaxVarintLen64 + len(result)
	for _, e := range events {
		n += len(e) + 8
	}
	b := make([]byte, 0, n)
	b = append(append(b, move...), 0)
	if out.Version != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, out.Version)
	}
	if out.Ply != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(out.Ply))
	}
	if !out.Over {
		b = protowire.AppendTag(b, 4, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(wire.Seat(out.ToMove)))
	} else {
		b = protowire.AppendTag(b, 5, protowire.VarintType)
		b = protowire.AppendVarint(b, 1)
		if result != nil {
			b = protowire.AppendTag(b, 6, protowire.BytesType)
			b = protowire.AppendBytes(b, result)
		}
	}
	for _, e := range events {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	return b, nil
}

// decodeStoredReply decodes an answer stored by encodeReply for move.
func decodeStoredReply(stored []byte, move string) (Outcome, error) {
	i := 0
	for i < len(stored) && stored[i] != 0 {
		i++
	}
	if i == len(stored) {
		return Outcome{}, errors.New("stored reply without move text")
	}
	if string(stored[:i]) != move {
		return Outcome{}, ErrMoveIDReused
	}
	resp := &matchv1.MakeMoveResponse{}
	if err := proto.Unmarshal(stored[i+1:], resp); err != nil {
		return Outcome{}, fmt.Errorf("decode stored reply: %w", err)
	}
	out := Outcome{Events: resp.GetEvents(), Version: resp.GetVersion(), Ply: int(resp.GetPly()), Over: resp.GetGameOver(),
		Result: resp.GetResult()}
	if !out.Over {
		seat, ok := wire.SeatOf(resp.GetToMove())
		if !ok {
			return Outcome{}, fmt.Errorf("decode stored reply: seat to move %v", resp.GetToMove())
		}
		out.ToMove = seat
	}
	return out, nil
}

// finish marks the record finished when the game is over.
func (s *Service) finish(g *rules.Game, rec *record, now time.Time) {
	if g.Over() && rec.Status == StatusActive {
		rec.Status, rec.FinishedAt = StatusFinished, now
		if g.Result().Termination == rules.Aborted {
			rec.Status = StatusAborted
		}
	}
}

// leave applies a resignation or time loss of seat to the entry's game.
func (s *Service) leave(e *entry, now time.Time, seat rules.Seat, timeout bool) (*change, error) {
	g, rec := e.game, e.rec
	before, ply, toMove := g.Points(), g.Ply(), g.ToMove()
	wasRunning := rec.Clocks.Running == int(seat)
	var eff rules.Effects
	var err error
	if timeout {
		eff, err = g.TimeOut(seat)
	} else {
		eff, err = g.Resign(seat)
	}
	if err != nil {
		return nil, err
	}
	if wasRunning && timeout {
		rec.Clocks.Remaining[seat] = 0
		rec.Clocks.Running = noSeat
	}
	rec.Clocks.follow(e.tc, g, now, g.Ply() != ply || g.ToMove() != toMove || wasRunning, false)
	s.finish(g, &rec, now)
	events := eventsOf(e.id, g, &eff, before, e.version+1, now, clocksPB(&rec.Clocks, e.tc, s.cfg.FirstMoveLimit, now), &rec)
	events, notices := s.settlePremoves(e, &rec, now, events)
	return &change{events: events, rec: rec, notices: notices}, nil
}

// Resign resigns the caller's (first live) seat.
func (s *Service) Resign(ctx context.Context, c Caller, id string) (Outcome, error) {
	ch, _, err := s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		seats := e.seatsOf(c)
		if len(seats) == 0 {
			return nil, ErrNotPlayer
		}
		if e.rec.Status != StatusActive {
			return nil, ErrFinished
		}
		seat := seats[0]
		for _, x := range seats {
			if e.game.Status(x) == rules.Live {
				seat = x
				break
			}
		}
		ch, err := s.leave(e, now, seat, false)
		if err != nil {
			return nil, err
		}
		g := e.game
		ch.out = Outcome{Events: ch.events, Version: e.version + uint64(len(ch.events)), Ply: g.Ply(), Over: g.Over(), ToMove: g.ToMove()}
		if ch.out.Over && g.Result().Termination != rules.Aborted {
			ch.out.Result = wire.Result(g)
		}
		return ch, nil
	})
	if err != nil {
		return Outcome{}, err
	}
	return ch.out, nil
}

// ClaimWin ends the match won by the caller's live seat's claim
// (rules.Game.ClaimWin): only the leader of the last two live players,
// ahead by more than a king's worth, under a rule set that allows claims.
func (s *Service) ClaimWin(ctx context.Context, c Caller, id string) (Outcome, error) {
	ch, _, err := s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		seats := e.seatsOf(c)
		if len(seats) == 0 {
			return nil, ErrNotPlayer
		}
		if e.rec.Status != StatusActive {
			return nil, ErrFinished
		}
		g, rec := e.game, e.rec
		// A caller holding several seats (tests, bots) claims for the
		// first one that may.
		seat := seats[0]
		for _, x := range seats {
			if g.CanClaimWin(x) == nil {
				seat = x
				break
			}
		}
		before := g.Points()
		eff, err := g.ClaimWin(seat)
		if err != nil {
			return nil, err
		}
		rec.Clocks.follow(e.tc, g, now, true, false)
		s.finish(g, &rec, now)
		events := eventsOf(e.id, g, &eff, before, e.version+1, now, clocksPB(&rec.Clocks, e.tc, s.cfg.FirstMoveLimit, now), &rec)
		events, notices := s.settlePremoves(e, &rec, now, events)
		ch := &change{events: events, rec: rec, notices: notices}
		ch.out = Outcome{Events: events, Version: e.version + uint64(len(events)), Ply: g.Ply(), Over: true, Result: wire.Result(g)}
		return ch, nil
	})
	if err != nil {
		return Outcome{}, err
	}
	return ch.out, nil
}

// Abort ends a match without a result (operators only) and returns its
// view.
func (s *Service) Abort(ctx context.Context, c Caller, id, reason string) (*View, error) {
	if !c.Operator {
		return nil, fmt.Errorf("%w: only operators abort matches", ErrForbidden)
	}
	if reason == "" || len(reason) > maxReasonLen {
		return nil, rpcerr.Field(ErrInvalid, "reason", fmt.Sprintf("must have 1 to %d bytes", maxReasonLen))
	}
	_, _, err := s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		if e.rec.Status != StatusActive {
			return nil, ErrFinished
		}
		return s.abort(e, now, &eventsv1.MatchAborted{Reason: reason, AbortedBy: c.ID}), nil
	})
	if err != nil {
		return nil, err
	}
	e := s.cache.lock(id)
	defer e.unlock()
	if !e.loaded {
		if _, err := s.load(ctx, e, ""); err != nil {
			return nil, err
		}
	}
	return s.view(e, c, s.clockNow()), nil
}

// abort ends the entry's match without a result.
func (s *Service) abort(e *entry, now time.Time, why *eventsv1.MatchAborted) *change {
	rec := e.rec
	e.game.Abort()
	rec.Clocks.charge(e.tc, now, false)
	rec.Status, rec.FinishedAt = StatusAborted, now
	ev := &eventsv1.MatchEvent{MatchId: e.id, Version: e.version + 1, Ply: uint32(e.game.Ply()), OccurredAt: timestamppb.New(now),
		Event: &eventsv1.MatchEvent_MatchAborted{MatchAborted: why}}
	events, notices := s.settlePremoves(e, &rec, now, []*eventsv1.MatchEvent{ev})
	return &change{events: events, rec: rec, notices: notices}
}

// outOfTime is the running seat's clock running out: a time loss, or,
// when the seat has not made its first move and the match aborts for that
// (MatchCreated.first_move_abort), the match aborted without a result
// (docs/rules.md section 10: not every seat has moved yet, since this one
// has not).
func (s *Service) outOfTime(e *entry, now time.Time, seat rules.Seat) (*change, error) {
	if !e.rec.Clocks.Moved[seat] && e.created.GetMatchCreated().GetFirstMoveAbort() {
		return s.abort(e, now, &eventsv1.MatchAborted{FirstMoveMissed: wire.Seat(seat),
			Reason: seat.String() + " made no first move in time"}), nil
	}
	return s.leave(e, now, seat, true)
}

// Flag records a time loss (or a first-move abort: outOfTime) for the
// running seat of a match if its deadline has passed; it reports whether
// it did. The Keeper calls it for due
// deadlines; it reads the match fresh, so a stale deadline entry is harmless.
func (s *Service) Flag(ctx context.Context, id string) (bool, error) {
	flagged := false
	_, _, err := s.mutate(ctx, id, "", func(e *entry, now time.Time) (*change, error) {
		flagged = false
		if e.rec.Status != StatusActive || e.rec.Clocks.Running == noSeat {
			return nil, errNothingDue
		}
		d, _ := e.rec.Clocks.Deadline(e.tc, s.cfg.FirstMoveLimit)
		if now.Before(d) {
			return nil, errNothingDue
		}
		ch, err := s.outOfTime(e, now, rules.Seat(e.rec.Clocks.Running))
		if err != nil {
			return nil, err
		}
		flagged = true
		return ch, nil
	})
	if errors.Is(err, errNothingDue) {
		return false, nil
	}
	return flagged && err == nil, err
}

var errNothingDue = errors.New("no deadline due")

// Export returns the game record in PGN4 as the caller sees it: while the
// match runs, a spectator's record stops at the spectator delay
// (visibility.go).
func (s *Service) Export(ctx context.Context, c Caller, id string) (string, error) {
	if _, err := store.PartitionOf(id); err != nil {
		return "", ErrNotFound
	}
	e := s.cache.lock(id)
	defer e.unlock()
	if _, err := s.load(ctx, e, ""); err != nil {
		return "", err
	}
	mc := e.created.GetMatchCreated()
	tags := []rules.Tag{{Name: "Site", Value: "Four Kingdoms"}, {Name: "MatchId", Value: e.id},
		{Name: "Date", Value: e.created.GetOccurredAt().AsTime().UTC().Format("2006.01.02")},
		{Name: "TimeControl", Value: mc.GetTimeControl().GetName()}}
	if mc.GetUnrated() {
		// Written only for unrated matches, so rated records stay as before.
		tags = append(tags, rules.Tag{Name: "Rated", Value: "No"})
	}
	for _, sp := range mc.GetPlayers() {
		if seat, ok := wire.SeatOf(sp.GetSeat()); ok {
			tags = append(tags, rules.Tag{Name: seat.String(), Value: sp.GetPlayer().GetDisplayName()})
		}
	}
	pgn := e.game.PGN4(tags)
	if delay := s.delayFor(e, c); delay > 0 {
		var err error
		if pgn, err = s.delayedPGN4(e, delay, tags); err != nil {
			return "", err
		}
	}
	if e.rec.Status == StatusActive {
		// The seed decides the zombie moves still to come: players must not
		// learn it while the match runs. The record re-imports without it
		// (zombie moves are read from the record).
		var b strings.Builder
		for line := range strings.SplitAfterSeq(pgn, "\n") {
			if !strings.HasPrefix(line, "[Seed ") {
				b.WriteString(line)
			}
		}
		pgn = b.String()
	}
	return pgn, nil
}

// LegalMovesAt returns the caller's legal moves if the match is at version
// and the caller holds the live seat to move; nil otherwise.
func (s *Service) LegalMovesAt(ctx context.Context, c Caller, id string, version uint64) []string {
	e := s.cache.lock(id)
	defer e.unlock()
	if !e.loaded || e.version < version {
		if _, err := s.load(ctx, e, ""); err != nil {
			return nil
		}
	}
	if e.version != version {
		return nil
	}
	return s.legalFor(e, c)
}
