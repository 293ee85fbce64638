package store

import "github.com/fourkingdoms/fourkingdoms/pkg/redisconn"

// Slots of requeueScript and adoptScript: the match record, the queue's
// waiting hash and a ticket, all under the queue's tag.
const (
	requeueKRecord = iota
	requeueKWaiting
	requeueKTicket
	requeueNKeys
)

const (
	requeueAField = iota
	requeueAID
	requeueAEntry
	requeueAPlayer
	requeueAEnqueued
	requeueAExpires
	requeueATTL
	requeueNArgs
)

var requeueLayout = redisconn.Layout{
	Name: "requeue",
	Keys: []string{requeueKRecord: "K_RECORD", requeueKWaiting: "K_WAITING", requeueKTicket: "K_TICKET"},
	Args: []string{
		requeueAField:    "A_FIELD",
		requeueAID:       "A_ID",
		requeueAEntry:    "A_ENTRY",
		requeueAPlayer:   "A_PLAYER",
		requeueAEnqueued: "A_ENQUEUED",
		requeueAExpires:  "A_EXPIRES",
		requeueATTL:      "A_TTL",
	},
}

// requeueArgs lays out a run of requeueScript: the match record, the
// queue's waiting hash, the new ticket's key, the record's field of the
// player, the ticket's id, waiting entry, player, enqueue time and expiry
// (unix ms), and the ticket record's TTL (ms).
func requeueArgs(record, waiting, ticket, field, id string, entry []byte, player string, enqueuedMS, expiresMS, ttlMS int64) ([]string, []any) {
	k := make([]string, requeueNKeys)
	k[requeueKRecord] = record
	k[requeueKWaiting] = waiting
	k[requeueKTicket] = ticket
	a := make([]any, requeueNArgs)
	a[requeueAField] = field
	a[requeueAID] = id
	a[requeueAEntry] = entry
	a[requeueAPlayer] = player
	a[requeueAEnqueued] = enqueuedMS
	a[requeueAExpires] = expiresMS
	a[requeueATTL] = ttlMS
	return k, a
}

// requeueScript adds a player's requeued ticket and marks the player
// handled in the match record, once: it returns 1 when it did, 0 when the
// player was handled before, -1 when the record is gone (expired), in
// which case it writes nothing (no record without a TTL).
var requeueScript = requeueLayout.Script(requeueLua)

const requeueLua = `
if redis.call('EXISTS', KEYS[K_RECORD]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[K_RECORD], ARGV[A_FIELD]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[K_TICKET]) == 0 then
  redis.call('HSET', KEYS[K_WAITING], ARGV[A_ID], ARGV[A_ENTRY])
  redis.call('HSET', KEYS[K_TICKET], 'p', ARGV[A_PLAYER], 'e', ARGV[A_ENQUEUED], 'x', ARGV[A_EXPIRES], 's', 'S')
  redis.call('PEXPIRE', KEYS[K_TICKET], ARGV[A_TTL])
end
redis.call('HSET', KEYS[K_RECORD], ARGV[A_FIELD], ARGV[A_ID])
return 1
`

const (
	adoptAField = iota
	adoptAID
	adoptAOld
	adoptAEntry
	adoptAEnqueued
	adoptAExpires
	adoptNArgs
)

var adoptLayout = redisconn.Layout{
	Name: "adopt",
	Keys: []string{requeueKRecord: "K_RECORD", requeueKWaiting: "K_WAITING", requeueKTicket: "K_TICKET"},
	Args: []string{
		adoptAField:    "A_FIELD",
		adoptAID:       "A_ID",
		adoptAOld:      "A_OLD",
		adoptAEntry:    "A_ENTRY",
		adoptAEnqueued: "A_ENQUEUED",
		adoptAExpires:  "A_EXPIRES",
	},
}

// adoptArgs lays out a run of adoptScript: the match record, the queue's
// waiting hash, the ticket's key, the record's field of the player, the
// ticket's id, its waiting entry as read and the entry to replace it with
// (nil: only mark), its new enqueue time and expiry (unix ms).
func adoptArgs(record, waiting, ticket, field, id string, old, entry []byte, enqueuedMS, expiresMS int64) ([]string, []any) {
	k := make([]string, requeueNKeys)
	k[requeueKRecord] = record
	k[requeueKWaiting] = waiting
	k[requeueKTicket] = ticket
	a := make([]any, adoptNArgs)
	a[adoptAField] = field
	a[adoptAID] = id
	a[adoptAOld] = old
	a[adoptAEntry] = entry
	a[adoptAEnqueued] = enqueuedMS
	a[adoptAExpires] = expiresMS
	return k, a
}

// adoptScript gives a player's searching ticket the original enqueue time
// of their abandoned match's ticket if its waiting entry is still the one
// read (so still searching, unclaimed), and marks the player handled in the
// match record with the ticket's id. It returns 1 when it changed the
// ticket, 0 otherwise; nothing when the record is gone or the player was
// handled before.
var adoptScript = adoptLayout.Script(adoptLua)

const adoptLua = `
if redis.call('EXISTS', KEYS[K_RECORD]) == 0 or redis.call('HEXISTS', KEYS[K_RECORD], ARGV[A_FIELD]) == 1 then return 0 end
local changed = 0
if ARGV[A_ENTRY] ~= '' and redis.call('HGET', KEYS[K_WAITING], ARGV[A_ID]) == ARGV[A_OLD] then
  redis.call('HSET', KEYS[K_WAITING], ARGV[A_ID], ARGV[A_ENTRY])
  redis.call('HSET', KEYS[K_TICKET], 'e', ARGV[A_ENQUEUED], 'x', ARGV[A_EXPIRES])
  changed = 1
end
redis.call('HSET', KEYS[K_RECORD], ARGV[A_FIELD], ARGV[A_ID])
return changed
`
