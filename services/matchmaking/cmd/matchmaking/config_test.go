package main

import (
	"flag"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/sessions"
)

func TestDefaultValidates(t *testing.T) {
	t.Parallel()
	c := defaultConfig()
	c.Server.AuthKeysFile = "keys.json" // the one setting without a default
	c.Server.TLS.Plaintext = true       // or certificate files
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if qs := c.queueList(); len(qs) != 2 || qs[0].Name() != "fourkingdoms/5+5" || qs[1].Name() != "fourkingdoms/1|15 d" {
		t.Errorf("default queues = %v", qs)
	}
}

func TestBind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(config) bool
		wantErr string // substring of the Validate error; empty: valid
	}{
		{name: "environment", env: map[string]string{"MM_QUEUES": "chesscom-ffa 1+0 bots=5s", "MM_WINDOW_MAX": "300"},
			check: func(c config) bool { return c.queueList()[0].BotFillAfter == 5*time.Second && c.WindowMax == 300 }},
		{name: "flag beats environment", env: map[string]string{"MM_ROUND_INTERVAL": "2s"}, args: []string{"-round-interval=3s"},
			check: func(c config) bool { return c.Interval == 3*time.Second }},
		{name: "formation timeout below create timeout", env: map[string]string{"MM_FORMATION_TIMEOUT": "5s"}, wantErr: "formation timeout"},
		{name: "bad queue", env: map[string]string{"MM_QUEUES": "fourkingdoms"}, wantErr: "queues"},
		{name: "window max below initial", env: map[string]string{"MM_WINDOW_MAX": "10"}, wantErr: "window max"},
		{name: "rating batch above the rating service's limit", env: map[string]string{"MM_RATING_BATCH": "1001"}, wantErr: "rating batch"},
		{name: "stats window too long", env: map[string]string{"MM_STATS_WINDOW": "1h"}, wantErr: "stats window"},
		{name: "guest session TTL", env: map[string]string{"GUEST_SESSION_TTL": "720h"},
			check: func(c config) bool { return c.sessionSettings().TTL == 720*time.Hour }},
		{name: "wait replicas", env: map[string]string{"MM_WAIT_REPLICAS": "1", "MM_WAIT_TIMEOUT": "2s"},
			check: func(c config) bool {
				return c.sessionSettings().Wait == sessions.Wait{Replicas: 1, Timeout: 2 * time.Second}
			}},
		{name: "negative wait replicas", env: map[string]string{"MM_WAIT_REPLICAS": "-1"}, wantErr: "wait replicas"},
		{name: "wait without a timeout", env: map[string]string{"MM_WAIT_REPLICAS": "1", "MM_WAIT_TIMEOUT": "0s"}, wantErr: "wait timeout"},
		{name: "guest session shorter than its tokens", env: map[string]string{"GUEST_SESSION_TTL": "1h"}, wantErr: "guest session TTL"},
		{name: "provider settings", env: map[string]string{"OIDC_ISSUER": "https://idp", "OIDC_AUDIENCE": "api", "OIDC_JWKS_URL": "https://idp/jwks"},
			check: func(c config) bool { return c.Server.OIDC.Enabled() && c.Server.OIDC.Audience == "api" }},
		{name: "provider without audience", env: map[string]string{"OIDC_ISSUER": "https://idp", "OIDC_JWKS_URL": "https://idp/jwks"}, wantErr: "audience is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := defaultConfig()
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			env := map[string]string{"AUTH_KEYS_FILE": "keys.json", "INTERNAL_PLAINTEXT": "true"}
			maps.Copy(env, tt.env)
			if err := c.Bind(fs, func(k string) string { return env[k] }); err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate = %v, want an error about %q", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(c) {
				t.Errorf("config = %+v", c)
			}
		})
	}
}

// TestDefaultPorts pins the default addresses the services use for each
// other: match listens on 8081 and rating on 8083 by default (their own
// config tests check that side), matchmaking on 8082, admin ports 909x.
func TestDefaultPorts(t *testing.T) {
	t.Parallel()
	c := defaultConfig()
	for _, tt := range []struct{ name, got, want string }{
		{"grpc", c.Server.GRPCAddr, ":8082"},
		{"admin", c.Server.AdminAddr, ":9092"},
		{"match", c.MatchAddr, "localhost:8081"},
		{"rating", c.RatingAddr, "localhost:8083"},
	} {
		if tt.got != tt.want {
			t.Errorf("default %s address = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestRunFailsCleanly: settings that cannot work stop run with an error
// naming them, after the server may have been built (Redis unreachable);
// TestMain's goleak check finds anything such a path leaves running.
func TestRunFailsCleanly(t *testing.T) {
	t.Parallel()
	_, keyFile := authtest.KeyFile(t)
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad log level", map[string]string{"LOG_LEVEL": "loud"}, `log level: unknown log level "loud"`},
		{"redis unreachable", map[string]string{"REDIS_ADDR": redistest.FreeAddr(t), "REDIS_PING_TIMEOUT": "500ms", "REDIS_MAX_RETRIES": "-1"}, "redis 127.0.0.1:"},
		{"bad setting", map[string]string{"MM_RATING_BATCH": "0"}, "rating batch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"AUTH_KEYS_FILE": keyFile, "INTERNAL_PLAINTEXT": "true", "GRPC_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0"}
			for k, v := range tt.env {
				env[k] = v
			}
			err := run(t.Context(), nil, func(k string) string { return env[k] }, io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
