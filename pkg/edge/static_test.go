package edge

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStaticFiles: files of the build with their types and caching, the
// app's screens answered by index.html, and 404 for missing files.
func TestStaticFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const index = "<!doctype html><title>Four Kingdoms</title>"
	files := map[string]string{
		"index.html":              index,
		"favicon.ico":             "ico",
		"robots.txt":              "User-agent: *",
		"assets/app-3F2A9B1C.js":  "console.log(1)",
		"assets/app-3F2A9B1C.css": "body{}",
		"assets/board-9d8c.svg":   "<svg/>",
		"assets/app.js.map":       "{}",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	const (
		html      = "text/html; charset=utf-8"
		immutable = "public, max-age=31536000, immutable"
	)
	for _, tc := range []struct {
		method, path string
		status       int
		body         string // "" skips the check
		contentType  string
		cache        string
	}{
		{"GET", "/", 200, index, html, "no-cache"},
		{"GET", "/index.html", 200, index, html, "no-cache"},
		{"HEAD", "/", 200, "", html, "no-cache"},
		{"GET", "/watch/0a4f3c2b1d0e9f8a7b6c5d", 200, index, html, "no-cache"},
		{"GET", "/watch/0a4f3c2b1d0e9f8a7b6c5d/", 200, index, html, "no-cache"},
		{"GET", "/leaderboard", 200, index, html, "no-cache"},
		{"GET", "/assets", 200, index, html, "no-cache"}, // a directory is no file
		{"GET", "/assets/app-3F2A9B1C.js", 200, files["assets/app-3F2A9B1C.js"], "text/javascript; charset=utf-8", immutable},
		{"GET", "/assets/app-3F2A9B1C.css", 200, files["assets/app-3F2A9B1C.css"], "text/css; charset=utf-8", immutable},
		{"GET", "/assets/board-9d8c.svg", 200, "<svg/>", "image/svg+xml", immutable},
		{"GET", "/assets/app.js.map", 200, "{}", "application/json", immutable},
		{"GET", "/favicon.ico", 200, "ico", "image/x-icon", "no-cache"},
		{"GET", "/robots.txt", 200, files["robots.txt"], "text/plain; charset=utf-8", "no-cache"},
		{"GET", "/assets/app-00000000.js", 404, "", "", ""},
		{"GET", "/watch/0a4f/app.js", 404, "", "", ""},
		{"GET", "/leak.txt", 404, "", "", ""}, // a link out of the directory
		{"GET", "/../../../../etc/passwd", 200, index, html, "no-cache"},
		{"POST", "/", 404, "", "", ""},
		{"POST", "/grpc.health.v1.Health/Check", 404, "", "", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tc.method, "http://edge"+tc.path, nil)
			NewStatic(dir).ServeHTTP(rec, req)
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", res.StatusCode, body, tc.status)
			}
			if strings.Contains(string(body), "secret") {
				t.Fatalf("served a file from outside the directory: %s", body)
			}
			if tc.status != 200 {
				return
			}
			if tc.body != "" && string(body) != tc.body {
				t.Errorf("body %q, want %q", body, tc.body)
			}
			if tc.method == "HEAD" && len(body) != 0 {
				t.Errorf("HEAD has a body: %q", body)
			}
			if got := res.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			if got := res.Header.Get("Cache-Control"); got != tc.cache {
				t.Errorf("Cache-Control %q, want %q", got, tc.cache)
			}
			if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
		})
	}

	// no-cache means "revalidate": an unchanged index.html costs a 304.
	t.Run("revalidation", func(t *testing.T) {
		t.Parallel()
		req := httptest.NewRequest("GET", "http://edge/watch/0a4f", nil)
		req.Header.Set("If-Modified-Since", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
		rec := httptest.NewRecorder()
		NewStatic(dir).ServeHTTP(rec, req)
		if rec.Code != http.StatusNotModified {
			t.Errorf("conditional GET of a screen: %d, want 304", rec.Code)
		}
	})
}

// TestStaticWithoutBuild: with no web app built, pages explain how to build
// it; the files that do exist are still served.
func TestStaticWithoutBuild(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "web", "dist")
	noIndex := t.TempDir()
	if err := os.WriteFile(filepath.Join(noIndex, "app.js"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, path string
		status    int
	}{
		{missing, "/", http.StatusServiceUnavailable},
		{missing, "/watch/0a4f", http.StatusServiceUnavailable},
		{noIndex, "/", http.StatusServiceUnavailable},
		{noIndex, "/leaderboard", http.StatusServiceUnavailable},
		{noIndex, "/app.js", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		NewStatic(tc.dir).ServeHTTP(rec, httptest.NewRequest("GET", "http://edge"+tc.path, nil))
		body := rec.Body.String()
		if rec.Code != tc.status {
			t.Errorf("%s in %s: %d, want %d", tc.path, tc.dir, rec.Code, tc.status)
		}
		if tc.status == http.StatusServiceUnavailable && (!strings.Contains(body, "make web") || !strings.Contains(body, "text/html") && rec.Header().Get("Content-Type") != "text/html; charset=utf-8") {
			t.Errorf("%s in %s: %q (%s), want a page that says to run make web", tc.path, tc.dir, body, rec.Header().Get("Content-Type"))
		}
	}
}

// TestRoutesBeforeFiles: a path of a routed service reaches the service
// even when the web build holds a file of that name, and every other path
// is the web app's.
func TestRoutesBeforeFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "fourkingdoms.match.v1.MatchService"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fourkingdoms.match.v1.MatchService", "GetMatch"), []byte("file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("app"), 0o644); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		reached []string
	)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reached = append(reached, r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer backend.Close()
	addr := strings.TrimPrefix(backend.URL, "http://")
	h, err := New(Config{Services: map[Backend]string{Match: addr, Matchmaking: addr, Rating: addr}, WebDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.CloseIdleConnections()
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/fourkingdoms.match.v1.MatchService/GetMatch", http.StatusTeapot},
		{"/fourkingdoms.auth.v1.AuthService/GuestLogin", http.StatusTeapot},
		{"/fourkingdoms.matchmaking.v1.MatchmakingService/ListQueues", http.StatusTeapot},
		{"/fourkingdoms.rating.v1.RatingService/GetRating", http.StatusTeapot},
		{"/fourkingdoms.match.v1.MatchServiceX/GetMatch", http.StatusOK}, // no prefix of a route: a screen
		{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", http.StatusOK},
		{"/", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://edge"+tc.path, nil))
		if rec.Code != tc.status {
			t.Errorf("GET %s: %d %q, want %d", tc.path, rec.Code, rec.Body.String(), tc.status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reached) != 4 {
		t.Errorf("the service saw %q, want the four routed calls", reached)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	all := map[Backend]string{Match: "localhost:8081", Matchmaking: "localhost:8082", Rating: "localhost:8083"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing service", Config{Services: map[Backend]string{Match: "localhost:8081"}}, "no address for the matchmaking service"},
		{"address with a scheme", Config{Services: map[Backend]string{Match: "http://x:1", Matchmaking: "x:2", Rating: "x:3"}}, "want host:port"},
		{"prefix without a slash", Config{Services: all, Routes: []Route{{Prefix: "/a.B", Backend: Match}}}, "want /<package>.<Service>/"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
