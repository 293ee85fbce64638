-- Reads up to a page of a player's history records, newest first, by
-- following the references from one record to the player's previous one.
--
-- KEYS: 1 the pool's watermark (the history buckets share its slot but
--       are named as the walk finds them).
-- ARGV: 1 the history buckets' key prefix, 2 the player id, 3 the
--       reference of the first record to read ("<day>:<len>:<match id>"),
--       4 the most entries to return, 5 the history retention (ms, 0 =
--       records are kept for good).
--
-- Returns {status, next, entries...}: status 1 when the first record does
-- not exist or has no entry of the player (the reference was not one of
-- theirs), else 0; next is the reference after the last entry returned,
-- '' at the player's first game or at the first record past the
-- retention. Records of a day are deleted (by apply.lua) once the
-- watermark is the retention past the day's end; the walk stops at such a
-- day whether or not its bucket is gone yet. A record missing within the
-- retention is an error.

local prefix, player, ref, limit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local keep = tonumber(ARGV[5])
local day = 86400000
local horizon = nil -- the first day whose records are kept
if keep > 0 then
  horizon = math.floor((tonumber(redis.call('GET', KEYS[1]) or '0') - keep) / day)
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
  if c and horizon and (tonumber(string.sub(ref, 1, c - 1)) or horizon) < horizon then
    ref = '' -- past the retention: the history ends here
    break
  end
  local rec = c and redis.call('HGET', prefix .. string.sub(ref, 1, c - 1), (part(ref, c + 1)))
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
