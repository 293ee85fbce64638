package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServe starts webserve on a loopback port with a small web build,
// checks what the web image's probes and browsers get, and stops it by
// cancelling its context.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	const index = "<!doctype html><title>Four Kingdoms</title>"
	const app = "console.log(1)"
	if err := os.MkdirAll(filepath.Join(dir, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"index.html": index, "assets/app-1A2B.js": app} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	var logs strings.Builder // written by run's goroutine; read only after it returned
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, func(k string) string {
			return map[string]string{"WEB_DIR": dir}[k]
		}, &logs, func(a net.Addr) { addrc <- a })
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	}

	c := &http.Client{Timeout: 5 * time.Second}
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/", 200, index},
		{"/watch/0a4f3c2b", 200, index},
		{"/assets/app-1A2B.js", 200, app},
		{"/assets/app-0000.js", 404, ""},
	} {
		res, err := c.Get(base + tc.path)
		if err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.path, res.StatusCode, tc.status)
		}
		if tc.body != "" && string(body) != tc.body {
			t.Errorf("GET %s: body %q, want %q", tc.path, body, tc.body)
		}
	}
	c.CloseIdleConnections()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return 15 s after its context was cancelled")
	}
	if _, err := c.Get(base + "/"); err == nil {
		t.Error("still serving after run returned")
	}
	if !strings.Contains(logs.String(), "dir="+dir) {
		t.Errorf("log does not name the directory served:\n%s", logs.String())
	}
}

// TestBadSettings: a setting that cannot work stops webserve at start with
// an error that names it.
func TestBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-port", "80"}, "-port"},
		{"stray argument", []string{"web/dist"}, "web/dist"},
		{"invalid address", []string{"-addr", "127.0.0.1:-1"}, "listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(t.Context(), tc.args, func(string) string { return "" }, io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error naming %q", tc.args, err, tc.want)
			}
		})
	}
}
