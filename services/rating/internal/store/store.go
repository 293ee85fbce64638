// Package store keeps the ratings of every pool (rule set) in Redis and
// applies rated matches exactly once.
//
// Applying a match is one atomic Lua step that writes the four players'
// standings, their history entries, the leaderboard and the "match applied"
// marker. The new ratings are computed in Go from standings read before;
// the script first checks that the match is not yet applied and that every
// player's stored standing (which carries a version) is still exactly the
// one the computation started from (optimistic concurrency). A
// redelivered match therefore changes nothing, and consumers racing on the
// same players serialize: the loser re-reads and recomputes. The final
// ratings always equal a sequential replay of the matches in the order of
// their per-pool sequence numbers.
//
// All keys of a pool share the hash tag {rt:<pool>}, so the step works on
// Redis Cluster; the cost is that one pool lives on one shard.
package store

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

//go:embed apply.lua
var applySource string

// ErrContention reports a match that lost the optimistic race on every
// attempt; it stays unapplied and may be retried.
var ErrContention = errors.New("store: too much contention")

// ErrInvalidCursor reports a page token that the store did not issue.
var ErrInvalidCursor = errors.New("store: invalid page cursor")

// DefaultMaxAttempts is the number of optimistic attempts per Apply call.
const DefaultMaxAttempts = 20

// tieBits is the leaderboard score's multiplier of the display rating; the
// lower bits order equal display ratings (see apply.lua).
const tieBits = 1 << 39

// Store is the Redis store of ratings. It is safe for concurrent use.
type Store struct {
	rdb         redis.UniversalClient
	policy      ladder.Policy
	prefix      string
	maxAttempts int
	apply       *redis.Script
}

// New returns a store on rdb. prefix is put before every key (tests use one
// per test; production uses ""); it must not contain '{' or '}'.
func New(rdb redis.UniversalClient, policy ladder.Policy, prefix string) *Store {
	return &Store{
		rdb:         rdb,
		policy:      policy,
		prefix:      prefix,
		maxAttempts: DefaultMaxAttempts,
		apply:       redis.NewScript(applySource),
	}
}

// Player is a player's standing in a pool.
type Player struct {
	ID       string
	Name     string
	Bot      bool
	Standing ladder.Standing
	// Known is false for a player who has never played a rated game in the
	// pool; Standing is then the default.
	Known bool
}

// HistoryEntry is one rated match of a player.
type HistoryEntry struct {
	MatchID    string
	FinishedAt time.Time
	// Place is the player's place in the match, 1 to 4.
	Place int
	// Game is the number of the player's rated game in the pool, from 1.
	Game          int64
	DisplayBefore int
	DisplayAfter  int
	// Mu and Sigma are the player's skill after the match.
	Mu, Sigma float64
}

// Status is what happened to a match given to Apply.
type Status int

const (
	// Pending: not applied by this call (an error stopped it); retry later.
	Pending Status = iota
	// Applied: applied by this call.
	Applied
	// Duplicate: applied before; nothing changed.
	Duplicate
)

// Outcome is the result of applying one match.
type Outcome struct {
	Status Status
	// Seq is the match's sequence number in its pool when Applied.
	Seq int64
	// Changes are the rating changes, in place order, when Applied.
	Changes [ladder.Seats]ladder.Change
}

// poolCall collects the arguments of one apply script run.
type poolCall struct {
	pool string
	idx  []int // indexes of the matches, in order
	keys []string
	args []any
}

// maxScriptMatches bounds the matches of one script run. Redis runs a
// script to the end before it serves anyone else, and a run costs roughly
// 30 µs of Redis time per match, so 256 matches block a shard for under
// 10 ms. Larger batches are split into several runs, sent in one pipeline.
const maxScriptMatches = 256

// playerRef identifies a player in a pool.
type playerRef struct{ pool, id string }

// Apply applies matches in order, each exactly once. It returns one outcome
// per match; when it returns an error, the matches still Pending were not
// applied (others may have been).
func (s *Store) Apply(ctx context.Context, results []ladder.Result) ([]Outcome, error) {
	out := make([]Outcome, len(results))
	pending := make([]int, len(results))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == s.maxAttempts {
			return out, fmt.Errorf("apply %d matches after %d attempts: %w", len(pending), attempt, ErrContention)
		}
		var err error
		pending, err = s.applyOnce(ctx, results, pending, out)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// stored is a player's standing as read from Redis, or as an earlier match
// of the batch left it.
type stored struct {
	player Player
	raw    string // the exact stored value; "" when absent
	key    string // the player's key
}

// applyOnce reads the standings of the pending matches, computes them in
// order and runs the apply script once per pool and maxScriptMatches
// matches, all runs in one pipeline. It returns the matches that lost a
// race.
func (s *Store) applyOnce(ctx context.Context, results []ladder.Result, pending []int, out []Outcome) ([]int, error) {
	current, applied, err := s.readBatch(ctx, results, pending)
	if err != nil {
		return pending, err
	}

	// Compute in order; later matches see the earlier ones' results.
	calls := make(map[string]*poolCall) // the last call of each pool
	var runs []*poolCall                // every call, in order
	var prior [ladder.Seats]stored
	for _, i := range pending {
		res := &results[i]
		m := playerRef{res.Pool, res.MatchID}
		if applied[m] {
			// Applied before, or earlier in this batch (a redelivery
			// next to the original): the first copy does the work.
			out[i] = Outcome{Status: Duplicate}
			continue
		}
		applied[m] = true
		var before [ladder.Seats]ladder.Standing
		for p, pl := range res.Places {
			prior[p] = current[playerRef{res.Pool, pl.PlayerID}]
			before[p] = prior[p].player.Standing
		}
		changes, err := s.policy.Rate(*res, before, res.FinishedAt)
		if err != nil {
			return pending, err
		}
		c := calls[res.Pool]
		if c == nil || len(c.idx) == maxScriptMatches {
			k := newKeys(s.prefix, res.Pool)
			// Sized for every pending match, the usual single-pool case.
			size := min(len(pending), maxScriptMatches)
			c = &poolCall{
				pool: res.Pool,
				idx:  make([]int, 0, size),
				keys: append(make([]string, 0, 3+8*size), k.applied(), k.seq(), k.leaderboard()),
				args: append(make([]any, 0, 2+17*size), 0, len(k.player(""))),
			}
			calls[res.Pool] = c
			runs = append(runs, c)
		}
		after := s.appendMatch(c, res, prior, changes)
		c.idx = append(c.idx, i)
		out[i] = Outcome{Changes: changes}
		for p, ch := range changes {
			current[playerRef{res.Pool, ch.PlayerID}] = after[p]
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}

	// Every run goes out in one pipeline. A run may depend on an earlier
	// one (a player of both); should the earlier one fail or lose a race,
	// the later one finds a standing it did not expect and reports a
	// conflict, so the order of the runs needs no further care.
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(runs))
	for j, c := range runs {
		c.args[0] = len(c.idx)
		cmds[j] = s.apply.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	var retry []int
	var errs []error
	for j, c := range runs {
		codes, err := cmds[j].Int64Slice()
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			// The server does not know the script yet (a new or
			// failed-over node): send it whole, which caches it there.
			codes, err = s.apply.Eval(ctx, s.rdb, c.keys, c.args...).Int64Slice()
		}
		if err == nil && len(codes) != len(c.idx) {
			err = fmt.Errorf("script returned %d codes for %d matches", len(codes), len(c.idx))
		}
		if err != nil {
			// These matches stay Pending; the caller retries them later.
			for _, i := range c.idx {
				out[i] = Outcome{}
			}
			errs = append(errs, fmt.Errorf("apply matches of pool %s: %w", c.pool, err))
			continue
		}
		for n, code := range codes {
			i := c.idx[n]
			switch {
			case code > 0:
				out[i].Status, out[i].Seq = Applied, code
			case code == 0:
				out[i] = Outcome{Status: Duplicate}
			default:
				out[i] = Outcome{}
				retry = append(retry, i)
			}
		}
	}
	if len(errs) > 0 {
		for _, i := range retry {
			out[i] = Outcome{}
		}
		return nil, errors.Join(errs...)
	}
	return retry, nil
}

// readBatch reads, in one round trip, the stored standing of every player
// and the applied marker of every match of the pending results: one MGET and
// one HMGET per pool (all keys of a pool share a slot).
func (s *Store) readBatch(ctx context.Context, results []ladder.Result, pending []int) (map[playerRef]stored, map[playerRef]bool, error) {
	type poolRead struct {
		players, matches []string
		seen             map[string]bool
		keys             []string // of players
		standings        *redis.SliceCmd
		markers          *redis.SliceCmd
	}
	reads := make(map[string]*poolRead)
	var pools []string
	for _, i := range pending {
		res := &results[i]
		r := reads[res.Pool]
		if r == nil {
			r = &poolRead{seen: make(map[string]bool, 4*len(pending))}
			reads[res.Pool] = r
			pools = append(pools, res.Pool)
		}
		r.matches = append(r.matches, res.MatchID)
		for _, pl := range res.Places {
			if !r.seen[pl.PlayerID] {
				r.seen[pl.PlayerID] = true
				r.players = append(r.players, pl.PlayerID)
			}
		}
	}
	pipe := s.rdb.Pipeline()
	for _, pool := range pools {
		r := reads[pool]
		k := newKeys(s.prefix, pool)
		r.keys = make([]string, len(r.players))
		for i, id := range r.players {
			r.keys[i] = k.player(id)
		}
		r.standings = pipe.MGet(ctx, r.keys...)
		r.markers = pipe.HMGet(ctx, k.applied(), r.matches...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, fmt.Errorf("read standings: %w", err)
	}
	current := make(map[playerRef]stored, 4*len(pending))
	applied := make(map[playerRef]bool, len(pending))
	for _, pool := range pools {
		r := reads[pool]
		for i, v := range r.standings.Val() {
			raw, _ := v.(string)
			p, err := s.decodePlayer(r.players[i], raw)
			if err != nil {
				return nil, nil, err
			}
			current[playerRef{pool, r.players[i]}] = stored{player: p, raw: raw, key: r.keys[i]}
		}
		for i, v := range r.markers.Val() {
			if v != nil {
				applied[playerRef{pool, r.matches[i]}] = true
			}
		}
	}
	return current, applied, nil
}

// appendMatch adds one match's keys and arguments to c (see apply.lua) and
// returns the players' new stored standings.
func (s *Store) appendMatch(c *poolCall, res *ladder.Result, prior [ladder.Seats]stored, changes [ladder.Seats]ladder.Change) [ladder.Seats]stored {
	var after [ladder.Seats]stored
	k := newKeys(s.prefix, res.Pool)
	for p := range changes {
		c.keys = append(c.keys, prior[p].key)
	}
	for _, ch := range changes {
		c.keys = append(c.keys, k.history(ch.PlayerID))
	}
	// The eight encoded values share one allocation.
	size := 0
	for _, ch := range changes {
		size += 160 + len(ch.Name) + len(res.MatchID)
	}
	buf := make([]byte, 0, size)
	var ends [2 * ladder.Seats]int
	for p, ch := range changes {
		after[p].player = Player{ID: ch.PlayerID, Name: ch.Name, Bot: ch.Bot, Standing: ch.After, Known: true}
		after[p].key = prior[p].key
		buf = appendPlayer(buf, after[p].player)
		ends[2*p] = len(buf)
		buf = appendHistory(buf, HistoryEntry{
			MatchID:       res.MatchID,
			FinishedAt:    res.FinishedAt,
			Place:         ch.Place,
			Game:          ch.After.Games,
			DisplayBefore: ch.DisplayBefore(),
			DisplayAfter:  ch.DisplayAfter(),
			Mu:            ch.After.Rating.Mu,
			Sigma:         ch.After.Rating.Sigma,
		})
		ends[2*p+1] = len(buf)
	}
	encoded := string(buf)
	c.args = append(c.args, res.MatchID)
	start := 0
	for p, ch := range changes {
		after[p].raw = encoded[start:ends[2*p]]
		entry := encoded[ends[2*p]:ends[2*p+1]]
		start = ends[2*p+1]
		action := ""
		switch {
		case s.Listed(ch.Bot, ch.After):
			action = strconv.Itoa(ch.DisplayAfter())
		case prior[p].player.Known && s.Listed(prior[p].player.Bot, prior[p].player.Standing):
			action = "-"
		}
		c.args = append(c.args, prior[p].raw, after[p].raw, action, entry)
	}
	return after
}

// Listed reports whether a player appears on the leaderboard: humans with a
// non-provisional rating.
func (s *Store) Listed(bot bool, st ladder.Standing) bool {
	return !bot && !s.policy.Provisional(st)
}
