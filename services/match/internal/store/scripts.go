package store

import "github.com/fourkingdoms/fourkingdoms/pkg/redisconn"

// Every state change of a match is one of these scripts, run atomically on the
// node that owns the match's hash slot. All keys a script touches are passed in
// KEYS and share the partition hash tag, so the scripts run unchanged on a
// standalone Redis and on Redis Cluster.
//
// Each script's KEYS and ARGV are named by a redisconn.Layout indexed by the
// constants below: the Lua refers to the slots by those names (KEYS[K_MATCH]),
// and one function per script fills them by the same constants, so Go and Lua
// cannot disagree on an index (scripts_test.go checks both sides).

// Slots of createScript.
const (
	createKRequest = iota
	createKMatch
	createKEvents
	createKDeadlines
	createNKeys
)

const (
	createAID = iota
	createAGame
	createAClock
	createAMeta
	createAEvent
	createADeadline
	createARequestTTL
	createALogLen
	createAStamp
	createNArgs
)

var createLayout = redisconn.Layout{
	Name: "create",
	Keys: []string{
		createKRequest:   "K_REQUEST",
		createKMatch:     "K_MATCH",
		createKEvents:    "K_EVENTS",
		createKDeadlines: "K_DEADLINES",
	},
	Args: []string{
		createAID:         "A_ID",
		createAGame:       "A_GAME",
		createAClock:      "A_CLOCK",
		createAMeta:       "A_META",
		createAEvent:      "A_EVENT",
		createADeadline:   "A_DEADLINE",
		createARequestTTL: "A_REQUEST_TTL",
		createALogLen:     "A_LOG_LEN",
		createAStamp:      "A_STAMP",
	},
}

// createCall is one run of createScript.
type createCall struct {
	request, match, events, deadlines string // keys
	id                                string
	game, clock, meta, event          []byte
	deadline                          int64 // unix ms, 0 = none
	requestTTL                        int64 // ms
	logLen                            int   // event log length
	stamp                             string
}

func (c *createCall) keysArgs() ([]string, []any) {
	k := make([]string, createNKeys)
	k[createKRequest] = c.request
	k[createKMatch] = c.match
	k[createKEvents] = c.events
	k[createKDeadlines] = c.deadlines
	a := make([]any, createNArgs)
	a[createAID] = c.id
	a[createAGame] = c.game
	a[createAClock] = c.clock
	a[createAMeta] = c.meta
	a[createAEvent] = c.event
	a[createADeadline] = c.deadline
	a[createARequestTTL] = c.requestTTL
	a[createALogLen] = c.logLen
	a[createAStamp] = c.stamp
	return k, a
}

// createScript creates a match unless the request id was already used.
// Returns {1, id} when created, {0, existing id} for a repeated request.
var createScript = createLayout.Script(createLua)

const createLua = `
local existing = redis.call('GET', KEYS[K_REQUEST])
if existing then return {0, existing} end
if redis.call('EXISTS', KEYS[K_MATCH]) == 1 then return redis.error_reply('ERR match id collision') end
redis.call('HSET', KEYS[K_MATCH], 'v', '1:' .. ARGV[A_STAMP], 'g', ARGV[A_GAME], 'c', ARGV[A_CLOCK], 'meta', ARGV[A_META])
redis.call('XADD', KEYS[K_EVENTS], 'MAXLEN', '~', ARGV[A_LOG_LEN], '1-0', 'e', ARGV[A_EVENT])
redis.call('SET', KEYS[K_REQUEST], ARGV[A_ID], 'PX', ARGV[A_REQUEST_TTL])
if tonumber(ARGV[A_DEADLINE]) > 0 then redis.call('ZADD', KEYS[K_DEADLINES], ARGV[A_DEADLINE], ARGV[A_ID]) end
return {1, ARGV[A_ID]}
`

// Slots of commitScript.
const (
	commitKMatch = iota
	commitKEvents
	commitKMoves
	commitKDeadlines
	commitKOutbox
	commitKChannel
	commitNKeys
)

const (
	commitAID = iota
	commitAExpected
	commitAGame
	commitAClock
	commitAMoveKey
	commitAReply
	commitADeadline
	commitAFinished
	commitARetention
	commitAOutboxData
	commitAOutboxType
	commitATypeField
	commitADataField
	commitALogLen
	commitANEvents
	commitAStamp
	commitAPrivate
	commitNArgs
)

var commitLayout = redisconn.Layout{
	Name: "commit",
	Keys: []string{
		commitKMatch:     "K_MATCH",
		commitKEvents:    "K_EVENTS",
		commitKMoves:     "K_MOVES",
		commitKDeadlines: "K_DEADLINES",
		commitKOutbox:    "K_OUTBOX",
		commitKChannel:   "K_CHANNEL",
	},
	Args: []string{
		commitAID:         "A_ID",
		commitAExpected:   "A_EXPECTED",
		commitAGame:       "A_GAME",
		commitAClock:      "A_CLOCK",
		commitAMoveKey:    "A_MOVE_KEY",
		commitAReply:      "A_REPLY",
		commitADeadline:   "A_DEADLINE",
		commitAFinished:   "A_FINISHED",
		commitARetention:  "A_RETENTION",
		commitAOutboxData: "A_OUTBOX_DATA",
		commitAOutboxType: "A_OUTBOX_TYPE",
		commitATypeField:  "A_TYPE_FIELD",
		commitADataField:  "A_DATA_FIELD",
		commitALogLen:     "A_LOG_LEN",
		commitANEvents:    "A_N_EVENTS",
		commitAStamp:      "A_STAMP",
		commitAPrivate:    "A_PRIVATE",
	},
	// The events, A_N_EVENTS of them.
	ArgTail: redisconn.Tail{Name: "A_EVENTS"},
}

// commitCall is one run of commitScript.
type commitCall struct {
	match, events, moves, deadlines, outbox, channel string // keys
	id                                               string
	expected                                         string // "<version>:<stamp>"
	game, clock                                      []byte
	moveKey                                          string // "" = none
	reply                                            []byte
	deadline                                         int64  // unix ms, 0 = remove
	finished                                         string // "1"/"0"
	retention                                        int64  // ms
	outboxData                                       []byte // empty = none
	outboxType, typeField, dataField                 string
	logLen                                           int
	stamp                                            string // the new stamp
	private                                          []byte // private notification, "" = none
	evs                                              [][]byte
}

// appendTo appends the keys and arguments of c to cmd, which
// commitScript.Args started with room for them: the commit is the hot path
// of every move, so the whole EVALSHA is one slice.
func (c *commitCall) appendTo(cmd []any) []any {
	n := len(cmd)
	cmd = append(cmd, make([]any, commitNKeys+commitNArgs)...)
	k, a := cmd[n:n+commitNKeys], cmd[n+commitNKeys:]
	k[commitKMatch] = c.match
	k[commitKEvents] = c.events
	k[commitKMoves] = c.moves
	k[commitKDeadlines] = c.deadlines
	k[commitKOutbox] = c.outbox
	k[commitKChannel] = c.channel
	a[commitAID] = c.id
	a[commitAExpected] = c.expected
	a[commitAGame] = c.game
	a[commitAClock] = c.clock
	a[commitAMoveKey] = c.moveKey
	a[commitAReply] = c.reply
	a[commitADeadline] = c.deadline
	a[commitAFinished] = c.finished
	a[commitARetention] = c.retention
	a[commitAOutboxData] = c.outboxData
	a[commitAOutboxType] = c.outboxType
	a[commitATypeField] = c.typeField
	a[commitADataField] = c.dataField
	a[commitALogLen] = c.logLen
	a[commitANEvents] = len(c.evs)
	a[commitAStamp] = c.stamp
	a[commitAPrivate] = c.private
	for _, e := range c.evs {
		cmd = append(cmd, e)
	}
	return cmd
}

// commitScript applies one state change if the match is still at the version
// the caller computed it from. The outbox entry (A_OUTBOX_*, A_*_FIELD) has
// the layout of the relayed streams' entries (package eventstream), so Relay
// copies it unchanged.
//
// The field v holds "<version>:<stamp>", the stamp being random per commit:
// a writer whose cached state was lost in a failover (an acknowledged write
// the promoted replica never received) cannot mistake a different state
// with the same version number for its own.
//
// Returns {0, new version} when applied; {1, version:stamp, game, clock} when the
// match moved on (the caller retries from that state without another read);
// {2, reply} when the move key was already answered; {3} when the match does
// not exist.
//
// Versions of the N events are expected+1 .. expected+N; each event is a
// stream entry with the id "<version>-0" so readers can resume by version.
// The live notification is one SPUBLISH of all events, each prefixed with its
// 4-byte big-endian length. A_PRIVATE, when not empty, is published after it
// on the same channel as it is (EncodePrivate): notices for one player's
// watchers only, which take no version and are not stored in the stream.
var commitScript = commitLayout.Script(commitLua)

const commitLua = `
if ARGV[A_MOVE_KEY] ~= '' then
  local r = redis.call('HGET', KEYS[K_MOVES], ARGV[A_MOVE_KEY])
  if r then
    -- Rewrite the stored reply (a no-op change) so that a WAIT after this
    -- script covers it, and with it the original write before it in the
    -- replication stream: a retry is acknowledged only once replicated.
    redis.call('HSET', KEYS[K_MOVES], ARGV[A_MOVE_KEY], r)
    return {2, r}
  end
end
local v = redis.call('HGET', KEYS[K_MATCH], 'v')
if not v then return {3} end
if v ~= ARGV[A_EXPECTED] then
  local cur = redis.call('HMGET', KEYS[K_MATCH], 'v', 'g', 'c')
  return {1, cur[1], cur[2], cur[3]}
end
local base = tonumber(string.match(v, '^%d+'))
local n = tonumber(ARGV[A_N_EVENTS])
redis.call('HSET', KEYS[K_MATCH], 'v', string.format('%d:', base + n) .. ARGV[A_STAMP], 'g', ARGV[A_GAME], 'c', ARGV[A_CLOCK])
-- Big-endian 4-byte length prefix, written by hand rather than with struct.pack so the script also
-- runs on the embedded development store, whose Lua has no struct library.
local function be32(len)
  return string.char(math.floor(len / 16777216) % 256, math.floor(len / 65536) % 256, math.floor(len / 256) % 256, len % 256)
end
local parts = {}
for i = 1, n do
  local e = ARGV[A_EVENTS + i - 1]
  redis.call('XADD', KEYS[K_EVENTS], 'MAXLEN', '~', ARGV[A_LOG_LEN], string.format('%d-0', base + i), 'e', e)
  parts[#parts + 1] = be32(#e)
  parts[#parts + 1] = e
end
if ARGV[A_MOVE_KEY] ~= '' then redis.call('HSET', KEYS[K_MOVES], ARGV[A_MOVE_KEY], ARGV[A_REPLY]) end
if tonumber(ARGV[A_DEADLINE]) > 0 then
  redis.call('ZADD', KEYS[K_DEADLINES], ARGV[A_DEADLINE], ARGV[A_ID])
else
  redis.call('ZREM', KEYS[K_DEADLINES], ARGV[A_ID])
end
if ARGV[A_FINISHED] == '1' then
  if ARGV[A_OUTBOX_DATA] ~= '' then
    redis.call('XADD', KEYS[K_OUTBOX], '*', ARGV[A_TYPE_FIELD], ARGV[A_OUTBOX_TYPE], ARGV[A_DATA_FIELD], ARGV[A_OUTBOX_DATA])
  end
  redis.call('PEXPIRE', KEYS[K_MATCH], ARGV[A_RETENTION])
  redis.call('PEXPIRE', KEYS[K_EVENTS], ARGV[A_RETENTION])
  redis.call('PEXPIRE', KEYS[K_MOVES], ARGV[A_RETENTION])
end
if n > 0 then redis.call('SPUBLISH', KEYS[K_CHANNEL], table.concat(parts)) end
if ARGV[A_PRIVATE] ~= '' then redis.call('SPUBLISH', KEYS[K_CHANNEL], ARGV[A_PRIVATE]) end
return {0, base + n}
`

// Slots of heartbeatScript: the membership set, then every range's lease.
const (
	heartbeatKMembers = iota
	heartbeatNKeys
)

const (
	heartbeatAOwner = iota
	heartbeatATTL
	heartbeatNArgs
)

var heartbeatLayout = redisconn.Layout{
	Name:    "keeper-heartbeat",
	Keys:    []string{heartbeatKMembers: "K_MEMBERS"},
	Args:    []string{heartbeatAOwner: "A_OWNER", heartbeatATTL: "A_TTL"},
	KeyTail: redisconn.Tail{Name: "K_LEASES", Count: KeeperRanges},
	ArgTail: redisconn.Tail{Name: "A_HELD", Count: KeeperRanges},
}

// heartbeatArgs lays out a run of heartbeatScript: the membership key, the
// lease key of every range, the owner, the TTL (ms), and per range the
// lease value the owner holds ("" where it holds none).
func heartbeatArgs(members string, leases []string, owner string, ttlMS int64, held []string) ([]string, []any) {
	k := make([]string, heartbeatNKeys, heartbeatNKeys+len(leases))
	k[heartbeatKMembers] = members
	k = append(k, leases...)
	a := make([]any, heartbeatNArgs, heartbeatNArgs+len(held))
	a[heartbeatAOwner] = owner
	a[heartbeatATTL] = ttlMS
	for _, h := range held {
		a = append(a, h)
	}
	return k, a
}

// heartbeatScript announces a keeper instance and renews its range leases.
// It drops the members whose announcement expired, (re)adds the owner with
// the expiry now+TTL by the server's clock, and renews (PEXPIRE TTL) each
// range lease whose value is still exactly what the owner holds: owner and
// fencing token, so a lease that lapsed and was taken by anyone else, or
// taken again by the same owner under a new token, is never extended by a
// stale holder. A member and its leases renewed by one run expire at the
// same moment (the script's time), so an instance that dies leaves the
// membership when its leases lapse.
//
// Returns {members, value of each range lease ("" if free)},
// read after the renewals.
var heartbeatScript = heartbeatLayout.Script(heartbeatLua)

const heartbeatLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[A_TTL])
redis.call('ZREMRANGEBYSCORE', KEYS[K_MEMBERS], '-inf', now)
redis.call('ZADD', KEYS[K_MEMBERS], now + ttl, ARGV[A_OWNER])
redis.call('PEXPIRE', KEYS[K_MEMBERS], ttl)
local members = redis.call('ZRANGE', KEYS[K_MEMBERS], 0, -1)
local leases = {}
for i = 0, #KEYS - K_LEASES do
  local cur = redis.call('GET', KEYS[K_LEASES + i])
  local held = ARGV[A_HELD + i]
  if cur and held ~= '' and cur == held then
    redis.call('PEXPIRE', KEYS[K_LEASES + i], ttl)
  end
  leases[#leases + 1] = cur or ''
end
return {members, leases}
`

// Slots of acquireScript: the fencing counter, then candidate range leases.
const (
	acquireKFence = iota
	acquireNKeys
)

const (
	acquireAOwner = iota
	acquireATTL
	acquireAWant
	acquireNArgs
)

var acquireLayout = redisconn.Layout{
	Name:    "keeper-acquire",
	Keys:    []string{acquireKFence: "K_FENCE"},
	Args:    []string{acquireAOwner: "A_OWNER", acquireATTL: "A_TTL", acquireAWant: "A_WANT"},
	KeyTail: redisconn.Tail{Name: "K_LEASES"},
}

// acquireArgs lays out a run of acquireScript: the fencing counter, the
// candidate lease keys in order of preference, the owner, the TTL (ms) and
// how many of the candidates to take at most.
func acquireArgs(fence string, candidates []string, owner string, ttlMS int64, want int) ([]string, []any) {
	k := make([]string, acquireNKeys, acquireNKeys+len(candidates))
	k[acquireKFence] = fence
	k = append(k, candidates...)
	a := make([]any, acquireNArgs)
	a[acquireAOwner] = owner
	a[acquireATTL] = ttlMS
	a[acquireAWant] = want
	return k, a
}

// acquireScript takes up to A_WANT of the candidate leases that are free,
// in order; each taken lease gets a new fencing token (INCR of the fence
// counter, never reused) and holds "<token>:<owner>" for TTL ms. Two
// instances taking at once therefore never take the same lease, and a
// candidate taken by another since the caller looked is skipped.
//
// Returns one value per candidate: the lease value taken, or "" if not.
var acquireScript = acquireLayout.Script(acquireLua)

const acquireLua = `
local want = tonumber(ARGV[A_WANT])
local out = {}
for i = 0, #KEYS - K_LEASES do
  local v = ''
  if want > 0 and redis.call('EXISTS', KEYS[K_LEASES + i]) == 0 then
    v = redis.call('INCR', KEYS[K_FENCE]) .. ':' .. ARGV[A_OWNER]
    redis.call('SET', KEYS[K_LEASES + i], v, 'PX', ARGV[A_TTL])
    want = want - 1
  end
  out[#out + 1] = v
end
return out
`

// Slots of releaseScript: the membership set, then the leases to release.
const (
	releaseKMembers = iota
	releaseNKeys
)

const (
	releaseAOwner = iota
	releaseALeave
	releaseNArgs
)

var releaseLayout = redisconn.Layout{
	Name:    "keeper-release",
	Keys:    []string{releaseKMembers: "K_MEMBERS"},
	Args:    []string{releaseAOwner: "A_OWNER", releaseALeave: "A_LEAVE"},
	KeyTail: redisconn.Tail{Name: "K_LEASES"},
	ArgTail: redisconn.Tail{Name: "A_HELD"},
}

// releaseArgs lays out a run of releaseScript: the membership key, the
// lease keys with the value the owner holds in each, the owner, and
// whether it also leaves the membership.
func releaseArgs(members string, leases []string, owner string, leave bool, held []string) ([]string, []any) {
	k := make([]string, releaseNKeys, releaseNKeys+len(leases))
	k[releaseKMembers] = members
	k = append(k, leases...)
	a := make([]any, releaseNArgs, releaseNArgs+len(held))
	a[releaseAOwner] = owner
	a[releaseALeave] = "0"
	if leave {
		a[releaseALeave] = "1"
	}
	for _, h := range held {
		a = append(a, h)
	}
	return k, a
}

// releaseScript deletes each lease that still holds exactly the value the
// caller holds (owner and fencing token), and with A_LEAVE = "1" removes
// the owner from the membership. Returns the number of leases deleted.
var releaseScript = releaseLayout.Script(releaseLua)

const releaseLua = `
if #KEYS - K_LEASES ~= #ARGV - A_HELD then
  return redis.error_reply('ERR script keeper-release: one held value per lease expected')
end
local n = 0
for i = 0, #KEYS - K_LEASES do
  if redis.call('GET', KEYS[K_LEASES + i]) == ARGV[A_HELD + i] then
    n = n + redis.call('DEL', KEYS[K_LEASES + i])
  end
end
if ARGV[A_LEAVE] == '1' then redis.call('ZREM', KEYS[K_MEMBERS], ARGV[A_OWNER]) end
return n
`

// relayScript copies outbox entries to one global stream, each at
// most once: K_MARKS holds one mark key per entry (in the stream's slot) and
// A_ENTRIES its type and data; an entry whose mark exists was copied before
// and is skipped. It returns the number of entries added.
const (
	relayKStream = iota
	relayNKeys
)

const (
	relayATypeField = iota
	relayADataField
	relayAMaxLen
	relayAMarkTTL
	relayNArgs
)

var relayLayout = redisconn.Layout{
	Name:    "relay",
	Keys:    []string{relayKStream: "K_STREAM"},
	Args:    []string{relayATypeField: "A_TYPE_FIELD", relayADataField: "A_DATA_FIELD", relayAMaxLen: "A_MAXLEN", relayAMarkTTL: "A_MARK_TTL"},
	KeyTail: redisconn.Tail{Name: "K_MARKS"},
	ArgTail: redisconn.Tail{Name: "A_ENTRIES", Width: 2},
}

var relayScript = relayLayout.Script(`
local n = #KEYS - K_MARKS + 1
if #ARGV - A_ENTRIES + 1 ~= 2 * n then
  return redis.error_reply('ERR script relay: one mark key per entry expected')
end
local maxlen = tonumber(ARGV[A_MAXLEN])
local added = 0
for i = 0, n - 1 do
  if redis.call('SET', KEYS[K_MARKS + i], '1', 'NX', 'PX', ARGV[A_MARK_TTL]) then
    local t, d = ARGV[A_ENTRIES + 2 * i], ARGV[A_ENTRIES + 2 * i + 1]
    if maxlen > 0 then
      redis.call('XADD', KEYS[K_STREAM], 'MAXLEN', '~', maxlen, '*', ARGV[A_TYPE_FIELD], t, ARGV[A_DATA_FIELD], d)
    else
      redis.call('XADD', KEYS[K_STREAM], '*', ARGV[A_TYPE_FIELD], t, ARGV[A_DATA_FIELD], d)
    end
    added = added + 1
  end
end
return added
`)
