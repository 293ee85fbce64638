-- Applies a batch of rated matches of one pool, in order, each at most once.
--
-- KEYS: 1 applied-matches hash, 2 sequence counter, 3 leaderboard, then per
--       match the four player keys followed by the four history lists.
-- ARGV: 1 number of matches, 2 length of the player keys' common prefix
--       (what precedes the player id), then per match: the match id and,
--       per player, 4 fields: the standing the caller computed from ('' when
--       the player had none), the new standing, the leaderboard action ('' =
--       none, '-' = remove, else the display rating to list), the history
--       entry.
--
-- A match is applied only if it is not yet in the applied hash and every player's stored standing is exactly the
-- one the caller computed from. Standings are compared whole (they carry a
-- version), so the check is exact even when the caller computed a match
-- from the result of an earlier match of the same batch that turned out to
-- be a duplicate or a conflict: that standing was then never stored.
--
-- Returns one integer per match: its new sequence number (> 0) when
-- applied, 0 when it was applied before, -1 when a standing differed (the
-- caller re-reads and retries).
--
-- Cost: besides the key lookups, a run spends its time on redis.call and
-- on turning arguments into Lua strings. So the leaderboard is updated with
-- one ZADD and one ZREM at the end (each member with its last match's
-- action: the same end state as one update per match), and the member (the
-- player id) is cut from the player key instead of being passed. The
-- standings are swapped with SET ... GET (one lookup both reads and
-- writes) and swapped back on a conflict; the script is atomic, so nobody
-- sees the undone writes.
--
-- Leaderboard score = display * 2^39 + (2^39 - 1 - (4 * seq + place - 1)):
-- equal display ratings rank the player changed by the earlier match first,
-- and within one match the better place first. Exact in a double while
-- display <= 9999 and seq < 2^37 (below 2^53, so '%d' prints it exactly,
-- and more cheaply than '%.17g').
local applied, seqkey, lb = KEYS[1], KEYS[2], KEYS[3]
local n = tonumber(ARGV[1])
local idfrom = tonumber(ARGV[2]) + 1
local stride = 4
local width = 1 + 4 * stride
local tie = 549755813888 -- 2^39
-- unpack() is bounded by the Lua C stack (8000 slots), so long argument
-- lists go to redis.call in chunks (an even size keeps pairs together).
local chunk = 1000

local function chunked(cmd, key, list)
  for i = 1, #list, chunk do
    redis.call(cmd, key, unpack(list, i, math.min(i + chunk - 1, #list)))
  end
end

local seq = tonumber(redis.call('GET', seqkey) or '0')
local seq0 = seq
local out = {}
local board, members = {}, {}
-- The loop runs protected: should a command fail halfway (a key of the
-- wrong type), the leaderboard and the counter still get the updates of
-- the matches applied before, and then the error is raised.
local ok, err = pcall(function()
  local a, k = 3, 4
  for e = 1, n do
    local match = ARGV[a]
    local status = 0
    -- Claim the marker first, as a guard: should a later command of the
    -- script fail (a key of the wrong type), the match counts as applied
    -- and is never applied twice.
    if redis.call('HSETNX', applied, match, seq + 1) == 1 then
      status = seq + 1
      for i = 0, 3 do
        local b = a + 1 + i * stride
        local old = redis.call('SET', KEYS[k + i], ARGV[b + 1], 'GET') or ''
        if old ~= ARGV[b] then
          -- Undo: restore this and the earlier players.
          for j = i, 0, -1 do
            local prev = (j == i) and old or ARGV[a + 1 + j * stride]
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
        redis.call('LPUSH', KEYS[k + 4 + i], ARGV[b + 3])
        local act = ARGV[b + 2]
        if act ~= '' then
          local member = string.sub(KEYS[k + i], idfrom)
          if board[member] == nil then members[#members + 1] = member end
          if act == '-' then
            board[member] = false
          else
            board[member] = string.format('%d', tonumber(act) * tie + (tie - 1 - (4 * seq + i)))
          end
        end
      end
    end
    out[e] = status
    a = a + width
    k = k + 8
  end
end)

if #members > 0 then
  local adds, rems = {}, {}
  for _, member in ipairs(members) do
    local score = board[member]
    if score then
      adds[#adds + 1] = score
      adds[#adds + 1] = member
    else
      rems[#rems + 1] = member
    end
  end
  chunked('ZADD', lb, adds)
  chunked('ZREM', lb, rems)
end
if seq ~= seq0 then
  redis.call('SET', seqkey, seq)
end
if not ok then
  error(err)
end
return out
