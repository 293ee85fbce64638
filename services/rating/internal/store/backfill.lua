-- Adds provisional players to the leaderboard's provisional section, for
-- the players rated before the section existed (see Store.Backfill).
--
-- The slot names (K_*, A_*) are declared by the header that scripts.go
-- prepends from its Go constants (redisconn.Layout).
--
-- KEYS: K_STANDINGS (player id -> standing), K_SEQ (the pool's sequence
--       counter), K_PROVISIONAL (the section).
-- ARGV: from A_PLAYERS per player 3 fields: the player id, the standing
--       the caller read and found provisional, the display rating to list
--       the player with.
--
-- A player is added only if their stored standing is still exactly the
-- one the caller read (standings carry a version, so an equal value means
-- no match changed it since) and they are not in the section yet. A
-- player whose standing changed meanwhile was placed by the apply step,
-- which keeps the section up to date for every player it rates; one who
-- is in the section already was placed by the apply step or by another
-- backfill. So the backfill can run any number of times, from several
-- instances at once, and concurrently with the apply step.
--
-- Scores follow apply.lua (display * 2^39 + (2^39 - 1 - (4 * seq +
-- place - 1))) and must be unique, since a page cursor is a score. The
-- players added by one run take fresh sequence numbers from the pool's
-- counter, four players per number, as if their ratings had changed now:
-- among equal display ratings they follow the players changed before and
-- precede those changed after. The counter then skips those numbers;
-- sequence numbers only order, nothing counts them.
--
-- Returns the number of players added.
local standings, seqkey, prov = KEYS[K_STANDINGS], KEYS[K_SEQ], KEYS[K_PROVISIONAL]
local stride = 3
local n = (#ARGV - A_PLAYERS + 1) / stride
if n == 0 then return 0 end
local tie = 549755813888 -- 2^39

local ids = {}
for j = 0, n - 1 do
  ids[#ids + 1] = ARGV[A_PLAYERS + j * stride]
end
local cur = redis.call('HMGET', standings, unpack(ids))
local add = {}
for j = 0, n - 1 do
  local a = A_PLAYERS + j * stride
  if cur[j + 1] == ARGV[a + 1] and not redis.call('ZSCORE', prov, ARGV[a]) then
    add[#add + 1] = a
  end
end
if #add == 0 then return 0 end

local seq = tonumber(redis.call('GET', seqkey) or '0')
local zadd = {}
for k, a in ipairs(add) do
  local s = seq + 1 + math.floor((k - 1) / 4)
  local i = (k - 1) % 4
  zadd[#zadd + 1] = string.format('%d', tonumber(ARGV[a + 2]) * tie + (tie - 1 - (4 * s + i)))
  zadd[#zadd + 1] = ARGV[a]
end
redis.call('SET', seqkey, seq + math.floor((#add + 3) / 4))
redis.call('ZADD', prov, unpack(zadd))
return #add
