package store

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

//go:embed link.lua
var linkSource string

// Slots of the link script.
const (
	linkKStandings = iota
	linkKLeaderboard
	linkKProvisional
	linkNKeys
)

const (
	linkAGuest = iota
	linkAAccount
	linkAGuestRaw
	linkAAccountRaw
	linkANew
	linkNArgs
)

var linkLayout = redisconn.Layout{
	Name: "link",
	Keys: []string{linkKStandings: "K_STANDINGS", linkKLeaderboard: "K_LEADERBOARD", linkKProvisional: "K_PROVISIONAL"},
	Args: []string{linkAGuest: "A_GUEST", linkAAccount: "A_ACCOUNT", linkAGuestRaw: "A_GUEST_RAW", linkAAccountRaw: "A_ACCOUNT_RAW", linkANew: "A_NEW"},
	// The history buckets of the guest's records.
	KeyTail: redisconn.Tail{Name: "K_DAYS"},
	// Per record: its bucket's index among the K_DAYS keys, its match id.
	ArgTail: redisconn.Tail{Name: "A_RECORDS", Width: 2},
}

// aliasMark starts the stored standing of a guest linked to an account:
// "@<account id>".
const aliasMark = '@'

// aliasOf returns the account a stored standing links to, if it is a
// link's tombstone.
func aliasOf(raw string) (string, bool) {
	if len(raw) > 1 && raw[0] == aliasMark {
		return raw[1:], true
	}
	return "", false
}

// Link is a guest player linked to an account.
type Link struct {
	Guest, Account string
	// AccountName is the account's display name; it replaces the guest's
	// in a standing that moves.
	AccountName string
}

// LinkOutcome is what Link did in one pool.
type LinkOutcome int

// The outcomes of Link per pool.
const (
	// LinkedBefore: the guest was linked in the pool already; nothing
	// changed (a redelivered link).
	LinkedBefore LinkOutcome = iota
	// LinkedNothing: the guest never played in the pool; from now on its
	// matches there count for the account.
	LinkedNothing
	// LinkedMoved: the guest's standing, history and leaderboard entry
	// moved to the account.
	LinkedMoved
	// LinkedKept: the account has a standing of its own in the pool and
	// keeps it; the guest's is dropped (delisted, its history left under
	// the guest's id).
	LinkedKept
)

// maxLinkRecords bounds the guest's history records one link rewrites: a
// guest with more games in a pool keeps the older ones under its own id
// (its rating moves all the same). 10,000 records make a script run of
// about 100 ms, once per link.
const maxLinkRecords = 10_000

// Link links l.Guest to l.Account in every pool of pools, each exactly
// once (a repeated link changes nothing), and returns the outcome per
// pool. In a pool where the account has no standing the guest's moves to
// it (see link.lua); where it has one, the account keeps its own. From
// then on, Apply rates the guest's matches as the account's and Players
// reads the guest as the account.
func (s *Store) Link(ctx context.Context, pools []string, l Link) ([]LinkOutcome, error) {
	if l.Guest == "" || l.Account == "" || l.Guest == l.Account {
		return nil, fmt.Errorf("link %q to %q: want two distinct player ids", l.Guest, l.Account)
	}
	out := make([]LinkOutcome, len(pools))
	for i, pool := range pools {
		var err error
		for attempt := 0; ; attempt++ {
			if attempt == s.maxAttempts {
				return out, fmt.Errorf("link %s to %s in pool %s after %d attempts: %w", l.Guest, l.Account, pool, attempt, ErrContention)
			}
			var done bool
			if out[i], done, err = s.linkOnce(ctx, pool, l); err != nil || done {
				break
			}
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// linkOnce reads the two standings and the guest's history chain in pool
// and runs the link script; done is false when it lost a race.
func (s *Store) linkOnce(ctx context.Context, pool string, l Link) (LinkOutcome, bool, error) {
	k := newKeys(s.prefix, pool)
	vals, err := s.rdb.HMGet(ctx, k.standings(), l.Guest, l.Account).Result()
	if err != nil {
		return 0, false, fmt.Errorf("link %s in pool %s: read standings: %w", l.Guest, pool, err)
	}
	gRaw, _ := vals[0].(string)
	oRaw, _ := vals[1].(string)
	if _, ok := aliasOf(gRaw); ok {
		return LinkedBefore, true, nil
	}
	if _, ok := aliasOf(oRaw); ok {
		return 0, false, fmt.Errorf("link %s in pool %s: the account %s is itself linked to another player", l.Guest, pool, l.Account)
	}
	outcome, newRaw := LinkedNothing, ""
	var days []int64
	var records []any
	switch {
	case gRaw != "" && oRaw != "":
		outcome = LinkedKept
	case gRaw != "":
		outcome = LinkedMoved
		g, err := s.decodePlayer(l.Guest, gRaw)
		if err != nil {
			return 0, false, err
		}
		g.ID, g.Name = l.Account, l.AccountName
		newRaw = encodePlayer(g)
		if days, records, err = s.guestRecords(ctx, k, l.Guest, g.last); err != nil {
			return 0, false, fmt.Errorf("link %s in pool %s: %w", l.Guest, pool, err)
		}
	}
	keys, args := linkArgs(k, l, gRaw, oRaw, newRaw, days, records)
	code, err := s.link.Run(ctx, s.rdb, keys, args...).Int64()
	if err != nil {
		return 0, false, fmt.Errorf("link %s in pool %s: %w", l.Guest, pool, err)
	}
	switch code {
	case 1:
		return outcome, true, nil
	case 0:
		return LinkedBefore, true, nil
	}
	return 0, false, nil
}

// linkArgs lays out a run of the link script for keys k: the link, the
// two standings read, the account's new standing ("" when nothing moves)
// and the guest's records as guestRecords returns them.
func linkArgs(k keys, l Link, gRaw, oRaw, newRaw string, days []int64, records []any) ([]string, []any) {
	ks := make([]string, linkNKeys, linkNKeys+len(days))
	ks[linkKStandings], ks[linkKLeaderboard], ks[linkKProvisional] = k.standings(), k.leaderboard(), k.provisional()
	for _, d := range days {
		ks = append(ks, k.history(d))
	}
	args := make([]any, linkNArgs, linkNArgs+len(records))
	args[linkAGuest], args[linkAAccount], args[linkAGuestRaw], args[linkAAccountRaw], args[linkANew] = l.Guest, l.Account, gRaw, oRaw, newRaw
	return ks, append(args, records...)
}

// guestRecords walks a player's history records from ref, newest first,
// to the first game or the first record gone (the history retention), and
// returns the days of their buckets and, per record, the bucket's index
// (from 1) and the match id, as the link script takes them.
func (s *Store) guestRecords(ctx context.Context, k keys, player, ref string) ([]int64, []any, error) {
	var days []int64
	var records []any
	for n := 0; ref != "" && n < maxLinkRecords; n++ {
		day, match, err := parseRecordRef(ref)
		if err != nil {
			return nil, nil, fmt.Errorf("history of %s: bad reference %q: %w", player, ref, err)
		}
		rec, err := s.rdb.HGet(ctx, k.history(day), match).Result()
		if errors.Is(err, redis.Nil) {
			break // past the history retention
		}
		if err != nil {
			return nil, nil, fmt.Errorf("history of %s: %w", player, err)
		}
		_, prev, err := decodeRecent(rec, player)
		if err != nil {
			return nil, nil, fmt.Errorf("history of %s: record %s: %w", player, ref, err)
		}
		i := slices.Index(days, day)
		if i < 0 {
			i = len(days)
			days = append(days, day)
		}
		records = append(records, i+1, match)
		ref = prev
	}
	return days, records, nil
}

// resolve replaces, in the pending results, every player whose stored
// standing (in current, as readBatch read it) is a link's tombstone by the
// account it links to, with no name (the account's stored one is kept).
// It reports whether it replaced anyone, and marks Unratable the matches
// where the account would then hold two seats. results must be the
// caller's own copy.
func resolve(results []ladder.Result, pending []int, current []stored, index map[playerRef]int, out []Outcome) (bool, []int) {
	changed := false
	kept := pending[:0:0]
	for _, i := range pending {
		res := &results[i]
		ok := true
		for p := range res.Places {
			st := current[index[playerRef{res.Pool, res.Places[p].PlayerID}]]
			acct, linked := aliasOf(st.raw)
			if !linked {
				continue
			}
			for q := range res.Places {
				if res.Places[q].PlayerID == acct {
					ok = false
				}
			}
			res.Places[p].PlayerID, res.Places[p].Name = acct, ""
			changed = true
		}
		if !ok {
			out[i] = Outcome{Status: Unratable}
			continue
		}
		kept = append(kept, i)
	}
	return changed, kept
}

// hasAlias reports whether any standing read is a link's tombstone.
func hasAlias(current []stored) bool {
	for _, st := range current {
		if _, ok := aliasOf(st.raw); ok {
			return true
		}
	}
	return false
}
