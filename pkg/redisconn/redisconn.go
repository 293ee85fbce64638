// Package redisconn builds the go-redis client every service uses from
// configuration: a standalone client, or a cluster client when cluster
// addresses are given, pinged and instrumented with OpenTelemetry.
//
// In cluster mode every multi-key command and Lua script must touch keys of
// one hash slot; [Tag] builds the hash tag that keeps a group of keys
// together.
//
// It also holds what every service does with Redis the same way:
// [Classify] decides once what an error means (transient, the caller's
// cancellation, or a bug) and [Status] turns it into a gRPC status;
// [Script] runs Lua scripts by SHA with a bounded NOSCRIPT fallback; and
// [WriteAndWait] confirms writes with WAIT on the master's connection;
// [ByMaster] groups keys by master for reads that must not wait on one
// another's master.
package redisconn

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
)

// Config selects and tunes the Redis connection. Start from
// [DefaultConfig]; [Config.Bind] overlays environment and flags.
type Config struct {
	// Addr is the host:port of a standalone Redis. Ignored when
	// ClusterAddrs is set.
	Addr string
	// ClusterAddrs are seed nodes of a Redis Cluster; when set, a cluster
	// client is built.
	ClusterAddrs []string
	// Username and Password authenticate (ACL user; empty for none).
	Username string
	Password string
	// DB is the database number (standalone only; clusters have only 0).
	DB int
	// PoolSize is the connection pool size per node; 0 means 10 per CPU.
	PoolSize int
	// DialTimeout bounds establishing a connection.
	DialTimeout time.Duration
	// ReadTimeout and WriteTimeout bound one command's socket I/O.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// MaxRetries is how often a failed command is retried (network errors,
	// cluster redirections); -1 disables retries.
	MaxRetries int
	// PingTimeout bounds the connectivity check in New.
	PingTimeout time.Duration
}

// DefaultConfig returns the defaults of every setting.
func DefaultConfig() Config {
	return Config{
		Addr:         "127.0.0.1:6379",
		DialTimeout:  5 * time.Second,
		ReadTimeout:  3 * time.Second,
		WriteTimeout: 3 * time.Second,
		MaxRetries:   3,
		PingTimeout:  5 * time.Second,
	}
}

// Bind registers the settings as flags on fs after applying environment
// variables read through getenv (flag > environment > default).
func (c *Config) Bind(fs *flag.FlagSet, getenv func(string) string) error {
	b := envflag.New(fs, getenv)
	b.String(&c.Addr, "redis-addr", "REDIS_ADDR", "standalone Redis host:port")
	b.StringList(&c.ClusterAddrs, "redis-cluster-addrs", "REDIS_CLUSTER_ADDRS", "comma-separated Redis Cluster seed nodes (enables cluster mode)")
	b.String(&c.Username, "redis-username", "REDIS_USERNAME", "Redis ACL user name")
	b.String(&c.Password, "redis-password", "REDIS_PASSWORD", "Redis password")
	b.Int(&c.DB, "redis-db", "REDIS_DB", "Redis database number (standalone only)")
	b.Int(&c.PoolSize, "redis-pool-size", "REDIS_POOL_SIZE", "connections per node (0: 10 per CPU)")
	b.Duration(&c.DialTimeout, "redis-dial-timeout", "REDIS_DIAL_TIMEOUT", "connect timeout")
	b.Duration(&c.ReadTimeout, "redis-read-timeout", "REDIS_READ_TIMEOUT", "command read timeout")
	b.Duration(&c.WriteTimeout, "redis-write-timeout", "REDIS_WRITE_TIMEOUT", "command write timeout")
	b.Int(&c.MaxRetries, "redis-max-retries", "REDIS_MAX_RETRIES", "command retries (-1: none)")
	b.Duration(&c.PingTimeout, "redis-ping-timeout", "REDIS_PING_TIMEOUT", "startup connectivity check timeout")
	return b.Err()
}

// Cluster reports whether the config selects cluster mode.
func (c Config) Cluster() bool { return len(c.ClusterAddrs) > 0 }

// Validate reports every invalid setting.
func (c Config) Validate() error {
	var errs []error
	if !c.Cluster() && c.Addr == "" {
		errs = append(errs, errors.New("redis: set REDIS_ADDR or REDIS_CLUSTER_ADDRS"))
	}
	if c.Cluster() && c.DB != 0 {
		errs = append(errs, fmt.Errorf("redis: cluster mode has only database 0, got REDIS_DB=%d", c.DB))
	}
	if c.DB < 0 || c.PoolSize < 0 {
		errs = append(errs, errors.New("redis: db and pool size must be >= 0"))
	}
	if c.DialTimeout <= 0 || c.ReadTimeout <= 0 || c.WriteTimeout <= 0 || c.PingTimeout <= 0 {
		errs = append(errs, errors.New("redis: timeouts must be positive"))
	}
	if c.MaxRetries < -1 {
		errs = append(errs, fmt.Errorf("redis: max retries must be >= -1, got %d", c.MaxRetries))
	}
	return errors.Join(errs...)
}

// New connects to Redis and checks the connection with PING (on every
// master in cluster mode). tp and mp instrument commands with traces and
// metrics; nil skips that instrumentation. The caller closes the client.
func New(ctx context.Context, cfg Config, tp trace.TracerProvider, mp metric.MeterProvider) (redis.UniversalClient, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var rdb redis.UniversalClient
	if cfg.Cluster() {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:        cfg.ClusterAddrs,
			Username:     cfg.Username,
			Password:     cfg.Password,
			PoolSize:     cfg.PoolSize,
			DialTimeout:  cfg.DialTimeout,
			ReadTimeout:  cfg.ReadTimeout,
			WriteTimeout: cfg.WriteTimeout,
			MaxRetries:   cfg.MaxRetries,
		})
	} else {
		rdb = redis.NewClient(&redis.Options{
			Addr:         cfg.Addr,
			Username:     cfg.Username,
			Password:     cfg.Password,
			DB:           cfg.DB,
			PoolSize:     cfg.PoolSize,
			DialTimeout:  cfg.DialTimeout,
			ReadTimeout:  cfg.ReadTimeout,
			WriteTimeout: cfg.WriteTimeout,
			MaxRetries:   cfg.MaxRetries,
		})
	}
	if tp != nil {
		if err := redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(tp),
			// Command text holds binary game state and costs a formatted
			// copy of every argument; the caller's file and line cost a
			// stack walk per command. Neither is worth it on the move path.
			redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false)); err != nil {
			rdb.Close()
			return nil, fmt.Errorf("redis tracing: %w", err)
		}
	}
	if mp != nil {
		if err := redisotel.InstrumentMetrics(rdb, redisotel.WithMeterProvider(mp)); err != nil {
			rdb.Close()
			return nil, fmt.Errorf("redis metrics: %w", err)
		}
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.PingTimeout)
	defer cancel()
	if err := Ping(pctx, rdb); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis %s: %w", cfg.describe(), err)
	}
	return rdb, nil
}

// Ping checks that Redis answers: PING on a standalone server, PING on
// every master of a cluster (a cluster with a master down cannot serve
// every key). The services run it at startup and then periodically as
// their readiness check (Server.Check of pkg/server).
func Ping(ctx context.Context, rdb redis.UniversalClient) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		})
	}
	return rdb.Ping(ctx).Err()
}

func (c Config) describe() string {
	if c.Cluster() {
		return "cluster " + strings.Join(c.ClusterAddrs, ",")
	}
	return c.Addr
}

// Tag wraps s in braces, making it the hash tag of every key that contains
// it: keys sharing a tag land in one cluster slot, so scripts and
// transactions may use them together. s must not contain braces.
//
//	Tag("m:123") + ":state" == "{m:123}:state"
func Tag(s string) string { return "{" + s + "}" }

// Master returns a client of the master that serves key: rdb itself when it
// is a standalone client. Commands that must share one connection, such as
// writes and the WAIT that confirms them (WAIT covers only the writes of
// its own connection), go through it as one pipeline. On a cluster a
// failed lookup refreshes the slot map.
func Master(ctx context.Context, rdb redis.UniversalClient, key string) (*redis.Client, error) {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			c.ReloadState(ctx)
			return nil, fmt.Errorf("find the master of %s: %w", key, err)
		}
		return node, nil
	case *redis.Client:
		return c, nil
	default:
		return nil, fmt.Errorf("need a standalone or cluster client to reach the master of %s, have %T", key, rdb)
	}
}

// ByMaster splits the indices of keys into groups of keys one master
// serves, each group in key order. Reads that must not wait on one
// another's master go out as one pipeline per group: a cluster pipeline
// that spans masters fails all its commands, the other masters' answers
// included, when one master does not answer before the context ends
// (go-redis retries that master's commands after a backoff, and a context
// that ends during it is set as every command's error). A standalone
// client, or keys whose master the slot map does not know yet, give one
// group.
func ByMaster(ctx context.Context, rdb redis.UniversalClient, keys []string) [][]int {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		all := make([]int, len(keys))
		for i := range all {
			all[i] = i
		}
		return [][]int{all}
	}
	index := map[string]int{}
	var groups [][]int
	for i, k := range keys {
		addr := ""
		if node, err := cc.MasterForKey(ctx, k); err == nil {
			addr = node.Options().Addr
		}
		g, seen := index[addr]
		if !seen {
			g = len(groups)
			index[addr] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// ReloadCluster refreshes a cluster client's slot map after a call through
// a client from [Master] failed: such errors do not reach the cluster
// client, which would otherwise keep routing to a failed master. It does
// nothing for other clients.
func ReloadCluster(ctx context.Context, rdb redis.UniversalClient) {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		c.ReloadState(ctx)
	}
}
