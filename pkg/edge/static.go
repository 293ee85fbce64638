package edge

import (
	"html"
	"mime"
	"net/http"
	"os"
	"path"
	"strings"
)

// The web app's files.
//
// Every path that no route claims is a file of the app or one of its
// screens. A path whose last element has an extension ("/assets/app.js",
// "/favicon.ico") is a file: served when it exists, 404 otherwise (a missing
// script must fail as a missing script, not as HTML). Any other path
// ("/", "/watch/<match id>", "/leaderboard") is a screen of the single-page
// app: the app's index.html answers it and the app reads the path.
//
// Caching: files under assets/ are named by their content's hash (the
// bundler's output), so a new build has new names and a browser may keep
// them for a year without asking again. Everything else, index.html first,
// must be revalidated on every load (no-cache, with Last-Modified), or a
// browser would keep an old index.html that names assets that no longer
// exist.

// hashedDir holds the content-hashed files; see docs/web.md.
const hashedDir = "assets/"

const (
	cacheHashed = "public, max-age=31536000, immutable"
	cacheOther  = "no-cache"
)

// contentTypes are the types of the files a web build holds, fixed here
// rather than taken from the machine's MIME database, which differs from
// one machine to the next (and lacks some, such as .map or .webmanifest).
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".json":        "application/json",
	".map":         "application/json",
	".webmanifest": "application/manifest+json",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".ico":         "image/x-icon",
	".webp":        "image/webp",
	".woff2":       "font/woff2",
	".wasm":        "application/wasm",
	".txt":         "text/plain; charset=utf-8",
}

func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ct, ok := contentTypes[ext]; ok {
		return ct
	}
	if ct := mime.TypeByExtension(ext); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// NewStatic returns the handler of the web app's files in dir (web/dist of
// the repository, or its copy in the web image): the edge's fallback after
// its routes, and the whole of cmd/webserve. It answers GET and HEAD only;
// paths are those described above (a screen gets index.html, a missing file
// 404, assets/ cached for a year, the rest revalidated). dir is read on every
// request and never left, through ".." or symbolic links; while it holds no
// index.html every screen gets a 503 page that says how to build the app.
func NewStatic(dir string) http.Handler { return static{dir: dir} }

type static struct{ dir string }

func (s static) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// Most likely a call of a service the edge does not route (a
		// gRPC client maps 404 to UNIMPLEMENTED).
		http.Error(w, "not found: "+r.URL.Path+" is no method of a public service and no file of the web app", http.StatusNotFound)
		return
	}
	// os.Root keeps every lookup inside dir, through ".." and symbolic
	// links alike.
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		notBuilt(w, s.dir)
		return
	}
	defer root.Close()
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name != "" && name != "index.html" {
		if serveFile(w, r, root, name) {
			return
		}
		if path.Ext(name) != "" {
			http.NotFound(w, r)
			return
		}
	}
	if !serveFile(w, r, root, "index.html") {
		notBuilt(w, s.dir)
	}
}

// serveFile serves the regular file name of root, and reports whether it
// exists.
func serveFile(w http.ResponseWriter, r *http.Request, root *os.Root, name string) bool {
	f, err := root.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", contentType(name))
	h.Set("X-Content-Type-Options", "nosniff")
	if strings.HasPrefix(name, hashedDir) {
		h.Set("Cache-Control", cacheHashed)
	} else {
		h.Set("Cache-Control", cacheOther)
	}
	// ServeContent answers conditional and range requests.
	http.ServeContent(w, r, name, info.ModTime(), f)
	return true
}

// notBuilt answers in place of a web app that is not there.
func notBuilt(w http.ResponseWriter, dir string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", cacheOther)
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Four Kingdoms</title></head>
<body><h1>Four Kingdoms</h1>
<p>The services are running, but the web app is not built: there is no index.html in <code>` + html.EscapeString(dir) + `</code>.</p>
<p>Build it with <code>make web</code> and reload this page, or play from a terminal with <code>go run ./cmd/fk play</code>.</p>
</body></html>
`))
}
