package server

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/server/envflag"
	"github.com/fourkingdoms/fourkingdoms/pkg/servicetls"
)

// Config is the part of a service's configuration owned by the bootstrap.
// Start from [DefaultConfig]; [Config.Bind] overlays environment and flags.
type Config struct {
	// ServiceName names the service in logs, traces and metrics ("match").
	ServiceName string
	// GRPCAddr is the listen address for gRPC, gRPC-Web and Connect.
	GRPCAddr string
	// AdminAddr is the listen address for /metrics, /healthz, /readyz and pprof.
	AdminAddr string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// AuthKeysFile is the path of the JSON key set of the deployment's
	// token keys. Required. A service that only verifies tokens (match,
	// rating) must be given the public keys only and refuses a set with a
	// private key; the service that mints tokens (matchmaking, see
	// [Options.MintsTokens]) needs the private signing key (docs/security.md).
	AuthKeysFile string
	// OIDC, when its issuer is set, makes the service accept the access
	// tokens of an external OpenID Connect provider besides its own
	// (pkg/auth.OIDC; docs/operations.md, "Accounts from an OpenID Connect
	// provider").
	OIDC auth.OIDCConfig
	// TLS secures the gRPC port (and the calls this service makes to the
	// others): on by default, plaintext only with INTERNAL_PLAINTEXT=true.
	TLS servicetls.Config
	// RateLimitRPS is the sustained calls per second allowed per caller
	// (token subject, or peer IP when unauthenticated). 0 disables limiting.
	RateLimitRPS float64
	// RateLimitBurst is the token bucket size per caller.
	RateLimitBurst int
	// RateLimitCallers bounds the number of callers tracked at once; the
	// least recently seen caller is forgotten first.
	RateLimitCallers int
	// TrustedProxies are the addresses (CIDR prefixes or single addresses)
	// of the proxies in front of the service whose X-Forwarded-For entries
	// name the client an anonymous call is limited as (clientaddr.go).
	// Empty: the direct peer's address.
	TrustedProxies []string
	// MaxStreamsPerCaller bounds the streams (WatchMatch, WatchTicket) one
	// caller (token subject, or peer IP when anonymous) may hold open on
	// one server at once; one more is refused with RESOURCE_EXHAUSTED.
	// Services are exempt. 0 disables the cap.
	MaxStreamsPerCaller int
	// MaxRecvMsgSize is the largest request message accepted, in bytes.
	MaxRecvMsgSize int
	// MaxSendMsgSize is the largest response message sent, in bytes.
	MaxSendMsgSize int
	// ShutdownDrainDelay is how long the server keeps serving after reporting
	// NOT_SERVING, so load balancers stop routing to it before it closes.
	ShutdownDrainDelay time.Duration
	// ShutdownTimeout bounds the graceful drain of in-flight calls; after it
	// the remaining calls are cancelled.
	ShutdownTimeout time.Duration
	// HealthCheckInterval is how often the readiness checks registered with
	// [Server.Check] (a Redis PING) run.
	HealthCheckInterval time.Duration
	// HealthCheckTimeout bounds one readiness check; a check that takes
	// longer fails.
	HealthCheckTimeout time.Duration
	// OTLPEndpoint is the OTLP/gRPC collector URL ("http://otel:4317") for
	// traces and metrics. Empty disables OTLP export; /metrics always works.
	OTLPEndpoint string
	// TraceSampleRatio is the share of new traces recorded and exported
	// when OTLPEndpoint is set (a call that arrives in a sampled trace is
	// always recorded). Without an endpoint nothing is recorded: spans that
	// nobody exports would only cost CPU on every call.
	TraceSampleRatio float64
	// Pprof serves net/http/pprof on the admin listener.
	Pprof bool
	// CORSAllowedOrigins are the exact origins ("https://play.example.com")
	// of web apps served from another origin that may call the service
	// from a browser. Empty (the default) allows none: an app served from
	// the services' own origin (the edge, an ingress) needs no entry.
	CORSAllowedOrigins []string
}

// DefaultConfig returns the defaults of every setting. The services
// override the listen addresses with their own default ports (match 8081,
// matchmaking 8082, rating 8083; admin 9091-9093) so that they run side by
// side and find each other without settings.
func DefaultConfig(serviceName string) Config {
	return Config{
		ServiceName:      serviceName,
		GRPCAddr:         ":8080",
		AdminAddr:        ":9090",
		LogLevel:         "info",
		RateLimitRPS:     50,
		RateLimitBurst:   100,
		RateLimitCallers: 100_000,
		// A player watches a match or two and a ticket; 16 leaves room
		// for a few tabs and reconnects whose old stream has not ended yet.
		MaxStreamsPerCaller: 16,
		MaxRecvMsgSize:      1 << 20,
		MaxSendMsgSize:      4 << 20,
		OIDC:                auth.DefaultOIDCConfig(),
		ShutdownDrainDelay:  0,
		ShutdownTimeout:     20 * time.Second,
		TraceSampleRatio:    0.05,

		HealthCheckInterval: 2 * time.Second,
		HealthCheckTimeout:  time.Second,
	}
}

// Bind registers the settings as flags on fs, after applying environment
// variables read through getenv. Precedence: flag > environment > default.
// It returns an error for unparsable environment values.
func (c *Config) Bind(fs *flag.FlagSet, getenv func(string) string) error {
	b := envflag.New(fs, getenv)
	b.String(&c.ServiceName, "service-name", "SERVICE_NAME", "service name in logs, traces and metrics")
	b.String(&c.GRPCAddr, "grpc-addr", "GRPC_ADDR", "listen address for gRPC, gRPC-Web and Connect")
	b.String(&c.AdminAddr, "admin-addr", "ADMIN_ADDR", "listen address for /metrics, /healthz, /readyz, pprof")
	b.String(&c.LogLevel, "log-level", "LOG_LEVEL", "log level: debug, info, warn, error")
	b.String(&c.AuthKeysFile, "auth-keys-file", "AUTH_KEYS_FILE", "path of the JSON token key set (public keys only, except for the service that mints tokens)")
	b.String(&c.OIDC.Issuer, "oidc-issuer", "OIDC_ISSUER", "issuer (iss) of the OpenID Connect provider whose access tokens are accepted (empty: none)")
	b.String(&c.OIDC.Audience, "oidc-audience", "OIDC_AUDIENCE", "audience (aud) the provider's access tokens must name")
	b.String(&c.OIDC.JWKSURL, "oidc-jwks-url", "OIDC_JWKS_URL", "URL of the provider's JSON Web Key Set (https)")
	b.Duration(&c.OIDC.RefreshInterval, "oidc-jwks-refresh", "OIDC_JWKS_REFRESH", "how often the provider's keys are fetched again")
	b.Duration(&c.OIDC.MinRefreshInterval, "oidc-jwks-min-refresh", "OIDC_JWKS_MIN_REFRESH", "least time between two fetches of the provider's keys")
	b.Float64(&c.RateLimitRPS, "rate-limit-rps", "RATE_LIMIT_RPS", "calls per second per caller (0 disables)")
	b.Int(&c.RateLimitBurst, "rate-limit-burst", "RATE_LIMIT_BURST", "burst size per caller")
	b.Int(&c.RateLimitCallers, "rate-limit-callers", "RATE_LIMIT_CALLERS", "max callers tracked by the rate limiter")
	b.StringList(&c.TrustedProxies, "trusted-proxies", "TRUSTED_PROXIES", "comma-separated CIDR prefixes or addresses of proxies whose X-Forwarded-For names the client of an anonymous call (empty: the direct peer)")
	b.Int(&c.MaxStreamsPerCaller, "max-streams-per-caller", "GRPC_MAX_STREAMS_PER_CALLER", "open streams allowed per caller, services exempt (0 disables)")
	b.Int(&c.MaxRecvMsgSize, "max-recv-msg-size", "GRPC_MAX_RECV_MSG_SIZE", "largest request message in bytes")
	b.Int(&c.MaxSendMsgSize, "max-send-msg-size", "GRPC_MAX_SEND_MSG_SIZE", "largest response message in bytes")
	b.Duration(&c.ShutdownDrainDelay, "shutdown-drain-delay", "SHUTDOWN_DRAIN_DELAY", "time between NOT_SERVING and closing listeners")
	b.Duration(&c.ShutdownTimeout, "shutdown-timeout", "SHUTDOWN_TIMEOUT", "graceful drain limit before in-flight calls are cancelled")
	b.Duration(&c.HealthCheckInterval, "health-check-interval", "HEALTH_CHECK_INTERVAL", "how often readiness checks (Redis PING) run")
	b.Duration(&c.HealthCheckTimeout, "health-check-timeout", "HEALTH_CHECK_TIMEOUT", "time limit of one readiness check")
	b.String(&c.OTLPEndpoint, "otlp-endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP/gRPC collector URL (empty: no export)")
	b.Float64(&c.TraceSampleRatio, "trace-sample-ratio", "TRACE_SAMPLE_RATIO", "share of new traces recorded when exporting (0 to 1)")
	b.Bool(&c.Pprof, "pprof", "PPROF", "serve /debug/pprof on the admin listener")
	b.StringList(&c.CORSAllowedOrigins, "cors-allowed-origins", "CORS_ALLOWED_ORIGINS", "comma-separated exact origins of web apps on other origins that may call from a browser (empty: none)")
	return errors.Join(b.Err(), c.TLS.Bind(fs, getenv))
}

// Validate reports every invalid setting.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.ServiceName != "", "service name is empty")
	check(c.GRPCAddr != "", "grpc address is empty")
	check(c.AdminAddr != "", "admin address is empty")
	_, err := ParseLevel(c.LogLevel)
	check(err == nil, "log level: %v", err)
	check(c.AuthKeysFile != "", "auth key set file is required (AUTH_KEYS_FILE)")
	check(c.RateLimitRPS >= 0, "rate limit rps must be >= 0, got %v", c.RateLimitRPS)
	check(c.RateLimitRPS == 0 || c.RateLimitBurst >= 1, "rate limit burst must be >= 1, got %d", c.RateLimitBurst)
	check(c.RateLimitRPS == 0 || c.RateLimitCallers >= 1, "rate limit callers must be >= 1, got %d", c.RateLimitCallers)
	_, err = parseTrustedProxies(c.TrustedProxies)
	check(err == nil, "%v (TRUSTED_PROXIES)", err)
	check(c.MaxStreamsPerCaller >= 0, "max streams per caller must be >= 0, got %d", c.MaxStreamsPerCaller)
	check(c.MaxRecvMsgSize > 0, "max recv msg size must be positive, got %d", c.MaxRecvMsgSize)
	check(c.MaxSendMsgSize > 0, "max send msg size must be positive, got %d", c.MaxSendMsgSize)
	check(c.ShutdownDrainDelay >= 0, "shutdown drain delay must be >= 0, got %v", c.ShutdownDrainDelay)
	check(c.TraceSampleRatio >= 0 && c.TraceSampleRatio <= 1, "trace sample ratio must be within [0, 1], got %v", c.TraceSampleRatio)
	check(c.ShutdownTimeout > 0, "shutdown timeout must be positive, got %v", c.ShutdownTimeout)
	check(c.HealthCheckInterval > 0, "health check interval must be positive, got %v", c.HealthCheckInterval)
	check(c.HealthCheckTimeout > 0, "health check timeout must be positive, got %v", c.HealthCheckTimeout)
	if err := c.OIDC.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validateOrigins(c.CORSAllowedOrigins); err != nil {
		errs = append(errs, err)
	}
	if err := c.TLS.ValidateServer(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ParseLevel parses a log level name (debug, info, warn, error).
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
	}
	return l, nil
}
