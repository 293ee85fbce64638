-- Applies a batch of rated matches of one pool, in order, each at most once.
--
-- KEYS: 1 applied-matches hash, 2 sequence counter, 3 leaderboard, then per
--       match the four player keys followed by the four history lists.
-- ARGV: 1 number of matches, then per match: the match id and, per player,
--       5 fields: player id, the standing the caller computed from ('' when
--       the player had none), the new standing, the leaderboard action ('' =
--       none, '-' = remove, else the display rating to list), the history
--       entry.
--
-- A match is applied only if it is not yet in the applied hash and every
-- player's stored standing is exactly the one the caller computed from.
-- Standings are compared whole (they carry a version), so the check is
-- exact even when the caller computed a match from the result of an earlier
-- match of the same batch that turned out to be a duplicate or a conflict.
--
-- Returns one integer per match: its new sequence number (> 0) when
-- applied, 0 when it was applied before, -1 when a standing differed (the
-- caller re-reads and retries).
--
-- Leaderboard score = display * 2^39 + (2^39 - 1 - (4 * seq + place - 1)):
-- equal display ratings rank the player changed by the earlier match first,
-- and within one match the better place first. Exact in a double while
-- display <= 9999 and seq < 2^37.
local applied, seqkey, lb = KEYS[1], KEYS[2], KEYS[3]
local n = tonumber(ARGV[1])
local stride = 5
local tie = 549755813888 -- 2^39
local seq = tonumber(redis.call('GET', seqkey) or '0')
local seq0 = seq
local out = {}
local a, k = 2, 4
for e = 1, n do
  local match = ARGV[a]
  local status = 0
  -- Optimistic fast path: claim the marker and swap the standings in, then
  -- undo everything if a standing was not the expected one. Conflicts are
  -- rare, and the script is atomic, so nobody sees the undone writes.
  if redis.call('HSETNX', applied, match, seq + 1) == 1 then
    status = seq + 1
    for i = 0, 3 do
      local b = a + 1 + i * stride
      local old = redis.call('SET', KEYS[k + i], ARGV[b + 2], 'GET') or ''
      if old ~= ARGV[b + 1] then
        -- Undo: restore this and the earlier players, drop the marker.
        for j = i, 0, -1 do
          local prev = (j == i) and old or ARGV[a + 1 + j * stride + 1]
          if prev == '' then
            redis.call('DEL', KEYS[k + j])
          else
            redis.call('SET', KEYS[k + j], prev)
          end
        end
        redis.call('HDEL', applied, match)
        status = -1
        break
      end
    end
  end
  if status > 0 then
    seq = status
    for i = 0, 3 do
      local b = a + 1 + i * stride
      redis.call('LPUSH', KEYS[k + 4 + i], ARGV[b + 4])
      local act = ARGV[b + 3]
      if act == '-' then
        redis.call('ZREM', lb, ARGV[b])
      elseif act ~= '' then
        local score = tonumber(act) * tie + (tie - 1 - (4 * seq + i))
        redis.call('ZADD', lb, string.format('%.17g', score), ARGV[b])
      end
    end
  end
  out[e] = status
  a = a + 1 + 4 * stride
  k = k + 8
end
if seq ~= seq0 then
  redis.call('SET', seqkey, seq)
end
return out
