package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"time"

	"connectrpc.com/vanguard/vanguardgrpc"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/stall"
)

// Options are the code-level (not operator-level) settings of a server.
type Options struct {
	// PublicMethods are full method names ("/fourkingdoms.auth.v1.AuthService/GuestLogin")
	// callable without a token. Health and reflection are always public.
	// A public call with a valid token still gets its Identity; an invalid
	// token on a public call is ignored.
	PublicMethods []string
	// MintsTokens marks the one service that signs tokens (guest logins,
	// its own calls to the other services): its key set must hold a
	// private key. Every other service must be given public keys only and
	// refuses to start with a private key, so a signing key mounted in the
	// wrong pod is caught at its first start rather than leaked quietly.
	MintsTokens bool
	// Listening, if set, is called by [Run] once both listeners are bound
	// and before serving starts: tests that configure port 0 learn the
	// addresses from it.
	Listening func(*Server)
}

// Server is one service's gRPC server and admin listener. Create it with
// [New], register services on [Server.GRPC], then call [Server.Serve].
type Server struct {
	cfg  Config
	log  *slog.Logger
	keys *auth.KeySet
	tls  *tls.Config // nil: plaintext (Config.TLS.Plaintext)
	tel  *telemetry
	grpc *grpc.Server
	hs   *health.Server

	watchStop chan struct{}
	calls     *inflight
	// stalledConns closes a gRPC connection whose client stalled too many
	// streams (stalledconns.go).
	stalledConns *stalledConns

	mu        sync.Mutex
	statuses  map[string]bool  // per gRPC service; "" is derived
	failing   map[string]error // components reported failing (Report); empty when ready
	reported  map[string]bool  // every component ever reported, for server_component_failing
	stopping  bool
	grpcLis   net.Listener
	adminLis  net.Listener
	workers   []worker
	serveOnce bool
}

type worker struct {
	name string
	run  func(context.Context) error
}

// New builds a server from a validated config: it loads the key set, sets
// up telemetry and the gRPC server with health and reflection. It does not
// listen yet.
func New(ctx context.Context, cfg Config, log *slog.Logger, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server config: %w", err)
	}
	keys, err := auth.LoadFile(cfg.AuthKeysFile)
	if err != nil {
		return nil, err
	}
	if err := checkKeyRole(keys, cfg, opts.MintsTokens); err != nil {
		return nil, err
	}
	tlsCfg, err := cfg.TLS.ServerConfig()
	if err != nil {
		return nil, err
	}
	tel, err := newTelemetry(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:          cfg,
		log:          log,
		keys:         keys,
		tls:          tlsCfg,
		tel:          tel,
		hs:           health.NewServer(),
		watchStop:    make(chan struct{}),
		calls:        newInflight(),
		stalledConns: newStalledConns(),
		statuses:     make(map[string]bool),
		failing:      make(map[string]error),
		reported:     make(map[string]bool),
	}
	if err := s.registerHealthMetrics(tel.meter.Meter("github.com/fourkingdoms/fourkingdoms/pkg/server")); err != nil {
		return nil, errors.Join(err, tel.shutdown(ctx))
	}
	tokens := &auth.Verifier{Keys: keys}
	if cfg.OIDC.Enabled() {
		// Its refresher starts with the workers, in Serve; until then a
		// token of the provider fetches the keys itself.
		if tokens.OIDC, err = auth.NewOIDC(cfg.OIDC, nil, log); err != nil {
			return nil, errors.Join(err, tel.shutdown(ctx))
		}
		s.Go("oidc-keys", tokens.OIDC.Run)
	}
	ic := &interceptors{
		log:       log,
		tokens:    tokens,
		public:    make(map[string]bool),
		now:       time.Now,
		watchStop: s.watchStop,
		calls:     s.calls,
	}
	for _, m := range opts.PublicMethods {
		ic.public[m] = true
	}
	if ic.proxies, err = parseTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, errors.Join(err, tel.shutdown(ctx))
	}
	if cfg.RateLimitRPS > 0 {
		ic.limiter = newLimiter(cfg.RateLimitRPS, cfg.RateLimitBurst, cfg.RateLimitCallers)
	}
	if cfg.MaxStreamsPerCaller > 0 {
		ic.streams = newStreamCounter(cfg.MaxStreamsPerCaller)
	}
	s.grpc = grpc.NewServer(
		grpc.StatsHandler(tel.statsHandler()),
		grpc.StatsHandler(s.stalledConns), // stalledconns.go
		grpc.ChainUnaryInterceptor(ic.unary),
		grpc.ChainStreamInterceptor(ic.stream),
		grpc.MaxRecvMsgSize(cfg.MaxRecvMsgSize),
		grpc.MaxSendMsgSize(cfg.MaxSendMsgSize),
		// Reused goroutines keep their grown stacks: a goroutine per call
		// grows a fresh stack on every call. Calls beyond the pool get
		// their own goroutine. A bigger pool is not better: with 512
		// workers a match service in the closed loop (about 200 calls in
		// flight) spent 8% less CPU copying stacks, but at 1,000 moves/s
		// MakeMove's p99 rose from 3.3-4.2 ms to 5.0-9.2 ms (idle workers
		// are woken oldest first, each with a cold, shrunken stack).
		// Long-lived streams (WatchMatch) keep their workers, so under the
		// watched load unary calls get fresh goroutines; a last-in-first-out
		// pool of warm goroutines for unary handlers was tried and used no
		// less CPU per move (docs/match.md, "Warm goroutines for unary
		// calls: tried, reverted").
		grpc.NumStreamWorkers(uint32(16*runtime.GOMAXPROCS(0))),
	)
	healthpb.RegisterHealthServer(s.grpc, s.hs)
	reflection.Register(s.grpc)
	// Until Serve marks services SERVING, the server reports NOT_SERVING.
	s.hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	return s, nil
}

// Run is the whole life of a service: New, register, Serve. register adds
// the service implementations (and workers, health statuses) to s.
func Run(ctx context.Context, cfg Config, log *slog.Logger, opts Options, register func(s *Server) error) error {
	s, err := New(ctx, cfg, log, opts)
	if err != nil {
		return err
	}
	if err := register(s); err != nil {
		s.discard()
		return fmt.Errorf("register services: %w", err)
	}
	if opts.Listening != nil {
		if err := s.Listen(); err != nil {
			s.discard()
			return err
		}
		opts.Listening(s)
	}
	return s.Serve(ctx)
}

// GRPC returns the gRPC server to register services on, before Serve.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Keys returns the loaded key set, for the service that signs tokens and
// makes internal calls ([auth.ServiceCredentials], Options.MintsTokens).
func (s *Server) Keys() *auth.KeySet { return s.keys }

// Logger returns the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// TracerProvider returns the provider for the service's own spans (and
// for instrumented clients such as Redis), or nil when traces are not
// exported (no OTLP endpoint): instrumenting a client then only costs
// CPU on every command.
func (s *Server) TracerProvider() trace.TracerProvider {
	if !s.tel.exporting {
		return nil
	}
	return s.tel.tracer
}

// MeterProvider returns the provider for the service's own metrics; they
// appear on /metrics and in OTLP export.
func (s *Server) MeterProvider() metric.MeterProvider { return s.tel.meter }

// SetServing sets the health status of one registered gRPC service (full
// name, "fourkingdoms.match.v1.MatchService"). Services not set explicitly
// become SERVING when Serve starts. The overall status ("") is SERVING
// only when every service is. After shutdown has begun it has no effect.
func (s *Server) SetServing(service string, serving bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[service] = serving
	if s.serveOnce {
		s.publishLocked()
	}
}

func (s *Server) publishLocked() {
	if s.stopping {
		return
	}
	healthy := len(s.failing) == 0
	all := healthy
	for svc, ok := range s.statuses {
		st := healthpb.HealthCheckResponse_SERVING
		if !ok || !healthy {
			st, all = healthpb.HealthCheckResponse_NOT_SERVING, false
		}
		s.hs.SetServingStatus(svc, st)
	}
	overall := healthpb.HealthCheckResponse_SERVING
	if !all {
		overall = healthpb.HealthCheckResponse_NOT_SERVING
	}
	s.hs.SetServingStatus("", overall)
}

// Report sets the health of a component the services depend on (a Redis
// connection, a background worker): nil is healthy; an error makes the
// whole server NOT_SERVING (every gRPC health status and /readyz) until
// the component reports nil again. Liveness (/healthz) is not affected.
// Components start healthy. Changes are logged; repeated reports of the
// same state are cheap, so loops may report after every iteration.
func (s *Server) Report(component string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reported[component] = true
	prev, wasFailing := s.failing[component]
	switch {
	case err != nil && !wasFailing:
		s.failing[component] = err
		s.log.Warn("not ready", "component", component, "error", err)
	case err != nil:
		if prev.Error() != err.Error() {
			s.failing[component] = err
		}
		return
	case wasFailing:
		delete(s.failing, component)
		s.log.Info("ready again", "component", component)
	default:
		return
	}
	if s.serveOnce {
		s.publishLocked()
	}
}

// Check registers a readiness check, before Serve: from the start of
// serving it runs every Config.HealthCheckInterval, bounded by
// Config.HealthCheckTimeout, and reports its result under name (see
// [Server.Report]). The component counts as healthy until the first
// check fails.
func (s *Server) Check(name string, check func(ctx context.Context) error) {
	s.Go("check "+name, func(ctx context.Context) error {
		t := time.NewTicker(s.cfg.HealthCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			cctx, cancel := context.WithTimeout(ctx, s.cfg.HealthCheckTimeout)
			err := check(cctx)
			cancel()
			if ctx.Err() != nil {
				return nil
			}
			s.Report(name, err)
		}
	})
}

// notReady lists the failing components, for /readyz.
func (s *Server) notReady() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.failing))
	for c, err := range s.failing {
		out = append(out, c+": "+err.Error())
	}
	slices.Sort(out)
	return out
}

// Ready reports whether the server is serving, every service is SERVING
// and no component reports a failure; /readyz follows it.
func (s *Server) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.serveOnce || s.stopping || len(s.failing) > 0 {
		return false
	}
	for _, ok := range s.statuses {
		if !ok {
			return false
		}
	}
	return true
}

// Go registers a background worker, started by Serve once listening. Its
// context is cancelled when shutdown begins; Serve waits for it to return.
// A worker that returns a non-nil error (other than its context's error)
// shuts the server down and Serve returns that error.
func (s *Server) Go(name string, run func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workers = append(s.workers, worker{name: name, run: run})
}

// Listen binds both listeners. Serve calls it if needed; tests call it
// first to learn the addresses when configured with port 0.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grpcLis != nil {
		return nil
	}
	g, err := net.Listen("tcp", s.cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("listen grpc: %w", err)
	}
	a, err := net.Listen("tcp", s.cfg.AdminAddr)
	if err != nil {
		g.Close()
		return fmt.Errorf("listen admin: %w", err)
	}
	if s.tls != nil {
		// TLS ends here, before the split by first bytes: gRPC (h2 by
		// ALPN) and browsers' HTTP/1.1 share the port as in plaintext.
		g = tls.NewListener(g, s.tls)
	}
	s.grpcLis, s.adminLis = g, a
	return nil
}

// GRPCAddr returns the bound gRPC address (nil before Listen).
func (s *Server) GRPCAddr() net.Addr { return addrOf(&s.mu, &s.grpcLis) }

// AdminAddr returns the bound admin address (nil before Listen).
func (s *Server) AdminAddr() net.Addr { return addrOf(&s.mu, &s.adminLis) }

func addrOf(mu *sync.Mutex, l *net.Listener) net.Addr {
	mu.Lock()
	defer mu.Unlock()
	if *l == nil {
		return nil
	}
	return (*l).Addr()
}

// discard releases a Server that will not Serve: the gRPC server's stream
// workers and the telemetry providers.
func (s *Server) discard() {
	s.grpc.Stop()
	s.closeTelemetry()
}

func (s *Server) closeTelemetry() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.tel.shutdown(ctx); err != nil {
		s.log.Warn("telemetry shutdown", "error", err)
	}
}

// Serve serves until ctx is cancelled or a worker fails, then shuts down
// as described in the package documentation. It returns nil after a
// requested shutdown. Serve may be called once.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	again := s.serveOnce
	s.mu.Unlock()
	if again {
		return errors.New("server: Serve called twice")
	}
	defer s.closeTelemetry()
	if err := s.Listen(); err != nil {
		s.grpc.Stop()
		return err
	}
	transcoder, err := vanguardgrpc.NewTranscoder(s.grpc)
	if err != nil {
		s.grpcLis.Close()
		s.adminLis.Close()
		return fmt.Errorf("vanguard transcoder: %w", err)
	}
	split := newSplitListener(s.grpcLis)
	split.track = s.stalledConns.track
	httpSrv := &http.Server{
		Handler:           stall.Handler(withCORS(s.cfg.CORSAllowedOrigins, transcoder)),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		Protocols:         new(http.Protocols),
	}
	httpSrv.Protocols.SetHTTP1(true)
	httpSrv.Protocols.SetUnencryptedHTTP2(true)
	adminSrv := &http.Server{
		Handler:           s.adminHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}

	s.mu.Lock()
	s.serveOnce = true
	for svc := range s.grpc.GetServiceInfo() {
		if svc == healthpb.Health_ServiceDesc.ServiceName || isReflection(svc) {
			continue
		}
		if _, set := s.statuses[svc]; !set {
			s.statuses[svc] = true
		}
	}
	s.publishLocked()
	workers := s.workers
	s.mu.Unlock()

	var serving sync.WaitGroup
	serving.Go(split.serve)
	serving.Go(func() { _ = s.grpc.Serve(split.grpcL) })
	serving.Go(func() { _ = httpSrv.Serve(split.httpL) })
	serving.Go(func() { _ = adminSrv.Serve(s.adminLis) })

	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	workerErr := make(chan error, len(workers))
	var working sync.WaitGroup
	for _, w := range workers {
		working.Go(func() {
			err := w.run(workCtx)
			if err != nil && workCtx.Err() == nil {
				s.log.Error("worker failed", "worker", w.name, "error", err)
				workerErr <- fmt.Errorf("worker %s: %w", w.name, err)
			}
		})
	}
	s.log.Info("serving", "grpc_addr", s.grpcLis.Addr().String(), "admin_addr", s.adminLis.Addr().String())

	var result error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down", "cause", context.Cause(ctx))
	case result = <-workerErr:
	}

	// 1. Report NOT_SERVING everywhere and give load balancers time to notice.
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.hs.Shutdown()
	time.Sleep(s.cfg.ShutdownDrainDelay)

	// 2. Stop accepting; end health watches and workers.
	close(s.watchStop)
	cancelWork()
	split.Close()

	// 3. Let in-flight calls finish, within the shutdown timeout.
	deadline, cancelDeadline := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancelDeadline()
	forced := s.calls.drain(deadline) != nil
	if !forced {
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			s.grpc.GracefulStop()
		}()
		select {
		case <-stopped:
		case <-deadline.Done():
			forced = true
		}
		if err := httpSrv.Shutdown(deadline); err != nil {
			forced = true
		}
	}
	// 4. Cancel whatever is left.
	if forced {
		s.log.Warn("shutdown timeout: cancelling in-flight calls", "timeout", s.cfg.ShutdownTimeout)
		httpSrv.Close()
	}
	s.grpc.Stop() // no-op after a completed GracefulStop
	working.Wait()

	// 5. The admin listener goes last, so /metrics is scrapeable throughout.
	adminCtx, cancelAdmin := context.WithTimeout(context.Background(), time.Second)
	defer cancelAdmin()
	if err := adminSrv.Shutdown(adminCtx); err != nil {
		adminSrv.Close()
	}
	serving.Wait()
	s.log.Info("stopped", "forced", forced)
	return result
}

// checkKeyRole enforces the split of token keys (Options.MintsTokens).
func checkKeyRole(keys *auth.KeySet, cfg Config, mints bool) error {
	switch {
	case mints && !keys.CanSign():
		return fmt.Errorf("%s mints tokens: AUTH_KEYS_FILE %s holds no private key; give it the signing key set (fkkeys new)", cfg.ServiceName, cfg.AuthKeysFile)
	case !mints && keys.CanSign():
		return fmt.Errorf("%s only verifies tokens: AUTH_KEYS_FILE %s holds private keys, which must stay with the service that mints tokens; "+
			"give it the public key set instead (fkkeys public)", cfg.ServiceName, cfg.AuthKeysFile)
	}
	return nil
}

func isReflection(svc string) bool {
	return svc == "grpc.reflection.v1.ServerReflection" || svc == "grpc.reflection.v1alpha.ServerReflection"
}
