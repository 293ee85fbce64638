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
// The "applied" markers are kept for a bounded window of event time: a
// match is accepted only if it finished at most the marker retention before
// the newest match applied in its pool (the pool's watermark), and the
// markers of older days are deleted. A match older than that window is
// never applied (Expired): whether it was applied before can no longer be
// told. History records are deleted the same way after the history
// retention, unless that is zero.
//
// All keys of a pool share the hash tag {rt:<pool>}, so the step works on
// Redis Cluster; the cost is that one pool lives on one shard.
package store

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

//go:embed apply.lua
var applySource string

//go:embed history.lua
var historySource string

//go:embed backfill.lua
var backfillSource string

// ErrContention reports a match that lost the optimistic race on every
// attempt; it stays unapplied and may be retried.
var ErrContention = errors.New("store: too much contention")

// ErrInvalidCursor reports a page token that the store did not issue.
var ErrInvalidCursor = errors.New("store: invalid page cursor")

// DefaultMaxAttempts is the number of optimistic attempts per Apply call.
const DefaultMaxAttempts = 20

// DefaultMarkerRetention is the default window of event time during which
// a redelivered match is recognised as applied.
const DefaultMarkerRetention = 7 * 24 * time.Hour

// DefaultHistoryRetention is the default time history records are kept:
// a match's record takes about 600 bytes of Redis memory, for every match
// of the pool.
const DefaultHistoryRetention = 90 * 24 * time.Hour

// Retention says how long the store keeps what grows with every match, in
// event time: before the newest match applied in the pool.
type Retention struct {
	// Markers is the exactly-once window (positive): a match that finished
	// longer than this before the newest applied one is never applied.
	Markers time.Duration
	// History is how long history records are kept; 0 keeps them for
	// good. Otherwise it must be at least Markers, so that no match that
	// may still be applied has lost its day's records.
	History time.Duration
}

// DefaultRetention returns the default retention.
func DefaultRetention() Retention {
	return Retention{Markers: DefaultMarkerRetention, History: DefaultHistoryRetention}
}

// Validate reports what is wrong with r.
func (r Retention) Validate() error {
	var errs []error
	if r.Markers < time.Hour {
		errs = append(errs, fmt.Errorf("marker retention %v must be at least an hour", r.Markers))
	}
	if r.History != 0 && r.History < r.Markers {
		errs = append(errs, fmt.Errorf("history retention %v must be 0 (keep for good) or at least the marker retention %v", r.History, r.Markers))
	}
	return errors.Join(errs...)
}

// day is the span of event time one applied-marker bucket covers.
const day = 24 * time.Hour

// tieBits is the leaderboard score's multiplier of the display rating; the
// lower bits order equal display ratings (see apply.lua).
const tieBits = 1 << 39

// Config is a store's settings.
type Config struct {
	// Prefix is put before every key (tests use one per test; production
	// uses ""); it must not contain '{' or '}'.
	Prefix    string
	Retention Retention
	// WaitReplicas, when > 0, makes every apply step wait (Redis WAIT) until
	// that many replicas of the pool's master confirm its writes; only then
	// do its matches count as applied (and get acknowledged).
	WaitReplicas int
	// WaitTimeout bounds the WAIT.
	WaitTimeout time.Duration
}

// DefaultConfig returns the default settings: no prefix, the default
// retention, no WAIT.
func DefaultConfig() Config {
	return Config{Retention: DefaultRetention(), WaitTimeout: 500 * time.Millisecond}
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	var errs []error
	if strings.ContainsAny(c.Prefix, "{}") {
		errs = append(errs, fmt.Errorf("key prefix %q must not contain braces", c.Prefix))
	}
	if c.WaitReplicas < 0 {
		errs = append(errs, fmt.Errorf("wait replicas %d must not be negative", c.WaitReplicas))
	}
	if c.WaitReplicas > 0 && c.WaitTimeout <= 0 {
		errs = append(errs, fmt.Errorf("wait timeout %v must be positive when waiting for replicas", c.WaitTimeout))
	}
	return errors.Join(c.Retention.Validate(), errors.Join(errs...))
}

// ErrNotReplicated reports matches whose writes the configured number of
// replicas did not confirm in time. They may or may not be applied; they
// count as Pending, and applying them again is safe (they then turn out
// duplicates, confirmed by a later WAIT).
var ErrNotReplicated = redisconn.ErrNotReplicated

// Store is the Redis store of ratings. It is safe for concurrent use.
type Store struct {
	rdb         redis.UniversalClient
	policy      ladder.Policy
	prefix      string
	maxAttempts int
	retention   Retention
	wait        int
	waitTimeout time.Duration
	apply       *redisconn.Script
	history     *redisconn.Script
	backfill    *redisconn.Script
	link        *redisconn.Script
}

// New returns a store on rdb; cfg must be valid (see [Config.Validate]).
func New(rdb redis.UniversalClient, policy ladder.Policy, cfg Config) *Store {
	return &Store{
		rdb:         rdb,
		policy:      policy,
		prefix:      cfg.Prefix,
		maxAttempts: DefaultMaxAttempts,
		retention:   cfg.Retention,
		wait:        cfg.WaitReplicas,
		waitTimeout: cfg.WaitTimeout,
		apply:       applyLayout.Script(applySource),
		history:     historyLayout.Script(historySource),
		backfill:    backfillLayout.Script(backfillSource),
		link:        linkLayout.Script(linkSource),
	}
}

// MarkerRetention returns the store's marker retention.
func (s *Store) MarkerRetention() time.Duration { return s.retention.Markers }

// Player is a player's standing in a pool.
type Player struct {
	ID       string
	Name     string
	Bot      bool
	Standing ladder.Standing
	// Known is false for a player who has never played a rated game in the
	// pool; Standing is then the default.
	Known bool
	// last is the recordRef of the player's newest history record.
	last string
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
	// Expired: finished more than the marker retention before the newest
	// match applied in the pool; not applied, and never will be.
	Expired
	// Unratable: a guest of the match was linked to an account that plays
	// in the same match (Link), so one player holds two seats; not
	// applied, and never will be.
	Unratable
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
	pool    string
	idx     []int // indexes of the matches, in order
	keys    []string
	args    []any
	buckets []int64 // days of the marker buckets, in key order
	newest  int64   // the newest finish time of the matches (unix ms)
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
	// A guest linked to an account (Link) is rated as the account: the
	// results are then rewritten, in a copy made once.
	cloned := false
	own := func() []ladder.Result {
		if !cloned {
			results, cloned = slices.Clone(results), true
		}
		return results
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == s.maxAttempts {
			return out, fmt.Errorf("apply %d matches after %d attempts: %w", len(pending), attempt, ErrContention)
		}
		var err error
		pending, err = s.applyOnce(ctx, results, pending, out, own)
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
}

// applyOnce reads the standings of the pending matches, computes them in
// order and runs the apply script once per pool and maxScriptMatches
// matches, all runs in one pipeline. It returns the matches that lost a
// race. When a player read is a guest linked to an account, it only
// rewrites the results (in own's copy) to name the account and returns
// every pending match, to be read again.
func (s *Store) applyOnce(ctx context.Context, results []ladder.Result, pending []int, out []Outcome, own func() []ladder.Result) ([]int, error) {
	current, index, applied, watermarks, err := s.readBatch(ctx, results, pending)
	if err != nil {
		return pending, err
	}
	if hasAlias(current) {
		_, kept := resolve(own(), pending, current, index, out)
		return kept, nil
	}

	// Compute in order; later matches see the earlier ones' results.
	calls := make(map[string]*poolCall) // the last call of each pool
	var runs []*poolCall                // every call, in order
	found := make(map[string][]int)     // per pool, the matches found applied already
	var prior [ladder.Seats]stored
	keep := s.retention.Markers.Milliseconds()
	for _, i := range pending {
		res := &results[i]
		if res.FinishedAt.UnixMilli() < watermarks[res.Pool]-keep {
			// The script would say so too; no need to compute it.
			out[i] = Outcome{Status: Expired}
			continue
		}
		m := playerRef{res.Pool, res.MatchID}
		if applied[m] {
			// Applied before, or earlier in this batch (a redelivery
			// next to the original): the first copy does the work.
			out[i] = Outcome{Status: Duplicate}
			found[res.Pool] = append(found[res.Pool], i)
			continue
		}
		applied[m] = true
		var before [ladder.Seats]ladder.Standing
		for p, pl := range res.Places {
			prior[p] = current[index[playerRef{res.Pool, pl.PlayerID}]]
			before[p] = prior[p].player.Standing
		}
		changes, err := s.policy.Rate(*res, before, res.FinishedAt)
		if err != nil {
			return pending, err
		}
		for p := range changes {
			if changes[p].Name == "" { // an account resolved from a linked guest
				changes[p].Name = prior[p].player.Name
			}
		}
		c := calls[res.Pool]
		if c == nil || len(c.idx) == maxScriptMatches {
			// Sized for every pending match, the usual single-pool case.
			c = s.newCall(res.Pool, min(len(pending), maxScriptMatches))
			calls[res.Pool] = c
			runs = append(runs, c)
		}
		after := s.appendMatch(c, res, prior, changes)
		c.idx = append(c.idx, i)
		out[i] = Outcome{Changes: changes}
		for p, ch := range changes {
			current[index[playerRef{res.Pool, ch.PlayerID}]] = after[p]
		}
	}
	if s.wait > 0 {
		// A match found applied before counts only once the replicas
		// confirm it too: a pool with nothing else to apply gets an empty
		// run, which writes nothing but the watermark, for its WAIT.
		for pool := range found {
			if calls[pool] == nil {
				calls[pool] = s.newCall(pool, 0)
				runs = append(runs, calls[pool])
			}
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}

	for _, c := range runs {
		s.finishCall(c, watermarks[c.pool])
	}
	var cmds []*redis.Cmd
	unconfirmed := map[string]error{} // pool -> why its writes are not confirmed
	if s.wait > 0 {
		cmds = s.applyAndWait(ctx, runs, unconfirmed)
	} else {
		// Every run goes out in one pipeline. A run may depend on an
		// earlier one (a player of both); should the earlier one fail or
		// lose a race, the later one finds a standing it did not expect
		// and reports a conflict, so the order of the runs needs no
		// further care.
		pipe := s.rdb.Pipeline()
		cmds = make([]*redis.Cmd, len(runs))
		for j, c := range runs {
			cmds[j] = s.apply.Cmd(ctx, c.keys, c.args...)
			_ = pipe.Process(ctx, cmds[j])
		}
		_, _ = pipe.Exec(ctx) // errors are read per command below
		// Runs on a node that lacks the script (new or failed over) go
		// once more as EVAL, which caches it there.
		s.apply.Retry(ctx, s.rdb, cmds)
	}
	var retry []int
	var errs []error
	for j, c := range runs {
		codes, err := cmds[j].Int64Slice()
		if err == nil {
			err = unconfirmed[c.pool]
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
			case code == -2:
				out[i] = Outcome{Status: Expired}
			default:
				out[i] = Outcome{}
				retry = append(retry, i)
			}
		}
	}
	for pool, idx := range found {
		if unconfirmed[pool] != nil {
			for _, i := range idx {
				out[i] = Outcome{}
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

// newCall returns an empty script run for pool with room for size matches.
func (s *Store) newCall(pool string, size int) *poolCall {
	k := newKeys(s.prefix, pool)
	c := &poolCall{
		pool: pool,
		idx:  make([]int, 0, size),
		keys: make([]string, applyNKeys, applyNKeys+4),
		args: make([]any, applyNArgs, applyNArgs+applyMatchWidth*size),
	}
	c.keys[applyKStandings] = k.standings()
	c.keys[applyKSeq] = k.seq()
	c.keys[applyKLeaderboard] = k.leaderboard()
	c.keys[applyKWatermark] = k.watermark()
	c.keys[applyKProvisional] = k.provisional()
	c.args[applyAMarkerRetention] = s.retention.Markers.Milliseconds()
	c.args[applyAHistoryRetention] = s.retention.History.Milliseconds()
	c.args[applyATouch] = min(s.wait, 1)
	return c
}

// finishCall completes c once all its matches are added: their counts, the
// day buckets they refer to, and the buckets the run may make obsolete
// given the pool's watermark wmRead as read before (see dropDays).
func (s *Store) finishCall(c *poolCall, wmRead int64) {
	k := newKeys(s.prefix, c.pool)
	c.args[applyANMatches] = len(c.idx)
	c.args[applyANBuckets] = len(c.buckets)
	for _, d := range c.buckets {
		c.keys = append(c.keys, k.bucket(d))
	}
	for _, d := range c.buckets {
		c.keys = append(c.keys, k.history(d))
	}
	first, n := dropDays(wmRead, c.newest, s.retention.Markers)
	c.args[applyAMarkerDropFirst], c.args[applyAMarkerDrops] = first, n
	for d := first; d < first+int64(n); d++ {
		c.keys = append(c.keys, k.bucket(d))
	}
	first, n = 0, 0
	if s.retention.History > 0 {
		first, n = dropDays(wmRead, c.newest, s.retention.History)
	}
	c.args[applyAHistoryDropFirst], c.args[applyAHistoryDrops] = first, n
	for d := first; d < first+int64(n); d++ {
		c.keys = append(c.keys, k.history(d))
	}
}

// applyAndWait runs the scripts of each pool, then WAIT, in one pipeline on
// one connection to the pool's master: WAIT only covers the writes made on
// its own connection. The scripts write even when they apply nothing (see
// apply.lua), so the WAIT also covers the earlier writes of matches they
// find applied already. Pools whose writes the replicas did not confirm
// get an ErrNotReplicated in unconfirmed.
func (s *Store) applyAndWait(ctx context.Context, runs []*poolCall, unconfirmed map[string]error) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(runs))
	byPool := make(map[string][]int)
	var pools []string
	for j, c := range runs {
		if byPool[c.pool] == nil {
			pools = append(pools, c.pool)
		}
		byPool[c.pool] = append(byPool[c.pool], j)
	}
	for _, pool := range pools {
		n, err := redisconn.WriteAndWait(ctx, s.rdb, newKeys(s.prefix, pool).standings(), s.wait, s.waitTimeout,
			func(p redis.Pipeliner) {
				for _, j := range byPool[pool] {
					cmds[j] = s.apply.Cmd(ctx, runs[j].keys, runs[j].args...)
					_ = p.Process(ctx, cmds[j])
				}
			}, s.apply)
		switch {
		case cmds[byPool[pool][0]] == nil: // no master to send them to
			for _, j := range byPool[pool] {
				cmds[j] = redis.NewCmd(ctx)
				cmds[j].SetErr(err)
			}
		default:
			if cerr := redisconn.Confirmed(n, s.wait, s.waitTimeout, err); cerr != nil {
				unconfirmed[pool] = fmt.Errorf("apply matches of pool %s: %w", pool, cerr)
			}
		}
	}
	return cmds
}

// dayOf returns the applied-marker bucket of a match that finished at t:
// days since the Unix epoch, UTC.
func dayOf(t time.Time) int64 {
	ms, d := t.UnixMilli(), day.Milliseconds()
	if ms < 0 {
		return (ms - d + 1) / d // floor, as in the script
	}
	return ms / d
}

// readBatch reads, in one round trip, the stored standing of every player
// and the applied marker of every match of the pending results, and each
// pool's watermark: per pool one HMGET of standings, one HMGET per marker
// bucket and one GET (all keys of a pool share a slot). The standings are
// returned in a slice, with the index of each player in it (a map of small
// values: this runs for every batch).
func (s *Store) readBatch(ctx context.Context, results []ladder.Result, pending []int) ([]stored, map[playerRef]int, map[playerRef]bool, map[string]int64, error) {
	type bucketRead struct {
		matches []string
		markers *redis.SliceCmd
	}
	type poolRead struct {
		players   []string
		first     int // index of players[0] in the standings
		buckets   map[int64]*bucketRead
		standings *redis.SliceCmd
		watermark *redis.StringCmd
	}
	reads := make(map[string]*poolRead)
	var pools []string
	index := make(map[playerRef]int, 4*len(pending))
	for _, i := range pending {
		res := &results[i]
		r := reads[res.Pool]
		if r == nil {
			r = &poolRead{buckets: make(map[int64]*bucketRead)}
			reads[res.Pool] = r
			pools = append(pools, res.Pool)
		}
		d := dayOf(res.FinishedAt)
		b := r.buckets[d]
		if b == nil {
			b = &bucketRead{}
			r.buckets[d] = b
		}
		b.matches = append(b.matches, res.MatchID)
		for _, pl := range res.Places {
			if _, ok := index[playerRef{res.Pool, pl.PlayerID}]; !ok {
				index[playerRef{res.Pool, pl.PlayerID}] = -1 // numbered below
				r.players = append(r.players, pl.PlayerID)
			}
		}
	}
	n := 0
	for _, pool := range pools {
		r := reads[pool]
		r.first = n
		for j, id := range r.players {
			index[playerRef{pool, id}] = n + j
		}
		n += len(r.players)
	}
	pipe := s.rdb.Pipeline()
	for _, pool := range pools {
		r := reads[pool]
		k := newKeys(s.prefix, pool)
		r.standings = pipe.HMGet(ctx, k.standings(), r.players...)
		r.watermark = pipe.Get(ctx, k.watermark())
		for d, b := range r.buckets {
			b.markers = pipe.HMGet(ctx, k.bucket(d), b.matches...)
		}
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	current := make([]stored, n)
	applied := make(map[playerRef]bool, len(pending))
	watermarks := make(map[string]int64, len(pools))
	for _, pool := range pools {
		r := reads[pool]
		if err := r.standings.Err(); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("read standings of pool %s: %w", pool, err)
		}
		for i, v := range r.standings.Val() {
			raw, _ := v.(string)
			if _, ok := aliasOf(raw); ok {
				current[r.first+i] = stored{raw: raw} // applyOnce resolves it
				continue
			}
			p, err := s.decodePlayer(r.players[i], raw)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			current[r.first+i] = stored{player: p, raw: raw}
		}
		wm, err := r.watermark.Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, nil, nil, fmt.Errorf("read watermark of pool %s: %w", pool, err)
		}
		watermarks[pool] = wm
		for _, b := range r.buckets {
			if err := b.markers.Err(); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("read applied markers of pool %s: %w", pool, err)
			}
			for i, v := range b.markers.Val() {
				if v != nil {
					applied[playerRef{pool, b.matches[i]}] = true
				}
			}
		}
	}
	return current, index, applied, watermarks, nil
}

// appendMatch adds one match's keys and arguments to c (see apply.lua) and
// returns the players' new stored standings.
func (s *Store) appendMatch(c *poolCall, res *ladder.Result, prior [ladder.Seats]stored, changes [ladder.Seats]ladder.Change) [ladder.Seats]stored {
	var after [ladder.Seats]stored
	d := dayOf(res.FinishedAt)
	bucket := slices.Index(c.buckets, d)
	if bucket < 0 {
		bucket = len(c.buckets)
		c.buckets = append(c.buckets, d)
	}
	ref := recordRef(d, res.MatchID)
	// The four standings, the record and the leaderboard actions share one
	// allocation.
	size := 0
	for p, ch := range changes {
		size += 240 + 8 + 2*len(ch.Name) + 2*len(ch.PlayerID) + 2*len(ref) + len(prior[p].player.last) + len(res.MatchID)
	}
	buf := make([]byte, 0, size)
	var ends [ladder.Seats]int
	for p, ch := range changes {
		after[p].player = Player{ID: ch.PlayerID, Name: ch.Name, Bot: ch.Bot, Standing: ch.After, Known: true, last: ref}
		buf = appendPlayer(buf, after[p].player)
		ends[p] = len(buf)
	}
	var entry []byte
	for p, ch := range changes {
		buf = appendRecordPart(buf, ch.PlayerID)
		buf = appendRecordPart(buf, prior[p].player.last)
		entry = appendHistory(entry[:0], HistoryEntry{
			MatchID:       res.MatchID,
			FinishedAt:    res.FinishedAt,
			Place:         ch.Place,
			Game:          ch.After.Games,
			DisplayBefore: ch.DisplayBefore(),
			DisplayAfter:  ch.DisplayAfter(),
			Mu:            ch.After.Rating.Mu,
			Sigma:         ch.After.Rating.Sigma,
		})
		buf = append(append(strconv.AppendInt(buf, int64(len(entry)), 10), ':'), entry...)
	}
	recordEnd := len(buf)
	var actionEnds [ladder.Seats]int
	for p, ch := range changes {
		var from byte = sectionNone
		if prior[p].player.Known {
			from = s.sectionOf(prior[p].player.Bot, prior[p].player.Standing)
		}
		buf = appendBoardAction(buf, s.sectionOf(ch.Bot, ch.After), from, ch.DisplayAfter())
		actionEnds[p] = len(buf)
	}
	encoded := string(buf)
	c.newest = max(c.newest, res.FinishedAt.UnixMilli())
	c.args = append(c.args, res.MatchID, bucket+1, res.FinishedAt.UnixMilli(), encoded[ends[ladder.Seats-1]:recordEnd])
	start, actionStart := 0, recordEnd
	for p, ch := range changes {
		after[p].raw = encoded[start:ends[p]]
		start = ends[p]
		c.args = append(c.args, ch.PlayerID, prior[p].raw, after[p].raw, encoded[actionStart:actionEnds[p]])
		actionStart = actionEnds[p]
	}
	return after
}

// The sets a player is listed in, by the letters apply.lua knows them by.
const (
	sectionNone        = 'N' // bots
	sectionRanked      = 'L' // the leaderboard
	sectionProvisional = 'P' // its provisional section
)

// sectionOf returns the set a player with standing st belongs in.
func (s *Store) sectionOf(bot bool, st ladder.Standing) byte {
	switch {
	case bot:
		return sectionNone
	case s.policy.Provisional(st):
		return sectionProvisional
	}
	return sectionRanked
}

// appendBoardAction appends a player's leaderboard action for apply.lua:
// the set they belong in after the match, the set they were in before (so
// the script removes them from it, and only from it), and the display
// rating to list them with; nothing when they are in neither (a bot).
func appendBoardAction(b []byte, dest, from byte, display int) []byte {
	if dest == sectionNone && from == sectionNone {
		return b
	}
	b = append(b, dest, from)
	if dest != sectionNone {
		b = strconv.AppendInt(b, int64(display), 10)
	}
	return b
}

// Listed reports whether a player appears on the leaderboard: humans with a
// non-provisional rating.
func (s *Store) Listed(bot bool, st ladder.Standing) bool {
	return s.sectionOf(bot, st) == sectionRanked
}
