package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A match formed from a queue keeps a record of its formation for
// MatchRecordTTL after Complete, under the queue's hash tag:
//
//	Q:match:<match id>  hash  f: the formation record (JSON: the four
//	                          tickets as they waited, ids, players with
//	                          display names and bot flags, enqueue times);
//	                          r:<player id>: the ticket the player was put
//	                          back in the queue with (or kept) after the
//	                          match was abandoned
//
// When the match service reports the match abandoned (a first-move abort,
// eventsv1.MatchAbandoned), Requeue puts the players other than the one
// who missed their move back in the queue with their original enqueue
// time, so they sort ahead of newer tickets. Tables' matches have no
// record: there is nothing to requeue.

// MatchRecordTTL is how long the record of a match formed from a queue is
// kept. A first-move abort comes within the first moves of the four seats
// (minutes at most); after an hour a requeue would serve nobody.
const MatchRecordTTL = time.Hour

func (s *Store) matchKey(q, match string) string { return s.tag(q) + ":match:" + match }

// RequeueOutcome says what Requeue did for one player.
type RequeueOutcome int

// Requeue outcomes.
const (
	// Requeued: a searching ticket with the original enqueue time was
	// created and the player's live-ticket pointer names it.
	Requeued RequeueOutcome = iota + 1
	// Adopted: the player had enqueued again in the same queue already;
	// that ticket, still searching, got the original enqueue time.
	Adopted
	// Kept: the player has moved on (a live ticket in another queue or
	// already in a formation, a seat at a table): left as it is.
	Kept
	// Done: an earlier delivery of the event handled this player.
	Done
	// MovedOn: the player enqueued again (or joined a table) after the
	// abort and that ticket (or table) has ended already: matched,
	// cancelled or expired. Nothing is created: a ticket the player's
	// client never asked for would be matched into a match nobody joins.
	MovedOn
)

func (o RequeueOutcome) String() string {
	switch o {
	case Requeued:
		return "requeued"
	case Adopted:
		return "adopted"
	case Kept:
		return "kept"
	case Done:
		return "done"
	case MovedOn:
		return "moved_on"
	}
	return "unknown"
}

// Requeue is what Requeue did for one player of an abandoned match.
type Requeue struct {
	Player Player
	// TicketID is the player's searching ticket; when MovedOn, the ended
	// ticket the player enqueued after the abort; "" at a table.
	TicketID string
	// EnqueuedAt is the ticket's enqueue time: the original one when
	// Requeued or Adopted.
	EnqueuedAt time.Time
	Outcome    RequeueOutcome
}

// Requeue puts the players of an abandoned match, except missed (the player
// who missed their first move), back in the match's queue with their
// original enqueue time and a fresh expiry (now plus the ticket TTL), and
// returns what it did per player in seat order. A match without a record
// (a table's, an unknown one, one abandoned after MatchRecordTTL) gives
// nothing.
//
// It is idempotent per (match, player): the record remembers each player
// handled, and a requeued ticket's id is derived from the match and the
// player, so a repeated call (a redelivered event, two consumers racing)
// creates no second ticket. A player who enqueued again before Requeue ran
// keeps that ticket, given the older enqueue time if it is in the same
// queue and still searching. A player whose live-ticket pointer was
// written at or after abortedAt (the abort's time, the event's
// occurred_at) for a ticket or table that has ended is not requeued
// (MovedOn): the player enqueued after the abort and was served. A zero
// abortedAt (unknown) skips that check. The check needs the pointer: one
// gone already (a table seat given up, the pointer's TTL over) looks like
// a player who never enqueued again, who is requeued.
func (s *Store) Requeue(ctx context.Context, match, missed string, abortedAt, now time.Time) ([]Requeue, error) {
	q, f, err := s.matchRecord(ctx, match)
	if err != nil || f == nil {
		return nil, err
	}
	var out []Requeue
	for i, e := range f.Entries {
		if e.Player.ID == missed {
			continue
		}
		e.TicketID = f.TicketIDs[i]
		r, err := s.requeue(ctx, q, match, e, abortedAt, now)
		if err != nil {
			return out, fmt.Errorf("requeue %s after match %s: %w", e.Player.ID, match, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// matchRecord finds the record of a match in any queue (one pipelined read
// per queue; a match belongs to at most one). It returns a nil formation
// when there is none.
func (s *Store) matchRecord(ctx context.Context, match string) (string, *Formation, error) {
	pipe := s.rdb.Pipeline()
	cmds := make(map[string]*redis.StringCmd, len(s.queues))
	for _, q := range s.queues {
		cmds[q] = pipe.HGet(ctx, s.matchKey(q, match), "f")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return "", nil, fmt.Errorf("find the record of match %s: %w", match, err)
	}
	for q, c := range cmds {
		raw, err := c.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("find the record of match %s: %w", match, err)
		}
		var f Formation
		if err := json.Unmarshal([]byte(raw), &f); err != nil {
			return "", nil, fmt.Errorf("decode the record of match %s: %w", match, err)
		}
		return q, &f, nil
	}
	return "", nil, nil
}

// requeueTicketID is the id of the ticket that puts player back in queue
// after match: the same for every delivery of the event.
func requeueTicketID(queue, match, player string) string {
	h := sha256.Sum256([]byte("requeue\n" + match + "\n" + player))
	return strings.ToLower(idEncoding.EncodeToString(h[:10])) + "." + queueCode(queue)
}

// requeue handles one player (entry e, as they waited before the match).
func (s *Store) requeue(ctx context.Context, q, match string, e Entry, abortedAt, now time.Time) (Requeue, error) {
	rec, field := s.matchKey(q, match), "r:"+e.Player.ID
	r := Requeue{Player: e.Player}
	if prev, err := s.rdb.HGet(ctx, rec, field).Result(); err == nil {
		r.TicketID, r.Outcome = prev, Done
		return r, nil
	} else if !errors.Is(err, redis.Nil) {
		return r, fmt.Errorf("read the match record: %w", err)
	}
	id := requeueTicketID(q, match, e.Player.ID)
	// A pointer written at or after the abort names a ticket (or table)
	// the player asked for since. The ticket that formed this match is
	// older whatever the clocks say (the pointer's time is a matchmaking
	// instance's, the abort's the match service's).
	movedOn := func(target string, createdMs int64) bool {
		return !abortedAt.IsZero() && target != e.TicketID && createdMs >= abortedAt.UnixMilli()
	}
	live, err := s.pointTicket(ctx, e.Player.ID, id, now, movedOn)
	var moved *movedOnError
	switch {
	case errors.Is(err, ErrSeated):
		r.Outcome = Kept
		return r, s.mark(ctx, q, rec, field, "")
	case errors.As(err, &moved):
		r.Outcome = MovedOn
		if !strings.HasPrefix(moved.target, "table:") {
			r.TicketID = moved.target
		}
		return r, s.mark(ctx, q, rec, field, r.TicketID)
	case err != nil:
		return r, err
	case live != nil:
		return s.keep(ctx, q, rec, field, *live, e)
	}
	ne := Entry{TicketID: id, Player: e.Player, EnqueuedMs: e.EnqueuedMs, ExpiresMs: now.Add(s.set.TicketTTL).UnixMilli()}
	b, err := json.Marshal(ne)
	if err != nil {
		return r, fmt.Errorf("encode ticket: %w", err)
	}
	ks, args := requeueArgs(rec, s.waitingKey(q), s.ticketKey(q, id), field, id, b, e.Player.ID, ne.EnqueuedMs, ne.ExpiresMs, s.ticketTTL().Milliseconds())
	n, err := requeueScript.Run(ctx, s.rdb, ks, args...).Int()
	if err != nil {
		return r, fmt.Errorf("create the requeued ticket: %w", err)
	}
	switch n {
	case 1:
		r.Outcome = Requeued
	case 0:
		r.Outcome = Done // another consumer did it in the meantime
	default:
		// The record expired in the meantime: nothing to requeue, and the
		// pointer names a ticket that will never exist.
		s.dropPointer(context.WithoutCancel(ctx), s.pointerKey(e.Player.ID), id)
		r.Outcome = Kept
		return r, nil
	}
	r.TicketID, r.EnqueuedAt = id, ne.EnqueuedAt()
	return r, nil
}

// keep handles a player who has a live ticket already: one in the same
// queue, still searching and younger, gets the original enqueue time e
// had; any other is left alone.
func (s *Store) keep(ctx context.Context, q, rec, field string, live Ticket, e Entry) (Requeue, error) {
	r := Requeue{Player: e.Player, TicketID: live.ID, EnqueuedAt: live.EnqueuedAt, Outcome: Kept}
	if live.Queue != q || live.State != Searching || !live.EnqueuedAt.After(e.EnqueuedAt()) {
		return r, s.mark(ctx, q, rec, field, live.ID)
	}
	raw, err := s.rdb.HGet(ctx, s.waitingKey(q), live.ID).Bytes()
	if errors.Is(err, redis.Nil) {
		return r, s.mark(ctx, q, rec, field, live.ID) // claimed meanwhile
	}
	if err != nil {
		return r, fmt.Errorf("read ticket %s: %w", live.ID, err)
	}
	var cur Entry
	if err := json.Unmarshal(raw, &cur); err != nil {
		return r, fmt.Errorf("decode ticket %s: %w", live.ID, err)
	}
	older := cur
	older.EnqueuedMs, older.ExpiresMs = e.EnqueuedMs, cur.ExpiresAt(s.set.TicketTTL).UnixMilli()
	b, err := json.Marshal(older)
	if err != nil {
		return r, fmt.Errorf("encode ticket: %w", err)
	}
	ks, args := adoptArgs(rec, s.waitingKey(q), s.ticketKey(q, live.ID), field, live.ID, raw, b, older.EnqueuedMs, older.ExpiresMs)
	n, err := adoptScript.Run(ctx, s.rdb, ks, args...).Int()
	if err != nil {
		return r, fmt.Errorf("give ticket %s its original enqueue time: %w", live.ID, err)
	}
	if n == 1 {
		r.EnqueuedAt, r.Outcome = older.EnqueuedAt(), Adopted
	}
	return r, nil
}

// mark runs adoptScript without an entry to change: it only marks the
// player handled (with ticket id, possibly empty).
func (s *Store) mark(ctx context.Context, q, rec, field, id string) error {
	ks, args := adoptArgs(rec, s.waitingKey(q), s.ticketKey(q, id), field, id, nil, nil, 0, 0)
	if err := adoptScript.Run(ctx, s.rdb, ks, args...).Err(); err != nil {
		return fmt.Errorf("mark the player handled: %w", err)
	}
	return nil
}
