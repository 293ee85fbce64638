package rematch

import "github.com/fourkingdoms/fourkingdoms/pkg/redisconn"

// Every script touches only the offer's hash, so it runs atomically on a
// cluster node too. Each returns the hash after the change (HGETALL).

// Slots of offerScript and declineScript.
const (
	changeKOffer = iota
	changeNKeys
)

const (
	changeAPlayer = iota
	changeAHumans
	changeANow
	changeAExpires
	changeATTL
	changeNArgs
)

var changeLayout = redisconn.Layout{
	Name: "rematch-change",
	Keys: []string{changeKOffer: "K_OFFER"},
	Args: []string{
		changeAPlayer:  "A_PLAYER",
		changeAHumans:  "A_HUMANS",
		changeANow:     "A_NOW",
		changeAExpires: "A_EXPIRES",
		changeATTL:     "A_TTL",
	},
}

// changeArgs lays out a run of offerScript or declineScript: the offer's
// hash, the calling player, the humans (JSON list, used when the offer is
// new), the time (unix ms), the expiry of a new offer (unix ms) and the
// hash's TTL (ms).
func changeArgs(offer, player string, humans []byte, nowMS, expiresMS, ttlMS int64) ([]string, []any) {
	k := make([]string, changeNKeys)
	k[changeKOffer] = offer
	a := make([]any, changeNArgs)
	a[changeAPlayer] = player
	a[changeAHumans] = humans
	a[changeANow] = nowMS
	a[changeAExpires] = expiresMS
	a[changeATTL] = ttlMS
	return k, a
}

// changePrelude creates a missing offer (state O, nobody accepted) and
// turns an offer past its window into X.
const changePrelude = `
local k = KEYS[K_OFFER]
if redis.call('EXISTS', k) == 0 then
  redis.call('HSET', k, 's', 'O', 'h', ARGV[A_HUMANS], 'e', ARGV[A_EXPIRES], 'v', 0)
  redis.call('PEXPIRE', k, ARGV[A_TTL])
end
local s = redis.call('HGET', k, 's')
if s == 'O' and tonumber(ARGV[A_NOW]) >= tonumber(redis.call('HGET', k, 'e')) then
  redis.call('HSET', k, 's', 'X')
  redis.call('HINCRBY', k, 'v', 1)
  s = 'X'
end
`

// offerScript accepts for the player; the last human's accept makes A.
var offerScript = changeLayout.Script(offerLua)

const offerLua = changePrelude + `
if s == 'O' then
  local changed = redis.call('HSETNX', k, 'a:' .. ARGV[A_PLAYER], 1) == 1
  local all = true
  for _, p in ipairs(cjson.decode(redis.call('HGET', k, 'h'))) do
    if redis.call('HEXISTS', k, 'a:' .. p) == 0 then all = false end
  end
  if all then
    redis.call('HSET', k, 's', 'A')
    changed = true
  end
  if changed then redis.call('HINCRBY', k, 'v', 1) end
end
return redis.call('HGETALL', k)
`

// declineScript declines for the player: only a waiting offer changes.
var declineScript = changeLayout.Script(declineLua)

const declineLua = changePrelude + `
if s == 'O' then
  redis.call('HSET', k, 's', 'D', 'd', ARGV[A_PLAYER])
  redis.call('HINCRBY', k, 'v', 1)
end
return redis.call('HGETALL', k)
`

// Slots of startedScript.
const (
	startedKOffer = iota
	startedNKeys
)

const (
	startedAMatch = iota
	startedNArgs
)

var startedLayout = redisconn.Layout{
	Name: "rematch-started",
	Keys: []string{startedKOffer: "K_OFFER"},
	Args: []string{startedAMatch: "A_MATCH"},
}

// startedArgs lays out a run of startedScript: the offer's hash and the
// new match id.
func startedArgs(offer, match string) ([]string, []any) {
	k := make([]string, startedNKeys)
	k[startedKOffer] = offer
	a := make([]any, startedNArgs)
	a[startedAMatch] = match
	return k, a
}

// startedScript records the new match of an offer in A. Every creator
// got the same match (one request id), so a second call finds S and
// changes nothing.
var startedScript = startedLayout.Script(startedLua)

const startedLua = `
local k = KEYS[K_OFFER]
if redis.call('HGET', k, 's') == 'A' then
  redis.call('HSET', k, 's', 'S', 'n', ARGV[A_MATCH])
  redis.call('HINCRBY', k, 'v', 1)
end
return redis.call('HGETALL', k)
`
