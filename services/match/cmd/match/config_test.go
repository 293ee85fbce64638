package main

import (
	"io"
	"strings"
	"testing"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth/authtest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// TestDefaultPorts pins the match service's default ports: matchmaking's
// default MATCH_ADDR (localhost:8081) depends on them.
func TestDefaultPorts(t *testing.T) {
	t.Parallel()
	c := defaultConfig()
	if c.Server.GRPCAddr != ":8081" || c.Server.AdminAddr != ":9091" {
		t.Errorf("default addresses = %q, %q; want :8081, :9091", c.Server.GRPCAddr, c.Server.AdminAddr)
	}
}

// TestRunFailsCleanly: settings that cannot work stop run with an error
// naming them, after the server may have been built (Redis unreachable);
// TestMain's goleak check finds anything such a path leaves running.
func TestRunFailsCleanly(t *testing.T) {
	t.Parallel()
	_, keyFile := authtest.PublicKeyFile(t)
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad log level", map[string]string{"LOG_LEVEL": "loud"}, `log level: unknown log level "loud"`},
		{"redis unreachable", map[string]string{"REDIS_ADDR": redistest.FreeAddr(t), "REDIS_PING_TIMEOUT": "500ms", "REDIS_MAX_RETRIES": "-1"}, "redis 127.0.0.1:"},
		{"bad setting", map[string]string{"MATCH_WATCH_BUFFER": "0"}, "watch buffer"},
		{"negative spectator delay", map[string]string{"MATCH_SPECTATOR_DELAY": "-1"}, "spectator delay must be 0 to 64 plies"},
		{"spectator delay beyond the event log's reach", map[string]string{"MATCH_SPECTATOR_DELAY": "65"}, "spectator delay must be 0 to 64 plies"},
		{"keeper margin leaves no time for renewals", map[string]string{"MATCH_KEEPER_LEASE_MARGIN": "500ms"}, "2*interval + margin <= TTL"},
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
