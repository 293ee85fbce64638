package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
)

// Round trips of the seated players (docs/match.md "Lag compensation").
// Like presence they live beside the match, not in its versioned record,
// so a measurement never conflicts with a move:
//
//   - {fk:pNN}:m:<id>:rt, a hash: "<seat>" is the seat's round-trip
//     estimate and when it was last updated, "<µs>:<unix ms>". Every
//     update sets the hash's TTL, so it disappears a while after the last
//     Ping of any seat; a seat's estimate is used only while its own
//     update is recent (the reader checks the time).
//   - {fk:keeper}:ping-key, a string: the key that signs Ping tokens,
//     created by the first instance that needs it and read by every other,
//     so a token issued by one instance is accepted by all.

// Outcomes of RecordRoundTrip besides a new estimate.
var (
	// ErrMatchOver: the match is no longer running.
	ErrMatchOver = errors.New("match is not running")
)

// Slots of roundTripScript.
const (
	rttKRTT = iota
	rttKMatch
	rttNKeys
)

const (
	rttASeat = iota
	rttANow
	rttASample
	rttAWeight
	rttAMaxAge
	rttATTL
	rttNArgs
)

var rttLayout = redisconn.Layout{
	Name: "round-trip",
	Keys: []string{rttKRTT: "K_RTT", rttKMatch: "K_MATCH"},
	Args: []string{rttASeat: "A_SEAT", rttANow: "A_NOW", rttASample: "A_SAMPLE", rttAWeight: "A_WEIGHT",
		rttAMaxAge: "A_MAX_AGE", rttATTL: "A_TTL"},
}

// roundTripScript folds one measured round trip (A_SAMPLE, µs) of seat
// A_SEAT into its estimate: estimate + A_WEIGHT × (sample − estimate), or
// the sample itself when the seat has no estimate updated within A_MAX_AGE
// ms of A_NOW. Only while the match runs (its hash has no TTL): returns
// {0} when the match is gone, {1} when it is over, {2, estimate} otherwise.
var roundTripScript = rttLayout.Script(roundTripLua)

const roundTripLua = `
local ttl = redis.call('PTTL', KEYS[K_MATCH])
if ttl == -2 then return {0} end
if ttl ~= -1 then return {1} end
local now = tonumber(ARGV[A_NOW])
local est = tonumber(ARGV[A_SAMPLE])
local old = redis.call('HGET', KEYS[K_RTT], ARGV[A_SEAT])
if old then
  local e, at = string.match(old, '^(%d+):(%d+)$')
  if e and now - tonumber(at) <= tonumber(ARGV[A_MAX_AGE]) then
    e = tonumber(e)
    est = math.floor(e + (est - e) * tonumber(ARGV[A_WEIGHT]) + 0.5)
  end
end
redis.call('HSET', KEYS[K_RTT], ARGV[A_SEAT], string.format('%d:%d', est, now))
redis.call('PEXPIRE', KEYS[K_RTT], ARGV[A_TTL])
return {2, est}
`

// RoundTripUpdate is one measured round trip to fold into a seat's
// estimate.
type RoundTripUpdate struct {
	// Seat is the seat measured.
	Seat int
	// Now is when it was measured.
	Now time.Time
	// Sample is the round trip measured.
	Sample time.Duration
	// Weight is the share of the sample in the new estimate (0 to 1).
	Weight float64
	// MaxAge is how old an estimate may be and still be averaged with the
	// sample (an older one is replaced by it).
	MaxAge time.Duration
	// TTL is how long the match's round trips are kept after this update.
	TTL time.Duration
}

// RecordRoundTrip folds a measured round trip into the seat's estimate and
// returns the new estimate. ErrNotFound: the match is gone; ErrMatchOver:
// it is not running.
func (s *Store) RecordRoundTrip(ctx context.Context, id string, u RoundTripUpdate) (time.Duration, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return 0, err
	}
	k := make([]string, rttNKeys)
	k[rttKRTT] = s.keys.roundTrips(p, id)
	k[rttKMatch] = s.keys.match(p, id)
	a := make([]any, rttNArgs)
	a[rttASeat] = u.Seat
	a[rttANow] = u.Now.UnixMilli()
	a[rttASample] = u.Sample.Microseconds()
	a[rttAWeight] = strconv.FormatFloat(u.Weight, 'f', -1, 64)
	a[rttAMaxAge] = u.MaxAge.Milliseconds()
	a[rttATTL] = max(u.TTL.Milliseconds(), 1)
	res, err := roundTripScript.Run(ctx, s.rdb, k, a...).Slice()
	if err != nil {
		return 0, fmt.Errorf("record round trip of %s: %w", id, err)
	}
	code, _ := res[0].(int64)
	switch {
	case code == 0:
		return 0, ErrNotFound
	case code == 1:
		return 0, ErrMatchOver
	case len(res) < 2:
		return 0, fmt.Errorf("record round trip of %s: reply %v", id, res)
	}
	us, _ := res[1].(int64)
	return time.Duration(us) * time.Microsecond, nil
}

// RoundTrip is a seat's stored round-trip estimate.
type RoundTrip struct {
	// Estimate is the seat's round trip.
	Estimate time.Duration
	// At is when it was last updated.
	At time.Time
}

// RoundTrips reads a match's round-trip estimates by seat (seats never
// measured, or all of them once the hash expired, are missing).
func (s *Store) RoundTrips(ctx context.Context, id string) (map[int]RoundTrip, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return nil, err
	}
	// Through the commit batcher: under load the read shares a pipeline
	// with the commits, as the move that needs it will.
	cmd := redis.NewMapStringStringCmd(ctx, "hgetall", s.keys.roundTrips(p, id))
	_ = s.commits.Process(ctx, cmd)
	h, err := cmd.Result()
	if err != nil {
		return nil, fmt.Errorf("read round trips of %s: %w", id, err)
	}
	out := make(map[int]RoundTrip, len(h))
	for k, v := range h {
		seat, err := strconv.Atoi(k)
		e, at, ok := strings.Cut(v, ":")
		if err != nil || !ok {
			continue
		}
		us, err1 := strconv.ParseInt(e, 10, 64)
		ms, err2 := strconv.ParseInt(at, 10, 64)
		if err1 != nil || err2 != nil || us < 0 {
			continue
		}
		out[seat] = RoundTrip{Estimate: time.Duration(us) * time.Microsecond, At: time.UnixMilli(ms)}
	}
	return out, nil
}

// pingKeyLen is the length of the Ping token key, in bytes.
const pingKeyLen = 32

// PingKey returns the key that signs Ping tokens, creating it (random)
// if no instance did yet.
func (s *Store) PingKey(ctx context.Context) ([]byte, error) {
	key := s.keys.pingKey()
	b := make([]byte, pingKeyLen)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	if err := s.rdb.SetNX(ctx, key, b, 0).Err(); err != nil {
		return nil, fmt.Errorf("create ping key: %w", err)
	}
	v, err := s.rdb.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, errors.New("read ping key: deleted while read")
	}
	if err != nil {
		return nil, fmt.Errorf("read ping key: %w", err)
	}
	if len(v) < 16 {
		return nil, fmt.Errorf("read ping key: %d bytes, want at least 16", len(v))
	}
	return v, nil
}
