package store

// The bot lobby: how a private table (or a rematch) gets real bots.
//
// Bots are ordinary clients (cmd/internal/botpool): they enqueue and follow
// their ticket to a match; the matchmaker never plays for them. Besides the
// public queues, a bot pool may park some of its bots in a hidden lobby
// queue per bot level, LobbyQueue(level) ("bots/greedy"). Nothing forms
// matches there; instead a caller that needs n bots of a level
//
//  1. ReserveBots(level, holder, n): atomically takes n waiting lobby
//     tickets out of the lobby (state Forming, formation = holder) and
//     records the reservation under holder. A second call with the same
//     holder returns the same bots, so a retry after a crash (or a
//     concurrent caller doing the same start) never takes other bots.
//  2. creates the match with those bots' players (with an idempotent
//     request id),
//  3. CompleteBots(level, holder, match, seats): marks the reserved tickets
//     Matched with the match and each bot's seat, and wakes their
//     WatchTicket streams. The bots then play as after any queue match.
//
// ReleaseBots puts the reserved tickets back into the lobby when the match
// will not be created. A reservation never completed nor released (its
// caller died and nobody retried) leaves its bots Forming until their
// ticket records expire (TicketTTL + 2 FormationTimeout + Retention); the
// bots' WatchTicket then fails with NOT_FOUND and they enqueue again.
//
// Keys, under the lobby's queue tag {mm:bots/<level>} (shown as L):
//
//	L:w                the lobby's waiting tickets (as any queue's Q:w)
//	L:t:<ticket id>    the tickets
//	L:res:<holder>     string  JSON [[ticket id, waiting entry], ...]

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoBots means the lobby of a level has fewer waiting bots than asked.
var ErrNoBots = errors.New("not enough free bots")

// lobbyPrefix starts every lobby queue's name; no configured queue can
// start so (a queue name is "<rule set>/<time control>" and "bots" is no
// rule set).
const lobbyPrefix = "bots/"

// LobbyQueue is the hidden queue in which bots of level wait to be
// reserved; bots enqueue into it by this name.
func LobbyQueue(level string) string { return lobbyPrefix + level }

// LobbyLevel returns the level of a lobby queue name (ok false for any
// other queue).
func LobbyLevel(queue string) (level string, ok bool) {
	return strings.CutPrefix(queue, lobbyPrefix)
}

// reservationTTL keeps a reservation readable long after its match was
// created, so a retry of the same start finds the same bots.
const reservationTTL = 2 * time.Hour

// maxCandidates bounds the tickets one reserve script looks at.
const maxCandidates = 64

func (s *Store) reservationKey(level, holder string) string {
	return s.tag(LobbyQueue(level)) + ":res:" + holder
}

// ReserveBots reserves n waiting bots of level for holder (see the file
// comment) and returns their waiting entries, in reservation order. It
// returns the same bots for the same holder while the reservation exists.
// With fewer than n bots waiting it reserves none and returns ErrNoBots.
func (s *Store) ReserveBots(ctx context.Context, level, holder string, n int) ([]Entry, error) {
	q := LobbyQueue(level)
	if _, ok := s.queues[queueCode(q)]; !ok {
		return nil, fmt.Errorf("%w: no lobby for bot level %q", ErrUnknownQueue, level)
	}
	if n < 1 {
		return nil, nil
	}
	res := s.reservationKey(level, holder)
	for attempt := 0; attempt < 5; attempt++ {
		ids, err := s.rdb.HKeys(ctx, s.waitingKey(q)).Result()
		if err != nil {
			return nil, fmt.Errorf("list lobby %s: %w", level, err)
		}
		rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		ids = ids[:min(len(ids), maxCandidates)]
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = s.ticketKey(q, id)
		}
		k, a := reserveArgs(s.waitingKey(q), res, n, holder, reservationTTL.Milliseconds(), keys, ids)
		rec, err := reserveScript.Run(ctx, s.rdb, k, a...).Text()
		switch {
		case errors.Is(err, redis.Nil):
			if len(ids) < n {
				return nil, fmt.Errorf("%w: %d bots of level %q wait, %d needed", ErrNoBots, len(ids), level, n)
			}
			continue // some candidates were taken meanwhile: read again
		case err != nil:
			return nil, fmt.Errorf("reserve bots of level %s: %w", level, err)
		}
		return decodeReservation(rec)
	}
	return nil, fmt.Errorf("%w: bots of level %q kept being taken by others", ErrNoBots, level)
}

func decodeReservation(rec string) ([]Entry, error) {
	var pairs [][2]string
	if err := json.Unmarshal([]byte(rec), &pairs); err != nil {
		return nil, fmt.Errorf("decode bot reservation: %w", err)
	}
	out := make([]Entry, len(pairs))
	for i, p := range pairs {
		if err := json.Unmarshal([]byte(p[1]), &out[i]); err != nil {
			return nil, fmt.Errorf("decode reserved bot %s: %w", p[0], err)
		}
		out[i].TicketID = p[0]
	}
	return out, nil
}

// CompleteBots marks the bots reserved for holder matched: seats maps each
// reserved ticket id to its seat (1-4) in match. Completing twice with the
// same match changes nothing. It wakes the bots' WatchTicket streams.
func (s *Store) CompleteBots(ctx context.Context, level, holder, match string, seats map[string]int) error {
	q := LobbyQueue(level)
	ids := make([]string, 0, len(seats))
	keys := make([]string, 0, len(seats))
	seatArgs := make([]int, 0, len(seats))
	for id, seat := range seats {
		ids = append(ids, id)
		keys = append(keys, s.ticketKey(q, id))
		seatArgs = append(seatArgs, seat)
	}
	k, a := completeBotsArgs(holder, match, s.set.Retention.Milliseconds(), keys, seatArgs)
	n, err := completeBotsScript.Run(ctx, s.rdb, k, a...).Int()
	if err != nil {
		return fmt.Errorf("complete bots of %s: %w", holder, err)
	}
	if n != len(ids) {
		return fmt.Errorf("complete bots of %s: %d of %d tickets were still reserved for it", holder, n, len(ids))
	}
	s.publish(ctx, q, ids)
	return nil
}

// ReleaseBots returns the bots reserved for holder to the lobby (those
// still reserved; completed ones stay matched) and forgets the
// reservation.
func (s *Store) ReleaseBots(ctx context.Context, level, holder string) error {
	q := LobbyQueue(level)
	res := s.reservationKey(level, holder)
	rec, err := s.rdb.Get(ctx, res).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read bot reservation %s: %w", holder, err)
	}
	entries, err := decodeReservation(rec)
	if err != nil {
		return err
	}
	keys := make([]string, len(entries))
	ids := make([]string, len(entries))
	raws := make([]string, len(entries))
	for i, e := range entries {
		ids[i], keys[i] = e.TicketID, s.ticketKey(q, e.TicketID)
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode bot entry: %w", err)
		}
		raws[i] = string(b)
	}
	k, a := releaseBotsArgs(s.waitingKey(q), res, holder, keys, ids, raws)
	if err := releaseBotsScript.Run(ctx, s.rdb, k, a...).Err(); err != nil {
		return fmt.Errorf("release bots of %s: %w", holder, err)
	}
	return nil
}

// ExpireLobbies expires the lobby tickets that have waited longer than the
// ticket TTL, as formation rounds do in the queues (nothing forms matches
// in a lobby), so a bot that died leaves no ghost in the lobby for long and
// a live one enqueues afresh. It returns how many expired.
func (s *Store) ExpireLobbies(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for _, level := range s.set.BotLevels {
		q := LobbyQueue(level)
		entries, err := s.Waiting(ctx, q)
		if err != nil {
			return total, err
		}
		var old []string
		for _, e := range entries {
			if !now.Before(e.ExpiresAt(s.set.TicketTTL)) {
				old = append(old, e.TicketID)
			}
		}
		n, err := s.Expire(ctx, q, old)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
