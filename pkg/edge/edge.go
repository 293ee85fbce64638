// Package edge is the one origin in front of the Four Kingdoms services: a
// single HTTP port that serves the web app's files and forwards every call of
// the public services to the service that owns it, chosen by the call's path
// prefix (see [Routes]).
//
// The local launcher (`make run`) runs it; a Kubernetes deployment gets the
// same routing table from its ingress, so the browser sees one origin in
// both and needs no CORS. Native gRPC (cleartext HTTP/2), gRPC-Web and
// Connect all pass, server streams included, without buffering: each
// message is flushed to the client as soon as the service sends it.
package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Backend names a service process behind the edge.
type Backend string

// The three services.
const (
	Match       Backend = "match"
	Matchmaking Backend = "matchmaking"
	Rating      Backend = "rating"
)

// Route forwards every request whose URL path starts with Prefix to
// Backend. A gRPC, gRPC-Web or Connect call's path is
// "/<package>.<Service>/<Method>", so a prefix names one whole service.
type Route struct {
	// Prefix is "/" + the service's full protobuf name + "/".
	Prefix string
	// Backend is the service process that registers that service.
	Backend Backend
}

// Routes returns the routing table: every public service of proto/ and the
// process that serves it. The Kubernetes ingress repeats it; its test
// compares the two.
//
// Not routed, on purpose: gRPC health (grpc.health.v1.Health) and server
// reflection, which every service also serves on its own port. They are
// for probes and operators, who reach each service directly; at the edge
// a health check would answer for one arbitrary service, and reflection
// would only advertise the internals. Methods meant for internal callers
// or operators inside the public services (CreateMatch, AbortMatch) are
// reachable, as on the services' own ports: the token's role guards them,
// not the network.
func Routes() []Route {
	return []Route{
		{Prefix: "/fourkingdoms.auth.v1.AuthService/", Backend: Matchmaking},
		{Prefix: "/fourkingdoms.matchmaking.v1.MatchmakingService/", Backend: Matchmaking},
		{Prefix: "/fourkingdoms.match.v1.MatchService/", Backend: Match},
		{Prefix: "/fourkingdoms.rating.v1.RatingService/", Backend: Rating},
	}
}

// Config is what the edge needs to know.
type Config struct {
	// Services are the addresses ("localhost:8081") of the backends; every
	// backend of Routes must have one.
	Services map[Backend]string
	// WebDir is the directory of the built web app (web/dist of the
	// repository). It is read on every request, so a rebuild shows at the
	// next reload; when it does not exist the edge explains how to build it.
	WebDir string
	// Routes is the routing table; nil means [Routes]. Tests route other
	// services.
	Routes []Route
	// Log receives the calls that could not be forwarded; nil discards.
	Log *slog.Logger
}

// Handler is the edge: the routes to the services, then the web app.
type Handler struct {
	routes []route
	web    http.Handler
	h2c    *http.Transport
	h1     *http.Transport
}

type route struct {
	prefix string
	proxy  *httputil.ReverseProxy
}

// New returns the edge's handler for cfg.
func New(cfg Config) (*Handler, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	table := cfg.Routes
	if table == nil {
		table = Routes()
	}
	h := &Handler{web: NewStatic(cfg.WebDir), h2c: newTransport(true), h1: newTransport(false)}
	for _, rt := range table {
		if !strings.HasPrefix(rt.Prefix, "/") || !strings.HasSuffix(rt.Prefix, "/") {
			return nil, fmt.Errorf("edge: route prefix %q: want /<package>.<Service>/", rt.Prefix)
		}
		addr := cfg.Services[rt.Backend]
		if addr == "" {
			return nil, fmt.Errorf("edge: no address for the %s service (route %s)", rt.Backend, rt.Prefix)
		}
		target, err := url.Parse("http://" + addr)
		if err != nil || target.Host != addr {
			return nil, fmt.Errorf("edge: %s service address %q: want host:port", rt.Backend, addr)
		}
		h.routes = append(h.routes, route{prefix: rt.Prefix, proxy: h.proxy(rt.Backend, target, log)})
	}
	return h, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, rt := range h.routes {
		if strings.HasPrefix(r.URL.Path, rt.prefix) {
			rt.proxy.ServeHTTP(w, r)
			return
		}
	}
	h.web.ServeHTTP(w, r)
}

// CloseIdleConnections closes the idle connections to the services (at
// shutdown, once no request is in flight).
func (h *Handler) CloseIdleConnections() {
	h.h2c.CloseIdleConnections()
	h.h1.CloseIdleConnections()
}

// newTransport returns a transport to the services: cleartext HTTP/2 with
// prior knowledge (h2c) for native gRPC, HTTP/1.1 otherwise.
//
// Two transports, because a service's port tells its clients apart by the
// first bytes of a connection (pkg/server): an HTTP/2 connection goes to
// the native gRPC server, anything else to the transcoder that speaks
// gRPC-Web and Connect. A Connect call forwarded over HTTP/2 would reach
// the gRPC server and fail; a gRPC call needs HTTP/2 for its trailers.
func newTransport(h2c bool) *http.Transport {
	t := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64, // each HTTP/1.1 stream holds a connection
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // a stream's headers may come late
		Protocols:             new(http.Protocols),
	}
	if h2c {
		t.Protocols.SetUnencryptedHTTP2(true)
	} else {
		t.Protocols.SetHTTP1(true)
	}
	return t
}

// isGRPC reports whether r is a native gRPC call ("application/grpc",
// "application/grpc+proto"), not gRPC-Web ("application/grpc-web...").
func isGRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/grpc") {
		return false
	}
	rest := ct[len("application/grpc"):]
	return rest == "" || rest[0] == '+' || rest[0] == ';'
}

func isGRPCWeb(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc-web")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (h *Handler) proxy(backend Backend, target *url.URL, log *slog.Logger) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// Keep the chain of the proxies in front of the edge (an
			// ingress, a load balancer) and append the address the edge
			// saw: the services read it from the right, trusting only the
			// hops in their TRUSTED_PROXIES, so a client's own entries
			// can name no one (pkg/server, clientaddr.go).
			pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			pr.SetXForwarded()
		},
		Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			if isGRPC(r) {
				return h.h2c.RoundTrip(r)
			}
			return h.h1.RoundTrip(r)
		}),
		// Flush every write at once: a server stream's messages must
		// reach the browser when they are sent, not when a buffer fills.
		FlushInterval:  -1,
		ModifyResponse: trailersOnly,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away; nobody to answer
			}
			log.Warn("edge: call not forwarded", "service", string(backend), "path", r.URL.Path, "error", err)
			unavailable(w, r, fmt.Sprintf("the %s service cannot be reached; try again shortly", backend))
		},
	}
}

// grpcStatusKeys are the fields of a gRPC status.
var grpcStatusKeys = [...]string{"Grpc-Status", "Grpc-Message", "Grpc-Status-Details-Bin"}

// trailersOnly moves the status of a native gRPC "trailers-only" answer (a
// refusal before any message: one HEADERS frame that ends the stream) from
// the headers into the trailers. Forwarded as it came, it breaks at random:
// with FlushInterval -1 ReverseProxy flushes the headers at once, so they
// can leave without END_STREAM, and a gRPC client reads a status in headers
// that do not end the stream as no status at all ("server closed the stream
// without sending trailers"). As trailers the status is valid however the
// frames are split.
func trailersOnly(res *http.Response) error {
	if res.Request == nil || !isGRPC(res.Request) || res.Header.Get("Grpc-Status") == "" {
		return nil
	}
	if res.Trailer == nil {
		res.Trailer = http.Header{}
	}
	for _, k := range grpcStatusKeys {
		if v, ok := res.Header[k]; ok {
			res.Trailer[k] = v
			delete(res.Header, k)
		}
	}
	return nil
}

// unavailable answers a call that could not be forwarded with UNAVAILABLE
// in the call's own protocol, so that every client reports a status (and
// retries) instead of failing to parse a proxy's error page.
func unavailable(w http.ResponseWriter, r *http.Request, msg string) {
	h := w.Header()
	if isGRPC(r) || isGRPCWeb(r) {
		// A trailers-only response: the status travels in the headers.
		h.Set("Content-Type", r.Header.Get("Content-Type"))
		h.Set("Grpc-Status", "14")
		h.Set("Grpc-Message", msg) // plain ASCII without '%': no escaping needed
		w.WriteHeader(http.StatusOK)
		return
	}
	// Connect (unary and streaming clients both read an HTTP error status
	// and this JSON body).
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `{"code":"unavailable","message":%q}`, msg)
}

// Serve serves h on l until ctx ends, then stops: it gives the calls in
// flight (watch streams never end by themselves) a second, then closes every
// connection, both sides. It returns the listener's error if serving
// failed.
func Serve(ctx context.Context, l net.Listener, h *Handler) error {
	// Handlers still running after Close would open connections to the
	// services after the last CloseIdleConnections: wait for them.
	var inflight sync.WaitGroup
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inflight.Add(1)
			defer inflight.Done()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute, // no limit on a call: streams last a whole game
		Protocols:         new(http.Protocols),
	}
	// HTTP/1.1 for browsers, cleartext HTTP/2 with prior knowledge for
	// native gRPC clients (grpcurl, grpc-go) pointed at the edge.
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		cancel()
		err = <-done
	}
	inflight.Wait()
	h.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
