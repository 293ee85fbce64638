package edge

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestEdgeKeepsTheForwardedChain: the services find an anonymous caller's
// address from the right of X-Forwarded-For (pkg/server, clientaddr.go), so
// the edge keeps what the proxies in front of it wrote and appends the
// address it saw itself.
func TestEdgeKeepsTheForwardedChain(t *testing.T) {
	got := make(chan string, 2)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- strings.Join(r.Header.Values("X-Forwarded-For"), "|")
	}))
	defer backend.Close()
	h, err := New(Config{
		Services: map[Backend]string{"test": strings.TrimPrefix(backend.URL, "http://")},
		Routes:   []Route{{Prefix: "/test.v1.Test/", Backend: "test"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.CloseIdleConnections()
	for _, tt := range []struct{ in, want string }{
		{"", "192.0.2.7"},
		{"198.51.100.1", "198.51.100.1, 192.0.2.7"},
	} {
		req := httptest.NewRequest(http.MethodPost, "/test.v1.Test/Call", nil)
		req.RemoteAddr = "192.0.2.7:5555"
		if tt.in != "" {
			req.Header.Set("X-Forwarded-For", tt.in)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
		if x := <-got; x != tt.want {
			t.Errorf("X-Forwarded-For %q arrived as %q, want %q", tt.in, x, tt.want)
		}
	}
}
