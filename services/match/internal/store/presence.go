package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
)

// Presence of the seated players (docs/match.md "Disconnects"). It lives
// beside the match, not in its versioned record, so that refreshing it
// never conflicts with a move and the record format does not change:
//
//   - {fk:pNN}:m:<id>:pr, a hash: "s<seat>" is the seat's presence lease
//     (unix ms), pushed forward by every instance holding an open watch
//     stream of the seat's player; "g<seat>", present while the seat is
//     shown as disconnected, is when its grace ends (unix ms).
//   - {fk:pNN}:presence, a sorted set per partition: match id scored by the
//     earliest moment something is due in its hash (a lease of a connected
//     seat runs out, or a grace ends), scanned by the keeper beside the
//     clock deadlines.
//
// Every change is one script on the partition's slot, which recomputes
// the match's score from the whole hash (at most eight small fields).

// Slots of presenceScript.
const (
	presenceKPresence = iota
	presenceKDue
	presenceKMatch
	presenceNKeys
)

const (
	presenceAID = iota
	presenceAOp
	presenceANow
	presenceAValue
	presenceNArgs
)

var presenceLayout = redisconn.Layout{
	Name: "presence",
	Keys: []string{
		presenceKPresence: "K_PRESENCE",
		presenceKDue:      "K_DUE",
		presenceKMatch:    "K_MATCH",
	},
	Args: []string{
		presenceAID:    "A_ID",
		presenceAOp:    "A_OP",
		presenceANow:   "A_NOW",
		presenceAValue: "A_VALUE",
	},
	ArgTail: redisconn.Tail{Name: "A_SEATS"},
}

// The operations of presenceScript.
const (
	opTouch = "touch"
	opMark  = "mark"
	opClear = "clear"
	opDrop  = "drop"
)

// presenceScript changes a match's presence, by A_OP:
//   - touch: sets the leases of the seats A_SEATS to A_VALUE and ends their
//     disconnection if they were shown disconnected (returned). Only while
//     the match runs: a finished match's hash has a TTL (or is gone), and
//     is left alone.
//   - mark: shows the seat A_SEATS disconnected with grace end A_VALUE if
//     its lease ran out by A_NOW and it is not shown so yet (returned when
//     done): a touch that came first wins.
//   - clear: forgets the seats A_SEATS (out of the game, or flagged).
//   - drop: forgets the match.
//
// Then it scores the match in the due set by the earliest lease of a seat
// not shown disconnected and the earliest grace end, or removes it.
var presenceScript = presenceLayout.Script(presenceLua)

const presenceLua = `
local op = ARGV[A_OP]
local out = {}
if op == 'drop' then
  redis.call('DEL', KEYS[K_PRESENCE])
  redis.call('ZREM', KEYS[K_DUE], ARGV[A_ID])
  return out
elseif op == 'touch' then
  if redis.call('PTTL', KEYS[K_MATCH]) ~= -1 then return out end
  for i = A_SEATS, #ARGV do
    redis.call('HSET', KEYS[K_PRESENCE], 's' .. ARGV[i], ARGV[A_VALUE])
    if redis.call('HDEL', KEYS[K_PRESENCE], 'g' .. ARGV[i]) == 1 then out[#out + 1] = ARGV[i] end
  end
elseif op == 'mark' then
  local seat = ARGV[A_SEATS]
  local lease = tonumber(redis.call('HGET', KEYS[K_PRESENCE], 's' .. seat))
  if lease and lease <= tonumber(ARGV[A_NOW]) and redis.call('HEXISTS', KEYS[K_PRESENCE], 'g' .. seat) == 0 then
    redis.call('HSET', KEYS[K_PRESENCE], 'g' .. seat, ARGV[A_VALUE])
    out[1] = seat
  end
elseif op == 'clear' then
  for i = A_SEATS, #ARGV do
    redis.call('HDEL', KEYS[K_PRESENCE], 's' .. ARGV[i], 'g' .. ARGV[i])
  end
else
  return redis.error_reply('ERR script presence: unknown operation')
end
local f = redis.call('HGETALL', KEYS[K_PRESENCE])
local h = {}
for i = 1, #f, 2 do h[f[i]] = tonumber(f[i + 1]) end
local due = nil
for k, v in pairs(h) do
  local t = nil
  if string.sub(k, 1, 1) == 'g' then
    t = v
  elseif h['g' .. string.sub(k, 2)] == nil then
    t = v
  end
  if t and (due == nil or t < due) then due = t end
end
if due then
  redis.call('ZADD', KEYS[K_DUE], due, ARGV[A_ID])
else
  redis.call('ZREM', KEYS[K_DUE], ARGV[A_ID])
end
return out
`

// presenceArgs lays out a run of presenceScript.
func (s *Store) presenceArgs(id, op string, now, value int64, seats []int) ([]string, []any, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return nil, nil, err
	}
	k := make([]string, presenceNKeys)
	k[presenceKPresence] = s.keys.presence(p, id)
	k[presenceKDue] = s.keys.presenceDue(p)
	k[presenceKMatch] = s.keys.match(p, id)
	a := make([]any, presenceNArgs, presenceNArgs+len(seats))
	a[presenceAID] = id
	a[presenceAOp] = op
	a[presenceANow] = now
	a[presenceAValue] = value
	for _, st := range seats {
		a = append(a, st)
	}
	return k, a, nil
}

func seatsOf(reply any) []int {
	vs, _ := reply.([]any)
	out := make([]int, 0, len(vs))
	for _, v := range vs {
		if s, ok := v.(string); ok {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// Touch is one match's seats whose players hold open watch streams on
// this instance.
type Touch struct {
	ID    string
	Seats []int
}

// TouchPresence pushes the presence leases of the given seats to until,
// one script per match in one pipeline, and returns, per match id, the
// seats that were shown disconnected and are connected again. Matches that
// are not running are left alone. When some matches fail it returns the
// others and an error.
func (s *Store) TouchPresence(ctx context.Context, touches []Touch, until time.Time) (map[string][]int, error) {
	cmds := make([]*redis.Cmd, 0, len(touches))
	pipe := s.rdb.Pipeline()
	for _, t := range touches {
		k, a, err := s.presenceArgs(t.ID, opTouch, 0, until.UnixMilli(), t.Seats)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, presenceScript.Cmd(ctx, k, a...))
		_ = pipe.Process(ctx, cmds[len(cmds)-1])
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	presenceScript.Retry(ctx, s.rdb, cmds)
	back := map[string][]int{}
	var errs []error
	for i, c := range cmds {
		res, err := c.Result()
		if err != nil {
			errs = append(errs, fmt.Errorf("presence of %s: %w", touches[i].ID, err))
			continue
		}
		if seats := seatsOf(res); len(seats) > 0 {
			back[touches[i].ID] = seats
		}
	}
	return back, errors.Join(errs...)
}

// SeatPresence is one seat's stored presence.
type SeatPresence struct {
	// Lease is until when the seat counts as connected.
	Lease time.Time
	// GraceEnd, when not zero, is when the seat shown disconnected runs out
	// of time.
	GraceEnd time.Time
}

// Presence reads a match's presence by seat (seats whose player never
// opened a watch stream are missing).
func (s *Store) Presence(ctx context.Context, id string) (map[int]SeatPresence, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return nil, err
	}
	h, err := s.rdb.HGetAll(ctx, s.keys.presence(p, id)).Result()
	if err != nil {
		return nil, fmt.Errorf("read presence of %s: %w", id, err)
	}
	out := map[int]SeatPresence{}
	for k, v := range h {
		if len(k) < 2 {
			continue
		}
		seat, err1 := strconv.Atoi(k[1:])
		ms, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		sp := out[seat]
		switch k[0] {
		case 's':
			sp.Lease = time.UnixMilli(ms)
		case 'g':
			sp.GraceEnd = time.UnixMilli(ms)
		}
		out[seat] = sp
	}
	return out, nil
}

// MarkDisconnected shows seat disconnected with the given grace end if its
// lease ran out by now and it is not shown so already; it reports whether
// it did.
func (s *Store) MarkDisconnected(ctx context.Context, id string, seat int, now, graceEnd time.Time) (bool, error) {
	k, a, err := s.presenceArgs(id, opMark, now.UnixMilli(), graceEnd.UnixMilli(), []int{seat})
	if err != nil {
		return false, err
	}
	res, err := presenceScript.Run(ctx, s.rdb, k, a...).Result()
	if err != nil {
		return false, fmt.Errorf("mark %s seat %d disconnected: %w", id, seat, err)
	}
	return len(seatsOf(res)) == 1, nil
}

// ClearPresence forgets the presence of the given seats.
func (s *Store) ClearPresence(ctx context.Context, id string, seats ...int) error {
	k, a, err := s.presenceArgs(id, opClear, 0, 0, seats)
	if err != nil {
		return err
	}
	if err := presenceScript.Run(ctx, s.rdb, k, a...).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("clear presence of %s: %w", id, err)
	}
	return nil
}

// DropPresence forgets a match's presence (it ended, or is gone).
func (s *Store) DropPresence(ctx context.Context, id string) error {
	k, a, err := s.presenceArgs(id, opDrop, 0, 0, nil)
	if err != nil {
		return err
	}
	if err := presenceScript.Run(ctx, s.rdb, k, a...).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("drop presence of %s: %w", id, err)
	}
	return nil
}
