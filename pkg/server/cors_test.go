package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestCORS: preflights get permission only for listed origins, actual calls
// from listed origins expose the headers Connect and gRPC-Web read, and
// everything else passes through untouched.
func TestCORS(t *testing.T) {
	t.Parallel()
	const (
		listed   = "https://play.example.com"
		unlisted = "https://evil.example.net"
	)
	preflight := func(origin string) *http.Request {
		r := httptest.NewRequest(http.MethodOptions, "/fourkingdoms.match.v1.MatchService/MakeMove", nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "authorization,connect-protocol-version,content-type")
		return r
	}
	call := func(origin string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/fourkingdoms.match.v1.MatchService/MakeMove", strings.NewReader("{}"))
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	for _, tc := range []struct {
		name    string
		allowed []string
		req     *http.Request
		// want: the response's status and CORS headers; reached: the
		// service saw the request.
		status       int
		allowOrigin  string
		allowMethods bool
		exposes      bool
		reached      bool
	}{
		{name: "preflight from a listed origin", allowed: []string{"http://localhost:5173", listed}, req: preflight(listed),
			status: http.StatusNoContent, allowOrigin: listed, allowMethods: true},
		{name: "preflight from an unlisted origin", allowed: []string{listed}, req: preflight(unlisted),
			status: http.StatusNoContent},
		{name: "preflight with no origin listed", req: preflight(listed), status: http.StatusNoContent},
		{name: "preflight from a listed origin's other port", allowed: []string{listed}, req: preflight(listed + ":8443"),
			status: http.StatusNoContent},
		{name: "call from a listed origin", allowed: []string{listed}, req: call(listed),
			status: http.StatusTeapot, allowOrigin: listed, exposes: true, reached: true},
		{name: "call from an unlisted origin", allowed: []string{listed}, req: call(unlisted),
			status: http.StatusTeapot, reached: true},
		{name: "call without an origin", allowed: []string{listed}, req: call(""),
			status: http.StatusTeapot, reached: true},
		{name: "plain OPTIONS is no preflight", allowed: []string{listed},
			req:    func() *http.Request { r := preflight(listed); r.Header.Del("Access-Control-Request-Method"); return r }(),
			status: http.StatusTeapot, allowOrigin: listed, exposes: true, reached: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reached := false
			h := withCORS(tc.allowed, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = true
				w.WriteHeader(http.StatusTeapot)
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, tc.req)
			res := rec.Result()
			if res.StatusCode != tc.status || reached != tc.reached {
				t.Errorf("status %d, service reached %v; want %d, %v", res.StatusCode, reached, tc.status, tc.reached)
			}
			if got := res.Header.Get("Access-Control-Allow-Origin"); got != tc.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tc.allowOrigin)
			}
			checkList(t, res.Header, "Access-Control-Allow-Methods", tc.allowMethods, "GET", "POST")
			checkList(t, res.Header, "Access-Control-Allow-Headers", tc.allowMethods,
				"Authorization", "Content-Type", "Connect-Protocol-Version", "Connect-Timeout-Ms", "Grpc-Timeout", "X-Grpc-Web", "X-User-Agent")
			checkList(t, res.Header, "Access-Control-Expose-Headers", tc.exposes,
				"Grpc-Status", "Grpc-Message", "Grpc-Status-Details-Bin", "Connect-Content-Encoding", "Retry-After")
			if got := res.Header.Get("Access-Control-Max-Age"); (got != "") != tc.allowMethods {
				t.Errorf("Access-Control-Max-Age = %q", got)
			}
			if got := res.Header.Get("Access-Control-Allow-Credentials"); got != "" {
				t.Errorf("Access-Control-Allow-Credentials = %q: the token travels in a header, not a cookie", got)
			}
			if len(tc.allowed) > 0 && !slices.Contains(res.Header.Values("Vary"), "Origin") {
				t.Errorf("Vary = %q, want Origin", res.Header.Values("Vary"))
			}
		})
	}
}

// checkList checks that header key is absent, or (when want) lists every
// one of names.
func checkList(t *testing.T, h http.Header, key string, want bool, names ...string) {
	t.Helper()
	got := h.Get(key)
	if !want {
		if got != "" {
			t.Errorf("%s = %q, want none", key, got)
		}
		return
	}
	var have []string
	for part := range strings.SplitSeq(got, ",") {
		have = append(have, strings.ToLower(strings.TrimSpace(part)))
	}
	for _, n := range names {
		if !slices.Contains(have, strings.ToLower(n)) {
			t.Errorf("%s = %q, missing %s", key, got, n)
		}
	}
}

func TestCORSOriginSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"https://play.example.com", true},
		{"http://localhost:5173", true},
		{"https://[::1]:8443", true},
		{"*", false},
		{"null", false},
		{"https://play.example.com/", false},
		{"https://play.example.com/app", false},
		{"https://Play.Example.com", false},
		{"https://play.example.com:443", false},
		{"http://play.example.com:80", false},
		{"play.example.com", false},
		{"ftp://play.example.com", false},
		{"https://user@play.example.com", false},
		{"https://play.example.com?x", false},
	} {
		cfg := DefaultConfig("x")
		cfg.AuthKeysFile = "/k.json"
		cfg.CORSAllowedOrigins = []string{tc.origin}
		err := cfg.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("origin %q: Validate = %v, want ok %v", tc.origin, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "CORS origin") {
			t.Errorf("origin %q: error %q does not name the setting", tc.origin, err)
		}
	}
}

// TestCORSOnServicePort: the setting reaches the real listener, and the
// transcoder keeps the CORS headers on a Connect answer, error or not.
func TestCORSOnServicePort(t *testing.T) {
	t.Parallel()
	const origin = "http://localhost:5173"
	h := start(t, func(c *Config) { c.CORSAllowedOrigins = []string{origin} })
	c := httpClient(t)
	url := "http://" + h.addr + "/grpc.testing.TestService/UnaryCall"

	pre, _ := http.NewRequest(http.MethodOptions, url, nil)
	pre.Header.Set("Origin", origin)
	pre.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := c.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("preflight: %d, Access-Control-Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"signed in", h.token(t, "cross-origin-player"), http.StatusOK},
		{"refused", "", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Connect-Protocol-Version", "1")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.status)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Grpc-Status") {
			t.Errorf("%s: CORS headers %v", tc.name, resp.Header)
		}
	}
}

// FuzzCORSOrigin: whatever the setting holds, an accepted entry is exactly
// what a browser would send as Origin (scheme and host, nothing else), so
// it can match; and validation never panics.
func FuzzCORSOrigin(f *testing.F) {
	for _, s := range []string{"https://play.example.com", "http://localhost:5173", "*", "https://x/", "HTTPS://X", "https://[::1]:8443", "http://a:80", "https://a?#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, o string) {
		if validateOrigin(o) != nil {
			return
		}
		u, err := url.Parse(o)
		if err != nil || u.Scheme+"://"+u.Host != o || u.Host != strings.ToLower(u.Host) || u.Path != "" {
			t.Errorf("accepted %q, which no browser sends as an origin (%v)", o, err)
		}
	})
}
