package store

import (
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
)

// The two scripts, apply.lua and history.lua, name their KEYS and ARGV by
// the layouts below (KEYS[K_STANDINGS]); redisconn.Layout.Script prepends
// the names' values, taken from these constants, to the embedded source,
// and the Go code fills the slots by the same constants (scripts_test.go
// checks both sides). Every key a script touches is passed in KEYS,
// including the day buckets, so the scripts follow Redis Cluster's rules
// and key-pattern ACLs; all of them carry the pool's hash tag.

// Slots of the apply script.
const (
	applyKStandings = iota
	applyKSeq
	applyKLeaderboard
	applyKWatermark
	applyKProvisional
	applyNKeys
)

const (
	applyANMatches = iota
	applyAMarkerRetention
	applyANBuckets
	applyAHistoryRetention
	applyATouch
	applyAMarkerDropFirst
	applyAMarkerDrops
	applyAHistoryDropFirst
	applyAHistoryDrops
	applyNArgs
)

// applyMatchWidth is the number of arguments per match: id, bucket,
// finish time, history record, then per player id, standing before,
// standing after, leaderboard action (see boardAction).
const applyMatchWidth = 4 + 4*4

var applyLayout = redisconn.Layout{
	Name: "apply",
	Keys: []string{
		applyKStandings:   "K_STANDINGS",
		applyKSeq:         "K_SEQ",
		applyKLeaderboard: "K_LEADERBOARD",
		applyKWatermark:   "K_WATERMARK",
		applyKProvisional: "K_PROVISIONAL",
	},
	Args: []string{
		applyANMatches:         "A_N_MATCHES",
		applyAMarkerRetention:  "A_MARKER_RETENTION",
		applyANBuckets:         "A_N_BUCKETS",
		applyAHistoryRetention: "A_HISTORY_RETENTION",
		applyATouch:            "A_TOUCH",
		applyAMarkerDropFirst:  "A_MARKER_DROP_FIRST",
		applyAMarkerDrops:      "A_MARKER_DROPS",
		applyAHistoryDropFirst: "A_HISTORY_DROP_FIRST",
		applyAHistoryDrops:     "A_HISTORY_DROPS",
	},
	// The marker buckets, the history buckets of the same days, the marker
	// buckets to drop, the history buckets to drop (see apply.lua).
	KeyTail: redisconn.Tail{Name: "K_BUCKETS"},
	ArgTail: redisconn.Tail{Name: "A_MATCHES", Width: applyMatchWidth},
}

// maxDropDays bounds the day buckets of each kind that one run may drop:
// after a long pause (or on a pool's first run) older ones are left.
const maxDropDays = 1000

// dropDays returns the days whose buckets a run may have to drop, given
// the pool's watermark as read before the run (unix ms), the newest finish
// time among the run's matches and the buckets' retention: those the run
// makes obsolete if it moves the watermark up to that finish time. A day d
// is obsolete once (d + 1) * day <= watermark - retention.
//
// The script drops only the days it actually makes obsolete, so the range
// may be wide. It is wide enough: a run can only move the watermark to
// the finish time of one of its matches, and the days up to the read
// watermark's limit were dropped by the run that moved it there (a later
// watermark read only narrows the range from below by days dropped too).
// With no watermark read (a pool's first run) it is the maxDropDays up to
// the limit.
func dropDays(wmRead, newest int64, retention time.Duration) (first int64, n int) {
	if newest <= wmRead {
		return 0, 0 // the run leaves the watermark where it is
	}
	ret := retention.Milliseconds()
	last := dayOf(time.UnixMilli(newest-ret)) - 1
	first = last - maxDropDays + 1
	if wmRead > 0 {
		first = max(first, dayOf(time.UnixMilli(wmRead-ret)))
	}
	if last < first {
		return 0, 0
	}
	return first, int(last - first + 1)
}

// Slots of the history script.
const (
	historyKWatermark = iota
	historyNKeys
)

const (
	historyAPlayer = iota
	historyARef
	historyALimit
	historyARetention
	historyALastDay
	historyNArgs
)

// historyWindow is the number of days of history buckets one run of the
// history script gets: a page whose walk leaves them is continued by
// another run.
const historyWindow = 16

var historyLayout = redisconn.Layout{
	Name: "history",
	Keys: []string{historyKWatermark: "K_WATERMARK"},
	Args: []string{
		historyAPlayer:    "A_PLAYER",
		historyARef:       "A_REF",
		historyALimit:     "A_LIMIT",
		historyARetention: "A_RETENTION",
		historyALastDay:   "A_LAST_DAY",
	},
	// The history buckets of the days A_LAST_DAY, A_LAST_DAY - 1, ...
	KeyTail: redisconn.Tail{Name: "K_DAYS"},
}

// historyArgs lays out a run of the history script for keys k: from the
// record ref (whose day is lastDay) up to limit entries of player, reading
// the history buckets of lastDay and the historyWindow - 1 days before.
func historyArgs(k keys, player, ref string, lastDay int64, limit int, retention time.Duration) ([]string, []any) {
	ks := make([]string, historyNKeys, historyNKeys+historyWindow)
	ks[historyKWatermark] = k.watermark()
	for d := lastDay; d > lastDay-historyWindow; d-- {
		ks = append(ks, k.history(d))
	}
	a := make([]any, historyNArgs)
	a[historyAPlayer] = player
	a[historyARef] = ref
	a[historyALimit] = limit
	a[historyARetention] = retention.Milliseconds()
	a[historyALastDay] = lastDay
	return ks, a
}

// Slots of the backfill script.
const (
	backfillKStandings = iota
	backfillKSeq
	backfillKProvisional
	backfillNKeys
)

// backfillWidth is the number of arguments per player: id, the standing
// read, the display rating.
const backfillWidth = 3

var backfillLayout = redisconn.Layout{
	Name: "backfill",
	Keys: []string{
		backfillKStandings:   "K_STANDINGS",
		backfillKSeq:         "K_SEQ",
		backfillKProvisional: "K_PROVISIONAL",
	},
	ArgTail: redisconn.Tail{Name: "A_PLAYERS", Width: backfillWidth},
}
