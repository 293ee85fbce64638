package main

import (
	"context"
	"log/slog"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// backfill fills the leaderboard's provisional section of every pool with
// the players rated before the section existed (store.Backfill), retrying
// a pool that fails after a backoff delay until it succeeds or ctx ends.
// Every instance runs it at start; it is idempotent and safe to run
// concurrently, and a pool done once returns at once (one EXISTS). Until
// it is done the section lacks those players, nothing else: the instance
// is ready meanwhile.
func backfill(ctx context.Context, st *store.Store, pools []string, retry backoff.Policy, log *slog.Logger) error {
	bo := backoff.New(retry)
	for _, pool := range pools {
		for {
			n, err := st.Backfill(ctx, pool)
			if err == nil {
				if n > 0 {
					log.InfoContext(ctx, "provisional section backfilled", "pool", pool, "players", n)
				}
				bo.Reset()
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			d := bo.Next()
			log.WarnContext(ctx, "backfill of the provisional section failed; retrying", "pool", pool, "error", err, "retry_in", d, "failures", bo.Failures())
			if backoff.Sleep(ctx, d) != nil {
				return nil
			}
		}
	}
	return nil
}
