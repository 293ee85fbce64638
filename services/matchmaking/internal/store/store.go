// Package store keeps matchmaking tickets in Redis (standalone or cluster).
//
// # Keys
//
// Every key of one queue shares the hash tag {mm:<queue name>} (shown as Q),
// so each state change of a queue is one atomic Lua script on one node:
//
//	Q:w              hash  ticket id -> waiting entry (JSON): the queue itself
//	Q:r              hash  ticket id -> "rating|provisional" once rated
//	Q:t:<ticket id>  hash  the ticket: player p, enqueued e (ms), state s,
//	                       formation f, match m, seat
//	Q:f:<formation>  string formation record (JSON), while it is open
//	Q:forming        zset  formation id -> deadline (ms)
//	Q:formed:<slot>  string matches formed in a 10-second slot
//	Q:waits          list  "<matched ms>:<wait ms>" of recently matched tickets
//
// The per-player live-ticket pointer lives outside any queue, under the
// player's own tag, because a player may join any queue:
//
//	mm:player:{<player id>}  string  "<ticket id>|<created ms>"
//
// It is set with SET NX, so two concurrent Enqueue calls of one player
// create one ticket. It is only a pointer: the ticket record decides
// whether it is live, and a pointer to a finished ticket is replaced.
// Because the pointer and the ticket live in different slots they are not
// written atomically together; the gap is covered by writing the pointer
// first, giving it a TTL longer than any ticket can stay live, and treating
// a pointer to a missing ticket as in progress for PointerGrace.
//
// # States
//
// A ticket is Searching (in Q:w), Forming (claimed into a formation),
// Matched, Cancelled or Expired. Claiming removes all four tickets of a
// group from Q:w in one script, so no ticket is ever in two formations. A
// formation not completed by its deadline is taken over by any instance
// (Lease) which either completes it or releases its tickets back into Q:w
// with their original entries, so their original enqueue time.
package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// State is a ticket's life-cycle state.
type State byte

// Ticket states, as stored.
const (
	Searching State = 'S'
	Forming   State = 'F'
	Matched   State = 'M'
	Cancelled State = 'C'
	Expired   State = 'X'
)

// Live reports whether a ticket in this state still waits for a match.
func (s State) Live() bool { return s == Searching || s == Forming }

func (s State) String() string {
	switch s {
	case Searching:
		return "searching"
	case Forming:
		return "forming"
	case Matched:
		return "matched"
	case Cancelled:
		return "cancelled"
	case Expired:
		return "expired"
	}
	return "unknown"
}

// Errors returned by the store.
var (
	ErrNotFound     = errors.New("ticket not found")
	ErrNotOwner     = errors.New("ticket belongs to another player")
	ErrUnknownQueue = errors.New("unknown queue")
	ErrForming      = errors.New("a match is being formed for this ticket")
	ErrMatched      = errors.New("ticket already matched")
	// ErrContention means concurrent Enqueue calls of one player kept
	// changing its live-ticket pointer; retrying is safe.
	ErrContention = errors.New("too many concurrent changes, retry")
)

// maxEnqueueAttempts bounds Enqueue's compare-and-set loop (and, with its
// 20 ms pause, the wait for another Enqueue of the player in progress).
const maxEnqueueAttempts = 250

// Player is who waits behind a ticket.
type Player struct {
	ID          string `json:"p"`
	DisplayName string `json:"n,omitempty"`
	Bot         bool   `json:"b,omitempty"`
}

// Entry is a waiting ticket as the queue holds it.
type Entry struct {
	TicketID   string `json:"-"`
	Player     Player `json:"u"`
	EnqueuedMs int64  `json:"e"`
	// ExpiresMs is when the ticket expires (Unix ms) if it was requeued
	// after a first-move abort (requeue.go), which keeps EnqueuedMs; 0:
	// EnqueuedMs plus the ticket TTL.
	ExpiresMs int64 `json:"x,omitempty"`
	// Rated is set when the rating below came from a formation round.
	Rated       bool    `json:"-"`
	Rating      float64 `json:"-"`
	Provisional bool    `json:"-"`
	// CoPlayers are the players of the player's latest games, looked up
	// with the rating and kept with it (anti-teaming).
	CoPlayers []CoPlayer `json:"-"`
}

// CoPlayer is another player of one of a player's latest games.
type CoPlayer struct {
	PlayerID string `json:"p"`
	// FinishedMs is when the game ended (Unix ms).
	FinishedMs int64 `json:"f"`
}

// EnqueuedAt returns the enqueue time.
func (e Entry) EnqueuedAt() time.Time { return time.UnixMilli(e.EnqueuedMs) }

// ExpiresAt returns when the ticket expires, for tickets that search for
// at most ttl.
func (e Entry) ExpiresAt(ttl time.Duration) time.Time {
	if e.ExpiresMs > 0 {
		return time.UnixMilli(e.ExpiresMs)
	}
	return e.EnqueuedAt().Add(ttl)
}

// Ticket is a ticket's record.
type Ticket struct {
	ID         string
	Queue      string
	PlayerID   string
	EnqueuedAt time.Time
	// ExpiresAt is when the ticket expires if it still searches.
	ExpiresAt time.Time
	State     State
	MatchID   string
	Seat      int
	// Rated, Rating and Provisional are known once a formation round rated
	// the ticket while it was searching.
	Rated       bool
	Rating      float64
	Provisional bool
}

// Formation is an open attempt to create a match from four claimed tickets.
type Formation struct {
	ID    string `json:"id"`
	Queue string `json:"q"`
	// Entries are the four tickets as they waited, restored on release.
	Entries [4]Entry `json:"t"`
	// TicketIDs repeats the entries' ids (Entry.TicketID is not encoded).
	TicketIDs [4]string `json:"i"`
	// Seed chose the seats (and is the match's seed).
	Seed      uint64 `json:"s"`
	CreatedMs int64  `json:"c"`
}

// RequestID is the idempotency key of the CreateMatch call for these
// tickets: the same four tickets always give the same id, so a retry after
// a crash returns the match created the first time.
func (f *Formation) RequestID() string { return "mm-" + f.ID }

// FormationID derives a formation id from its tickets, in any order.
func FormationID(ticketIDs [4]string) string {
	s := ticketIDs
	slices.Sort(s[:])
	h := sha256.Sum256([]byte(strings.Join(s[:], "\n")))
	return hex.EncodeToString(h[:16])
}

// Settings are the store's timing settings.
type Settings struct {
	// TicketTTL is how long a ticket may search before it expires.
	TicketTTL time.Duration
	// Retention is how long finished tickets stay readable.
	Retention time.Duration
	// FormationTimeout is how long a claimed formation may stay open before
	// another instance takes it over.
	FormationTimeout time.Duration
	// PointerGrace is how long a live-ticket pointer whose ticket does not
	// exist yet is treated as an Enqueue in progress.
	PointerGrace time.Duration
	// WaitSamples caps the per-queue list of recent waits.
	WaitSamples int
	// BotLevels are the bot levels that have a lobby (LobbyQueue).
	BotLevels []string
}

// StatsSlot is the granularity of the formed-matches counters.
const StatsSlot = 10 * time.Second

// Store is the Redis ticket store. It is safe for concurrent use.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	set    Settings
	queues map[string]string // queue code -> queue name
}

// New returns a store for the given queues. prefix is prepended to every key
// (tests use one prefix each).
func New(rdb redis.UniversalClient, prefix string, queues []string, set Settings) *Store {
	s := &Store{rdb: rdb, prefix: prefix, set: set, queues: make(map[string]string, len(queues))}
	for _, q := range queues {
		s.queues[queueCode(q)] = q
	}
	for _, l := range set.BotLevels {
		q := LobbyQueue(l)
		s.queues[queueCode(q)] = q
	}
	return s
}

// queueCode is the short, stable tag of a queue inside ticket ids.
func queueCode(queue string) string {
	h := sha256.Sum256([]byte(queue))
	return hex.EncodeToString(h[:4])
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newTicketID returns "<random>.<queue code>": the ticket id names its queue,
// so CancelTicket and WatchTicket find its keys from the id alone.
func newTicketID(queue string) string {
	var b [10]byte
	rand.Read(b[:])
	return strings.ToLower(idEncoding.EncodeToString(b[:])) + "." + queueCode(queue)
}

// QueueOf returns the queue a ticket id belongs to.
func (s *Store) QueueOf(ticketID string) (string, error) {
	_, code, ok := strings.Cut(ticketID, ".")
	if !ok {
		return "", ErrNotFound
	}
	q, ok := s.queues[code]
	if !ok {
		return "", ErrNotFound
	}
	return q, nil
}

func (s *Store) tag(queue string) string    { return s.prefix + "{mm:" + queue + "}" }
func (s *Store) waitingKey(q string) string { return s.tag(q) + ":w" }
func (s *Store) ratingsKey(q string) string { return s.tag(q) + ":r" }
func (s *Store) formingKey(q string) string { return s.tag(q) + ":forming" }
func (s *Store) waitsKey(q string) string   { return s.tag(q) + ":waits" }
func (s *Store) ticketKey(q, id string) string {
	return s.tag(q) + ":t:" + id
}

// ticketKeys returns the keys of a formation's tickets.
func (s *Store) ticketKeys(q string, ids [4]string) [4]string {
	var k [4]string
	for i, id := range ids {
		k[i] = s.ticketKey(q, id)
	}
	return k
}

func (s *Store) formationKey(q, id string) string { return s.tag(q) + ":f:" + id }
func (s *Store) formedKey(q string, slot int64) string {
	return s.tag(q) + ":formed:" + strconv.FormatInt(slot, 10)
}
func (s *Store) pointerKey(player string) string { return s.prefix + "mm:player:{" + player + "}" }

func (s *Store) pointerTTL() time.Duration {
	// Longer than a ticket can stay live: its TTL, plus formations that
	// time out and release it, plus a margin.
	return s.set.TicketTTL + 3*s.set.FormationTimeout + time.Minute
}

// Enqueue creates a searching ticket for player in queue, or returns the
// player's live ticket (existing true) if there is one, in any queue.
func (s *Store) Enqueue(ctx context.Context, queue string, p Player, now time.Time) (Ticket, bool, error) {
	if _, ok := s.queues[queueCode(queue)]; !ok {
		return Ticket{}, false, fmt.Errorf("%w: %q", ErrUnknownQueue, queue)
	}
	id := newTicketID(queue)
	live, err := s.pointTicket(ctx, p.ID, id, now, nil)
	if err != nil {
		return Ticket{}, false, err
	}
	if live != nil {
		return *live, true, nil
	}
	t, err := s.create(ctx, queue, Entry{TicketID: id, Player: p, EnqueuedMs: now.UnixMilli()})
	if err != nil {
		// Best effort: a leftover pointer to a missing ticket is
		// replaced after PointerGrace anyway.
		s.dropPointer(context.WithoutCancel(ctx), s.pointerKey(p.ID), id)
		return Ticket{}, false, err
	}
	return t, false, nil
}

// pointTicket points the player's live-ticket pointer at ticket id, which
// the caller creates next, unless the player has a live ticket (returned)
// or a seat at a table (ErrSeated). A pointer that names id already (a
// retried requeue, requeue.go) counts as taken.
//
// A pointer to a finished ticket or table for which movedOn (if not nil)
// reports true, given its target (ticket id or "table:<code>") and
// creation time (Unix ms), is not taken over: pointTicket returns a
// *movedOnError. A requeue after a first-move abort (requeue.go) uses it
// to leave a player who enqueued since the abort and was served. The
// check and the take-over are one compare-and-set on the pointer's value,
// so a player who enqueues meanwhile makes the loop look again.
func (s *Store) pointTicket(ctx context.Context, player, id string, now time.Time, movedOn func(target string, createdMs int64) bool) (*Ticket, error) {
	ptr := s.pointerKey(player)
	val := id + "|" + strconv.FormatInt(now.UnixMilli(), 10)
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if attempt == maxEnqueueAttempts {
			return nil, fmt.Errorf("enqueue %s: %w", player, ErrContention)
		}
		ok, err := s.rdb.SetNX(ctx, ptr, val, s.pointerTTL()).Result()
		if err != nil {
			return nil, fmt.Errorf("set live-ticket pointer: %w", err)
		}
		if ok {
			return nil, nil
		}
		cur, err := s.rdb.Get(ctx, ptr).Result()
		if errors.Is(err, redis.Nil) {
			continue // the pointer just went away: try again
		}
		if err != nil {
			return nil, fmt.Errorf("read live-ticket pointer: %w", err)
		}
		curID, createdStr, _ := strings.Cut(cur, "|")
		if curID == id {
			return nil, nil
		}
		created, _ := strconv.ParseInt(createdStr, 10, 64)
		if strings.HasPrefix(curID, "table:") {
			// The player sits at (or is joining) a private table.
			live, wait, err := s.pointerLive(ctx, cur, player, now.Add(time.Since(start)))
			switch {
			case err != nil:
				return nil, err
			case live:
				return nil, ErrSeated
			case wait:
				if err := pause(ctx); err != nil {
					return nil, err
				}
				continue
			}
			// A finished table, or a seat given up: take the pointer over.
		} else {
			t, err := s.Ticket(ctx, curID)
			switch {
			case err == nil && t.State.Live():
				return &t, nil
			case errors.Is(err, ErrNotFound) && now.Add(time.Since(start)).Sub(time.UnixMilli(created)) < s.set.PointerGrace:
				// Another Enqueue of this player is between its two writes.
				if err := pause(ctx); err != nil {
					return nil, err
				}
				continue
			case err != nil && !errors.Is(err, ErrNotFound):
				return nil, err
			}
		}
		if movedOn != nil && movedOn(curID, created) {
			return nil, &movedOnError{target: curID}
		}
		// The pointer names a finished or vanished ticket: take it over.
		ks, args := replacePointerArgs(ptr, cur, val, s.pointerTTL().Milliseconds())
		swapped, err := replacePointerScript.Run(ctx, s.rdb, ks, args...).Int()
		if err != nil {
			return nil, fmt.Errorf("replace live-ticket pointer: %w", err)
		}
		if swapped == 1 {
			return nil, nil
		}
	}
}

// movedOnError is pointTicket's refusal to take over a pointer its
// movedOn function picked.
type movedOnError struct {
	target string // the pointer's ticket id, or "table:<code>"
}

func (e *movedOnError) Error() string {
	return "the player enqueued (or joined a table) again since: " + e.target
}

// pause waits before another look at a pointer being written.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(20 * time.Millisecond):
		return nil
	}
}

// Occupied reports whether the player has a live ticket or a seat at an
// open (or starting) table: what Enqueue and the tables refuse with
// ErrSeated, read without changing anything. A pointer whose ticket or
// seat is being written (within PointerGrace) counts as occupied.
func (s *Store) Occupied(ctx context.Context, player string, now time.Time) (bool, error) {
	cur, err := s.rdb.Get(ctx, s.pointerKey(player)).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read live pointer: %w", err)
	}
	live, wait, err := s.pointerLive(ctx, cur, player, now)
	return live || wait, err
}

// dropPointer deletes the live-ticket pointer if it still names ticket id,
// best effort: a leftover pointer to a finished or missing ticket is
// replaced by the player's next Enqueue.
func (s *Store) dropPointer(ctx context.Context, pointer, id string) {
	ks, args := dropPointerArgs(pointer, id)
	dropPointerScript.Run(ctx, s.rdb, ks, args...)
}

// create adds the waiting ticket of entry e to queue.
func (s *Store) create(ctx context.Context, queue string, e Entry) (Ticket, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return Ticket{}, fmt.Errorf("encode ticket: %w", err)
	}
	ks, args := enqueueArgs(s.waitingKey(queue), s.ticketKey(queue, e.TicketID), e.TicketID, b, e.Player.ID, e.EnqueuedMs, s.ticketTTL().Milliseconds())
	err = enqueueScript.Run(ctx, s.rdb, ks, args...).Err()
	if err != nil {
		return Ticket{}, fmt.Errorf("create ticket: %w", err)
	}
	return Ticket{ID: e.TicketID, Queue: queue, PlayerID: e.Player.ID, EnqueuedAt: e.EnqueuedAt(),
		ExpiresAt: e.ExpiresAt(s.set.TicketTTL), State: Searching}, nil
}

// ticketTTL is how long a ticket's record lives from its creation: longer
// than it can search, be claimed and released, and then be read.
func (s *Store) ticketTTL() time.Duration {
	return s.set.TicketTTL + 2*s.set.FormationTimeout + s.set.Retention
}

// Ticket reads a ticket.
func (s *Store) Ticket(ctx context.Context, id string) (Ticket, error) {
	q, err := s.QueueOf(id)
	if err != nil {
		return Ticket{}, err
	}
	pipe := s.rdb.Pipeline()
	hget := pipe.HGetAll(ctx, s.ticketKey(q, id))
	rget := pipe.HGet(ctx, s.ratingsKey(q), id)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Ticket{}, fmt.Errorf("read ticket %s: %w", id, err)
	}
	h := hget.Val()
	if len(h) == 0 {
		return Ticket{}, ErrNotFound
	}
	t := Ticket{ID: id, Queue: q, PlayerID: h["p"], MatchID: h["m"]}
	if st := h["s"]; len(st) == 1 {
		t.State = State(st[0])
	}
	enq, _ := strconv.ParseInt(h["e"], 10, 64)
	exp, _ := strconv.ParseInt(h["x"], 10, 64)
	e := Entry{EnqueuedMs: enq, ExpiresMs: exp}
	t.EnqueuedAt, t.ExpiresAt = e.EnqueuedAt(), e.ExpiresAt(s.set.TicketTTL)
	t.Seat, _ = strconv.Atoi(h["seat"])
	if r, err := rget.Result(); err == nil {
		t.Rating, t.Provisional, _, t.Rated = parseRating(r)
	}
	return t, nil
}

// A recorded rating is "<rating>|p" (provisional) or "<rating>|", followed
// by "|<JSON list of co-players>" when the player has recent co-players.
func formatRating(r float64, provisional bool, co []CoPlayer) string {
	v := strconv.FormatFloat(r, 'f', -1, 64) + "|"
	if provisional {
		v += "p"
	}
	if len(co) > 0 {
		b, _ := json.Marshal(co) // strings and integers: cannot fail
		v += "|" + string(b)
	}
	return v
}

func parseRating(v string) (float64, bool, []CoPlayer, bool) {
	num, rest, _ := strings.Cut(v, "|")
	r, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, false, nil, false
	}
	flag, list, _ := strings.Cut(rest, "|")
	var co []CoPlayer
	if list != "" && json.Unmarshal([]byte(list), &co) != nil {
		// Unreadable co-players (never written so): the rating stands,
		// the ticket is grouped without anti-teaming.
		co = nil
	}
	return r, flag == "p", co, true
}

// Cancel ends a searching ticket of player. Cancelling a cancelled or
// expired ticket returns it unchanged.
func (s *Store) Cancel(ctx context.Context, id, player string) (Ticket, error) {
	t, err := s.Ticket(ctx, id)
	if err != nil {
		return Ticket{}, err
	}
	if t.PlayerID != player {
		return Ticket{}, ErrNotOwner
	}
	switch t.State {
	case Cancelled, Expired:
		return t, nil
	case Matched:
		return t, ErrMatched
	case Forming:
		return t, ErrForming
	}
	done, err := s.finish(ctx, t.Queue, []string{id}, Cancelled)
	if err != nil {
		return Ticket{}, err
	}
	if done[0] {
		t.State = Cancelled
		// The live-ticket pointer stays (the next Enqueue replaces it, as
		// any pointer to a finished ticket): its creation time is how a
		// late requeue after a first-move abort tells a player who
		// enqueued and cancelled since the abort (requeue.go).
		s.publish(ctx, t.Queue, []string{id})
		return t, nil
	}
	// Claimed or expired in the meantime: report what it is now.
	t, err = s.Ticket(ctx, id)
	if err != nil {
		return Ticket{}, err
	}
	switch t.State {
	case Forming:
		return t, ErrForming
	case Matched:
		return t, ErrMatched
	}
	return t, nil
}

// finish moves still-waiting tickets of one queue to a final state.
func (s *Store) finish(ctx context.Context, queue string, ids []string, st State) ([]bool, error) {
	tickets := make([]string, len(ids))
	for i, id := range ids {
		tickets[i] = s.ticketKey(queue, id)
	}
	keys, args := finishArgs(s.waitingKey(queue), s.ratingsKey(queue), st, s.set.Retention.Milliseconds(), tickets, ids)
	res, err := finishScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("finish tickets: %w", err)
	}
	out := make([]bool, len(res))
	for i, v := range res {
		out[i] = v == 1
	}
	return out, nil
}

// Expire moves the given waiting tickets of queue to Expired and returns how
// many were still waiting.
func (s *Store) Expire(ctx context.Context, queue string, ids []string) (int, error) {
	var ended []string
	for chunk := range slices.Chunk(ids, chunkSize) {
		done, err := s.finish(ctx, queue, chunk, Expired)
		if err != nil {
			return len(ended), err
		}
		for i, d := range done {
			if d {
				ended = append(ended, chunk[i])
			}
		}
	}
	s.publish(ctx, queue, ended)
	return len(ended), nil
}

// formationRecordTTL only guards against leaks: a formation record is
// deleted when its formation completes or is released, which recovery does
// within a few formation timeouts even through crashes.
const formationRecordTTL = 24 * time.Hour

// chunkSize bounds the tickets or groups handled by one script call, so one
// call never blocks Redis for long.
const chunkSize = 256

// Waiting returns the queue's waiting tickets with the ratings recorded so
// far.
func (s *Store) Waiting(ctx context.Context, queue string) ([]Entry, error) {
	pipe := s.rdb.Pipeline()
	w := pipe.HGetAll(ctx, s.waitingKey(queue))
	r := pipe.HGetAll(ctx, s.ratingsKey(queue))
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read queue %s: %w", queue, err)
	}
	ratings := r.Val()
	out := make([]Entry, 0, len(w.Val()))
	for id, raw := range w.Val() {
		var e Entry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("decode ticket %s: %w", id, err)
		}
		e.TicketID = id
		if v, ok := ratings[id]; ok {
			e.Rating, e.Provisional, e.CoPlayers, e.Rated = parseRating(v)
		}
		out = append(out, e)
	}
	return out, nil
}

// SetRatings records ratings of waiting tickets (tickets that stopped
// waiting are skipped).
func (s *Store) SetRatings(ctx context.Context, queue string, entries []Entry) error {
	for chunk := range slices.Chunk(entries, chunkSize) {
		keys, args := rateArgs(s.waitingKey(queue), s.ratingsKey(queue), len(chunk))
		for _, e := range chunk {
			args = append(args, e.TicketID, formatRating(e.Rating, e.Provisional, e.CoPlayers))
		}
		if err := rateScript.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
			return fmt.Errorf("record ratings: %w", err)
		}
	}
	return nil
}

// NewFormation builds the formation record of four waiting entries, in
// seat order.
func NewFormation(queue string, entries [4]Entry, seed uint64, now time.Time) *Formation {
	f := &Formation{Queue: queue, Entries: entries, Seed: seed, CreatedMs: now.UnixMilli()}
	for i, e := range entries {
		f.TicketIDs[i] = e.TicketID
	}
	f.ID = FormationID(f.TicketIDs)
	return f
}

// Claim atomically claims the formations' tickets. claimed[i] reports
// whether formation i was claimed (all four of its tickets were waiting);
// formations of one call must belong to one queue.
func (s *Store) Claim(ctx context.Context, queue string, fs []*Formation, now time.Time) ([]bool, error) {
	out := make([]bool, 0, len(fs))
	for chunk := range slices.Chunk(fs, chunkSize) {
		keys, args := claimArgs(s.waitingKey(queue), s.ratingsKey(queue), s.formingKey(queue),
			now.Add(s.set.FormationTimeout).UnixMilli(), formationRecordTTL.Milliseconds(), len(chunk))
		for _, f := range chunk {
			rec, err := json.Marshal(f)
			if err != nil {
				return nil, fmt.Errorf("encode formation: %w", err)
			}
			keys, args = claimGroup(keys, args, s.formationKey(queue, f.ID), f.ID, rec, s.ticketKeys(queue, f.TicketIDs), f.TicketIDs)
		}
		res, err := claimScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
		if err != nil {
			return out, fmt.Errorf("claim tickets: %w", err)
		}
		for _, v := range res {
			out = append(out, v == 1)
		}
	}
	return out, nil
}

// Outcome is the match created for a formation.
type Outcome struct {
	Formation *Formation
	MatchID   string
	// Seats are the seats (1-4) of Formation.Entries, as the match has them.
	Seats [4]int
}

// Complete marks the tickets of created matches matched. It returns, per
// outcome, whether this call completed it (false: already completed or
// released by someone else).
func (s *Store) Complete(ctx context.Context, queue string, outs []Outcome, now time.Time) ([]bool, error) {
	done := make([]bool, 0, len(outs))
	slot := now.UnixMilli() / StatsSlot.Milliseconds()
	for chunk := range slices.Chunk(outs, chunkSize) {
		keys, args := completeArgs(s.formingKey(queue), s.waitsKey(queue), s.formedKey(queue, slot),
			s.playedKey(queue, now.UnixMilli()/playedSlot.Milliseconds()),
			s.set.Retention.Milliseconds(), (statsHorizon + 2*StatsSlot).Milliseconds(), s.set.WaitSamples,
			(PlayedFor + playedSlot).Milliseconds(), MatchRecordTTL.Milliseconds(), len(chunk))
		for _, o := range chunk {
			f := o.Formation
			var waits, players, played [4]string
			for i, e := range f.Entries {
				waits[i] = strconv.FormatInt(now.UnixMilli(), 10) + ":" + strconv.FormatInt(now.UnixMilli()-e.EnqueuedMs, 10)
				players[i] = e.Player.ID
				if !e.Player.Bot {
					played[i] = encodePlayed(f.Entries, i, o.MatchID, now)
				}
			}
			keys, args = completeGroup(keys, args, s.formationKey(queue, f.ID), s.matchKey(queue, o.MatchID), f.ID, o.MatchID,
				s.ticketKeys(queue, f.TicketIDs), o.Seats, waits, players, played)
		}
		res, err := completeScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
		if err != nil {
			return done, fmt.Errorf("complete formations: %w", err)
		}
		for _, v := range res {
			done = append(done, v == 1)
		}
	}
	// The players' live-ticket pointers are left to expire: they name
	// matched tickets now, which the next Enqueue replaces. Deleting them
	// here would cost four more round trips per match.
	var ended []string
	for i, o := range outs[:len(done)] {
		if done[i] {
			ended = append(ended, o.Formation.TicketIDs[:]...)
		}
	}
	s.publish(ctx, queue, ended)
	return done, nil
}

// Played is a match the queue formed for a player, as remembered for
// anti-teaming while the rating service cannot know it yet (it still runs).
type Played struct {
	MatchID  string `json:"m"`
	FormedMs int64  `json:"f"`
	// CoPlayers are the other human players of the match.
	CoPlayers []string `json:"c"`
}

const (
	// PlayedFor is how long a queue remembers the matches it formed
	// (Played): an hour covers a four-player game at the queues' time
	// controls; a match the rating service has not reported finished
	// counts as still running for that long at most.
	PlayedFor = time.Hour
	// playedSlot is the time span of one played-record hash.
	playedSlot = 10 * time.Minute
)

func (s *Store) playedKey(q string, slot int64) string {
	return s.tag(q) + ":played:" + strconv.FormatInt(slot, 10)
}

// encodePlayed is the played record of match for entry i of the four.
func encodePlayed(four [4]Entry, i int, match string, now time.Time) string {
	rec := Played{MatchID: match, FormedMs: now.UnixMilli(), CoPlayers: make([]string, 0, 3)}
	for j, e := range four {
		if j != i && !e.Player.Bot {
			rec.CoPlayers = append(rec.CoPlayers, e.Player.ID)
		}
	}
	b, _ := json.Marshal(rec) // strings and an integer: cannot fail
	return string(b)
}

// Played returns, for each of players, the matches the queue formed for
// them in the last PlayedFor (oldest first; players without any are
// absent). One pipelined HMGET per 10-minute slot, all on the queue's
// slot: one round trip.
func (s *Store) Played(ctx context.Context, queue string, players []string, now time.Time) (map[string][]Played, error) {
	out := map[string][]Played{}
	if len(players) == 0 {
		return out, nil
	}
	last := now.UnixMilli() / playedSlot.Milliseconds()
	first := now.Add(-PlayedFor).UnixMilli() / playedSlot.Milliseconds()
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, 0, last-first+1)
	for slot := first; slot <= last; slot++ {
		cmds = append(cmds, pipe.HMGet(ctx, s.playedKey(queue, slot), players...))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read played matches of queue %s: %w", queue, err)
	}
	since := now.Add(-PlayedFor).UnixMilli()
	for _, c := range cmds {
		for i, v := range c.Val() {
			raw, ok := v.(string)
			if !ok {
				continue
			}
			var recs []Played
			if err := json.Unmarshal([]byte(raw), &recs); err != nil {
				return nil, fmt.Errorf("read played matches of %s in queue %s: %w", players[i], queue, err)
			}
			for _, r := range recs {
				if r.FormedMs > since {
					out[players[i]] = append(out[players[i]], r)
				}
			}
		}
	}
	return out, nil
}

// EventsChannel is the pub/sub channel announcing the queue's tickets that
// reached a final state (message: space-separated ticket ids).
func (s *Store) EventsChannel(queue string) string { return s.prefix + "mm:events:" + queue }

// publish announces tickets that reached a final state, best effort: pub/sub
// delivers at most once, so watchers also poll.
func (s *Store) publish(ctx context.Context, queue string, ids []string) {
	for chunk := range slices.Chunk(ids, 1024) {
		s.rdb.Publish(ctx, s.EventsChannel(queue), strings.Join(chunk, " "))
	}
}

// Subscribe subscribes to the events channels of the queues and to the
// tables' channel (TablesChannel), in that order. The caller closes the
// subscription.
func (s *Store) Subscribe(ctx context.Context, queues []string) *redis.PubSub {
	chans := make([]string, len(queues), len(queues)+1)
	for i, q := range queues {
		chans[i] = s.EventsChannel(q)
	}
	chans = append(chans, s.TablesChannel())
	return s.rdb.Subscribe(ctx, chans...)
}

// Release returns an open formation's tickets to the queue, with their
// original enqueue times. It reports whether the formation was still open.
func (s *Store) Release(ctx context.Context, f *Formation) (bool, error) {
	q := f.Queue
	var entries [4][]byte
	for i, e := range f.Entries {
		b, err := json.Marshal(e)
		if err != nil {
			return false, fmt.Errorf("encode ticket: %w", err)
		}
		entries[i] = b
	}
	keys, args := releaseArgs(s.formingKey(q), s.waitingKey(q), s.formationKey(q, f.ID), f.ID,
		s.ticketKeys(q, f.TicketIDs), f.TicketIDs, entries)
	n, err := releaseScript.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return false, fmt.Errorf("release formation %s: %w", f.ID, err)
	}
	return n == 1, nil
}

// LeaseOverdue takes over up to limit formations of queue whose deadline
// has passed, moving their deadline one FormationTimeout ahead so no other
// instance takes them at the same time.
func (s *Store) LeaseOverdue(ctx context.Context, queue string, now time.Time, limit int) ([]*Formation, error) {
	due, err := s.rdb.ZRangeByScoreWithScores(ctx, s.formingKey(queue), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("list overdue formations: %w", err)
	}
	var out []*Formation
	for _, z := range due {
		id := z.Member.(string)
		ks, args := leaseArgs(s.formingKey(queue), s.formationKey(queue, id), id, int64(z.Score), now.Add(s.set.FormationTimeout).UnixMilli())
		rec, err := leaseScript.Run(ctx, s.rdb, ks, args...).Text()
		if errors.Is(err, redis.Nil) {
			continue // someone else took it, or it is gone
		}
		if err != nil {
			return out, fmt.Errorf("lease formation %s: %w", id, err)
		}
		var f Formation
		if err := json.Unmarshal([]byte(rec), &f); err != nil {
			return out, fmt.Errorf("decode formation %s: %w", id, err)
		}
		for i := range f.Entries {
			f.Entries[i].TicketID = f.TicketIDs[i]
		}
		out = append(out, &f)
	}
	return out, nil
}

// statsHorizon is the longest stats window the counters are kept for.
const statsHorizon = 15 * time.Minute

// Stats are a queue's recent statistics.
type Stats struct {
	Waiting int
	// Formed is the number of matches formed in the window.
	Formed int64
	// Waits are the waits of tickets matched in the window (at most
	// Settings.WaitSamples of the latest), unsorted.
	Waits []time.Duration
}

// QueueStats reads a queue's statistics over the window ending at now
// (whole StatsSlot slots; window is capped at 15 minutes).
func (s *Store) QueueStats(ctx context.Context, queue string, window time.Duration, now time.Time) (Stats, error) {
	window = min(window, statsHorizon)
	last := now.UnixMilli() / StatsSlot.Milliseconds()
	n := max(int64(window/StatsSlot), 1)
	keys := make([]string, 0, n)
	for slot := last - n + 1; slot <= last; slot++ {
		keys = append(keys, s.formedKey(queue, slot))
	}
	pipe := s.rdb.Pipeline()
	hlen := pipe.HLen(ctx, s.waitingKey(queue))
	counts := pipe.MGet(ctx, keys...)
	waits := pipe.LRange(ctx, s.waitsKey(queue), 0, -1)
	if _, err := pipe.Exec(ctx); err != nil {
		return Stats{}, fmt.Errorf("read stats of %s: %w", queue, err)
	}
	st := Stats{Waiting: int(hlen.Val())}
	for _, v := range counts.Val() {
		if str, ok := v.(string); ok {
			c, _ := strconv.ParseInt(str, 10, 64)
			st.Formed += c
		}
	}
	since := now.Add(-window).UnixMilli()
	for _, w := range waits.Val() {
		at, wait, _ := strings.Cut(w, ":")
		atMs, _ := strconv.ParseInt(at, 10, 64)
		waitMs, _ := strconv.ParseInt(wait, 10, 64)
		if atMs >= since {
			st.Waits = append(st.Waits, time.Duration(waitMs)*time.Millisecond)
		}
	}
	return st, nil
}
