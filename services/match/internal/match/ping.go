package match

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rpcerr"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// Round trips (docs/match.md "Lag compensation"). A move that carries no
// client_think_time is compensated by its seat's round-trip estimate,
// which the service measures itself: a Ping without a token returns a
// token holding the service's send time, signed; the client sends it back
// in its next Ping at once, and the time between is one round trip of the
// seat. Each measurement is folded into the seat's estimate (an EWMA kept
// beside the match in Redis, store.RecordRoundTrip), which any instance
// serving a move of the match reads.
//
// The token is tamper-proof, so a client can only lengthen its round
// trip (by waiting before sending the token back, at most pingTokenMaxAge),
// never shorten it, and what a longer one buys is bounded by the lag
// quota, as for a false think time. Tokens are signed with HMAC-SHA256
// under one key for the deployment, kept in Redis (store.PingKey), so
// whichever instance gets the second Ping checks the first one's token.

// Round-trip constants; docs/match.md "Lag compensation" says why.
const (
	// PingInterval is how often a seated client measures its round trip
	// (PingResponse.next_ping_in).
	PingInterval = 5 * time.Second
	// pingTokenMaxAge is how long a token is accepted after it was issued:
	// the longest round trip measured.
	pingTokenMaxAge = 10 * time.Second
	// rttWeight is the weight of a new measurement in the seat's estimate.
	rttWeight = 0.25
	// rttMaxAge is how long an estimate is used after its last update (and
	// how long the match's estimates are kept): six missed measurements.
	rttMaxAge = 30 * time.Second
	// rttReadEvery is how often at most MakeMove reads a match's
	// estimates again on one instance; a new one is measured once per
	// PingInterval anyway.
	rttReadEvery = PingInterval
	// pingKeyRefresh is how often at most an instance reads the signing key
	// again after a token failed to verify (another instance may have made
	// a new one after the key was lost).
	pingKeyRefresh = time.Second
)

// ErrBadPingToken: a Ping token that is malformed, not issued for this
// match and seat, or too old.
var ErrBadPingToken = errors.New("bad ping token")

// Token layout: a format byte, the issue time (unix ms, big endian), and
// the first 16 bytes of HMAC-SHA256(key, "fk-ping" 0 match id 0 seat time).
const (
	pingTokenFormat = 1
	pingTokenMACLen = 16
	pingTokenLen    = 1 + 8 + pingTokenMACLen
)

// pingKeys caches the deployment's token key.
type pingKeys struct {
	mu      sync.Mutex
	key     []byte
	fetched time.Time
}

// pingKey returns the token key; with refresh it reads it again from the
// store unless it did so within pingKeyRefresh.
func (s *Service) pingKey(ctx context.Context, refresh bool) ([]byte, error) {
	k := &s.pingKeys
	k.mu.Lock()
	defer k.mu.Unlock()
	now := s.now()
	if k.key != nil && (!refresh || now.Sub(k.fetched) < pingKeyRefresh) {
		return k.key, nil
	}
	key, err := s.store.PingKey(ctx)
	if err != nil {
		return nil, err
	}
	k.key, k.fetched = key, now
	return key, nil
}

func pingMAC(key []byte, id string, seat rules.Seat, issued []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("fk-ping\x00" + id + "\x00"))
	m.Write([]byte{byte(seat)})
	m.Write(issued)
	return m.Sum(nil)[:pingTokenMACLen]
}

func signPing(key []byte, id string, seat rules.Seat, now time.Time) []byte {
	tok := make([]byte, 1+8, pingTokenLen)
	tok[0] = pingTokenFormat
	binary.BigEndian.PutUint64(tok[1:], uint64(now.UnixMilli()))
	return append(tok, pingMAC(key, id, seat, tok[1:9])...)
}

// checkPing returns the issue time of a token, or why it is refused:
// errMACMismatch when it is well formed but not signed by key for this
// match and seat.
func checkPing(key []byte, id string, seat rules.Seat, tok []byte) (time.Time, error) {
	if len(tok) != pingTokenLen || tok[0] != pingTokenFormat {
		return time.Time{}, rpcerr.Field(ErrBadPingToken, "token", fmt.Sprintf("malformed: send back the token of the last PingResponse unchanged (%d bytes), or none", pingTokenLen))
	}
	if !hmac.Equal(tok[9:], pingMAC(key, id, seat, tok[1:9])) {
		return time.Time{}, errMACMismatch
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(tok[1:9]))), nil
}

var errMACMismatch = rpcerr.Field(ErrBadPingToken, "token", "not issued for this match and seat: send a Ping without a token to start again")

// PingResult is the answer to a Ping.
type PingResult struct {
	// Token is the token to send back.
	Token []byte
	// RoundTrip is the round trip the Ping completed (0 without a token).
	RoundTrip time.Duration
	// Estimate is the seat's estimate after it (0 without a token).
	Estimate time.Duration
	// Measured says whether the Ping carried a token (RoundTrip and
	// Estimate are set).
	Measured bool
	// Next is when to start the next measurement, from now.
	Next time.Duration
}

// Ping is one call of a round-trip measurement of the caller's seat:
// without a token it starts one, with the token of the previous answer it
// folds the time since that answer into the seat's estimate.
func (s *Service) Ping(ctx context.Context, c Caller, id string, token []byte) (PingResult, error) {
	if _, err := store.PartitionOf(id); err != nil {
		return PingResult{}, ErrNotFound
	}
	seat, err := s.seatOf(ctx, c, id)
	if err != nil {
		return PingResult{}, err
	}
	key, err := s.pingKey(ctx, false)
	if err != nil {
		return PingResult{}, err
	}
	now := s.clockNow()
	res := PingResult{Next: PingInterval}
	if len(token) > 0 {
		issued, err := checkPing(key, id, seat, token)
		if errors.Is(err, errMACMismatch) {
			// The key may have been made again since this instance read it.
			if fresh, ferr := s.pingKey(ctx, true); ferr == nil && !bytes.Equal(fresh, key) {
				key = fresh
				issued, err = checkPing(key, id, seat, token)
			}
		}
		if err != nil {
			return PingResult{}, err
		}
		rtt := now.Sub(issued)
		switch {
		case rtt > pingTokenMaxAge:
			return PingResult{}, rpcerr.Field(ErrBadPingToken, "token", fmt.Sprintf("expired (issued %v ago, accepted for %v): send it back at once on receipt; send a Ping without a token to start again", rtt.Truncate(time.Millisecond), pingTokenMaxAge))
		case rtt < 0:
			// Issued by an instance whose clock is ahead of this one's.
			rtt = 0
		}
		est, err := s.store.RecordRoundTrip(ctx, id, store.RoundTripUpdate{Seat: int(seat), Now: now, Sample: rtt,
			Weight: rttWeight, MaxAge: rttMaxAge, TTL: rttMaxAge})
		switch {
		case errors.Is(err, store.ErrMatchOver):
			return PingResult{}, ErrFinished
		case errors.Is(err, store.ErrNotFound):
			return PingResult{}, ErrNotFound
		case err != nil:
			return PingResult{}, err
		}
		res.RoundTrip, res.Estimate, res.Measured = rtt, est, true
	}
	res.Token = signPing(key, id, seat, now)
	return res, nil
}

// seatOf returns the caller's seat in a running match (a player holds one
// seat at most: validatePlayers).
func (s *Service) seatOf(ctx context.Context, c Caller, id string) (rules.Seat, error) {
	e := s.cache.lock(id)
	defer e.unlock()
	if !e.loaded {
		if _, err := s.load(ctx, e, ""); err != nil {
			return 0, err
		}
	}
	seats := e.seatsOf(c)
	switch {
	case len(seats) == 0:
		return 0, ErrNotPlayer
	case e.rec.Status != StatusActive:
		return 0, ErrFinished
	}
	return seats[0], nil
}

// roundTrip returns the current round-trip estimate of a seat of a
// locked entry, for MakeMove. The match's estimates are read at most once
// per rttReadEvery per instance: a client that plays fast without think
// times costs one read per few seconds, not one per move. A failed read
// counts as none (the move is then charged in full, as before round trips
// were measured).
func (s *Service) roundTrip(ctx context.Context, e *entry, seat rules.Seat, now time.Time) (time.Duration, bool) {
	if e.rttsRead.IsZero() || now.Sub(e.rttsRead) >= rttReadEvery || now.Before(e.rttsRead) {
		rts, err := s.store.RoundTrips(ctx, e.id)
		if err != nil {
			s.log.WarnContext(ctx, "round trips not read", "match", e.id, "err", err)
			return 0, false
		}
		e.rtts, e.rttsRead = rts, now
	}
	rt, ok := e.rtts[int(seat)]
	if !ok || now.Sub(rt.At) > rttMaxAge {
		return 0, false
	}
	return rt.Estimate, true
}
