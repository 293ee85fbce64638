package store

import "github.com/fourkingdoms/fourkingdoms/pkg/redisconn"

// Every script touches only keys of one queue (one hash tag), or one
// player's pointer, passed in KEYS, so each runs atomically on standalone
// Redis and on a cluster node. Ticket states are the single letters of the
// State constants.
//
// Each script's KEYS and ARGV are named by a redisconn.Layout; the Lua
// refers to the slots by those names (KEYS[K_WAITING]) and one function per
// script lays its slots out, by the same names' constants for the fixed
// slots and record by record for a tail (scripts_test.go checks both
// sides). A tail's record layout is written once, at its builder.

// Slots of enqueueScript.
const (
	enqueueKWaiting = iota
	enqueueKTicket
	enqueueNKeys
)

const (
	enqueueAID = iota
	enqueueAEntry
	enqueueAPlayer
	enqueueAEnqueued
	enqueueATTL
	enqueueNArgs
)

var enqueueLayout = redisconn.Layout{
	Name: "enqueue",
	Keys: []string{enqueueKWaiting: "K_WAITING", enqueueKTicket: "K_TICKET"},
	Args: []string{
		enqueueAID:       "A_ID",
		enqueueAEntry:    "A_ENTRY",
		enqueueAPlayer:   "A_PLAYER",
		enqueueAEnqueued: "A_ENQUEUED",
		enqueueATTL:      "A_TTL",
	},
}

// enqueueArgs lays out a run of enqueueScript: the queue's waiting hash,
// the new ticket's key, its id, its waiting entry, its player, its enqueue
// time (unix ms) and the ticket's TTL (ms).
func enqueueArgs(waiting, ticket, id string, entry []byte, player string, enqueuedMS, ttlMS int64) ([]string, []any) {
	k := make([]string, enqueueNKeys)
	k[enqueueKWaiting] = waiting
	k[enqueueKTicket] = ticket
	a := make([]any, enqueueNArgs)
	a[enqueueAID] = id
	a[enqueueAEntry] = entry
	a[enqueueAPlayer] = player
	a[enqueueAEnqueued] = enqueuedMS
	a[enqueueATTL] = ttlMS
	return k, a
}

// enqueueScript adds a waiting ticket.
var enqueueScript = enqueueLayout.Script(enqueueLua)

const enqueueLua = `
redis.call('HSET', KEYS[K_WAITING], ARGV[A_ID], ARGV[A_ENTRY])
redis.call('HSET', KEYS[K_TICKET], 'p', ARGV[A_PLAYER], 'e', ARGV[A_ENQUEUED], 's', 'S')
redis.call('PEXPIRE', KEYS[K_TICKET], ARGV[A_TTL])
return 1
`

// Slots of claimScript.
const (
	claimKWaiting = iota
	claimKRatings
	claimKForming
	claimNKeys
)

const (
	claimADeadline = iota
	claimARecordTTL
	claimNArgs
)

var claimLayout = redisconn.Layout{
	Name:    "claim",
	Keys:    []string{claimKWaiting: "K_WAITING", claimKRatings: "K_RATINGS", claimKForming: "K_FORMING"},
	Args:    []string{claimADeadline: "A_DEADLINE", claimARecordTTL: "A_RECORD_TTL"},
	KeyTail: redisconn.Tail{Name: "K_GROUPS", Width: 5},
	ArgTail: redisconn.Tail{Name: "A_GROUPS", Width: 6},
}

// claimArgs starts a run of claimScript with room for n groups: the
// queue's waiting and ratings hashes and formation deadlines, the
// formations' deadline (unix ms) and the formation records' TTL (ms).
// Add each group with claimGroup.
func claimArgs(waiting, ratings, forming string, deadlineMS, recordTTLMS int64, n int) ([]string, []any) {
	k := make([]string, claimNKeys, claimNKeys+5*n)
	k[claimKWaiting] = waiting
	k[claimKRatings] = ratings
	k[claimKForming] = forming
	a := make([]any, claimNArgs, claimNArgs+6*n)
	a[claimADeadline] = deadlineMS
	a[claimARecordTTL] = recordTTLMS
	return k, a
}

// claimGroup appends one group: keys the formation record and the 4
// tickets' keys, arguments the formation id, its record and the 4 ticket
// ids.
func claimGroup(k []string, a []any, formation, id string, record []byte, tickets, ids [4]string) ([]string, []any) {
	k = append(k, formation)
	k = append(k, tickets[:]...)
	a = append(a, id, record)
	for _, t := range ids {
		a = append(a, t)
	}
	return k, a
}

// claimScript claims whole groups: a group is taken only if all its tickets
// are still waiting, so no ticket ever lands in two formations.
// Returns one 0/1 per group.
var claimScript = claimLayout.Script(claimLua)

const claimLua = `
local out = {}
local g = 0
local k = K_GROUPS
local a = A_GROUPS
while k <= #KEYS do
  g = g + 1
  local ok = true
  for i = 0, 3 do
    if redis.call('HEXISTS', KEYS[K_WAITING], ARGV[a + 2 + i]) == 0 then ok = false end
  end
  if ok then
    for i = 0, 3 do
      local id = ARGV[a + 2 + i]
      redis.call('HDEL', KEYS[K_WAITING], id)
      redis.call('HDEL', KEYS[K_RATINGS], id)
      redis.call('HSET', KEYS[k + 1 + i], 's', 'F', 'f', ARGV[a])
    end
    redis.call('SET', KEYS[k], ARGV[a + 1], 'PX', ARGV[A_RECORD_TTL])
    redis.call('ZADD', KEYS[K_FORMING], ARGV[A_DEADLINE], ARGV[a])
    out[g] = 1
  else
    out[g] = 0
  end
  k = k + 5
  a = a + 6
end
return out
`

// Slots of completeScript.
const (
	completeKForming = iota
	completeKWaits
	completeKFormed
	completeKPlayed
	completeNKeys
)

const (
	completeARetention = iota
	completeACounterTTL
	completeAWaitsCap
	completeAPlayedTTL
	completeAMatchTTL
	completeNArgs
)

var completeLayout = redisconn.Layout{
	Name: "complete",
	Keys: []string{completeKForming: "K_FORMING", completeKWaits: "K_WAITS", completeKFormed: "K_FORMED", completeKPlayed: "K_PLAYED"},
	Args: []string{
		completeARetention:  "A_RETENTION",
		completeACounterTTL: "A_COUNTER_TTL",
		completeAWaitsCap:   "A_WAITS_CAP",
		completeAPlayedTTL:  "A_PLAYED_TTL",
		completeAMatchTTL:   "A_MATCH_TTL",
	},
	KeyTail: redisconn.Tail{Name: "K_GROUPS", Width: 6},
	ArgTail: redisconn.Tail{Name: "A_GROUPS", Width: 18},
}

// completeArgs starts a run of completeScript with room for n groups: the
// queue's formation deadlines, wait samples, formed counter and record of
// the matches formed in the current slot (Store.Played), the tickets'
// retention (ms), the counter's TTL (ms), how many wait samples to keep,
// the played record's TTL (ms) and the match records' TTL (ms). Add each
// formation with completeGroup.
func completeArgs(forming, waits, formed, played string, retentionMS, counterTTLMS int64, waitsCap int, playedTTLMS, matchTTLMS int64, n int) ([]string, []any) {
	k := make([]string, completeNKeys, completeNKeys+6*n)
	k[completeKForming] = forming
	k[completeKWaits] = waits
	k[completeKFormed] = formed
	k[completeKPlayed] = played
	a := make([]any, completeNArgs, completeNArgs+18*n)
	a[completeARetention] = retentionMS
	a[completeACounterTTL] = counterTTLMS
	a[completeAWaitsCap] = waitsCap
	a[completeAPlayedTTL] = playedTTLMS
	a[completeAMatchTTL] = matchTTLMS
	return k, a
}

// completeGroup appends one formation: keys the formation record, the
// match record (Store.matchKey) and the 4 tickets' keys, arguments the formation id, the match id, the 4 seats,
// the 4 wait samples, and for each of the 4 players their id and the
// record of this match to append to their played list ("" for a bot: not
// recorded).
func completeGroup(k []string, a []any, formation, matchRecord, id, match string, tickets [4]string, seats [4]int, waits [4]string, players, played [4]string) ([]string, []any) {
	k = append(k, formation, matchRecord)
	k = append(k, tickets[:]...)
	a = append(a, id, match)
	for _, s := range seats {
		a = append(a, s)
	}
	for _, w := range waits {
		a = append(a, w)
	}
	for i := range players {
		a = append(a, players[i], played[i])
	}
	return k, a
}

// completeScript marks the tickets of formations matched and keeps each
// formation's record as its match's record (field f, for a requeue after a
// first-move abort: requeue.go). A formation already completed or released
// is skipped (0).
var completeScript = completeLayout.Script(completeLua)

const completeLua = `
local out = {}
local g = 0
local k = K_GROUPS
local a = A_GROUPS
while k <= #KEYS do
  g = g + 1
  -- While its record exists a formation owns its four tickets: they left
  -- Q:w when it was claimed and return only when it is released, which
  -- deletes the record. So no per-ticket check is needed here.
  if redis.call('EXISTS', KEYS[k]) == 1 then
    for i = 0, 3 do
      local t = KEYS[k + 2 + i]
      redis.call('HSET', t, 's', 'M', 'm', ARGV[a + 1], 'seat', ARGV[a + 2 + i])
      redis.call('PEXPIRE', t, ARGV[A_RETENTION])
    end
    redis.call('LPUSH', KEYS[K_WAITS], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], ARGV[a + 9])
    redis.call('HSET', KEYS[k + 1], 'f', redis.call('GET', KEYS[k]))
    redis.call('PEXPIRE', KEYS[k + 1], ARGV[A_MATCH_TTL])
    redis.call('DEL', KEYS[k])
    redis.call('ZREM', KEYS[K_FORMING], ARGV[a])
    redis.call('INCR', KEYS[K_FORMED])
    -- Each player's played list of the slot is a JSON array: append.
    for i = 0, 3 do
      local p, rec = ARGV[a + 10 + 2 * i], ARGV[a + 11 + 2 * i]
      if rec ~= '' then
        local v = redis.call('HGET', KEYS[K_PLAYED], p)
        if v then v = string.sub(v, 1, -2) .. ',' .. rec .. ']' else v = '[' .. rec .. ']' end
        redis.call('HSET', KEYS[K_PLAYED], p, v)
      end
    end
    out[g] = 1
  else
    out[g] = 0
  end
  k = k + 6
  a = a + 18
end
if redis.call('EXISTS', KEYS[K_PLAYED]) == 1 then
  redis.call('PEXPIRE', KEYS[K_PLAYED], ARGV[A_PLAYED_TTL])
end
redis.call('PEXPIRE', KEYS[K_FORMED], ARGV[A_COUNTER_TTL])
redis.call('LTRIM', KEYS[K_WAITS], 0, tonumber(ARGV[A_WAITS_CAP]) - 1)
return out
`

// Slots of releaseScript.
const (
	releaseKForming = iota
	releaseKWaiting
	releaseKFormation
	releaseNKeys
)

const (
	releaseAFormation = iota
	releaseNArgs
)

var releaseLayout = redisconn.Layout{
	Name: "release",
	Keys: []string{releaseKForming: "K_FORMING", releaseKWaiting: "K_WAITING", releaseKFormation: "K_FORMATION"},
	Args: []string{releaseAFormation: "A_FORMATION"},
	// The 4 tickets' keys; their ids, then their waiting entries.
	KeyTail: redisconn.Tail{Name: "K_TICKETS", Count: 4},
	ArgTail: redisconn.Tail{Name: "A_TICKETS", Width: 8, Count: 1},
}

// releaseArgs lays out a run of releaseScript: the queue's formation
// deadlines and waiting hash, the formation's record, its id, and its 4
// tickets' keys, ids and original waiting entries.
func releaseArgs(forming, waiting, formation, id string, tickets, ids [4]string, entries [4][]byte) ([]string, []any) {
	k := make([]string, releaseNKeys, releaseNKeys+4)
	k[releaseKForming] = forming
	k[releaseKWaiting] = waiting
	k[releaseKFormation] = formation
	k = append(k, tickets[:]...)
	a := make([]any, releaseNArgs, releaseNArgs+8)
	a[releaseAFormation] = id
	for _, t := range ids {
		a = append(a, t)
	}
	for _, e := range entries {
		a = append(a, e)
	}
	return k, a
}

// releaseScript returns a formation's tickets to the queue with their
// original entries (so their original enqueue time).
var releaseScript = releaseLayout.Script(releaseLua)

const releaseLua = `
if redis.call('EXISTS', KEYS[K_FORMATION]) == 0 then return 0 end
for i = 0, 3 do
  local t = KEYS[K_TICKETS + i]
  if redis.call('HGET', t, 'f') == ARGV[A_FORMATION] then
    redis.call('HSET', t, 's', 'S')
    redis.call('HDEL', t, 'f')
    redis.call('HSET', KEYS[K_WAITING], ARGV[A_TICKETS + i], ARGV[A_TICKETS + 4 + i])
  end
end
redis.call('DEL', KEYS[K_FORMATION])
redis.call('ZREM', KEYS[K_FORMING], ARGV[A_FORMATION])
return 1
`

// Slots of leaseScript.
const (
	leaseKForming = iota
	leaseKFormation
	leaseNKeys
)

const (
	leaseAFormation = iota
	leaseAOld
	leaseANew
	leaseNArgs
)

var leaseLayout = redisconn.Layout{
	Name: "lease",
	Keys: []string{leaseKForming: "K_FORMING", leaseKFormation: "K_FORMATION"},
	Args: []string{leaseAFormation: "A_FORMATION", leaseAOld: "A_OLD_DEADLINE", leaseANew: "A_NEW_DEADLINE"},
}

// leaseArgs lays out a run of leaseScript: the queue's formation
// deadlines, the formation's record, its id, and its deadline as read and
// as it shall be (unix ms).
func leaseArgs(forming, formation, id string, oldMS, newMS int64) ([]string, []any) {
	k := make([]string, leaseNKeys)
	k[leaseKForming] = forming
	k[leaseKFormation] = formation
	a := make([]any, leaseNArgs)
	a[leaseAFormation] = id
	a[leaseAOld] = oldMS
	a[leaseANew] = newMS
	return k, a
}

// leaseScript lets one instance take over an overdue formation: the first to
// move its deadline from the value it read owns the recovery attempt.
// Returns the record, or false.
var leaseScript = leaseLayout.Script(leaseLua)

const leaseLua = `
local d = redis.call('ZSCORE', KEYS[K_FORMING], ARGV[A_FORMATION])
if not d or tonumber(d) ~= tonumber(ARGV[A_OLD_DEADLINE]) then return false end
local rec = redis.call('GET', KEYS[K_FORMATION])
if not rec then
  redis.call('ZREM', KEYS[K_FORMING], ARGV[A_FORMATION])
  return false
end
redis.call('ZADD', KEYS[K_FORMING], ARGV[A_NEW_DEADLINE], ARGV[A_FORMATION])
return rec
`

// Slots of finishScript.
const (
	finishKWaiting = iota
	finishKRatings
	finishNKeys
)

const (
	finishAState = iota
	finishARetention
	finishNArgs
)

var finishLayout = redisconn.Layout{
	Name: "finish",
	Keys: []string{finishKWaiting: "K_WAITING", finishKRatings: "K_RATINGS"},
	Args: []string{finishAState: "A_STATE", finishARetention: "A_RETENTION"},
	// The tickets' keys and, in the same order, their ids.
	KeyTail: redisconn.Tail{Name: "K_TICKETS"},
	ArgTail: redisconn.Tail{Name: "A_IDS"},
}

// finishArgs lays out a run of finishScript: the queue's waiting and
// ratings hashes, the final state, the tickets' retention (ms), and the
// tickets' keys and ids.
func finishArgs(waiting, ratings string, st State, retentionMS int64, tickets, ids []string) ([]string, []any) {
	k := make([]string, finishNKeys, finishNKeys+len(tickets))
	k[finishKWaiting] = waiting
	k[finishKRatings] = ratings
	k = append(k, tickets...)
	a := make([]any, finishNArgs, finishNArgs+len(ids))
	a[finishAState] = string(st)
	a[finishARetention] = retentionMS
	for _, id := range ids {
		a = append(a, id)
	}
	return k, a
}

// finishScript ends waiting tickets (cancel or expire) if they are still
// waiting. Returns one 0/1 per ticket.
var finishScript = finishLayout.Script(finishLua)

const finishLua = `
local out = {}
for j = 0, #KEYS - K_TICKETS do
  local t, id = KEYS[K_TICKETS + j], ARGV[A_IDS + j]
  if redis.call('HDEL', KEYS[K_WAITING], id) == 1 then
    redis.call('HDEL', KEYS[K_RATINGS], id)
    redis.call('HSET', t, 's', ARGV[A_STATE])
    redis.call('PEXPIRE', t, ARGV[A_RETENTION])
    out[j + 1] = 1
  else
    out[j + 1] = 0
  end
end
return out
`

// Slots of rateScript.
const (
	rateKWaiting = iota
	rateKRatings
	rateNKeys
)

var rateLayout = redisconn.Layout{
	Name: "rate",
	Keys: []string{rateKWaiting: "K_WAITING", rateKRatings: "K_RATINGS"},
	// Pairs of ticket id and rating.
	ArgTail: redisconn.Tail{Name: "A_RATINGS", Width: 2},
}

// rateArgs lays out a run of rateScript: the queue's waiting and ratings
// hashes, and room for n pairs of ticket id and rating, which the caller
// appends to the arguments.
func rateArgs(waiting, ratings string, n int) ([]string, []any) {
	k := make([]string, rateNKeys)
	k[rateKWaiting] = waiting
	k[rateKRatings] = ratings
	return k, make([]any, 0, 2*n)
}

// rateScript records ratings of tickets that are still waiting.
var rateScript = rateLayout.Script(rateLua)

const rateLua = `
for i = A_RATINGS, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[K_WAITING], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[K_RATINGS], ARGV[i], ARGV[i + 1])
  end
end
return 1
`

// Slots of replacePointerScript and dropPointerScript.
const (
	pointerKPointer = iota
	pointerNKeys
)

const (
	replaceAOld = iota
	replaceANew
	replaceATTL
	replaceNArgs
)

var replacePointerLayout = redisconn.Layout{
	Name: "replace pointer",
	Keys: []string{pointerKPointer: "K_POINTER"},
	Args: []string{replaceAOld: "A_OLD", replaceANew: "A_NEW", replaceATTL: "A_TTL"},
}

// replacePointerArgs lays out a run of replacePointerScript: the pointer,
// the value read, the new value and its TTL (ms).
func replacePointerArgs(pointer, old, val string, ttlMS int64) ([]string, []any) {
	k := make([]string, pointerNKeys)
	k[pointerKPointer] = pointer
	a := make([]any, replaceNArgs)
	a[replaceAOld] = old
	a[replaceANew] = val
	a[replaceATTL] = ttlMS
	return k, a
}

// replacePointerScript swaps a player's live-ticket pointer if it still
// holds the value the caller read.
var replacePointerScript = replacePointerLayout.Script(replacePointerLua)

const replacePointerLua = `
if redis.call('GET', KEYS[K_POINTER]) ~= ARGV[A_OLD] then return 0 end
redis.call('SET', KEYS[K_POINTER], ARGV[A_NEW], 'PX', ARGV[A_TTL])
return 1
`

const (
	dropATicket = iota
	dropNArgs
)

var dropPointerLayout = redisconn.Layout{
	Name: "drop pointer",
	Keys: []string{pointerKPointer: "K_POINTER"},
	Args: []string{dropATicket: "A_TICKET"},
}

// dropPointerArgs lays out a run of dropPointerScript: the pointer and the
// ticket id it must point to.
func dropPointerArgs(pointer, ticket string) ([]string, []any) {
	k := make([]string, pointerNKeys)
	k[pointerKPointer] = pointer
	a := make([]any, dropNArgs)
	a[dropATicket] = ticket
	return k, a
}

// dropPointerScript deletes a pointer if it still points to the ticket
// (the value is "<ticket id>|<created ms>").
var dropPointerScript = dropPointerLayout.Script(dropPointerLua)

const dropPointerLua = `
local v = redis.call('GET', KEYS[K_POINTER])
if v and string.sub(v, 1, #ARGV[A_TICKET] + 1) == ARGV[A_TICKET] .. '|' then return redis.call('DEL', KEYS[K_POINTER]) end
return 0
`
