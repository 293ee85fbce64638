-- Applies a batch of rated matches of one pool, in order, each at most once.
--
-- The slot names (K_*, A_*) are declared by the header that scripts.go
-- prepends from its Go constants (redisconn.Layout).
--
-- KEYS: K_STANDINGS (player id -> standing), K_SEQ (sequence counter),
--       K_LEADERBOARD, K_WATERMARK (the newest finish time applied, unix
--       ms), K_PROVISIONAL (the leaderboard's provisional section), then
--       from K_BUCKETS: the A_N_BUCKETS applied-marker buckets
--       the matches refer to, the history buckets of the same days in the
--       same order, the A_MARKER_DROPS marker buckets of the days from
--       A_MARKER_DROP_FIRST on, the A_HISTORY_DROPS history buckets of the
--       days from A_HISTORY_DROP_FIRST on (the buckets this run may make
--       obsolete: see dropDays in scripts.go).
-- ARGV: A_N_MATCHES, A_MARKER_RETENTION (ms), A_N_BUCKETS,
--       A_HISTORY_RETENTION (ms, 0 = for good, else at least the marker
--       retention), A_TOUCH ('1' when the caller WAITs for replicas after
--       the run: the run then always writes, see the end), the drop ranges
--       above, then from A_MATCHES per match: the match id, its day bucket
--       (index among the bucket keys, from 1), its finish time (unix ms),
--       its history record and, per player, 4 fields: the player id, the
--       standing the caller computed from ('' when the player had none),
--       the new standing, the leaderboard action: '' = none, else two
--       letters and a number: the set the player belongs in after the
--       match ('L' the leaderboard, 'P' its provisional section, 'N'
--       neither), the set the caller saw them in before it (same
--       letters), and the display rating to list them with (none for
--       'N').
--
-- A match is applied only if it is not older than the retention before the
-- watermark, not yet marked applied, and every player's stored standing is
-- exactly the one the caller computed from. Standings are compared whole
-- (they carry a version), so the check is exact even when the caller
-- computed a match from the result of an earlier match of the same batch
-- that turned out to be a duplicate or a conflict: that standing was then
-- never stored.
--
-- Returns one integer per match: its new sequence number (> 0) when
-- applied, 0 when it was applied before, -1 when a standing differed (the
-- caller re-reads and retries), -2 when it finished more than the retention
-- before the watermark (its marker may be gone: it is never applied).
--
-- Applied markers live in one hash per day of the matches' own finish
-- times. A bucket is deleted once the watermark is a retention past the
-- bucket's end: no match of that day can be accepted any more, so no
-- marker of it is needed. Event time, not the clock: a replay of old
-- events behaves exactly like the first run.
--
-- History records (the four players' entries of a match, each with the
-- reference of the player's previous record; the new standings reference
-- this one) live in one hash per day too, deleted the same way once the
-- watermark is the history retention past the day's end (or kept for
-- good). One field per match instead of a list per player: a million list
-- keys made every lookup of the keyspace slower. Since the history
-- retention is at least the marker retention, no match that can still be
-- applied belongs to a deleted history bucket.
--
-- Cost: a run spends its time on key lookups, on redis.call and on turning
-- arguments into Lua strings. So every standing and marker is read with one
-- HMGET and written with one HSET per run, the checks run on Lua tables,
-- and the leaderboard and its provisional section are updated with one
-- ZADD and one ZREM each at the end (each member with its last match's
-- action: the same end state as one update per match). A player leaves a
-- set only when one of their matches in the run says they were in it, so
-- an established player costs no ZREM on the provisional section.
--
-- Leaderboard score = display * 2^39 + (2^39 - 1 - (4 * seq + place - 1)):
-- equal display ratings rank the player changed by the earlier match first,
-- and within one match the better place first. Exact in a double while
-- display <= 9999 and seq < 2^37 (below 2^53, so '%d' prints it exactly,
-- and more cheaply than '%.17g'). The provisional section is scored the
-- same way.
local standings, seqkey, lb, wmkey = KEYS[K_STANDINGS], KEYS[K_SEQ], KEYS[K_LEADERBOARD], KEYS[K_WATERMARK]
local prov = KEYS[K_PROVISIONAL]
local n = tonumber(ARGV[A_N_MATCHES])
local keep = tonumber(ARGV[A_MARKER_RETENTION])
local nbuckets = tonumber(ARGV[A_N_BUCKETS])
local keepHistory = tonumber(ARGV[A_HISTORY_RETENTION])
local touch = ARGV[A_TOUCH] == '1'
local markerDropFirst, markerDrops = tonumber(ARGV[A_MARKER_DROP_FIRST]), tonumber(ARGV[A_MARKER_DROPS])
local historyDropFirst, historyDrops = tonumber(ARGV[A_HISTORY_DROP_FIRST]), tonumber(ARGV[A_HISTORY_DROPS])
local base = A_MATCHES -- the first match's arguments
local stride = 4
local width = 4 + 4 * stride
-- KEYS[bucketBase + b] is the marker bucket of index b (from 1),
-- KEYS[historyBase + b] the history bucket of the same day; the buckets to
-- drop follow.
local bucketBase = K_BUCKETS - 1
local historyBase = bucketBase + nbuckets
local markerDropBase = historyBase + nbuckets
local historyDropBase = markerDropBase + markerDrops
if #KEYS ~= historyDropBase + historyDrops or #ARGV ~= base - 1 + n * width then
  return redis.error_reply('ERR script apply: key or argument count does not match the counts given')
end
local tie = 549755813888 -- 2^39
local day = 86400000
-- unpack() is bounded by the Lua C stack (8000 slots), so long argument
-- lists go to redis.call in chunks (an even size keeps pairs together).
local chunk = 1000

-- listOf returns t[k], a new list stored there if there was none.
local function listOf(t, k)
  local list = t[k]
  if list == nil then
    list = {}
    t[k] = list
  end
  return list
end

local function chunked(cmd, key, list)
  for i = 1, #list, chunk do
    redis.call(cmd, key, unpack(list, i, math.min(i + chunk - 1, #list)))
  end
end

-- Read every player's standing and every match's marker once.
local ids, seen = {}, {}
local asked = {} -- bucket index -> match ids
for e = 0, n - 1 do
  local a = base + e * width
  local list = listOf(asked, ARGV[a + 1])
  list[#list + 1] = ARGV[a]
  for i = 0, 3 do
    local id = ARGV[a + 4 + i * stride]
    if not seen[id] then
      seen[id] = true
      ids[#ids + 1] = id
    end
  end
end
local cur = {}
for i = 1, #ids, chunk do
  local vals = redis.call('HMGET', standings, unpack(ids, i, math.min(i + chunk - 1, #ids)))
  for j = 1, #vals do
    cur[ids[i + j - 1]] = vals[j] or ''
  end
end
local marked = {}
for b, list in pairs(asked) do
  local key = KEYS[bucketBase + tonumber(b)]
  for i = 1, #list, chunk do
    local vals = redis.call('HMGET', key, unpack(list, i, math.min(i + chunk - 1, #list)))
    for j = 1, #vals do
      if vals[j] then marked[list[i + j - 1]] = true end
    end
  end
end

-- Decide every match, writing nothing yet.
local seq = tonumber(redis.call('GET', seqkey) or '0')
local seq0 = seq
local wm0 = tonumber(redis.call('GET', wmkey) or '0')
local wm = wm0
local out = {}
local applied = {} -- indexes (from 0) of the matches to apply, in order
for e = 0, n - 1 do
  local a = base + e * width
  local match, finished = ARGV[a], tonumber(ARGV[a + 2])
  local status = 0
  if finished < wm - keep then
    status = -2
  elseif not marked[match] then
    status = seq + 1
    for i = 0, 3 do
      local p = a + 4 + i * stride
      if cur[ARGV[p]] ~= ARGV[p + 1] then
        status = -1
        break
      end
    end
    if status > 0 then
      seq = status
      marked[match] = true
      for i = 0, 3 do
        local p = a + 4 + i * stride
        cur[ARGV[p]] = ARGV[p + 2]
      end
      if finished > wm then wm = finished end
      applied[#applied + 1] = e
    end
  end
  out[e + 1] = status
end

-- group returns, per day bucket (the marker bucket, or with history the
-- history bucket of the same day), the applied matches' ids each followed
-- by its sequence number (markers) or its history record.
local function group(history)
  local by = {}
  for j = 1, #applied do
    local e = applied[j]
    local a = base + e * width
    local b = tonumber(ARGV[a + 1])
    local list = listOf(by, KEYS[(history and historyBase or bucketBase) + b])
    list[#list + 1] = ARGV[a]
    list[#list + 1] = history and ARGV[a + 3] or out[e + 1]
  end
  return by
end

-- Markers and history records first, all or nothing: should writing them
-- fail (a bucket of the wrong type), the fields written are removed again,
-- nothing else is written and the error is raised. After them no command
-- can fail on the matches' own keys.
local wrote = {}
local mok, merr = pcall(function()
  for _, history in ipairs({false, true}) do
    for key, list in pairs(group(history)) do
      chunked('HSET', key, list)
      wrote[#wrote + 1] = {key, list}
    end
  end
end)
if not mok then
  for _, w in ipairs(wrote) do
    local fields = {}
    for i = 1, #w[2], 2 do fields[#fields + 1] = w[2][i] end
    chunked('HDEL', w[1], fields)
  end
  error(merr)
end

-- The standings and the leaderboard entries, each player's last.
local sets = {{'L', lb}, {'P', prov}}
local board, members = {}, {} -- member -> {dest =, score =, was = {set letter -> true}}
local write, written = {}, {}
for j = 1, #applied do
  local e = applied[j]
  local a = base + e * width
  local s = out[e + 1]
  for i = 0, 3 do
    local p = a + 4 + i * stride
    local id = ARGV[p]
    if write[id] == nil then written[#written + 1] = id end
    write[id] = ARGV[p + 2]
    local act = ARGV[p + 3]
    if act ~= '' then
      local b = board[id]
      if b == nil then
        b = {was = {}}
        board[id] = b
        members[#members + 1] = id
      end
      b.dest = string.sub(act, 1, 1)
      b.was[string.sub(act, 2, 2)] = true
      if b.dest ~= 'N' then
        b.score = string.format('%d', tonumber(string.sub(act, 3)) * tie + (tie - 1 - (4 * s + i)))
      end
    end
  end
end

if #written > 0 then
  local pairs_ = {}
  for _, id in ipairs(written) do
    pairs_[#pairs_ + 1] = id
    pairs_[#pairs_ + 1] = write[id]
  end
  chunked('HSET', standings, pairs_)
end
if #members > 0 then
  for _, set in ipairs(sets) do
    local letter, key = set[1], set[2]
    local adds, rems = {}, {}
    for _, member in ipairs(members) do
      local b = board[member]
      if b.dest == letter then
        adds[#adds + 1] = b.score
        adds[#adds + 1] = member
      elseif b.was[letter] then
        rems[#rems + 1] = member
      end
    end
    chunked('ZADD', key, adds)
    chunked('ZREM', key, rems)
  end
end
if seq ~= seq0 then
  redis.call('SET', seqkey, seq)
end
if wm ~= wm0 then
  redis.call('SET', wmkey, string.format('%d', wm))
  -- Drop the buckets the watermark has left behind: day d is obsolete
  -- once (d + 1) * day <= wm - retention. The caller passed the buckets of
  -- every day this run can make obsolete (and perhaps more: only those
  -- obsolete now go).
  local function drop(dropBase, first, count, retention)
    local last = math.floor((wm - retention) / day) - 1
    for i = 0, math.min(count - 1, last - first) do
      redis.call('UNLINK', KEYS[dropBase + 1 + i])
    end
  end
  drop(markerDropBase, markerDropFirst, markerDrops, keep)
  if keepHistory > 0 then drop(historyDropBase, historyDropFirst, historyDrops, keepHistory) end
elseif touch and seq == seq0 and wm0 > 0 then
  -- Nothing written, but the caller's WAIT must cover the writes of the
  -- matches found applied (made by other connections, perhaps not yet
  -- replicated): a write of this connection after them does, since WAIT
  -- waits for the master's replication offset of this connection's last
  -- write. Rewriting the watermark changes nothing.
  redis.call('SET', wmkey, string.format('%d', wm0))
end
return out
