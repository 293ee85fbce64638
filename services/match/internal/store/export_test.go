package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reads that only the tests need.

// FinishedStreamKey is the full key of the global finished stream.
func (s *Store) FinishedStreamKey() string { return s.keys.prefix + s.cfg.FinishedStream }

// AbandonedStreamKey is the full key of the global abandoned stream.
func (s *Store) AbandonedStreamKey() string { return s.keys.prefix + s.cfg.AbandonedStream }

// Deadline returns the stored deadline of a match (zero if none).
func (s *Store) Deadline(ctx context.Context, id string) (time.Time, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return time.Time{}, err
	}
	sc, err := s.rdb.ZScore(ctx, s.keys.deadlines(p), id).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read deadline of %s: %w", id, err)
	}
	return time.UnixMilli(int64(sc)), nil
}

// TTL returns the remaining time to live of a match's state (negative when
// it has none).
func (s *Store) TTL(ctx context.Context, id string) (time.Duration, error) {
	p, err := PartitionOf(id)
	if err != nil {
		return 0, err
	}
	return s.rdb.PTTL(ctx, s.keys.match(p, id)).Result()
}

// Config returns the store's configuration.
func (s *Store) Config() Config { return s.cfg }

// OutboxKey is the full key of a partition's outbox.
func (s *Store) OutboxKey(p int) string { return s.keys.outbox(p) }
