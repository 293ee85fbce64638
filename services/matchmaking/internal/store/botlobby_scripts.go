package store

import "github.com/fourkingdoms/fourkingdoms/pkg/redisconn"

// Scripts of the bot lobby (botlobby.go). Each touches keys of one lobby
// (one hash tag) only.

// Slots of reserveScript.
const (
	reserveKWaiting = iota
	reserveKReservation
	reserveNKeys
)

const (
	reserveACount = iota
	reserveAHolder
	reserveATTL
	reserveNArgs
)

var reserveLayout = redisconn.Layout{
	Name:    "reserve bots",
	Keys:    []string{reserveKWaiting: "K_WAITING", reserveKReservation: "K_RESERVATION"},
	Args:    []string{reserveACount: "A_COUNT", reserveAHolder: "A_HOLDER", reserveATTL: "A_TTL"},
	KeyTail: redisconn.Tail{Name: "K_TICKETS"},
	ArgTail: redisconn.Tail{Name: "A_IDS"},
}

// reserveArgs lays out a run of reserveScript: the lobby's waiting hash,
// the reservation key, how many bots, the holder, the reservation's TTL
// (ms), then the candidate tickets' keys and ids (same order).
func reserveArgs(waiting, reservation string, n int, holder string, ttlMS int64, tickets, ids []string) ([]string, []any) {
	k := make([]string, reserveNKeys, reserveNKeys+len(tickets))
	k[reserveKWaiting] = waiting
	k[reserveKReservation] = reservation
	k = append(k, tickets...)
	a := make([]any, reserveNArgs, reserveNArgs+len(ids))
	a[reserveACount] = n
	a[reserveAHolder] = holder
	a[reserveATTL] = ttlMS
	for _, id := range ids {
		a = append(a, id)
	}
	return k, a
}

// reserveScript returns the holder's reservation if it exists; otherwise it
// takes the first A_COUNT candidates still waiting out of the lobby (state
// F, formation = holder) and records them, or takes none (nil reply) when
// fewer are waiting. The record is a JSON list of [id, entry].
var reserveScript = reserveLayout.Script(reserveLua)

const reserveLua = `
local r = redis.call('GET', KEYS[K_RESERVATION])
if r then return r end
local need = tonumber(ARGV[A_COUNT])
local picked = {}
for i = 0, #KEYS - K_TICKETS do
  if #picked == need then break end
  local id = ARGV[A_IDS + i]
  local e = redis.call('HGET', KEYS[K_WAITING], id)
  if e then picked[#picked + 1] = {i, id, e} end
end
if #picked < need then return false end
local rec = {}
for _, p in ipairs(picked) do
  redis.call('HDEL', KEYS[K_WAITING], p[2])
  redis.call('HSET', KEYS[K_TICKETS + p[1]], 's', 'F', 'f', ARGV[A_HOLDER])
  rec[#rec + 1] = {p[2], p[3]}
end
local enc = cjson.encode(rec)
redis.call('SET', KEYS[K_RESERVATION], enc, 'PX', ARGV[A_TTL])
return enc
`

// Slots of completeBotsScript.
const (
	completeBotsAHolder = iota
	completeBotsAMatch
	completeBotsARetention
	completeBotsNArgs
)

var completeBotsLayout = redisconn.Layout{
	Name:    "complete bots",
	Args:    []string{completeBotsAHolder: "A_HOLDER", completeBotsAMatch: "A_MATCH", completeBotsARetention: "A_RETENTION"},
	KeyTail: redisconn.Tail{Name: "K_TICKETS"},
	ArgTail: redisconn.Tail{Name: "A_SEATS"},
}

// completeBotsArgs lays out a run of completeBotsScript: the holder, the
// match, the tickets' retention (ms), then the tickets' keys and seats.
func completeBotsArgs(holder, match string, retentionMS int64, tickets []string, seats []int) ([]string, []any) {
	k := append([]string(nil), tickets...)
	a := make([]any, completeBotsNArgs, completeBotsNArgs+len(seats))
	a[completeBotsAHolder] = holder
	a[completeBotsAMatch] = match
	a[completeBotsARetention] = retentionMS
	for _, s := range seats {
		a = append(a, s)
	}
	return k, a
}

// completeBotsScript marks tickets reserved for the holder matched, and
// counts those already matched to the same match as done. Returns the
// number done.
var completeBotsScript = completeBotsLayout.Script(completeBotsLua)

const completeBotsLua = `
local n = 0
for i = 0, #KEYS - K_TICKETS do
  local key = KEYS[K_TICKETS + i]
  local st = redis.call('HMGET', key, 's', 'f', 'm')
  if st[1] == 'F' and st[2] == ARGV[A_HOLDER] then
    redis.call('HSET', key, 's', 'M', 'm', ARGV[A_MATCH], 'seat', ARGV[A_SEATS + i])
    redis.call('PEXPIRE', key, ARGV[A_RETENTION])
    n = n + 1
  elseif st[1] == 'M' and st[3] == ARGV[A_MATCH] then
    n = n + 1
  end
end
return n
`

// Slots of releaseBotsScript.
const (
	releaseBotsKWaiting = iota
	releaseBotsKReservation
	releaseBotsNKeys
)

const (
	releaseBotsAHolder = iota
	releaseBotsNArgs
)

var releaseBotsLayout = redisconn.Layout{
	Name:    "release bots",
	Keys:    []string{releaseBotsKWaiting: "K_WAITING", releaseBotsKReservation: "K_RESERVATION"},
	Args:    []string{releaseBotsAHolder: "A_HOLDER"},
	KeyTail: redisconn.Tail{Name: "K_TICKETS"},
	ArgTail: redisconn.Tail{Name: "A_BOTS", Width: 2},
}

// releaseBotsArgs lays out a run of releaseBotsScript: the lobby's waiting
// hash, the reservation, the holder, then the tickets' keys and, per
// ticket, its id and waiting entry.
func releaseBotsArgs(waiting, reservation, holder string, tickets, ids, entries []string) ([]string, []any) {
	k := make([]string, releaseBotsNKeys, releaseBotsNKeys+len(tickets))
	k[releaseBotsKWaiting] = waiting
	k[releaseBotsKReservation] = reservation
	k = append(k, tickets...)
	a := make([]any, releaseBotsNArgs, releaseBotsNArgs+2*len(ids))
	a[releaseBotsAHolder] = holder
	for i, id := range ids {
		a = append(a, id, entries[i])
	}
	return k, a
}

// releaseBotsScript puts the tickets still reserved for the holder back
// into the lobby and deletes the reservation.
var releaseBotsScript = releaseBotsLayout.Script(releaseBotsLua)

const releaseBotsLua = `
for i = 0, #KEYS - K_TICKETS do
  local key = KEYS[K_TICKETS + i]
  local st = redis.call('HMGET', key, 's', 'f')
  if st[1] == 'F' and st[2] == ARGV[A_HOLDER] then
    redis.call('HSET', key, 's', 'S')
    redis.call('HDEL', key, 'f')
    redis.call('HSET', KEYS[K_WAITING], ARGV[A_BOTS + 2 * i], ARGV[A_BOTS + 2 * i + 1])
  end
end
redis.call('DEL', KEYS[K_RESERVATION])
return 1
`
