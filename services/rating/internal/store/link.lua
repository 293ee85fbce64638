-- Links a guest player to an account in one pool, at most once.
--
-- The slot names (K_*, A_*) are declared by the header that link.go
-- prepends from its Go constants (redisconn.Layout).
--
-- KEYS: K_STANDINGS, K_LEADERBOARD, K_PROVISIONAL, then from K_DAYS the
--       history buckets the records below refer to.
-- ARGV: A_GUEST, A_ACCOUNT (player ids), A_GUEST_RAW and A_ACCOUNT_RAW
--       (their stored standings the caller read, '' when absent), A_NEW
--       (the account's new standing: the guest's, renamed; '' when nothing
--       moves: the guest never played in the pool, or the account has a
--       standing of its own, which it keeps), then from A_RECORDS per
--       history record of the guest (newest first) its bucket (index
--       among the K_DAYS keys, from 1) and its match id.
--
-- Returns 1 when linked now, 0 when the guest was linked before (its
-- standing is the tombstone '@' .. account: a redelivered link changes
-- nothing), -1 when a standing differs from the one read (the caller
-- re-reads and retries).
--
-- Linking writes the tombstone '@' .. account as the guest's standing, so
-- the apply script's check of the standings it computed from fails for
-- any match of the guest computed before the link, and the store resolves
-- the guest to the account from then on (see resolve in link.go). When
-- the guest's standing moves, its history records are rewritten to name
-- the account (the account's history and the other players' co-players
-- then read as if the account had played those games), and its
-- leaderboard entries move with their scores.
local standings, lb, prov = KEYS[K_STANDINGS], KEYS[K_LEADERBOARD], KEYS[K_PROVISIONAL]
local guest, account = ARGV[A_GUEST], ARGV[A_ACCOUNT]
local g = redis.call('HGET', standings, guest) or ''
if string.sub(g, 1, 1) == '@' then
  return 0
end
local o = redis.call('HGET', standings, account) or ''
if g ~= ARGV[A_GUEST_RAW] or o ~= ARGV[A_ACCOUNT_RAW] then
  return -1
end

-- part reads the length-prefixed string "<len>:<bytes>" at pos of s and
-- returns it and the position after it.
local function part(s, pos)
  local c = string.find(s, ':', pos, true)
  if not c then error('corrupt history record') end
  local n = tonumber(string.sub(s, pos, c - 1))
  if not n or c + n > #s then error('corrupt history record') end
  return string.sub(s, c + 1, c + n), c + n + 1
end

local function lp(s)
  return #s .. ':' .. s
end

if ARGV[A_NEW] ~= '' then
  for i = A_RECORDS, #ARGV, 2 do
    local key, match = KEYS[K_DAYS + tonumber(ARGV[i]) - 1], ARGV[i + 1]
    -- A record gone since the caller's walk (dropped by the history
    -- retention) stays gone.
    local rec = redis.call('HGET', key, match)
    if rec then
      local out, pos = {}, 1
      while pos <= #rec do
        local id, prev, entry
        id, pos = part(rec, pos)
        prev, pos = part(rec, pos)
        entry, pos = part(rec, pos)
        if id == guest then id = account end
        out[#out + 1] = lp(id) .. lp(prev) .. lp(entry)
      end
      redis.call('HSET', key, match, table.concat(out))
    end
  end
  redis.call('HSET', standings, account, ARGV[A_NEW])
  for _, set in ipairs({lb, prov}) do
    local score = redis.call('ZSCORE', set, guest)
    if score then
      redis.call('ZADD', set, score, account)
    end
  end
end
redis.call('ZREM', lb, guest)
redis.call('ZREM', prov, guest)
redis.call('HSET', standings, guest, '@' .. account)
return 1
