// Package rematch keeps rematch offers in Redis (standalone or cluster).
//
// An offer belongs to one finished match and lives in one hash,
//
//	mm:rematch:{<match id>}   s  state: O offered, A all humans accepted
//	                             (the new match is being created), S started,
//	                             D declined, X expired
//	                          h  the humans who must accept (JSON list)
//	                          a:<player id>  present once that human accepted
//	                          e  expiry (unix ms): the end of the window
//	                          v  version, +1 on every change
//	                          d  who declined (D)
//	                          n  the new match id (S)
//
// so every change is one Lua script on one key. The first OfferRematch
// (or DeclineRematch) creates the hash; the window runs from then. The hash
// is kept for Retention after the window, so late callers learn the final
// state; after that a new offer for the same match could start again.
//
// Guarantees kept here: the last accept moves the offer to A exactly once
// (whoever sees A creates the match with a request id derived from the old
// match id, so concurrent or repeated creations are one match); an offer
// in A or S can no longer expire or be declined; an offer in D or X never
// changes again. Expiry is decided by the caller's clock against e: a
// script told a time past e turns O into X.
package rematch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
)

// State is an offer's life-cycle state, as stored.
type State byte

// Offer states.
const (
	// Offered: waiting for the other humans.
	Offered State = 'O'
	// Accepted: every human accepted; the new match is being created.
	// Clients see it as offered with every human accepted.
	Accepted State = 'A'
	Started  State = 'S'
	Declined State = 'D'
	Expired  State = 'X'
)

// Final reports whether the state never changes again.
func (s State) Final() bool { return s == Started || s == Declined || s == Expired }

// ErrNotFound reports that a match has no offer.
var ErrNotFound = errors.New("no rematch offer for this match")

// Offer is a rematch offer as stored.
type Offer struct {
	MatchID string
	State   State
	// Humans are the players who must accept, in seat order.
	Humans []string
	// AcceptedBy are the humans who accepted, in seat order.
	AcceptedBy []string
	ExpiresAt  time.Time
	Version    uint64
	DeclinedBy string
	NewMatchID string
}

// Store reads and writes offers.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	// Window is how long an offer waits for every human.
	window time.Duration
	// retention is how long a hash stays after the window.
	retention time.Duration
}

// Retention is how long an offer stays readable after its window.
const Retention = time.Hour

// New returns a Store; prefix is prepended to every key (tests use one per
// test).
func New(rdb redis.UniversalClient, prefix string, window time.Duration) *Store {
	return &Store{rdb: rdb, prefix: prefix, window: window, retention: Retention}
}

// Window is how long an offer waits for every human.
func (s *Store) Window() time.Duration { return s.window }

func (s *Store) key(matchID string) string { return s.prefix + "mm:rematch:{" + matchID + "}" }

// RequestID is the CreateMatch request id of the rematch of a match: the
// same for every instance and every retry, so the match service creates
// one match however many callers try.
func RequestID(matchID string) string { return "rematch-" + matchID }

// Offer records player's offer (or acceptance) of a rematch of matchID,
// whose humans are humans (in seat order; player among them), creating
// the offer if there is none. It returns the offer after the call: the
// caller refuses D and X, and creates the match on A.
func (s *Store) Offer(ctx context.Context, matchID, player string, humans []string, now time.Time) (Offer, error) {
	return s.run(ctx, offerScript, matchID, player, humans, now)
}

// Decline records player's refusal: an offer still waiting (or none yet)
// becomes D. It returns the offer after the call (A, S and X unchanged).
func (s *Store) Decline(ctx context.Context, matchID, player string, humans []string, now time.Time) (Offer, error) {
	return s.run(ctx, declineScript, matchID, player, humans, now)
}

func (s *Store) run(ctx context.Context, script *redisconn.Script, matchID, player string, humans []string, now time.Time) (Offer, error) {
	h, err := json.Marshal(humans)
	if err != nil {
		return Offer{}, fmt.Errorf("encode humans: %w", err)
	}
	k, a := changeArgs(s.key(matchID), player, h, now.UnixMilli(), now.Add(s.window).UnixMilli(), (s.window + s.retention).Milliseconds())
	res, err := script.Run(ctx, s.rdb, k, a...).Slice()
	if err != nil {
		return Offer{}, fmt.Errorf("rematch of %s: %w", matchID, err)
	}
	return parse(matchID, res)
}

// Started records the new match of an offer in A (and leaves any other
// offer unchanged); it returns the offer after the call.
func (s *Store) Started(ctx context.Context, matchID, newMatchID string) (Offer, error) {
	k, a := startedArgs(s.key(matchID), newMatchID)
	res, err := startedScript.Run(ctx, s.rdb, k, a...).Slice()
	if err != nil {
		return Offer{}, fmt.Errorf("start rematch of %s: %w", matchID, err)
	}
	return parse(matchID, res)
}

// Get reads an offer as it is at now: an offer past its window reads as
// X even before a script wrote that.
func (s *Store) Get(ctx context.Context, matchID string, now time.Time) (Offer, error) {
	h, err := s.rdb.HGetAll(ctx, s.key(matchID)).Result()
	if err != nil {
		return Offer{}, fmt.Errorf("read rematch of %s: %w", matchID, err)
	}
	if len(h) == 0 {
		return Offer{}, ErrNotFound
	}
	o, err := fromHash(matchID, h)
	if err != nil {
		return Offer{}, err
	}
	if o.State == Offered && !now.Before(o.ExpiresAt) {
		o.State = Expired
	}
	return o, nil
}

// parse reads a script's reply: the hash as HGETALL returns it.
func parse(matchID string, res []any) (Offer, error) {
	if len(res)%2 != 0 {
		return Offer{}, fmt.Errorf("rematch of %s: odd reply %v", matchID, res)
	}
	h := make(map[string]string, len(res)/2)
	for i := 0; i < len(res); i += 2 {
		k, _ := res[i].(string)
		v, _ := res[i+1].(string)
		h[k] = v
	}
	return fromHash(matchID, h)
}

func fromHash(matchID string, h map[string]string) (Offer, error) {
	o := Offer{MatchID: matchID, DeclinedBy: h["d"], NewMatchID: h["n"]}
	if st := h["s"]; len(st) == 1 {
		o.State = State(st[0])
	}
	if err := json.Unmarshal([]byte(h["h"]), &o.Humans); err != nil {
		return Offer{}, fmt.Errorf("rematch of %s: humans %q: %w", matchID, h["h"], err)
	}
	for _, p := range o.Humans {
		if _, ok := h["a:"+p]; ok {
			o.AcceptedBy = append(o.AcceptedBy, p)
		}
	}
	exp, _ := strconv.ParseInt(h["e"], 10, 64)
	o.ExpiresAt = time.UnixMilli(exp)
	o.Version, _ = strconv.ParseUint(h["v"], 10, 64)
	if !slices.Contains([]State{Offered, Accepted, Started, Declined, Expired}, o.State) {
		return Offer{}, fmt.Errorf("rematch of %s: unknown state %q", matchID, h["s"])
	}
	return o, nil
}

// String describes a state for logs.
func (s State) String() string {
	switch s {
	case Offered:
		return "offered"
	case Accepted:
		return "accepted"
	case Started:
		return "started"
	case Declined:
		return "declined"
	case Expired:
		return "expired"
	}
	return "unknown"
}
