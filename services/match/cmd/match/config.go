package main

import (
	"errors"
	"flag"
	"os"
	"strconv"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// config is the whole configuration of the match service. Every setting
// has a flag and an environment variable (flag > environment > default);
// README.md and docs/match.md list them.
type config struct {
	// Server is the shared bootstrap's configuration (listen addresses, auth, limits).
	Server server.Config
	// Redis selects the Redis deployment (standalone or cluster).
	Redis redisconn.Config
	// Store configures the Redis layout (event log length, retention, WAIT).
	Store store.Config
	// Match configures the domain logic (first-move limit, cache size).
	Match match.Config
	// Keeper configures deadline processing and the outbox relay.
	Keeper match.KeeperConfig
	// WatchBuffer bounds each watcher's buffer, in changes; a watcher that
	// falls further behind is disconnected with RESOURCE_EXHAUSTED.
	WatchBuffer int
	// WatchSendTimeout bounds how long a watch stream's send may wait for
	// a client that does not read; the stream then ends with
	// RESOURCE_EXHAUSTED (0: it waits until the client reads or leaves).
	WatchSendTimeout time.Duration
}

// defaultConfig returns the defaults of every setting. The keeper's owner
// name is this host and process (the keeper adds a random suffix).
func defaultConfig() config {
	host, _ := os.Hostname()
	c := config{
		Server:           server.DefaultConfig("match"),
		Redis:            redisconn.DefaultConfig(),
		Store:            store.DefaultConfig(),
		Match:            match.DefaultConfig(),
		Keeper:           match.DefaultKeeperConfig(host + ":" + strconv.Itoa(os.Getpid())),
		WatchBuffer:      64,
		WatchSendTimeout: 15 * time.Second,
	}
	// Each service has its own default ports, so the three run side by
	// side on one machine and matchmaking's default MATCH_ADDR reaches
	// this one.
	c.Server.GRPCAddr, c.Server.AdminAddr = ":8081", ":9091"
	return c
}

// Bind registers every setting as a flag on fs, after applying the
// environment read through getenv.
func (c *config) Bind(fs *flag.FlagSet, getenv func(string) string) error {
	b := envflag.New(fs, getenv)
	b.String(&c.Store.Prefix, "key-prefix", "MATCH_KEY_PREFIX", "prefix of every Redis key (tests)")
	b.Int(&c.Store.EventLogLen, "event-log-len", "MATCH_EVENT_LOG_LEN", "events kept per match for resuming watchers")
	b.Duration(&c.Store.Retention, "retention", "MATCH_RETENTION", "how long finished matches stay readable")
	b.Duration(&c.Store.RequestTTL, "request-ttl", "MATCH_REQUEST_TTL", "how long CreateMatch request ids are remembered")
	b.String(&c.Store.FinishedStream, "finished-stream", "MATCH_FINISHED_STREAM", "stream receiving MatchFinished records")
	b.String(&c.Store.AbandonedStream, "abandoned-stream", "MATCH_ABANDONED_STREAM", "stream receiving MatchAbandoned records (first-move aborts, for the matchmaker)")
	b.Int(&c.Store.WaitReplicas, "wait-replicas", "MATCH_WAIT_REPLICAS", "replicas that must confirm each change (0: none)")
	b.Duration(&c.Store.WaitTimeout, "wait-timeout", "MATCH_WAIT_TIMEOUT", "how long to wait for replica confirmation")
	b.Duration(&c.Match.FirstMoveLimit, "first-move-limit", "MATCH_FIRST_MOVE_LIMIT", "time for a player's first move")
	b.Int(&c.Match.CacheSize, "cache-size", "MATCH_CACHE_SIZE", "decoded games cached per instance")
	b.Duration(&c.Match.PremoveCost, "premove-cost", "MATCH_PREMOVE_COST", "time a premove is charged on its clock")
	b.Int(&c.Match.SpectatorDelay, "spectator-delay", "MATCH_SPECTATOR_DELAY", "plies behind the live game that spectators see a running match (0: live)")
	b.Duration(&c.Match.DisconnectAfter, "disconnect-after", "MATCH_DISCONNECT_AFTER", "how long a seated player may have no watch stream open before being shown disconnected")
	b.Duration(&c.Match.DisconnectGrace, "disconnect-grace", "MATCH_DISCONNECT_GRACE", "longest grace of a disconnected player before their time runs out, scaled by the time control (0: no presence tracking)")
	b.Duration(&c.Match.OutageCreditMax, "outage-credit-max", "MATCH_OUTAGE_CREDIT_MAX", "most time given back to a seat to move after an outage: every instance gone, or the match's partition unreachable in Redis (0: none)")
	b.Duration(&c.Keeper.Interval, "keeper-interval", "MATCH_KEEPER_INTERVAL", "interval of deadline scans")
	b.Duration(&c.Keeper.LeaseTTL, "keeper-lease-ttl", "MATCH_KEEPER_LEASE_TTL", "lifetime of a keeper range lease after its last renewal")
	b.Duration(&c.Keeper.LeaseMargin, "keeper-lease-margin", "MATCH_KEEPER_LEASE_MARGIN", "how long before its lease expires a keeper stops working a range")
	b.Duration(&c.Keeper.MaxLag, "keeper-max-lag", "MATCH_KEEPER_MAX_LAG", "how late a keeper scan may finish after it was due; an instance whose scans lag more, several in a row, gives its ranges to the others (0: never)")
	b.Int(&c.WatchBuffer, "watch-buffer", "MATCH_WATCH_BUFFER", "changes buffered per watcher")
	b.Duration(&c.WatchSendTimeout, "watch-send-timeout", "MATCH_WATCH_SEND_TIMEOUT", "how long a watch stream's send may wait for a client that does not read before the stream ends (0: until the client reads or leaves)")
	return errors.Join(b.Err(), c.Server.Bind(fs, getenv), c.Redis.Bind(fs, getenv))
}

// Validate reports every invalid setting.
func (c config) Validate() error {
	var errs []error
	errs = append(errs, c.Server.Validate(), c.Redis.Validate(), c.Store.Validate(), c.Match.Validate(), c.Keeper.Validate())
	if c.WatchSendTimeout < 0 {
		errs = append(errs, errors.New("watch send timeout must not be negative"))
	}
	if c.WatchBuffer < 1 {
		errs = append(errs, errors.New("watch buffer must be at least 1"))
	}
	return errors.Join(errs...)
}
