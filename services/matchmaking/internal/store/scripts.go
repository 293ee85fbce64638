package store

import "github.com/redis/go-redis/v9"

// Every script touches only keys of one queue (one hash tag), passed in
// KEYS, so each runs atomically on standalone Redis and on a cluster node.
// Ticket states are the single letters of the State constants.

// enqueueScript: KEYS w, t  ARGV id, entry, player, enqueuedMs, ttlMs.
var enqueueScript = redis.NewScript(`
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], 'p', ARGV[3], 'e', ARGV[4], 's', 'S')
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
`)

// claimScript claims whole groups: a group is taken only if all its tickets
// are still waiting, so no ticket ever lands in two formations.
// KEYS w, r, forming, then per group: formation key, 4 ticket keys.
// ARGV deadlineMs, recordTTLms, then per group: formation id, record, 4 ticket ids.
// Returns one 0/1 per group.
var claimScript = redis.NewScript(`
local out = {}
local g = 0
local k = 4
local a = 3
while k <= #KEYS do
  g = g + 1
  local ok = true
  for i = 0, 3 do
    if redis.call('HEXISTS', KEYS[1], ARGV[a + 2 + i]) == 0 then ok = false end
  end
  if ok then
    for i = 0, 3 do
      local id = ARGV[a + 2 + i]
      redis.call('HDEL', KEYS[1], id)
      redis.call('HDEL', KEYS[2], id)
      redis.call('HSET', KEYS[k + 1 + i], 's', 'F', 'f', ARGV[a])
    end
    redis.call('SET', KEYS[k], ARGV[a + 1], 'PX', ARGV[2])
    redis.call('ZADD', KEYS[3], ARGV[1], ARGV[a])
    out[g] = 1
  else
    out[g] = 0
  end
  k = k + 5
  a = a + 6
end
return out
`)

// completeScript marks the tickets of formations matched.
// KEYS forming, waits, formedCounter, then per formation: formation key, 4 ticket keys.
// ARGV retentionMs, counterTTLms, waitsCap, then per formation: formation id,
// match id, 4 seats, 4 wait samples.
// A formation already completed or released is skipped (0).
var completeScript = redis.NewScript(`
local out = {}
local g = 0
local k = 4
local a = 4
while k <= #KEYS do
  g = g + 1
  -- While its record exists a formation owns its four tickets: they left
  -- Q:w when it was claimed and return only when it is released, which
  -- deletes the record. So no per-ticket check is needed here.
  if redis.call('EXISTS', KEYS[k]) == 1 then
    for i = 0, 3 do
      local t = KEYS[k + 1 + i]
      redis.call('HSET', t, 's', 'M', 'm', ARGV[a + 1], 'seat', ARGV[a + 2 + i])
      redis.call('PEXPIRE', t, ARGV[1])
    end
    redis.call('LPUSH', KEYS[2], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], ARGV[a + 9])
    redis.call('DEL', KEYS[k])
    redis.call('ZREM', KEYS[1], ARGV[a])
    redis.call('INCR', KEYS[3])
    out[g] = 1
  else
    out[g] = 0
  end
  k = k + 5
  a = a + 10
end
redis.call('PEXPIRE', KEYS[3], ARGV[2])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[3]) - 1)
return out
`)

// releaseScript returns a formation's tickets to the queue with their
// original entries (so their original enqueue time).
// KEYS forming, w, formation key, 4 ticket keys. ARGV formation id, 4 ids, 4 entries.
var releaseScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 0 then return 0 end
for i = 0, 3 do
  local t = KEYS[4 + i]
  if redis.call('HGET', t, 'f') == ARGV[1] then
    redis.call('HSET', t, 's', 'S')
    redis.call('HDEL', t, 'f')
    redis.call('HSET', KEYS[2], ARGV[2 + i], ARGV[6 + i])
  end
end
redis.call('DEL', KEYS[3])
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
`)

// leaseScript lets one instance take over an overdue formation: the first to
// move its deadline from the value it read owns the recovery attempt.
// KEYS forming, formation key. ARGV formation id, old deadline, new deadline.
// Returns the record, or false.
var leaseScript = redis.NewScript(`
local d = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not d or tonumber(d) ~= tonumber(ARGV[2]) then return false end
local rec = redis.call('GET', KEYS[2])
if not rec then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return false
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return rec
`)

// finishScript ends waiting tickets (cancel or expire) if they are still
// waiting. KEYS w, r, then ticket keys. ARGV state, retentionMs, then ids.
// Returns one 0/1 per ticket.
var finishScript = redis.NewScript(`
local out = {}
for i = 3, #KEYS do
  local id = ARGV[i]
  if redis.call('HDEL', KEYS[1], id) == 1 then
    redis.call('HDEL', KEYS[2], id)
    redis.call('HSET', KEYS[i], 's', ARGV[1])
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    out[i - 2] = 1
  else
    out[i - 2] = 0
  end
end
return out
`)

// rateScript records ratings of tickets that are still waiting.
// KEYS w, r. ARGV id, value, id, value, ...
var rateScript = redis.NewScript(`
for i = 1, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  end
end
return 1
`)

// replacePointerScript swaps a player's live-ticket pointer if it still
// holds the value the caller read. KEYS pointer. ARGV old, new, ttlMs.
var replacePointerScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`)

// dropPointerScript deletes a pointer if it still points to ticket ARGV[1]
// (the value is "<ticket id>|<created ms>").
var dropPointerScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. '|' then return redis.call('DEL', KEYS[1]) end
return 0
`)
