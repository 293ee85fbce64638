package sessions

import "github.com/fourkingdoms/fourkingdoms/pkg/redisconn"

// Every script touches the two keys of one session, which share its hash
// tag, so each runs atomically on standalone Redis and on a cluster node.
// The slots are named by redisconn.Layouts, as in the ticket store.

// The KEYS of every script: the session hash and its list of rotated hashes.
const (
	kSession = iota
	kUsed
	nKeys
)

var keyNames = []string{kSession: "K_SESSION", kUsed: "K_USED"}

// Slots of createScript.
const (
	createAPlayer = iota
	createAName
	createAHash
	createATTL
	createNArgs
)

var createLayout = redisconn.Layout{
	Name: "session-create",
	Keys: []string{kSession: "K_SESSION"}, // the list starts with the first rotation
	Args: []string{createAPlayer: "A_PLAYER", createAName: "A_NAME", createAHash: "A_HASH", createATTL: "A_TTL"},
}

// createArgs lays out a run of createScript: the new session's hash, its
// player and display name, the hash of its first secret and its TTL (ms).
func createArgs(session, player, name, hash string, ttlMS int64) ([]string, []any) {
	k := []string{kSession: session}
	a := make([]any, createNArgs)
	a[createAPlayer], a[createAName], a[createAHash], a[createATTL] = player, name, hash, ttlMS
	return k, a
}

// createScript stores a new session. It refuses to overwrite one (the
// session id is 128 random bits, so a clash is a bug, never bad luck).
var createScript = createLayout.Script(createLua)

const createLua = `
if redis.call('EXISTS', KEYS[K_SESSION]) == 1 then
	return redis.error_reply('ERR session exists')
end
redis.call('HSET', KEYS[K_SESSION], 'p', ARGV[A_PLAYER], 'n', ARGV[A_NAME], 'h', ARGV[A_HASH])
redis.call('PEXPIRE', KEYS[K_SESSION], ARGV[A_TTL])
return 1
`

// Slots of rotateScript.
const (
	rotateAHash = iota
	rotateANew
	rotateANow
	rotateATTL
	rotateAGrace
	rotateAKeep
	rotateAName
	rotateNArgs
)

var rotateLayout = redisconn.Layout{
	Name: "session-rotate",
	Keys: keyNames,
	Args: []string{rotateAHash: "A_HASH", rotateANew: "A_NEW", rotateANow: "A_NOW", rotateATTL: "A_TTL", rotateAGrace: "A_GRACE", rotateAKeep: "A_KEEP", rotateAName: "A_NAME"},
}

// rotateArgs lays out a run of rotateScript: the session's keys, the
// hash of the secret presented, the hash of its successor, the time (unix
// ms), the session's new TTL (ms), the race grace (ms), how many rotated
// hashes to remember, and the player's new display name ("": unchanged).
func rotateArgs(session, used, hash, next string, nowMS, ttlMS, graceMS int64, keep int, name string) ([]string, []any) {
	k := make([]string, nKeys)
	k[kSession], k[kUsed] = session, used
	a := make([]any, rotateNArgs)
	a[rotateAHash], a[rotateANew], a[rotateANow] = hash, next, nowMS
	a[rotateATTL], a[rotateAGrace], a[rotateAKeep], a[rotateAName] = ttlMS, graceMS, keep, name
	return k, a
}

// rotateScript replaces the session's current secret by its successor,
// renames the player if a name is given, and answers {"ok", player, name}; a
// session ended by a link answers {"invalid"}; a secret rotated less than the grace
// ago answers {"raced"} and changes nothing; any other rotated secret
// deletes the session and answers {"reused"}; anything else {"invalid"}.
var rotateScript = rotateLayout.Script(rotateLua)

const rotateLua = `
local s = redis.call('HMGET', KEYS[K_SESSION], 'p', 'n', 'h', 'ph', 'pt', 'l')
if not s[1] or s[6] then
	return {'invalid'} -- unknown, or ended by a link (linkScript)
end
if s[3] == ARGV[A_HASH] then
	redis.call('HSET', KEYS[K_SESSION], 'h', ARGV[A_NEW], 'ph', ARGV[A_HASH], 'pt', ARGV[A_NOW])
	redis.call('LPUSH', KEYS[K_USED], ARGV[A_HASH])
	redis.call('LTRIM', KEYS[K_USED], 0, tonumber(ARGV[A_KEEP]) - 1)
	redis.call('PEXPIRE', KEYS[K_SESSION], ARGV[A_TTL])
	redis.call('PEXPIRE', KEYS[K_USED], ARGV[A_TTL])
	if ARGV[A_NAME] ~= '' then
		redis.call('HSET', KEYS[K_SESSION], 'n', ARGV[A_NAME])
		return {'ok', s[1], ARGV[A_NAME]}
	end
	return {'ok', s[1], s[2]}
end
if s[4] == ARGV[A_HASH] and tonumber(ARGV[A_NOW]) - tonumber(s[5]) < tonumber(ARGV[A_GRACE]) then
	return {'raced'}
end
if redis.call('LPOS', KEYS[K_USED], ARGV[A_HASH]) then
	redis.call('DEL', KEYS[K_SESSION], KEYS[K_USED])
	return {'reused'}
end
return {'invalid'}
`

// Slots of revokeScript.
const (
	revokeAHash = iota
	revokeNArgs
)

var revokeLayout = redisconn.Layout{
	Name: "session-revoke",
	Keys: keyNames,
	Args: []string{revokeAHash: "A_HASH"},
}

// revokeArgs lays out a run of revokeScript: the session's keys and the
// hash of the secret presented.
func revokeArgs(session, used, hash string) ([]string, []any) {
	k := make([]string, nKeys)
	k[kSession], k[kUsed] = session, used
	a := make([]any, revokeNArgs)
	a[revokeAHash] = hash
	return k, a
}

// revokeScript deletes the session when the secret presented is its
// current one or one it rotated (proof of having held the session), and
// answers 1; otherwise 0.
var revokeScript = revokeLayout.Script(revokeLua)

const revokeLua = `
if redis.call('HGET', KEYS[K_SESSION], 'h') == ARGV[A_HASH] or redis.call('LPOS', KEYS[K_USED], ARGV[A_HASH]) then
	redis.call('DEL', KEYS[K_SESSION], KEYS[K_USED])
	return 1
end
return 0
`

// Slots of linkScript.
const (
	linkAHash = iota
	linkAAccount
	linkANow
	linkATTL
	linkAGrace
	linkNArgs
)

var linkLayout = redisconn.Layout{
	Name: "session-link",
	Keys: keyNames,
	Args: []string{linkAHash: "A_HASH", linkAAccount: "A_ACCOUNT", linkANow: "A_NOW", linkATTL: "A_TTL", linkAGrace: "A_GRACE"},
}

// linkArgs lays out a run of linkScript: the session's keys, the hash of
// the secret presented, the account's player id, the time (unix ms), how
// long the linked session is remembered (ms) and the race grace (ms).
func linkArgs(session, used, hash, account string, nowMS, ttlMS, graceMS int64) ([]string, []any) {
	k := make([]string, nKeys)
	k[kSession], k[kUsed] = session, used
	a := make([]any, linkNArgs)
	a[linkAHash], a[linkAAccount], a[linkANow], a[linkATTL], a[linkAGrace] = hash, account, nowMS, ttlMS, graceMS
	return k, a
}

// linkScript ends the session by linking its player to an account: the
// current secret presented marks the session linked (fields l, the
// account, and lt, the time), keeps it for the TTL so that a repeated call
// can be told apart from a stolen token, and answers {"ok", player, lt}.
// On a linked session, the secret that linked it answers {"ok", player,
// lt} again for the same account and {"linked", account} for another one.
// Otherwise as rotateScript: {"raced"}, {"reused"} (the session is
// deleted) or {"invalid"}.
var linkScript = linkLayout.Script(linkLua)

const linkLua = `
local s = redis.call('HMGET', KEYS[K_SESSION], 'p', 'h', 'ph', 'pt', 'l', 'lt')
if not s[1] then
	return {'invalid'}
end
if s[2] == ARGV[A_HASH] then
	if s[5] then
		if s[5] == ARGV[A_ACCOUNT] then
			return {'ok', s[1], s[6]}
		end
		return {'linked', s[5]}
	end
	redis.call('HSET', KEYS[K_SESSION], 'l', ARGV[A_ACCOUNT], 'lt', ARGV[A_NOW])
	redis.call('PEXPIRE', KEYS[K_SESSION], ARGV[A_TTL])
	redis.call('PEXPIRE', KEYS[K_USED], ARGV[A_TTL])
	return {'ok', s[1], ARGV[A_NOW]}
end
if s[5] then
	return {'invalid'}
end
if s[3] == ARGV[A_HASH] and tonumber(ARGV[A_NOW]) - tonumber(s[4]) < tonumber(ARGV[A_GRACE]) then
	return {'raced'}
end
if redis.call('LPOS', KEYS[K_USED], ARGV[A_HASH]) then
	redis.call('DEL', KEYS[K_SESSION], KEYS[K_USED])
	return {'reused'}
end
return {'invalid'}
`
