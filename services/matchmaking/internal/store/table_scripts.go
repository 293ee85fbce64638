package store

import "github.com/fourkingdoms/fourkingdoms/pkg/redisconn"

// Scripts of the private tables (tables.go). Each changes one table record
// (one key, one slot): it decodes the JSON, checks and changes it, renews
// its TTL and returns {status, table JSON} (status as statusErr reads it).

// Slots shared by the table scripts: the table's key.
const (
	tableKTable = iota
	tableNKeys
)

var tableKeys = []string{tableKTable: "K_TABLE"}

func tableKey1(table string) []string {
	k := make([]string, tableNKeys)
	k[tableKTable] = table
	return k
}

const (
	joinAPlayer = iota
	joinAPlayerID
	joinASeat
	joinANow
	joinATTL
	joinNArgs
)

var joinLayout = redisconn.Layout{
	Name: "join table",
	Keys: tableKeys,
	Args: []string{joinAPlayer: "A_PLAYER", joinAPlayerID: "A_PLAYER_ID", joinASeat: "A_SEAT", joinANow: "A_NOW", joinATTL: "A_TTL"},
}

// joinArgs lays out a run of joinScript: the table, the player (JSON) and
// id, the seat (1-4; 0 for the first free open seat), now (unix ms) and
// the idle TTL (ms).
func joinArgs(table string, player []byte, playerID string, seat int, nowMS, ttlMS int64) ([]string, []any) {
	a := make([]any, joinNArgs)
	a[joinAPlayer] = player
	a[joinAPlayerID] = playerID
	a[joinASeat] = seat
	a[joinANow] = nowMS
	a[joinATTL] = ttlMS
	return tableKey1(table), a
}

// joinScript seats a player.
var joinScript = joinLayout.Script(joinLua)

const joinLua = `
local raw = redis.call('GET', KEYS[K_TABLE])
if not raw then return {'NOTFOUND', ''} end
local t = cjson.decode(raw)
if t.st == 'C' then return {'NOTFOUND', ''} end
for i = 1, 4 do
  local s = t.seats[i]
  if s.pl and not s.bot and s.pl.p == ARGV[A_PLAYER_ID] then return {'SAME', raw} end
end
if t.st ~= 'O' then return {'STARTED', raw} end
local free = nil
for i = 1, 4 do
  local s = t.seats[i]
  if not s.bot and not s.pl then free = i break end
end
if not free then return {'FULL', raw} end
local want = tonumber(ARGV[A_SEAT])
if want > 0 then
  local s = t.seats[want]
  if s.bot or s.pl then return {'TAKEN', raw} end
  free = want
end
t.seq = t.seq + 1
t.seats[free].pl = cjson.decode(ARGV[A_PLAYER])
t.seats[free].j = t.seq
t.v = t.v + 1
t.exp = tonumber(ARGV[A_NOW]) + tonumber(ARGV[A_TTL])
local enc = cjson.encode(t)
redis.call('SET', KEYS[K_TABLE], enc, 'PX', ARGV[A_TTL])
return {'OK', enc}
`

const (
	leaveAPlayerID = iota
	leaveANow
	leaveATTL
	leaveARetention
	leaveNArgs
)

var leaveLayout = redisconn.Layout{
	Name: "leave table",
	Keys: tableKeys,
	Args: []string{leaveAPlayerID: "A_PLAYER_ID", leaveANow: "A_NOW", leaveATTL: "A_TTL", leaveARetention: "A_RETENTION"},
}

// leaveArgs lays out a run of leaveScript: the table, the player id, now
// (unix ms), the idle TTL and the closed table's retention (ms).
func leaveArgs(table, playerID string, nowMS, ttlMS, retentionMS int64) ([]string, []any) {
	a := make([]any, leaveNArgs)
	a[leaveAPlayerID] = playerID
	a[leaveANow] = nowMS
	a[leaveATTL] = ttlMS
	a[leaveARetention] = retentionMS
	return tableKey1(table), a
}

// leaveScript frees a player's seat; a leaving host hands the table to the
// earliest-joined human left, or closes it.
var leaveScript = leaveLayout.Script(leaveLua)

const leaveLua = `
local raw = redis.call('GET', KEYS[K_TABLE])
if not raw then return {'NOTFOUND', ''} end
local t = cjson.decode(raw)
local at = nil
for i = 1, 4 do
  local s = t.seats[i]
  if s.pl and not s.bot and s.pl.p == ARGV[A_PLAYER_ID] then at = i end
end
if t.st == 'C' or not at then return {'SAME', raw} end
if t.st ~= 'O' then return {'STARTED', raw} end
t.seats[at].pl = nil
t.seats[at].j = nil
t.v = t.v + 1
if t.host == ARGV[A_PLAYER_ID] then
  local best, bj = nil, nil
  for i = 1, 4 do
    local s = t.seats[i]
    if s.pl and not s.bot and (bj == nil or s.j < bj) then best, bj = s.pl.p, s.j end
  end
  if best then t.host = best else t.st = 'C' end
end
local ttl = ARGV[A_TTL]
if t.st == 'C' then ttl = ARGV[A_RETENTION] end
t.exp = tonumber(ARGV[A_NOW]) + tonumber(ttl)
local enc = cjson.encode(t)
redis.call('SET', KEYS[K_TABLE], enc, 'PX', ttl)
return {'OK', enc}
`

const (
	beginStartAHost = iota
	beginStartAVersion
	beginStartAStart
	beginStartANow
	beginStartATTL
	beginStartNArgs
)

var beginStartLayout = redisconn.Layout{
	Name: "begin start",
	Keys: tableKeys,
	Args: []string{beginStartAHost: "A_HOST", beginStartAVersion: "A_VERSION", beginStartAStart: "A_START", beginStartANow: "A_NOW", beginStartATTL: "A_TTL"},
}

// beginStartArgs lays out a run of beginStartScript: the table, the
// caller, the version the start was planned on, the start record (JSON),
// now (unix ms) and the idle TTL (ms).
func beginStartArgs(table, host string, version int64, start []byte, nowMS, ttlMS int64) ([]string, []any) {
	a := make([]any, beginStartNArgs)
	a[beginStartAHost] = host
	a[beginStartAVersion] = version
	a[beginStartAStart] = start
	a[beginStartANow] = nowMS
	a[beginStartATTL] = ttlMS
	return tableKey1(table), a
}

// beginStartScript records a table's start once: only the host, only on
// the version read; a table already starting keeps its recorded start.
var beginStartScript = beginStartLayout.Script(beginStartLua)

const beginStartLua = `
local raw = redis.call('GET', KEYS[K_TABLE])
if not raw then return {'NOTFOUND', ''} end
local t = cjson.decode(raw)
if t.st == 'C' then return {'NOTFOUND', ''} end
if t.host ~= ARGV[A_HOST] then return {'NOTHOST', raw} end
if t.st ~= 'O' then return {'SAME', raw} end
if t.v ~= tonumber(ARGV[A_VERSION]) then return {'CHANGED', raw} end
t.start = cjson.decode(ARGV[A_START])
t.st = 'S'
t.v = t.v + 1
t.exp = tonumber(ARGV[A_NOW]) + tonumber(ARGV[A_TTL])
local enc = cjson.encode(t)
redis.call('SET', KEYS[K_TABLE], enc, 'PX', ARGV[A_TTL])
return {'OK', enc}
`

const (
	finishStartAMatch = iota
	finishStartANow
	finishStartATTL
	finishStartNArgs
)

var finishStartLayout = redisconn.Layout{
	Name: "finish start",
	Keys: tableKeys,
	Args: []string{finishStartAMatch: "A_MATCH", finishStartANow: "A_NOW", finishStartATTL: "A_TTL"},
}

// finishStartArgs lays out a run of finishStartScript: the table, the
// match id, now (unix ms) and the idle TTL (ms).
func finishStartArgs(table, match string, nowMS, ttlMS int64) ([]string, []any) {
	a := make([]any, finishStartNArgs)
	a[finishStartAMatch] = match
	a[finishStartANow] = nowMS
	a[finishStartATTL] = ttlMS
	return tableKey1(table), a
}

// finishStartScript marks a starting table started and seats its bots.
var finishStartScript = finishStartLayout.Script(finishStartLua)

const finishStartLua = `
local raw = redis.call('GET', KEYS[K_TABLE])
if not raw then return {'NOTFOUND', ''} end
local t = cjson.decode(raw)
if t.st == 'P' then return {'SAME', raw} end
if t.st ~= 'S' then return {'CHANGED', raw} end
for k, b in pairs(t.start.bots or {}) do
  t.seats[tonumber(k) + 1].pl = b.pl
end
t.st = 'P'
t.m = ARGV[A_MATCH]
t.v = t.v + 1
t.exp = tonumber(ARGV[A_NOW]) + tonumber(ARGV[A_TTL])
local enc = cjson.encode(t)
redis.call('SET', KEYS[K_TABLE], enc, 'PX', ARGV[A_TTL])
return {'OK', enc}
`

// Slots of guessScript.
const (
	guessKGuesses = iota
	guessNKeys
)

const (
	guessAWindow = iota
	guessNArgs
)

var guessLayout = redisconn.Layout{
	Name: "count guess",
	Keys: []string{guessKGuesses: "K_GUESSES"},
	Args: []string{guessAWindow: "A_WINDOW"},
}

// guessArgs lays out a run of guessScript: the player's guess counter and
// the window (ms).
func guessArgs(guesses string, windowMS int64) ([]string, []any) {
	k := make([]string, guessNKeys)
	k[guessKGuesses] = guesses
	a := make([]any, guessNArgs)
	a[guessAWindow] = windowMS
	return k, a
}

// guessScript counts one unknown code; the window starts at the first.
var guessScript = guessLayout.Script(guessLua)

const guessLua = `
local n = redis.call('INCR', KEYS[K_GUESSES])
if n == 1 then redis.call('PEXPIRE', KEYS[K_GUESSES], ARGV[A_WINDOW]) end
return n
`
