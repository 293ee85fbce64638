package store

import "strings"

// keys builds the Redis keys of one pool. Every key of a pool carries the
// hash tag {rt:<pool>}, so all of them live in one cluster slot and one Lua
// script may touch any of them (see docs/rating.md for the layout).
type keys struct {
	tag string // prefix + "{rt:" + pool + "}"
}

func newKeys(prefix, pool string) keys {
	var b strings.Builder
	b.Grow(len(prefix) + len(pool) + 5)
	b.WriteString(prefix)
	b.WriteString("{rt:")
	b.WriteString(pool)
	b.WriteString("}")
	return keys{tag: b.String()}
}

// player is the hash of a player's standing.
func (k keys) player(id string) string { return k.tag + ":p:" + id }

// history is the list of a player's rating changes, newest first.
func (k keys) history(id string) string { return k.tag + ":h:" + id }

// leaderboard is the sorted set of listed players.
func (k keys) leaderboard() string { return k.tag + ":lb" }

// applied is the hash of applied matches: match id -> apply sequence number.
func (k keys) applied() string { return k.tag + ":applied" }

// seq is the counter of applied matches.
func (k keys) seq() string { return k.tag + ":seq" }
