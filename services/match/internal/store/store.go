// Package store keeps matches in Redis.
//
// A match is an opaque, versioned record: the engine's binary game, a small
// clock record and immutable metadata, all in one hash, plus an event stream
// (one entry per version), a hash of answered client move ids, and a shard
// channel for live watchers. Every key of a match carries the hash tag of the
// match's partition ("{fk:pNN}"), shared with the partition's deadline set and
// outbox stream, so each state change is a single Lua script that first checks
// the version the caller computed from: two instances racing on one match
// never both apply a change for the same version.
//
// Guarantees kept here:
//   - Versions start at 1 (creation) and grow by one per event, without gaps.
//   - The event stream entry ids are "<version>-0"; it is capped at
//     Config.EventLogLen entries (approximately, MAXLEN ~), older ones are
//     trimmed and readers fall back to a snapshot.
//   - The finishing change writes the MatchFinished record (or, for a
//     first-move abort, the MatchAbandoned record) into the partition
//     outbox in the same script; Relay copies outbox entries to the global
//     stream of their type and deletes them afterwards (at-least-once: a
//     crash between the copy and the delete duplicates an entry, consumers
//     dedupe by match id).
//   - Finished matches expire after Config.Retention.
package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
)

// Errors returned by the store.
var (
	ErrNotFound      = errors.New("match not found")
	ErrNotReplicated = redisconn.ErrNotReplicated // the one error every service's WAIT wraps
)

// Config configures a Store.
type Config struct {
	// Prefix is prepended to every key (tests use one per test); empty in production.
	Prefix string
	// EventLogLen caps each match's event stream (approximately).
	EventLogLen int
	// Retention is how long a finished match stays readable.
	Retention time.Duration
	// RequestTTL is how long a CreateMatch request id is remembered.
	RequestTTL time.Duration
	// FinishedStream is the global stream MatchFinished records are relayed
	// to; its entries have the layout of eventstream.MatchFinished.
	FinishedStream string
	// FinishedStreamLen caps each global stream, the finished and the
	// abandoned one (approximately); 0 = no cap.
	FinishedStreamLen int64
	// AbandonedStream is the global stream MatchAbandoned records (matches
	// aborted by a missed first move) are relayed to; its entries have the
	// layout of eventstream.MatchAbandoned.
	AbandonedStream string
	// WaitReplicas, when > 0, makes every commit wait (Redis WAIT) until that
	// many replicas acknowledged it, for at most WaitTimeout.
	WaitReplicas int
	// WaitTimeout bounds the WAIT.
	WaitTimeout time.Duration
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		EventLogLen:       1000,
		Retention:         7 * 24 * time.Hour,
		RequestTTL:        24 * time.Hour,
		FinishedStream:    eventstream.MatchFinished().Key(),
		FinishedStreamLen: 1_000_000,
		AbandonedStream:   eventstream.MatchAbandoned().Key(),
		WaitTimeout:       500 * time.Millisecond,
	}
}

// Validate reports a configuration the store cannot work with.
func (c Config) Validate() error {
	switch {
	case c.EventLogLen < 10:
		return fmt.Errorf("event log length %d: must be at least 10", c.EventLogLen)
	case c.Retention < time.Second:
		return fmt.Errorf("retention %v: must be at least 1s", c.Retention)
	case c.RequestTTL < time.Second:
		return fmt.Errorf("request TTL %v: must be at least 1s", c.RequestTTL)
	case c.FinishedStream == "":
		return errors.New("finished stream name is empty")
	case c.AbandonedStream == "" || c.AbandonedStream == c.FinishedStream:
		return errors.New("abandoned stream name must be set and differ from the finished stream")
	case c.WaitReplicas < 0:
		return fmt.Errorf("wait replicas %d: must not be negative", c.WaitReplicas)
	case c.WaitReplicas > 0 && c.WaitTimeout <= 0:
		return errors.New("wait timeout must be positive when waiting for replicas")
	}
	return nil
}

// Store reads and writes matches.
type Store struct {
	rdb         redis.UniversalClient
	commits     redisconn.Processor
	cfg         Config
	keys        keys
	retentionMS int64
}

// New returns a Store on the given client. Commits, one per move, go
// through commits (a redisbatch.Batcher lets concurrent commits share
// round trips); nil sends each on rdb in a round trip of its own.
func New(rdb redis.UniversalClient, cfg Config, commits redisconn.Processor) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("store config: %w", err)
	}
	if commits == nil {
		commits = rdb
	}
	return &Store{rdb: rdb, commits: commits, cfg: cfg, keys: newKeys(cfg.Prefix),
		retentionMS: cfg.Retention.Milliseconds()}, nil
}

// State is a match as stored. Game and Clock change with every version; Meta
// is written once at creation.
type State struct {
	Version uint64
	// Stamp is random per commit; with Version it identifies the state.
	Stamp string
	Game  []byte
	Clock []byte
	Meta  []byte
}

// NewMatch is what Create stores.
type NewMatch struct {
	// RequestID makes creation idempotent; the match id is derived from a new
	// random id in the request's partition.
	RequestID string
	Game      []byte
	Clock     []byte
	Meta      []byte
	// Event is the creation event (version 1).
	Event []byte
	// Deadline is the first clock deadline; zero for none.
	Deadline time.Time
}

// NewIDFor returns a fresh match id in the partition of the request id; the
// caller embeds it in the creation event before calling Create.
func NewIDFor(requestID string) string { return NewID(PartitionForRequest(requestID)) }

// Create stores a new match with the given id (from NewIDFor) unless the
// request id was used before; it returns the id of the match that request
// created and whether it was created now.
func (s *Store) Create(ctx context.Context, id string, m NewMatch) (string, bool, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return "", false, err
	}
	if p != PartitionForRequest(m.RequestID) {
		return "", false, fmt.Errorf("match id %s is not in the partition of request %q", id, m.RequestID)
	}
	ks, args := (&createCall{
		request: s.keys.request(p, m.RequestID), match: s.keys.match(p, id),
		events: s.keys.events(p, id), deadlines: s.keys.deadlines(p),
		id: id, game: m.Game, clock: m.Clock, meta: m.Meta, event: m.Event,
		deadline: unixMilli(m.Deadline), requestTTL: s.cfg.RequestTTL.Milliseconds(),
		logLen: s.cfg.EventLogLen, stamp: NewStamp(),
	}).keysArgs()
	res, err := createScript.Run(ctx, s.rdb, ks, args...).Slice()
	if err != nil {
		return "", false, fmt.Errorf("create match: %w", err)
	}
	if len(res) != 2 {
		return "", false, fmt.Errorf("create match: unexpected reply %v", res)
	}
	got, _ := res[1].(string)
	return got, res[0] == int64(1), nil
}

// Load reads the current state of a match.
func (s *Store) Load(ctx context.Context, id string) (State, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return State{}, err
	}
	vals, err := s.rdb.HMGet(ctx, s.keys.match(p, id), "v", "g", "c", "meta").Result()
	if err != nil {
		return State{}, fmt.Errorf("load match %s: %w", id, err)
	}
	st, ok, err := stateFrom(vals[0], vals[1], vals[2])
	if err != nil {
		return State{}, fmt.Errorf("load match %s: %w", id, err)
	}
	if !ok {
		return State{}, ErrNotFound
	}
	if m, ok := vals[3].(string); ok {
		st.Meta = []byte(m)
	}
	return st, nil
}

// LoadWithReply reads the current state and the stored answer to a move key
// (nil when there is none) in one round trip.
func (s *Store) LoadWithReply(ctx context.Context, id, moveKey string) (State, []byte, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return State{}, nil, err
	}
	pipe := s.rdb.Pipeline()
	st := pipe.HMGet(ctx, s.keys.match(p, id), "v", "g", "c", "meta")
	rep := pipe.HGet(ctx, s.keys.moves(p, id), moveKey)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return State{}, nil, fmt.Errorf("load match %s: %w", id, err)
	}
	vals := st.Val()
	state, ok, err := stateFrom(vals[0], vals[1], vals[2])
	if err != nil {
		return State{}, nil, fmt.Errorf("load match %s: %w", id, err)
	}
	if !ok {
		return State{}, nil, ErrNotFound
	}
	if m, ok := vals[3].(string); ok {
		state.Meta = []byte(m)
	}
	var reply []byte
	if r, err := rep.Result(); err == nil {
		reply = []byte(r)
	}
	return state, reply, nil
}

func stateFrom(v, g, c any) (State, bool, error) {
	vs, ok := v.(string)
	if !ok {
		return State{}, false, nil
	}
	num, stamp, _ := strings.Cut(vs, ":")
	ver, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return State{}, false, fmt.Errorf("bad version %q", vs)
	}
	gs, _ := g.(string)
	cs, _ := c.(string)
	return State{Version: ver, Stamp: stamp, Game: []byte(gs), Clock: []byte(cs)}, true, nil
}

// NewStamp returns a fresh random state stamp.
func NewStamp() string { return strconv.FormatUint(rand.Uint64()&0xffffffffff, 36) }

// Change is one state change of a match, computed from the state with
// version Expected and stamp ExpectedStamp.
type Change struct {
	Expected      uint64
	ExpectedStamp string
	// Stamp is the new state's stamp (NewStamp); Result.Stamp echoes it.
	Stamp string
	Game  []byte
	Clock []byte
	// Events are the events of this change, versions Expected+1 onwards
	// (none for a change of the record alone, which keeps the version and
	// gets a new stamp).
	Events [][]byte
	// Private are notices published after the events (EncodePrivate), for
	// some watchers only; they are not stored.
	Private [][]byte
	// MoveKey identifies a client move; when set, Reply is stored under it and
	// a later change with the same key answers that reply instead.
	MoveKey string
	Reply   []byte
	// Deadline is the next clock deadline; zero removes the match from the
	// deadline set.
	Deadline time.Time
	// Finished marks the final change: the match keys get the retention TTL
	// and FinishedData (a MatchFinished) or AbandonedData (a
	// MatchAbandoned), if not empty, goes to the outbox. At most one of the
	// two is set.
	Finished      bool
	FinishedData  []byte
	AbandonedData []byte
}

// Outcome says how a Commit ended.
type Outcome int

// Commit outcomes.
const (
	// Applied: the change is stored; Result.Version is the new version.
	Applied Outcome = iota
	// Conflict: the match is at another version; Result.State holds it
	// (without Meta).
	Conflict
	// Duplicate: the move key was answered before; Result.Reply is the answer.
	Duplicate
)

// Result is the outcome of a Commit.
type Result struct {
	Outcome Outcome
	Version uint64
	// Stamp is the new state's stamp when applied.
	Stamp string
	State State
	Reply []byte
}

// Commit applies a change atomically if the match is still at c.Expected.
// With Config.WaitReplicas > 0 an applied change is confirmed by replicas
// before Commit returns; if that confirmation fails, it returns
// ErrNotReplicated although the change was applied on the master.
func (s *Store) Commit(ctx context.Context, id string, c Change) (Result, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return Result{}, err
	}
	finished := "0"
	if c.Finished {
		finished = "1"
	}
	if c.Stamp == "" {
		c.Stamp = NewStamp()
	}
	// One slice holds the whole EVALSHA command: the keys and arguments
	// are views of it (the commit is the hot path of every move).
	fin := eventstream.MatchFinished()
	outType, outData := fin.Type(), c.FinishedData
	if len(c.AbandonedData) > 0 {
		if len(c.FinishedData) > 0 {
			return Result{}, fmt.Errorf("commit match %s: a change is either finished or abandoned", id)
		}
		outType, outData = eventstream.MatchAbandoned().Type(), c.AbandonedData
	}
	cmd := commitScript.Args(commitNKeys, commitNKeys+commitNArgs+len(c.Events))
	cmd = (&commitCall{
		match: s.keys.match(p, id), events: s.keys.events(p, id), moves: s.keys.moves(p, id),
		deadlines: s.keys.deadlines(p), outbox: s.keys.outbox(p), channel: s.keys.channel(p, id),
		id: id, expected: strconv.FormatUint(c.Expected, 10) + ":" + c.ExpectedStamp,
		game: c.Game, clock: c.Clock, moveKey: c.MoveKey, reply: c.Reply,
		deadline: unixMilli(c.Deadline), finished: finished, retention: s.retentionMS,
		outboxData: outData, outboxType: outType, typeField: fin.TypeField(), dataField: fin.DataField(),
		logLen: s.cfg.EventLogLen, stamp: c.Stamp, private: EncodePrivate(c.Private), evs: c.Events,
	}).appendTo(cmd)
	var res []any
	if s.cfg.WaitReplicas > 0 {
		res, err = s.commitAndWait(ctx, cmd)
	} else {
		res, err = s.commit(ctx, cmd)
	}
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return Result{}, fmt.Errorf("commit match %s: %w", id, err)
	}
	r, perr := parseCommit(res)
	if perr != nil {
		return Result{}, fmt.Errorf("commit match %s: %w", id, perr)
	}
	if r.Outcome == Applied {
		r.Stamp = c.Stamp
	}
	return r, err
}

func parseCommit(res []any) (Result, error) {
	if len(res) == 0 {
		return Result{}, errors.New("empty reply")
	}
	code, _ := res[0].(int64)
	switch code {
	case 0:
		v, _ := res[1].(int64)
		return Result{Outcome: Applied, Version: uint64(v)}, nil // Stamp filled by Commit
	case 1:
		st, ok, err := stateFrom(res[1], res[2], res[3])
		if err != nil || !ok {
			return Result{}, fmt.Errorf("bad conflict reply: %v", err)
		}
		return Result{Outcome: Conflict, Version: st.Version, State: st}, nil
	case 2:
		r, _ := res[1].(string)
		return Result{Outcome: Duplicate, Reply: []byte(r)}, nil
	case 3:
		return Result{}, ErrNotFound
	}
	return Result{}, fmt.Errorf("unexpected reply code %d", code)
}

// commit runs the commit script (evalsha: the whole command) through
// s.commits, with the script's NOSCRIPT fallback.
func (s *Store) commit(ctx context.Context, evalsha []any) ([]any, error) {
	cmd := redis.NewCmd(ctx, evalsha...)
	if err := commitScript.Do(ctx, s.commits, cmd); err != nil {
		// Possibly ctx's error while cmd is still in flight: not read here.
		return nil, err
	}
	return cmd.Slice()
}

// commitAndWait runs the commit script and WAIT on one connection of the
// master owning the match (WAIT only covers writes made on the same
// connection). An applied (or earlier applied) change that too few
// replicas confirmed returns ErrNotReplicated with the reply.
func (s *Store) commitAndWait(ctx context.Context, evalsha []any) ([]any, error) {
	var eval *redis.Cmd
	n, err := redisconn.WriteAndWait(ctx, s.rdb, evalsha[3+commitKMatch].(string), s.cfg.WaitReplicas, s.cfg.WaitTimeout,
		func(p redis.Pipeliner) {
			eval = redis.NewCmd(ctx, evalsha...)
			_ = p.Process(ctx, eval)
		}, commitScript)
	if eval == nil {
		return nil, err // no master to send it to
	}
	res, rerr := eval.Slice()
	if rerr != nil {
		return nil, rerr
	}
	if cerr := redisconn.Confirmed(n, s.cfg.WaitReplicas, s.cfg.WaitTimeout, err); cerr != nil {
		if code, _ := res[0].(int64); code == 0 || code == 2 {
			return res, cerr
		}
	}
	return res, nil
}

// Event is one stored event.
type Event struct {
	Version uint64
	Data    []byte
}

// Events returns up to max events with versions after the given one, in
// order. The caller detects trimming: the first event's version is not
// after+1 although the match is further on.
func (s *Store) Events(ctx context.Context, id string, after uint64, max int64) ([]Event, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return nil, err
	}
	msgs, err := s.rdb.XRangeN(ctx, s.keys.events(p, id), strconv.FormatUint(after+1, 10)+"-0", "+", max).Result()
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", id, err)
	}
	out := make([]Event, 0, len(msgs))
	for _, m := range msgs {
		v, err := versionOf(m.ID)
		if err != nil {
			return nil, fmt.Errorf("read events of %s: %w", id, err)
		}
		d, _ := m.Values["e"].(string)
		out = append(out, Event{Version: v, Data: []byte(d)})
	}
	return out, nil
}

func versionOf(streamID string) (uint64, error) {
	ms, _, ok := strings.Cut(streamID, "-")
	if !ok {
		return 0, fmt.Errorf("bad stream id %q", streamID)
	}
	return strconv.ParseUint(ms, 10, 64)
}

// Channel returns the shard channel carrying a match's live events.
func (s *Store) Channel(id string) (string, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return "", err
	}
	return s.keys.channel(p, id), nil
}

// Subscribe opens a sharded pub/sub subscription on the node owning the given
// partition (one per partition and instance: all channels of a partition share
// its slot). go-redis reconnects and resubscribes it after errors.
func (s *Store) Subscribe(ctx context.Context, partition int) *redis.PubSub {
	// Subscribing to the partition's (never published) base channel pins the
	// connection to the partition's slot before any match channel is added.
	return s.rdb.SSubscribe(ctx, s.keys.tag(partition)+":base")
}

// privateMark starts a private notification. An event notification starts
// with the first event's 4-byte length, whose first byte is 0 for any event
// under 16 MB.
const privateMark = 'P'

// EncodePrivate encodes private notices as one live notification: the mark,
// then each notice prefixed by its 4-byte big-endian length. Nil for none.
func EncodePrivate(notices [][]byte) []byte {
	if len(notices) == 0 {
		return nil
	}
	n := 1
	for _, b := range notices {
		n += 4 + len(b)
	}
	out := make([]byte, 1, n)
	out[0] = privateMark
	for _, b := range notices {
		out = append(out, byte(len(b)>>24), byte(len(b)>>16), byte(len(b)>>8), byte(len(b)))
		out = append(out, b...)
	}
	return out
}

// DecodeNotification splits a live notification into its events, or, for a
// private one (EncodePrivate), its notices.
func DecodeNotification(payload []byte) (events [][]byte, private bool, err error) {
	if len(payload) > 0 && payload[0] == privateMark {
		evs, err := DecodeBatch(payload[1:])
		return evs, true, err
	}
	evs, err := DecodeBatch(payload)
	return evs, false, err
}

// DecodeBatch splits a live notification of events into its events.
func DecodeBatch(payload []byte) ([][]byte, error) {
	var out [][]byte
	for len(payload) > 0 {
		if len(payload) < 4 {
			return nil, errors.New("truncated event batch")
		}
		n := int(payload[0])<<24 | int(payload[1])<<16 | int(payload[2])<<8 | int(payload[3])
		payload = payload[4:]
		if n > len(payload) {
			return nil, errors.New("truncated event batch")
		}
		out = append(out, payload[:n:n])
		payload = payload[n:]
	}
	return out, nil
}

// scanChunk is the number of partitions Scan reads per round trip.
const scanChunk = 32

// Due is the work a partition has for the keeper holding its range.
type Due struct {
	Partition int
	// Matches whose clock deadline has passed.
	Matches []string
	// Outbox entries to relay.
	Outbox []redis.XMessage
	// Presence lists the matches whose presence has something due (a
	// lease ran out, a grace ended: presence.go).
	Presence []string
}

// Scan returns, for each of the given partitions (a keeper's leased
// ranges), the matches whose deadline is at or before now, the pending
// outbox entries and the matches whose presence has something due, at
// most limit of each. When some partitions cannot be
// read it returns the others and a *ScanError naming the ones that failed.
//
// The three reads of a partition are plain commands, not a script: they need
// no common snapshot (due clocks and outbox entries are handled apart), and
// a script costs far more per call than two reads — on the embedded store
// of `make run` 256 scripts five times a second kept a core busy while
// nobody played.
func (s *Store) Scan(ctx context.Context, partitions []int, now time.Time, limit int) ([]Due, error) {
	type reads struct {
		p        int
		due      *redis.StringSliceCmd
		out      *redis.XMessageSliceCmd
		presence *redis.StringSliceCmd
	}
	cmds := make([]reads, len(partitions))
	upTo := strconv.FormatInt(now.UnixMilli(), 10)
	keys := make([]string, len(partitions))
	for i, p := range partitions {
		keys[i] = s.keys.deadlines(p % Partitions)
	}
	// Each master's partitions are read on their own, all masters at
	// once: one master that does not answer (killed, not yet failed over)
	// then fails only its own partitions, and the keeper flags and relays
	// on the others (redisconn.ByMaster). Within a master, Redis runs a
	// pipeline read in one go before serving other clients: chunks keep
	// each hold short so moves are not delayed behind a scan. A master's
	// first chunk is sent at the start and holds its partitions of the
	// scan's first chunk, as the keeper's outage rule assumes (outage.go).
	var wg sync.WaitGroup
	for _, group := range redisconn.ByMaster(ctx, s.rdb, keys) {
		wg.Go(func() {
			for lo := 0; lo < len(group); lo += scanChunk {
				pipe := s.rdb.Pipeline()
				for _, i := range group[lo:min(lo+scanChunk, len(group))] {
					p := partitions[i] % Partitions
					cmds[i] = reads{p: p,
						due:      pipe.ZRangeByScore(ctx, keys[i], &redis.ZRangeBy{Min: "-inf", Max: upTo, Count: int64(limit)}),
						out:      pipe.XRangeN(ctx, s.keys.outbox(p), "-", "+", int64(limit)),
						presence: pipe.ZRangeByScore(ctx, s.keys.presenceDue(p), &redis.ZRangeBy{Min: "-inf", Max: upTo, Count: int64(limit)}),
					}
				}
				_, _ = pipe.Exec(ctx) // errors are read per partition below
			}
		})
	}
	wg.Wait()
	// Partitions on reachable nodes are processed even when others fail
	// (a node down, a failover in progress); the error is still reported.
	var out []Due
	var failed map[int]error
	fail := func(p int, what string, err error) {
		if failed == nil {
			failed = map[int]error{}
		}
		failed[p] = fmt.Errorf("scan partition %d %s: %w", p, what, err)
	}
	for _, c := range cmds {
		matches, err := c.due.Result()
		if err != nil {
			fail(c.p, "deadlines", err)
			continue
		}
		msgs, err := c.out.Result()
		if err != nil {
			fail(c.p, "outbox", err)
			continue
		}
		presence, err := c.presence.Result()
		if err != nil {
			fail(c.p, "presence", err)
			continue
		}
		if len(matches) > 0 || len(msgs) > 0 || len(presence) > 0 {
			out = append(out, Due{Partition: c.p, Matches: matches, Outbox: msgs, Presence: presence})
		}
	}
	if failed != nil {
		return out, &ScanError{Failed: failed}
	}
	return out, nil
}

// ScanError is Scan's error when some partitions could not be read: the
// keeper tells from it which partitions Redis did not serve (an outage of
// theirs, docs/match.md "Outages") and which it read.
type ScanError struct {
	// Failed maps each partition not read to why.
	Failed map[int]error
}

func (e *ScanError) Error() string {
	ps := slices.Sorted(maps.Keys(e.Failed))
	return fmt.Sprintf("%d partitions not read, first %v", len(ps), e.Failed[ps[0]])
}

// Unwrap returns the partitions' errors, for errors.Is and errors.As.
func (e *ScanError) Unwrap() []error { return slices.Collect(maps.Values(e.Failed)) }

// Relay copies a partition's outbox entries to the global stream of their
// type (MatchAbandoned entries to Config.AbandonedStream, every other one to
// Config.FinishedStream) and then deletes them from the outbox. A failure
// between the two steps leaves the entries in the outbox, so they are
// copied again later; the copy is a script that marks each outbox entry as
// relayed (a key in its stream's slot, kept for RelayMarkTTL) and skips an
// entry already marked, so such a retry adds nothing to the stream.
// Consumers still dedupe by match id: delivery stays at least once in
// principle (a failover may lose a mark, or a retry may come after the mark
// expired), but no longer in the common case of a scan cut at its deadline
// between copy and delete.
//
// With Config.WaitReplicas > 0 Relay copies only entries that many
// replicas hold (see [Store.replicated]). The entry of a commit whose WAIT
// failed (ErrNotReplicated) is on the master alone until it replicates: a
// failover now takes it back, the promoted replica has the match still
// running, and a record relayed before would have been rated for a game
// that, in the surviving data, never ended. When the replicas do not
// confirm within WaitTimeout (less if ctx ends sooner) Relay copies nothing
// and returns an error wrapping ErrNotReplicated; the entries stay in the
// outbox for the next call. The same holds for the copy: the entries are
// deleted from the outbox only once the global stream's replicas confirmed
// it (else a failover of that stream's master would lose them), and an
// unconfirmed copy is retried by the next call (the marks keep it from
// adding them twice).
func (s *Store) Relay(ctx context.Context, partition int, entries []redis.XMessage) error {
	if len(entries) == 0 {
		return nil
	}
	if s.cfg.WaitReplicas > 0 {
		var err error
		if entries, err = s.replicated(ctx, partition, entries); err != nil || len(entries) == 0 {
			return err
		}
	}
	// Both streams share the entry layout (package eventstream), so the
	// type field tells them apart; the two streams may live in different
	// slots, so each gets a script run of its own.
	fin, abandoned := eventstream.MatchFinished(), eventstream.MatchAbandoned()
	var finished, aborted []redis.XMessage
	for _, e := range entries {
		if e.Values[fin.TypeField()] == abandoned.Type() {
			aborted = append(aborted, e)
		} else {
			finished = append(finished, e)
		}
	}
	if err := s.relay(ctx, partition, s.cfg.FinishedStream, finished); err != nil {
		return err
	}
	if err := s.relay(ctx, partition, s.cfg.AbandonedStream, aborted); err != nil {
		return err
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	if err := s.rdb.XDel(ctx, s.keys.outbox(partition), ids...).Err(); err != nil {
		return fmt.Errorf("relay partition %d: delete outbox entries: %w", partition, err)
	}
	return nil
}

// replicated returns those of entries, read from a partition's outbox,
// that Config.WaitReplicas replicas hold, or an error wrapping
// ErrNotReplicated when fewer confirmed. One pipeline on one connection of
// the partition's master reads the entries again, writes the partition's
// barrier key and WAITs: replication is one ordered stream per master, so
// replicas that confirm the barrier hold every earlier write to that
// master, the entries just read among them. The barrier is needed because
// WAIT covers only the writes of its own connection, and the entries were
// written on others. The entries are read again on that connection, rather
// than taken from the caller's read, so that a failover in between cannot
// relay entries the old master had and the new one lacks: the new master's
// entries are what is read, confirmed and relayed. One barrier covers all
// the entries of a scan of the partition.
func (s *Store) replicated(ctx context.Context, p int, entries []redis.XMessage) ([]redis.XMessage, error) {
	outbox := s.keys.outbox(p)
	var read *redis.XMessageSliceCmd
	err := s.confirm(ctx, outbox, s.keys.barrier(p), func(pipe redis.Pipeliner) {
		read = pipe.XRangeN(ctx, outbox, entries[0].ID, entries[len(entries)-1].ID, int64(len(entries)))
	})
	if err == nil {
		err = read.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("relay partition %d: confirm outbox entries: %w", p, err)
	}
	return read.Val(), nil
}

// confirm sends the commands queue adds, a SET of barrier (a key in key's
// slot) and WAIT as one pipeline on the master serving key
// ([redisconn.WriteAndWait], which also resends EVALSHAs of scripts that
// met NOSCRIPT). It returns an error wrapping ErrNotReplicated when fewer
// than Config.WaitReplicas replicas confirmed within barrierTimeout, or the
// error of the barrier or the WAIT; the queued commands hold their own.
// The barrier is always written because WAIT covers only the writes of its
// own connection: with it, the confirmation covers everything the master
// had before it, whatever the queued commands wrote (maybe nothing).
func (s *Store) confirm(ctx context.Context, key, barrier string, queue func(redis.Pipeliner), scripts ...*redisconn.Script) error {
	var set *redis.StatusCmd
	timeout := s.barrierTimeout(ctx)
	n, err := redisconn.WriteAndWait(ctx, s.rdb, key, s.cfg.WaitReplicas, timeout, func(pipe redis.Pipeliner) {
		queue(pipe)
		set = pipe.Set(ctx, barrier, "1", barrierTTL)
	}, scripts...)
	if set == nil {
		return err // no master to send it to
	}
	if err := cmp.Or(set.Err(), err); err != nil {
		return err
	}
	return redisconn.Confirmed(n, s.cfg.WaitReplicas, timeout, nil)
}

// barrierTimeout is the WAIT timeout of a relay's barrier: WaitTimeout, or
// what is left of ctx when that is shorter. A keeper's scan has a deadline
// of its own; while a master's replicas lag, each scan would otherwise
// overrun it by a WAIT, and the keeper would count itself too slow.
func (s *Store) barrierTimeout(ctx context.Context) time.Duration {
	t := s.cfg.WaitTimeout
	if d, ok := ctx.Deadline(); ok {
		t = min(t, time.Until(d))
	}
	return max(t, time.Millisecond) // WAIT with 0 would block for ever
}

// barrierTTL keeps a partition's barrier key, which only its writes
// matter for, from staying once its partition is quiet.
const barrierTTL = time.Minute

// relay copies entries to one global stream (name before the key prefix),
// each at most once.
func (s *Store) relay(ctx context.Context, partition int, name string, entries []redis.XMessage) error {
	if len(entries) == 0 {
		return nil
	}
	fin := eventstream.MatchFinished() // the layout every relayed stream shares
	stream := s.keys.prefix + name
	keys := make([]string, 0, 1+len(entries))
	keys = append(keys, stream)
	args := make([]any, 0, relayNArgs+2*len(entries))
	args = append(args, fin.TypeField(), fin.DataField(), s.cfg.FinishedStreamLen, RelayMarkTTL.Milliseconds())
	for _, e := range entries {
		keys = append(keys, sameSlot(stream, fmt.Sprintf(":relayed:%d:%s", partition, e.ID)))
		args = append(args, e.Values[fin.TypeField()], e.Values[fin.DataField()])
	}
	if s.cfg.WaitReplicas == 0 {
		if err := relayScript.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
			return fmt.Errorf("relay partition %d to %s: %w", partition, name, err)
		}
		return nil
	}
	// The outbox entries are deleted after the copy: the copy must be on
	// the stream's replicas first, or a failover of the stream's master
	// would lose the records for good. The barrier write is what the WAIT
	// confirms when the script writes nothing (a retry whose entries are
	// all marked as copied): the earlier copy precedes it in the master's
	// replication stream.
	cmd := relayScript.Cmd(ctx, keys, args...)
	err := s.confirm(ctx, stream, sameSlot(stream, ":barrier"), func(pipe redis.Pipeliner) {
		_ = pipe.Process(ctx, cmd)
	}, relayScript)
	if err == nil {
		err = cmd.Err()
	}
	if err != nil {
		return fmt.Errorf("relay partition %d to %s: %w", partition, name, err)
	}
	return nil
}

// RelayMarkTTL is how long the relay remembers an outbox entry it copied.
// Copies repeat within seconds (a scan cut between copy and delete, a
// crash, a lost reply); an hour covers those with room to spare while the
// marks of a busy deployment stay small (about 100 bytes per finished
// match, so 1,000 matches a minute keep ~6 MB of marks).
const RelayMarkTTL = time.Hour

// sameSlot returns key+suffix if key has a Redis Cluster hash tag, else
// "{key}"+suffix: either way a key in key's slot, so that one script may
// touch both.
func sameSlot(key, suffix string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key + suffix
		}
	}
	return "{" + key + "}" + suffix
}

func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// RemoveDeadline drops a match from its partition's deadline set (for
// entries of matches that no longer exist).
func (s *Store) RemoveDeadline(ctx context.Context, id string) error {
	p, err := PartitionOf(id)
	if err != nil {
		return err
	}
	return s.rdb.ZRem(ctx, s.keys.deadlines(p), id).Err()
}
