package store

import (
	"strconv"
	"strings"
)

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

// standings is the hash of the players' standings: player id -> standing.
func (k keys) standings() string { return k.tag + ":s" }

// history is the hash of the history records of the matches that
// finished on day: match id -> the four players' entries (see codec.go).
// A player's records are linked from their standing, newest first.
func (k keys) history(day int64) string { return k.tag + ":hist:" + strconv.FormatInt(day, 10) }

// leaderboard is the sorted set of listed players.
func (k keys) leaderboard() string { return k.tag + ":lb" }

// provisional is the sorted set of the players of the leaderboard's
// provisional section: humans whose rating is still provisional, scored
// like the leaderboard.
func (k keys) provisional() string { return k.tag + ":prov" }

// backfilled marks a pool whose provisional section holds every
// provisional player (see Store.Backfill): players rated before the
// section existed were added.
func (k keys) backfilled() string { return k.tag + ":prov:filled" }

// bucket is the hash of the matches applied that finished on day (days
// since the Unix epoch, UTC): match id -> apply sequence number.
func (k keys) bucket(day int64) string { return k.tag + ":applied:" + strconv.FormatInt(day, 10) }

// seq is the counter of applied matches.
func (k keys) seq() string { return k.tag + ":seq" }

// watermark holds the latest finish time (Unix ms) of the matches applied.
func (k keys) watermark() string { return k.tag + ":wm" }
