package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/server"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/api"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/grouping"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/matchmaker"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/queues"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/sessions"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

// config is the whole configuration of the matchmaking service. Every
// setting has a flag and an environment variable (flag > environment >
// default); README.md and docs/matchmaking.md list them.
type config struct {
	// Server is the shared bootstrap's configuration (listen addresses, auth, limits).
	Server server.Config
	// Redis selects the Redis deployment (standalone or cluster).
	Redis redisconn.Config

	// Queues lists the queues, ";"-separated: "<rule set> <time control>
	// [bots=<wait>]", for example "fourkingdoms 5+5;fourkingdoms 1|15 d".
	Queues string
	// MatchAddr is the match service's gRPC address (CreateMatch).
	MatchAddr string
	// RatingAddr is the rating service's gRPC address (BatchGetRatings).
	RatingAddr string
	// KeyPrefix is prepended to every Redis key.
	KeyPrefix string

	// Interval is the time between formation rounds of a queue.
	Interval time.Duration
	// TicketTTL is how long a ticket may search before it expires.
	TicketTTL time.Duration
	// Retention is how long finished tickets stay readable (WatchTicket).
	Retention time.Duration
	// FormationTimeout is how long a claimed group may stay unfinished
	// before any instance takes it over (after a crash).
	FormationTimeout time.Duration
	// CreateTimeout bounds one CreateMatch call; below FormationTimeout.
	CreateTimeout time.Duration
	// Concurrency is the number of CreateMatch calls in flight per queue.
	Concurrency int
	// RatingBatch caps the tickets rated per round: one BatchGetRatings
	// call, which the rating service limits to 100 players.
	RatingBatch int
	// DefaultRating is the display rating used when the rating service is
	// unavailable (unknown players get the service's own default).
	DefaultRating float64

	// WindowInitial is the half-width of a new ticket's rating window.
	WindowInitial float64
	// WindowGrowth widens the half-width per second of waiting.
	WindowGrowth float64
	// WindowProvisionalFactor multiplies the growth for provisional players.
	WindowProvisionalFactor float64
	// WindowMax caps the half-width.
	WindowMax float64

	// WatchPoll is how often WatchTicket reads its ticket besides being
	// woken by the ticket events channel (pub/sub is at-most-once).
	WatchPoll time.Duration
	// SearchingEvery is how often WatchTicket repeats a searching update.
	SearchingEvery time.Duration
	// StatsWindow is the window of GetQueueStats (at most 15m).
	StatsWindow time.Duration
	// RematchWindow is how long a rematch offer waits for every human of
	// the finished match to accept (from the first offer).
	RematchWindow time.Duration
	// RematchPoll is how often a WatchRematch stream reads its offer.
	RematchPoll time.Duration
	// WatchSendTimeout bounds how long a send of a stream (WatchTicket,
	// WatchTable, WatchRematch) may wait for a client that does not read;
	// the stream then ends with RESOURCE_EXHAUSTED SLOW_CONSUMER (0: it
	// waits until the client reads or leaves).
	WatchSendTimeout time.Duration
	// GuestTokenTTL is the lifetime of guest tokens.
	GuestTokenTTL time.Duration
	// GuestSessionTTL is how long a guest's refresh token stays usable
	// after its last use (RefreshSession); after it the guest player
	// cannot be recovered.
	GuestSessionTTL time.Duration
	// WaitReplicas, when > 0, is how many replicas must confirm a guest's
	// link (LinkGuest) and its PlayerLinked event, each within WaitTimeout,
	// before the client is answered; unconfirmed, LinkGuest fails with
	// UNAVAILABLE and publishes nothing (MATCH_WAIT_REPLICAS is the match
	// service's).
	WaitReplicas int
	// WaitTimeout bounds each WAIT.
	WaitTimeout time.Duration
	// ServiceTokenTTL is the lifetime of the service token sent to the
	// match and rating services (re-minted before it expires).
	ServiceTokenTTL time.Duration
	// TableIdleTTL closes a private table nothing happened at for that long.
	TableIdleTTL time.Duration
	// TableGuesses and TableGuessWindow limit code guessing: a player who
	// tried TableGuesses unknown invite codes within TableGuessWindow is
	// refused (TOO_MANY_GUESSES) until the window ends.
	TableGuesses     int
	TableGuessWindow time.Duration
	// PublicURL is the web client's public address ("https://example.org");
	// a table's invite link is "<PublicURL>/#table=<CODE>", none when empty.
	PublicURL string
	// BotLevels lists the bot levels (","-separated) that have a bot lobby
	// queue, "bots/<level>", where bot pools park bots for private tables.
	BotLevels string
	// LinkStream is the Redis stream (after KeyPrefix) that receives a
	// PlayerLinked event per guest linked to an account (LinkGuest); the
	// rating service consumes it (RATING_LINK_STREAM).
	LinkStream string
	// AbandonedStream is the Redis stream (after KeyPrefix) the match
	// service relays a MatchAbandoned record to per match aborted for a
	// missed first move (MATCH_ABANDONED_STREAM); this service consumes it
	// (consumer group "matchmaking") and puts the other players back in
	// their queue.
	AbandonedStream string
}

// defaultConfig returns the defaults of every setting.
func defaultConfig() config {
	c := config{
		Server:                  server.DefaultConfig("matchmaking"),
		Redis:                   redisconn.DefaultConfig(),
		Queues:                  "fourkingdoms 5+5;fourkingdoms 1|15 d",
		MatchAddr:               "localhost:8081",
		RatingAddr:              "localhost:8083",
		KeyPrefix:               "",
		Interval:                time.Second,
		TicketTTL:               10 * time.Minute,
		Retention:               15 * time.Minute,
		FormationTimeout:        30 * time.Second,
		CreateTimeout:           10 * time.Second,
		Concurrency:             64,
		RatingBatch:             1000,
		DefaultRating:           1500,
		WindowInitial:           50,
		WindowGrowth:            5,
		WindowProvisionalFactor: 2,
		WindowMax:               500,
		WatchPoll:               2 * time.Second,
		SearchingEvery:          5 * time.Second,
		StatsWindow:             5 * time.Minute,
		RematchWindow:           time.Minute,
		RematchPoll:             500 * time.Millisecond,
		WatchSendTimeout:        15 * time.Second,
		GuestTokenTTL:           24 * time.Hour,
		GuestSessionTTL:         sessions.DefaultSettings().TTL,
		ServiceTokenTTL:         time.Hour,
		WaitTimeout:             sessions.DefaultSettings().Wait.Timeout,
		BotLevels:               "random,greedy",
		TableIdleTTL:            30 * time.Minute,
		TableGuesses:            10,
		TableGuessWindow:        time.Minute,
		LinkStream:              eventstream.PlayerLinked().Key(),
		AbandonedStream:         eventstream.MatchAbandoned().Key(),
	}
	// Each service has its own default ports, so the three run side by
	// side on one machine: match on 8081, matchmaking 8082, rating 8083
	// (MatchAddr and RatingAddr above), admin listeners 9091 to 9093.
	c.Server.GRPCAddr, c.Server.AdminAddr = ":8082", ":9092"
	return c
}

// Bind registers every setting as a flag on fs, after applying the
// environment read through getenv.
func (c *config) Bind(fs *flag.FlagSet, getenv func(string) string) error {
	b := envflag.New(fs, getenv)
	b.String(&c.Queues, "queues", "MM_QUEUES", `queues, ";"-separated: "<rule set> <time control>[ bots=<wait>]"`)
	b.String(&c.MatchAddr, "match-addr", "MATCH_ADDR", "match service gRPC address")
	b.String(&c.RatingAddr, "rating-addr", "RATING_ADDR", "rating service gRPC address")
	b.String(&c.KeyPrefix, "redis-key-prefix", "MM_REDIS_KEY_PREFIX", "prefix of every Redis key")
	b.Duration(&c.Interval, "round-interval", "MM_ROUND_INTERVAL", "time between formation rounds")
	b.Duration(&c.TicketTTL, "ticket-ttl", "MM_TICKET_TTL", "how long a ticket may search")
	b.Duration(&c.Retention, "ticket-retention", "MM_TICKET_RETENTION", "how long finished tickets stay readable")
	b.Duration(&c.FormationTimeout, "formation-timeout", "MM_FORMATION_TIMEOUT", "time before another instance takes over an unfinished group")
	b.Duration(&c.CreateTimeout, "create-timeout", "MM_CREATE_TIMEOUT", "timeout of one CreateMatch call")
	b.Int(&c.Concurrency, "create-concurrency", "MM_CREATE_CONCURRENCY", "CreateMatch calls in flight per queue")
	b.Int(&c.RatingBatch, "rating-batch", "MM_RATING_BATCH", "tickets rated per round (one BatchGetRatings call)")
	b.Float64(&c.DefaultRating, "default-rating", "MM_DEFAULT_RATING", "display rating used when the rating service is unavailable")
	b.Float64(&c.WindowInitial, "window-initial", "MM_WINDOW_INITIAL", "initial rating window half-width")
	b.Float64(&c.WindowGrowth, "window-growth", "MM_WINDOW_GROWTH", "window half-width growth per second of waiting")
	b.Float64(&c.WindowProvisionalFactor, "window-provisional-factor", "MM_WINDOW_PROVISIONAL_FACTOR", "growth multiplier for provisional players")
	b.Float64(&c.WindowMax, "window-max", "MM_WINDOW_MAX", "maximum window half-width")
	b.Duration(&c.WatchPoll, "watch-poll", "MM_WATCH_POLL", "how often WatchTicket reads its ticket besides pub/sub wake-ups")
	b.Duration(&c.SearchingEvery, "searching-every", "MM_SEARCHING_EVERY", "how often WatchTicket repeats a searching update")
	b.Duration(&c.StatsWindow, "stats-window", "MM_STATS_WINDOW", "GetQueueStats window (at most 15m)")
	b.Duration(&c.RematchWindow, "rematch-window", "MM_REMATCH_WINDOW", "how long a rematch offer waits for every human to accept")
	b.Duration(&c.RematchPoll, "rematch-poll", "MM_REMATCH_POLL", "how often WatchRematch reads its offer")
	b.Duration(&c.WatchSendTimeout, "watch-send-timeout", "MM_WATCH_SEND_TIMEOUT", "how long a stream's send may wait for a client that does not read before the stream ends (0: until the client reads or leaves)")
	b.Duration(&c.GuestTokenTTL, "guest-token-ttl", "GUEST_TOKEN_TTL", "lifetime of guest tokens")
	b.Duration(&c.GuestSessionTTL, "guest-session-ttl", "GUEST_SESSION_TTL", "how long a guest's refresh token works after its last use")
	b.Int(&c.WaitReplicas, "wait-replicas", "MM_WAIT_REPLICAS", "replicas that must confirm each guest link and its event before LinkGuest answers (0: none)")
	b.Duration(&c.WaitTimeout, "wait-timeout", "MM_WAIT_TIMEOUT", "how long to wait for replica confirmation")
	b.Duration(&c.ServiceTokenTTL, "service-token-ttl", "SERVICE_TOKEN_TTL", "lifetime of the service token for internal calls")
	b.String(&c.BotLevels, "bot-levels", "MM_BOT_LEVELS", `bot levels with a lobby for private tables' bot seats, ","-separated`)
	b.Duration(&c.TableIdleTTL, "table-idle-ttl", "MM_TABLE_IDLE_TTL", "close a private table idle for this long")
	b.Int(&c.TableGuesses, "table-guesses", "MM_TABLE_GUESSES", "unknown invite codes a player may try per guess window")
	b.Duration(&c.TableGuessWindow, "table-guess-window", "MM_TABLE_GUESS_WINDOW", "the window of MM_TABLE_GUESSES")
	b.String(&c.PublicURL, "public-url", "MM_PUBLIC_URL", "the web client's public address, for invite links (empty: no links)")
	b.String(&c.LinkStream, "link-stream", "MM_LINK_STREAM", "stream receiving a PlayerLinked event per guest linked to an account (after the key prefix)")
	b.String(&c.AbandonedStream, "abandoned-stream", "MM_ABANDONED_STREAM", "stream of matches aborted for a missed first move, whose other players are requeued (after the key prefix)")
	return errors.Join(b.Err(), c.Server.Bind(fs, getenv), c.Redis.Bind(fs, getenv))
}

// Validate reports every invalid setting.
func (c config) Validate() error {
	errs := []error{c.Server.Validate(), c.Redis.Validate()}
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	_, err := queues.ParseList(c.Queues)
	check(err == nil, "queues: %v", err)
	check(c.MatchAddr != "", "match address is empty")
	check(c.RatingAddr != "", "rating address is empty")
	check(c.Interval > 0, "round interval must be positive, got %v", c.Interval)
	check(c.TicketTTL > 0, "ticket TTL must be positive, got %v", c.TicketTTL)
	check(c.Retention > 0, "ticket retention must be positive, got %v", c.Retention)
	check(c.CreateTimeout > 0, "create timeout must be positive, got %v", c.CreateTimeout)
	// A formation must not be taken over while its first CreateMatch call
	// may still succeed, or its tickets could be released into a second match.
	check(c.FormationTimeout > c.CreateTimeout, "formation timeout (%v) must exceed the create timeout (%v)", c.FormationTimeout, c.CreateTimeout)
	check(c.Concurrency >= 1, "create concurrency must be >= 1, got %d", c.Concurrency)
	// BatchGetRatings takes 1 to 1000 players; a larger batch would fail every
	// call and leave everyone at the default rating.
	check(c.RatingBatch >= 1 && c.RatingBatch <= 1000, "rating batch must be 1 to 1000 (the BatchGetRatings limit), got %d", c.RatingBatch)
	check(c.WindowInitial >= 0, "window initial must be >= 0, got %v", c.WindowInitial)
	check(c.WindowGrowth >= 0, "window growth must be >= 0, got %v", c.WindowGrowth)
	check(c.WindowProvisionalFactor >= 1, "window provisional factor must be >= 1, got %v", c.WindowProvisionalFactor)
	check(c.WindowMax >= c.WindowInitial, "window max (%v) must be >= window initial (%v)", c.WindowMax, c.WindowInitial)
	check(c.WatchPoll > 0, "watch poll must be positive, got %v", c.WatchPoll)
	check(c.SearchingEvery > 0, "searching interval must be positive, got %v", c.SearchingEvery)
	check(c.RematchWindow >= time.Second && c.RematchWindow <= time.Hour, "rematch window must be between 1s and 1h, got %v", c.RematchWindow)
	check(c.RematchPoll > 0, "rematch poll must be positive, got %v", c.RematchPoll)
	check(c.WatchSendTimeout >= 0, "watch send timeout must not be negative, got %v", c.WatchSendTimeout)
	check(c.StatsWindow >= store.StatsSlot && c.StatsWindow <= 15*time.Minute, "stats window must be between %v and 15m, got %v", store.StatsSlot, c.StatsWindow)
	check(c.GuestTokenTTL > 0, "guest token TTL must be positive, got %v", c.GuestTokenTTL)
	check(c.LinkStream != "", "link stream must be set")
	check(c.AbandonedStream != "" && c.AbandonedStream != c.LinkStream, "abandoned stream must be set and differ from the link stream")
	check(c.WaitReplicas >= 0, "wait replicas must not be negative, got %d", c.WaitReplicas)
	check(c.WaitReplicas == 0 || c.WaitTimeout > 0, "wait timeout must be positive when waiting for replicas, got %v", c.WaitTimeout)
	check(c.GuestSessionTTL >= c.GuestTokenTTL, "guest session TTL (%v) must be >= the guest token TTL (%v): a session must outlive its tokens", c.GuestSessionTTL, c.GuestTokenTTL)
	for _, l := range c.botLevels() {
		check(l != "" && !strings.ContainsAny(l, "/{} "), "bot levels: %q is not a level name", l)
	}
	check(c.TableIdleTTL >= time.Minute, "table idle TTL must be at least 1m, got %v", c.TableIdleTTL)
	check(c.TableGuesses >= 1, "table guesses must be >= 1, got %d", c.TableGuesses)
	check(c.TableGuessWindow > 0, "table guess window must be positive, got %v", c.TableGuessWindow)
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		check(err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.Fragment == "" && u.RawQuery == "",
			"public URL must be an http(s) address without query or fragment, got %q", c.PublicURL)
	}
	check(c.ServiceTokenTTL >= 3*time.Second, "service token TTL must be >= 3s, got %v", c.ServiceTokenTTL)
	return errors.Join(errs...)
}

// botLevels returns the bot levels with a lobby.
func (c config) botLevels() []string {
	if strings.TrimSpace(c.BotLevels) == "" {
		return nil
	}
	out := strings.Split(c.BotLevels, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// queueList returns the parsed queues (validate first).
func (c config) queueList() []queues.Queue {
	qs, _ := queues.ParseList(c.Queues)
	return qs
}

// window returns the rating window settings.
func (c config) window() grouping.Window {
	return grouping.Window{
		Initial: c.WindowInitial, GrowthPerSecond: c.WindowGrowth,
		ProvisionalFactor: c.WindowProvisionalFactor, Max: c.WindowMax,
	}
}

// storeSettings returns the ticket store settings.
func (c config) storeSettings() store.Settings {
	return store.Settings{
		TicketTTL: c.TicketTTL, Retention: c.Retention, FormationTimeout: c.FormationTimeout,
		PointerGrace: 5 * time.Second, WaitSamples: 1000, BotLevels: c.botLevels(),
	}
}

// matchmakerConfig returns the formation settings.
func (c config) matchmakerConfig() matchmaker.Config {
	return matchmaker.Config{
		Interval: c.Interval, TicketTTL: c.TicketTTL, Window: c.window(), DefaultRating: c.DefaultRating,
		RatingBatch: c.RatingBatch, CreateTimeout: c.CreateTimeout, Concurrency: c.Concurrency,
	}
}

// sessionSettings returns the guest session store's settings.
func (c config) sessionSettings() sessions.Settings {
	s := sessions.DefaultSettings()
	s.TTL = c.GuestSessionTTL
	s.Wait = sessions.Wait{Replicas: c.WaitReplicas, Timeout: c.WaitTimeout}
	return s
}

// apiSettings returns the API settings; ratings looks up unrated tickets,
// matches creates the private tables' matches.
func (c config) apiSettings(ratings matchmaker.Ratings, matches matchmaker.Matches) api.Settings {
	return api.Settings{Ratings: ratings,
		TicketTTL: c.TicketTTL, Window: c.window(), WatchPoll: c.WatchPoll,
		SearchingEvery: c.SearchingEvery, StatsWindow: c.StatsWindow, DefaultRating: c.DefaultRating,
		SendTimeout: c.WatchSendTimeout,
		BotLevels:   c.botLevels(),
		Tables: api.TableSettings{
			Store:         store.TableSettings{IdleTTL: c.TableIdleTTL, ClosedRetention: time.Minute},
			Guesses:       store.GuessLimit{Max: c.TableGuesses, Window: c.TableGuessWindow},
			PublicURL:     strings.TrimSuffix(c.PublicURL, "/"),
			Matches:       matches,
			CreateTimeout: c.CreateTimeout,
		},
	}
}
