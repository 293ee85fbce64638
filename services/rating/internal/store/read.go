package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Players returns the standings of ids in pool, in the order of ids.
// Players who never played in the pool get the default standing and
// Known = false. A guest linked to an account (Link) reads as the
// account: its Player has the account's ID and standing.
func (s *Store) Players(ctx context.Context, pool string, ids []string) ([]Player, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	// One HMGET: every standing of a pool is in one hash.
	vals, err := s.rdb.HMGet(ctx, newKeys(s.prefix, pool).standings(), ids...).Result()
	if err != nil {
		return nil, fmt.Errorf("read %d players of pool %s: %w", len(ids), pool, err)
	}
	out := make([]Player, len(ids))
	var linked []int // guests linked to accounts: read as the account
	var accounts []string
	for i, v := range vals {
		raw, _ := v.(string)
		if acct, ok := aliasOf(raw); ok {
			linked, accounts = append(linked, i), append(accounts, acct)
			continue
		}
		p, err := s.decodePlayer(ids[i], raw)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	if len(linked) == 0 {
		return out, nil
	}
	vals, err = s.rdb.HMGet(ctx, newKeys(s.prefix, pool).standings(), accounts...).Result()
	if err != nil {
		return nil, fmt.Errorf("read %d linked accounts of pool %s: %w", len(accounts), pool, err)
	}
	for j, v := range vals {
		raw, _ := v.(string)
		if _, ok := aliasOf(raw); ok {
			return nil, fmt.Errorf("read player %s of pool %s: account %s is linked to another player", ids[linked[j]], pool, accounts[j])
		}
		p, err := s.decodePlayer(accounts[j], raw)
		if err != nil {
			return nil, err
		}
		out[linked[j]] = p
	}
	return out, nil
}

// Applied returns the sequence number under which match was applied in
// pool, and false if it was not applied or finished so long before the
// pool's watermark that its marker is gone. It looks through every marker
// bucket that can still exist.
func (s *Store) Applied(ctx context.Context, pool, match string) (int64, bool, error) {
	k := newKeys(s.prefix, pool)
	wm, err := s.rdb.Get(ctx, k.watermark()).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil // nothing applied yet
	}
	if err != nil {
		return 0, false, fmt.Errorf("read watermark of pool %s: %w", pool, err)
	}
	last := dayOf(time.UnixMilli(wm))
	first := dayOf(time.UnixMilli(wm - s.retention.Markers.Milliseconds()))
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, 0, last-first+1)
	for d := first; d <= last; d++ {
		cmds = append(cmds, pipe.HGet(ctx, k.bucket(d), match))
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	for _, c := range cmds {
		seq, err := c.Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("read applied marker of match %s: %w", match, err)
		}
		return seq, true, nil
	}
	return 0, false, nil
}

// LeaderboardEntry is one line of a leaderboard.
type LeaderboardEntry struct {
	// Rank is the 1-based position in the leaderboard's section.
	Rank int64
	// Display is the displayed rating that placed the player.
	Display int
	Player  Player
}

// Section is a part of a pool's leaderboard.
type Section int

const (
	// Ranked lists the humans whose rating is established.
	Ranked Section = iota
	// Provisional lists the humans whose rating is still provisional
	// (ladder.Policy.Provisional), in the same order. Players rated before
	// the section existed appear once Backfill has run for the pool.
	Provisional
)

// LeaderboardPage is one page of a leaderboard section.
type LeaderboardPage struct {
	Entries []LeaderboardEntry
	// Next is the cursor of the next page; "" after the last page.
	Next string
	// Size is the number of players in the section.
	Size int64
}

// key returns the sorted set of section sec.
func (k keys) section(sec Section) string {
	if sec == Provisional {
		return k.provisional()
	}
	return k.leaderboard()
}

// Leaderboard returns up to limit entries of a section of pool's
// leaderboard, best first. cursor is "" for the first page or the next
// cursor of the previous page of the same section.
//
// Order: display rating, highest first; equal ratings: the player whose
// rating last changed in an earlier match (lower apply sequence number)
// first, and for one match the better place first. The cursor is
// the last entry's score, so pages neither repeat nor skip players whose
// score did not change meanwhile. The entry's Display comes from the
// leaderboard itself; the standing is read just after it and may be newer.
func (s *Store) Leaderboard(ctx context.Context, pool string, sec Section, cursor string, limit int) (LeaderboardPage, error) {
	if limit <= 0 {
		return LeaderboardPage{}, fmt.Errorf("leaderboard page size %d: must be positive", limit)
	}
	max := "+inf"
	if cursor != "" {
		after, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || after < 0 {
			return LeaderboardPage{}, fmt.Errorf("leaderboard cursor %q: %w", cursor, ErrInvalidCursor)
		}
		max = "(" + cursor
	}
	key := newKeys(s.prefix, pool).section(sec)
	var above, size *redis.IntCmd
	var page *redis.ZSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		above = p.ZCount(ctx, key, strings.TrimPrefix(max, "("), "+inf")
		page = p.ZRevRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Max: max, Min: "-inf", Count: int64(limit) + 1})
		size = p.ZCard(ctx, key)
		return nil
	})
	if err != nil {
		return LeaderboardPage{}, fmt.Errorf("read leaderboard of pool %s: %w", pool, err)
	}
	zs := page.Val()
	more := len(zs) > limit
	zs = zs[:min(len(zs), limit)]
	ids := make([]string, len(zs))
	for i, z := range zs {
		ids[i], _ = z.Member.(string)
	}
	players, err := s.Players(ctx, pool, ids)
	if err != nil {
		return LeaderboardPage{}, err
	}
	// ZCOUNT counted the entries of earlier pages, down to the cursor
	// (none without a cursor: nothing scores +inf).
	rank := above.Val()
	out := LeaderboardPage{Entries: make([]LeaderboardEntry, len(zs)), Size: size.Val()}
	for i, z := range zs {
		out.Entries[i] = LeaderboardEntry{Rank: rank + int64(i) + 1, Display: int(math.Floor(z.Score / tieBits)), Player: players[i]}
	}
	if more {
		out.Next = strconv.FormatInt(int64(zs[len(zs)-1].Score), 10)
	}
	return out, nil
}

// History returns up to limit of a player's rated matches in pool, newest
// first, starting at cursor ("" = the newest game; else the next cursor of
// the previous page). next is "" after the last page.
//
// A cursor is the reference of a history record: records are immutable and
// each links to the player's previous one, so paging is stable while new
// games arrive. A cursor that is not a record of this player's is refused
// with ErrInvalidCursor. Records older than the history retention are gone:
// the history ends before them, and a cursor to one gives an empty last
// page.
func (s *Store) History(ctx context.Context, pool, playerID, cursor string, limit int) ([]HistoryEntry, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("history page size %d: %w", limit, ErrInvalidCursor)
	}
	k := newKeys(s.prefix, pool)
	if cursor != "" {
		if _, _, err := parseRecordRef(cursor); err != nil {
			return nil, "", fmt.Errorf("history cursor %q: %w", cursor, ErrInvalidCursor)
		}
	}
	// Read the player even with a cursor: a guest linked to an account
	// reads as the account, whose id its records carry now.
	p, err := s.Players(ctx, pool, []string{playerID})
	if err != nil {
		return nil, "", err
	}
	playerID = p[0].ID
	if cursor == "" {
		if cursor = p[0].last; cursor == "" {
			return nil, "", nil // never played in the pool
		}
	}
	// Each run reads the buckets of a window of days (every key a script
	// touches is passed to it); a page that walks past the window goes on
	// from where it stopped.
	var out []HistoryEntry
	next := cursor
	for {
		day, _, err := parseRecordRef(next)
		if err != nil {
			return nil, "", fmt.Errorf("read history of %s in pool %s: bad reference %q: %w", playerID, pool, next, err)
		}
		ks, args := historyArgs(k, playerID, next, day, limit-len(out), s.retention.History)
		vals, err := s.history.Run(ctx, s.rdb, ks, args...).Slice()
		if err != nil {
			return nil, "", fmt.Errorf("read history of %s in pool %s: %w", playerID, pool, err)
		}
		if len(vals) < 2 {
			return nil, "", fmt.Errorf("read history of %s in pool %s: %d values returned", playerID, pool, len(vals))
		}
		status, _ := vals[0].(int64)
		switch {
		case status == 1 && next == cursor:
			return nil, "", fmt.Errorf("history cursor %q: %w", cursor, ErrInvalidCursor)
		case status == 1:
			return nil, "", fmt.Errorf("read history of %s in pool %s: record %s is missing", playerID, pool, next)
		}
		next, _ = vals[1].(string)
		for _, v := range vals[2:] {
			raw, _ := v.(string)
			e, err := decodeHistory(raw)
			if err != nil {
				return nil, "", fmt.Errorf("read history of %s in pool %s: %w", playerID, pool, err)
			}
			out = append(out, e)
		}
		if status != 2 || len(out) >= limit {
			break
		}
	}
	return out, next, nil
}

// RecentMatch is one of a player's latest rated matches and the other
// three players of it.
type RecentMatch struct {
	MatchID    string
	FinishedAt time.Time
	CoPlayers  []string
}

// MaxRecent bounds the recent matches Recent returns per player.
const MaxRecent = 10

// Recent returns, for each of players (as Players returned them), up to n
// of their latest rated matches in pool, newest first, with the other
// players of each match. It follows each player's chain of history records
// from their standing, all players at once: one pipeline per step of the
// chains, so at most n round trips for a whole batch (one cluster slot: a
// pool's keys share it). The chain ends at a player's first game or at a record already deleted
// by the history retention.
func (s *Store) Recent(ctx context.Context, pool string, players []Player, n int) ([][]RecentMatch, error) {
	if n < 0 || n > MaxRecent {
		return nil, fmt.Errorf("recent matches %d: want 0 to %d", n, MaxRecent)
	}
	out := make([][]RecentMatch, len(players))
	if n == 0 {
		return out, nil
	}
	k := newKeys(s.prefix, pool)
	refs := make([]string, len(players))
	for i, p := range players {
		refs[i] = p.last
	}
	for range n {
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(players))
		for i, ref := range refs {
			if ref == "" {
				continue
			}
			day, match, err := parseRecordRef(ref)
			if err != nil {
				return nil, fmt.Errorf("recent matches of %s in pool %s: bad reference %q: %w", players[i].ID, pool, ref, err)
			}
			cmds[i] = pipe.HGet(ctx, k.history(day), match)
		}
		if pipe.Len() == 0 {
			break
		}
		_, _ = pipe.Exec(ctx) // errors are read per command below
		for i, c := range cmds {
			if c == nil {
				continue
			}
			raw, err := c.Result()
			if errors.Is(err, redis.Nil) {
				refs[i] = "" // past the history retention: the chain ends here
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("recent matches of %s in pool %s: %w", players[i].ID, pool, err)
			}
			m, prev, err := decodeRecent(raw, players[i].ID)
			if err != nil {
				return nil, fmt.Errorf("recent matches of %s in pool %s: record %s: %w", players[i].ID, pool, refs[i], err)
			}
			out[i] = append(out[i], m)
			refs[i] = prev
		}
	}
	return out, nil
}

// decodeRecent reads a match's history record (see appendRecordPart) from
// player's point of view: the match, the other players, and the reference
// of the player's previous record.
func decodeRecent(rec, player string) (RecentMatch, string, error) {
	var m RecentMatch
	var prev string
	found := false
	for rest := rec; rest != ""; {
		var id, p, entry string
		var ok bool
		if id, rest, ok = cutRecordPart(rest); !ok {
			return m, "", errors.New("corrupt history record")
		}
		if p, rest, ok = cutRecordPart(rest); !ok {
			return m, "", errors.New("corrupt history record")
		}
		if entry, rest, ok = cutRecordPart(rest); !ok {
			return m, "", errors.New("corrupt history record")
		}
		if id != player {
			m.CoPlayers = append(m.CoPlayers, id)
			continue
		}
		e, err := decodeHistory(entry)
		if err != nil {
			return m, "", err
		}
		m.MatchID, m.FinishedAt, prev, found = e.MatchID, e.FinishedAt, p, true
	}
	if !found {
		return m, "", fmt.Errorf("no entry of player %s", player)
	}
	return m, prev, nil
}

// cutRecordPart reads the length-prefixed string "<len>:<bytes>" at the
// start of s and returns it and the rest.
func cutRecordPart(s string) (part, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", "", false
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n < 0 || n > len(s)-i-1 {
		return "", "", false
	}
	return s[i+1 : i+1+n], s[i+1+n:], true
}
