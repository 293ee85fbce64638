package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/consumer"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/store"
)

// config is the whole configuration of the rating service. Every setting
// has a flag and an environment variable (flag > environment > default);
// README.md and docs/rating.md list them.
type config struct {
	// Server is the shared bootstrap's configuration (listen addresses, auth, limits).
	Server server.Config
	// Redis selects the Redis deployment (standalone or cluster).
	Redis redisconn.Config
	// Consumer configures the MatchFinished stream consumers.
	Consumer consumer.Config
	// Store holds the key prefix (to share a Redis between deployments),
	// the retention of the applied markers (the exactly-once window) and
	// of the history records, and the optional WAIT for replicas.
	Store store.Config
}

// defaultConfig returns the defaults of every setting. The consumer name
// defaults to the host name (the pod name on Kubernetes), which must be
// unique among the running instances.
func defaultConfig(getenv func(string) string) config {
	c := config{
		Server:   server.DefaultConfig("rating"),
		Redis:    redisconn.DefaultConfig(),
		Consumer: consumer.DefaultConfig(),
		// The retention bounds the memory of the applied markers (one
		// field per match); a week covers redeliveries, takeovers after
		// outages and operators replaying dead letters. History records
		// (about 600 bytes per match) are kept 90 days.
		Store: store.DefaultConfig(),
	}
	if h := getenv("HOSTNAME"); h != "" {
		c.Consumer.Name = h
	}
	// Each service has its own default ports, so the three run side by
	// side on one machine and matchmaking's default RATING_ADDR reaches
	// this one.
	c.Server.GRPCAddr, c.Server.AdminAddr = ":8083", ":9093"
	return c
}

// Bind registers every setting as a flag on fs, after applying the
// environment (flag > environment > default).
func (c *config) Bind(fs *flag.FlagSet, getenv func(string) string) error {
	b := envflag.New(fs, getenv)
	cc := &c.Consumer
	b.String(&cc.Stream, "rating-stream", "RATING_STREAM", "Redis stream of MatchFinished events")
	b.String(&cc.Group, "rating-group", "RATING_GROUP", "consumer group shared by all rating instances")
	b.String(&cc.Name, "rating-consumer", "RATING_CONSUMER", "this instance's consumer name (default: $HOSTNAME)")
	b.Int(&cc.Workers, "rating-workers", "RATING_WORKERS", "consumer loops in this instance")
	b.String(&cc.DeadLetter, "rating-dead-letter-stream", "RATING_DEAD_LETTER_STREAM", "stream for events that cannot be applied")
	b.String(&cc.LinkStream, "rating-link-stream", "RATING_LINK_STREAM", "Redis stream of PlayerLinked events (guests linked to accounts)")
	b.String(&cc.LinkDeadLetter, "rating-link-dead-letter-stream", "RATING_LINK_DEAD_LETTER_STREAM", "stream for link events that cannot be applied")
	b.Int(&cc.Batch, "rating-batch", "RATING_BATCH", "events read and applied at once")
	b.Duration(&cc.Block, "rating-block", "RATING_BLOCK", "how long one read waits for events")
	b.Duration(&cc.ClaimMinIdle, "rating-claim-min-idle", "RATING_CLAIM_MIN_IDLE", "idle time after which another consumer takes an unacknowledged event over")
	b.Duration(&cc.ClaimInterval, "rating-claim-interval", "RATING_CLAIM_INTERVAL", "how often each worker looks for such events")
	b.Int(&cc.MaxDeliveries, "rating-max-deliveries", "RATING_MAX_DELIVERIES", "deliveries of an event that is never applied before it is dead-lettered")
	b.Duration(&c.Store.Retention.Markers, "rating-marker-retention", "RATING_MARKER_RETENTION", "exactly-once window: matches finished longer before the newest applied match of their pool are dead-lettered")
	b.Duration(&c.Store.Retention.History, "rating-history-retention", "RATING_HISTORY_RETENTION", "how long rating history records are kept, before the newest applied match of their pool (0: for good)")
	b.String(&c.Store.Prefix, "rating-key-prefix", "RATING_KEY_PREFIX", "prefix of every rating key in Redis")
	b.Int(&c.Store.WaitReplicas, "rating-wait-replicas", "RATING_WAIT_REPLICAS", "replicas that must confirm each apply step before its events are acknowledged (0: none)")
	b.Duration(&c.Store.WaitTimeout, "rating-wait-timeout", "RATING_WAIT_TIMEOUT", "how long to wait for replica confirmation")
	b.Int(&cc.DeadLetterMaxLen, "rating-dead-letter-max-len", "RATING_DEAD_LETTER_MAX_LEN", "approximate cap of the dead-letter stream")
	return errors.Join(b.Err(), c.Server.Bind(fs, getenv), c.Redis.Bind(fs, getenv))
}

// Validate reports every invalid setting.
func (c config) Validate() error {
	var store error
	if err := c.Store.Validate(); err != nil {
		store = fmt.Errorf("rating store settings: %w", err)
	}
	return errors.Join(c.Server.Validate(), c.Redis.Validate(), c.Consumer.Validate(), store)
}
