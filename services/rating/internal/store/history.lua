-- Reads up to a page of a player's history records, newest first, by
-- following the references from one record to the player's previous one.
--
-- The slot names (K_*, A_*) are declared by the header that scripts.go
-- prepends from its Go constants (redisconn.Layout).
--
-- KEYS: K_WATERMARK (the pool's watermark), then from K_DAYS the history
--       buckets of the days A_LAST_DAY, A_LAST_DAY - 1, ... (a window: the
--       walk reads no other bucket).
-- ARGV: A_PLAYER (the player id), A_REF (the reference of the first record
--       to read, "<day>:<len>:<match id>", of day A_LAST_DAY), A_LIMIT (the
--       most entries to return), A_RETENTION (the history retention, ms,
--       0 = records are kept for good), A_LAST_DAY.
--
-- Returns {status, next, entries...}: status 1 when the first record does
-- not exist or has no entry of the player (the reference was not one of
-- theirs), 2 when the walk reached next, a record before the window (the
-- caller continues with a window ending at its day), else 0; next is the
-- reference after the last entry returned, '' at the player's first game
-- or at the first record past the retention. Records of a day are deleted
-- (by apply.lua) once the watermark is the retention past the day's end;
-- the walk stops at such a day whether or not its bucket is gone yet. A
-- record missing within the retention is an error.

local player, ref, limit = ARGV[A_PLAYER], ARGV[A_REF], tonumber(ARGV[A_LIMIT])
local keep = tonumber(ARGV[A_RETENTION])
local lastDay = tonumber(ARGV[A_LAST_DAY])
local ndays = #KEYS - K_DAYS + 1
local day = 86400000
local horizon = nil -- the first day whose records are kept
if keep > 0 then
  horizon = math.floor((tonumber(redis.call('GET', KEYS[K_WATERMARK]) or '0') - keep) / day)
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

local out = {0, ''}
while ref ~= '' and #out - 2 < limit do
  local c = string.find(ref, ':', 1, true)
  local d = c and tonumber(string.sub(ref, 1, c - 1))
  if d and horizon and d < horizon then
    ref = '' -- past the retention: the history ends here
    break
  end
  if d and #out > 2 and (d > lastDay or d <= lastDay - ndays) then
    out[1] = 2 -- outside the window: the caller goes on from here
    break
  end
  local rec = d and d <= lastDay and d > lastDay - ndays and redis.call('HGET', KEYS[K_DAYS + lastDay - d], (part(ref, c + 1)))
  local found = false
  if rec then
    local pos = 1
    while pos <= #rec do
      local id, prev, entry
      id, pos = part(rec, pos)
      prev, pos = part(rec, pos)
      entry, pos = part(rec, pos)
      if id == player then
        out[#out + 1] = entry
        ref, found = prev, true
        break
      end
    end
  end
  if not found then
    if #out == 2 then
      out[1] = 1
      return out
    end
    error('history record ' .. ref .. ' of player ' .. player .. ' is missing')
  end
end
out[2] = ref
return out
