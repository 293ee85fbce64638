package store

import "github.com/fourkingdoms/fourkingdoms/pkg/redisconn"

// Every state change of a match is one of these scripts, run atomically on the
// node that owns the match's hash slot. All keys a script touches are passed in
// KEYS and share the partition hash tag, so the scripts run unchanged on a
// standalone Redis and on Redis Cluster.

// createScript creates a match unless the request id was already used.
//
// KEYS: 1 request key, 2 match hash, 3 event stream, 4 partition deadlines.
// ARGV: 1 id, 2 game, 3 clock, 4 meta, 5 creation event, 6 deadline (ms, 0 =
// none), 7 request key TTL (ms), 8 event log length, 9 stamp.
// Returns {1, id} when created, {0, existing id} for a repeated request.
var createScript = redisconn.NewScript(`
local existing = redis.call('GET', KEYS[1])
if existing then return {0, existing} end
if redis.call('EXISTS', KEYS[2]) == 1 then return redis.error_reply('ERR match id collision') end
redis.call('HSET', KEYS[2], 'v', '1:' .. ARGV[9], 'g', ARGV[2], 'c', ARGV[3], 'meta', ARGV[4])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[8], '1-0', 'e', ARGV[5])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[7])
if tonumber(ARGV[6]) > 0 then redis.call('ZADD', KEYS[4], ARGV[6], ARGV[1]) end
return {1, ARGV[1]}
`)

// commitScript applies one state change if the match is still at the version
// the caller computed it from.
//
// KEYS: 1 match hash, 2 event stream, 3 move replies, 4 partition deadlines,
// 5 partition outbox, 6 shard channel.
// ARGV: 1 id, 2 expected version ("<version>:<stamp>"), 3 game, 4 clock, 5 move key ("" = none),
// 6 reply, 7 deadline (ms, 0 = remove), 8 finished ("1"/"0"), 9 retention
// (ms), 10 outbox data ("" = none), 11 outbox type, 12 outbox type field,
// 13 outbox data field, 14 event log length, 15 number of events N, 16 new
// stamp, 17..16+N events. The outbox entry has the layout of the finished
// stream's entries (package eventstream), so Relay copies it unchanged.
//
// The field v holds "<version>:<stamp>", the stamp being random per commit:
// a writer whose cached state was lost in a failover (an acknowledged write
// the promoted replica never received) cannot mistake a different state
// with the same version number for its own.
//
// Returns {0, new version} when applied; {1, version:stamp, game, clock} when the
// match moved on (the caller retries from that state without another read);
// {2, reply} when the move key was already answered; {3} when the match does
// not exist.
//
// Versions of the N events are expected+1 .. expected+N; each event is a
// stream entry with the id "<version>-0" so readers can resume by version.
// The live notification is one SPUBLISH of all events, each prefixed with its
// 4-byte big-endian length.
var commitScript = redisconn.NewScript(`
if ARGV[5] ~= '' then
  local r = redis.call('HGET', KEYS[3], ARGV[5])
  if r then
    -- Rewrite the stored reply (a no-op change) so that a WAIT after this
    -- script covers it, and with it the original write before it in the
    -- replication stream: a retry is acknowledged only once replicated.
    redis.call('HSET', KEYS[3], ARGV[5], r)
    return {2, r}
  end
end
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return {3} end
if v ~= ARGV[2] then
  local cur = redis.call('HMGET', KEYS[1], 'v', 'g', 'c')
  return {1, cur[1], cur[2], cur[3]}
end
local base = tonumber(string.match(v, '^%d+'))
local n = tonumber(ARGV[15])
redis.call('HSET', KEYS[1], 'v', string.format('%d:', base + n) .. ARGV[16], 'g', ARGV[3], 'c', ARGV[4])
-- Big-endian 4-byte length prefix, written by hand rather than with struct.pack so the script also
-- runs on the embedded development store, whose Lua has no struct library.
local function be32(len)
  return string.char(math.floor(len / 16777216) % 256, math.floor(len / 65536) % 256, math.floor(len / 256) % 256, len % 256)
end
local parts = {}
for i = 1, n do
  local e = ARGV[16 + i]
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[14], string.format('%d-0', base + i), 'e', e)
  parts[#parts + 1] = be32(#e)
  parts[#parts + 1] = e
end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], ARGV[5], ARGV[6]) end
if tonumber(ARGV[7]) > 0 then
  redis.call('ZADD', KEYS[4], ARGV[7], ARGV[1])
else
  redis.call('ZREM', KEYS[4], ARGV[1])
end
if ARGV[8] == '1' then
  if ARGV[10] ~= '' then
    redis.call('XADD', KEYS[5], '*', ARGV[12], ARGV[11], ARGV[13], ARGV[10])
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[9])
  redis.call('PEXPIRE', KEYS[2], ARGV[9])
  redis.call('PEXPIRE', KEYS[3], ARGV[9])
end
if n > 0 then redis.call('SPUBLISH', KEYS[6], table.concat(parts)) end
return {0, base + n}
`)

// tickScript returns the due deadlines and the pending outbox entries of one
// partition.
//
// KEYS: 1 partition deadlines, 2 partition outbox. ARGV: 1 now (ms), 2 limit.
var tickScript = redisconn.NewScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local out = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', ARGV[2])
return {due, out}
`)

// leaseScript acquires or renews a lease. KEYS: 1 lease. ARGV: 1 owner, 2 TTL (ms).
var leaseScript = redisconn.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// releaseScript drops a lease if the caller still holds it. KEYS: 1 lease. ARGV: 1 owner.
var releaseScript = redisconn.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
