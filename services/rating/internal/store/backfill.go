package store

import (
	"context"
	"fmt"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

// backfillChunk is the number of standings one HSCAN step asks for, and so
// about the players one backfill script run checks (HSCAN's COUNT is a
// hint; a run takes at most maxBackfillRun).
const (
	backfillChunk  = 500
	maxBackfillRun = 1000
)

// Backfill adds to pool's provisional section every provisional player
// who is not in it yet: players rated before the section existed. The
// apply step keeps the section for every player it rates, so this is
// needed once per pool; a marker key records that it completed, and later
// calls return at once.
//
// It is safe to run at any time, repeatedly and from several instances at
// once (see backfill.lua): it reads the standings with HSCAN, in steps,
// and a script adds a player only if their standing is still the one read
// and they are not in the section. It returns the number of players it
// added.
func (s *Store) Backfill(ctx context.Context, pool string) (int, error) {
	k := newKeys(s.prefix, pool)
	done, err := s.rdb.Exists(ctx, k.backfilled()).Result()
	if err != nil {
		return 0, fmt.Errorf("backfill provisional section of pool %s: %w", pool, err)
	}
	if done == 1 {
		return 0, nil
	}
	keys := backfillKeys(k)
	added := 0
	var cursor uint64
	for {
		var kv []string
		kv, cursor, err = s.rdb.HScan(ctx, k.standings(), cursor, "", backfillChunk).Result()
		if err != nil {
			return added, fmt.Errorf("backfill provisional section of pool %s: scan standings: %w", pool, err)
		}
		var args []any
		for i := 0; i+1 < len(kv); i += 2 {
			if _, ok := aliasOf(kv[i+1]); ok {
				continue // a guest linked to an account: listed as the account
			}
			p, err := s.decodePlayer(kv[i], kv[i+1])
			if err != nil {
				return added, fmt.Errorf("backfill provisional section of pool %s: %w", pool, err)
			}
			if s.sectionOf(p.Bot, p.Standing) != sectionProvisional {
				continue
			}
			args = append(args, p.ID, kv[i+1], ladder.Display(p.Standing.Rating))
			if len(args) == maxBackfillRun*backfillWidth {
				n, err := s.backfillRun(ctx, pool, keys, args)
				added += n
				if err != nil {
					return added, err
				}
				args = args[:0]
			}
		}
		if len(args) > 0 {
			n, err := s.backfillRun(ctx, pool, keys, args)
			added += n
			if err != nil {
				return added, err
			}
		}
		if cursor == 0 {
			break
		}
	}
	if err := s.rdb.Set(ctx, k.backfilled(), "1", 0).Err(); err != nil {
		return added, fmt.Errorf("backfill provisional section of pool %s: mark done: %w", pool, err)
	}
	return added, nil
}

func (s *Store) backfillRun(ctx context.Context, pool string, keys []string, args []any) (int, error) {
	n, err := s.backfill.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("backfill provisional section of pool %s: %w", pool, err)
	}
	return n, nil
}

// backfillKeys returns the keys of a backfill script run for pool keys k.
func backfillKeys(k keys) []string {
	ks := make([]string, backfillNKeys)
	ks[backfillKStandings] = k.standings()
	ks[backfillKSeq] = k.seq()
	ks[backfillKProvisional] = k.provisional()
	return ks
}
