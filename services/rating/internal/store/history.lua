-- Reads up to a page of a player's history records, newest first, by
-- following the references from one record to the player's previous one.
--
-- KEYS: 1 the pool's standings hash (it only routes the script to the
--       pool's slot; the history buckets share it but are named as the
--       walk finds them).
-- ARGV: 1 the history buckets' key prefix, 2 the player id, 3 the
--       reference of the first record to read ("<day>:<len>:<match id>"),
--       4 the most entries to return.
--
-- Returns {status, next, entries...}: status 1 when the first record does
-- not exist or has no entry of the player (the reference was not one of
-- theirs), else 0; next is the reference after the last entry returned,
-- '' at the player's first game. A record missing further down the chain
-- is an error: records are never deleted.

local prefix, player, ref, limit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])

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
