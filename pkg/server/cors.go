package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Cross-origin calls from browsers (Config.CORSAllowedOrigins).
//
// A web app served from the services' own origin (the edge of `make run`,
// the ingress of a deployment) needs none of this. An app served from
// another origin calls the services cross-origin: the browser sends a
// preflight (OPTIONS with Access-Control-Request-Method) before each kind of
// call, and lets the app read a response only when it carries
// Access-Control-Allow-Origin naming the app's origin. Only exact origins
// are listed: a wildcard would let any page call the API with a token it
// got hold of, and would hide a typo in the setting.
//
// The header lists are those Connect and gRPC-Web clients need (the lists
// of connectrpc.com/cors, which the module proxy here does not carry, plus
// Authorization, which carries the token, and Retry-After).

// corsMaxAge is how long a browser may cache a preflight answer, in
// seconds. Chromium caps it at two hours; longer would be ignored.
const corsMaxAge = 7200

var (
	// corsAllowedMethods: POST for every call, GET for Connect GET calls.
	corsAllowedMethods = "GET, POST"
	// corsAllowedHeaders are the request headers the clients send.
	corsAllowedHeaders = strings.Join([]string{
		"Authorization",            // the bearer token
		"Content-Type",             // every protocol
		"Connect-Protocol-Version", // Connect
		"Connect-Timeout-Ms",       // Connect deadlines
		"Connect-Accept-Encoding",  // Connect streaming compression
		"Connect-Content-Encoding", // Connect streaming compression
		"Accept-Encoding",          // Connect unary compression
		"Content-Encoding",         // Connect unary compression
		"Grpc-Timeout",             // gRPC-Web deadlines
		"Grpc-Accept-Encoding",     // gRPC-Web compression
		"X-Grpc-Web",               // gRPC-Web
		"X-User-Agent",             // gRPC-Web
	}, ", ")
	// corsExposedHeaders are the response headers the clients read; a
	// browser hides any other from a cross-origin app.
	corsExposedHeaders = strings.Join([]string{
		"Grpc-Status",              // gRPC-Web status (trailers-only responses)
		"Grpc-Message",             // gRPC-Web error message
		"Grpc-Status-Details-Bin",  // gRPC-Web error details (ErrorInfo)
		"Grpc-Encoding",            // gRPC-Web compression
		"Grpc-Accept-Encoding",     // gRPC-Web compression
		"Content-Encoding",         // Connect unary compression
		"Connect-Content-Encoding", // Connect streaming compression
		"Connect-Accept-Encoding",  // Connect streaming compression
		"Retry-After",              // when to retry a refused call
	}, ", ")
)

// withCORS answers preflights itself and marks the responses of the origins
// in allowed; calls from any other origin, or with no Origin header (every
// non-browser client), pass through without CORS headers, so the browser
// keeps the response from the page that made the call.
func withCORS(allowed []string, next http.Handler) http.Handler {
	origins := make(map[string]bool, len(allowed))
	for _, o := range allowed {
		origins[o] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		listed := origin != "" && origins[origin]
		h := w.Header()
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			// A preflight: no service answers OPTIONS, so answer here,
			// for every origin; only a listed one gets permission.
			h.Add("Vary", "Origin")
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			if listed {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Methods", corsAllowedMethods)
				h.Set("Access-Control-Allow-Headers", corsAllowedHeaders)
				h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if len(origins) > 0 {
			// The answer depends on Origin: a shared cache must not give
			// one origin's answer to another.
			h.Add("Vary", "Origin")
		}
		if listed {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", corsExposedHeaders)
		}
		next.ServeHTTP(w, r)
	})
}

// validateOrigins reports every entry that is not an exact origin as a
// browser sends it: scheme "http" or "https", a host, an optional port, and
// nothing else (no path, not even "/").
func validateOrigins(origins []string) error {
	var errs []error
	for _, o := range origins {
		if err := validateOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("CORS origin %q: %w", o, err))
		}
	}
	return errors.Join(errs...)
}

func validateOrigin(o string) error {
	if o == "*" || o == "null" {
		return errors.New(`only exact origins are allowed, such as "https://play.example.com"`)
	}
	u, err := url.Parse(o)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New(`want "https://host" or "http://host:port"`)
	}
	if u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#") {
		return fmt.Errorf(`an origin is a scheme and a host only, such as "%s://%s"`, u.Scheme, u.Host)
	}
	if want := u.Scheme + "://" + strings.ToLower(u.Host); o != want {
		// Browsers send the origin in lower case; a listed "HTTPS://X"
		// would never match.
		return fmt.Errorf("write it as %q, as browsers send it", want)
	}
	if p := u.Port(); (u.Scheme == "https" && p == "443") || (u.Scheme == "http" && p == "80") {
		return fmt.Errorf("write it as %q: browsers leave out the default port", u.Scheme+"://"+u.Hostname())
	}
	return nil
}
