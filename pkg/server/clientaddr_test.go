package server

import (
	"testing"

	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestForwardedClientAddress(t *testing.T) {
	proxies, err := parseTrustedProxies([]string{"10.0.0.0/8", "127.0.0.1", " ::1 ", ""})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		peer string
		xff  []string
		want string
	}{
		{"no header: the peer", "10.1.2.3", nil, "10.1.2.3"},
		{"untrusted peer: its header is ignored", "203.0.113.9", []string{"198.51.100.1"}, "203.0.113.9"},
		{"trusted peer: the address it saw", "10.1.2.3", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a client's own entry is left of the proxy's", "10.1.2.3", []string{"1.1.1.1, 198.51.100.1"}, "198.51.100.1"},
		{"two trusted proxies", "127.0.0.1", []string{"198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"two headers read as one list", "127.0.0.1", []string{"1.1.1.1, 198.51.100.1", "10.9.9.9"}, "198.51.100.1"},
		{"every hop trusted: the leftmost", "10.1.2.3", []string{"10.0.0.1,10.0.0.2"}, "10.0.0.1"},
		{"a port or brackets", "::1", []string{"[2001:db8::1]:4711"}, "2001:db8::1"},
		{"an address with a port", "::1", []string{"198.51.100.1:443"}, "198.51.100.1"},
		{"garbage stops the walk at the last good hop", "10.1.2.3", []string{"198.51.100.1, not-an-ip"}, "10.1.2.3"},
		{"garbage behind an untrusted hop is never read", "10.1.2.3", []string{"not-an-ip, 198.51.100.1"}, "198.51.100.1"},
		{"mapped IPv4 is IPv4", "::ffff:10.1.2.3", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"empty entries are garbage", "10.1.2.3", []string{""}, "10.1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := proxies.forwarded(tt.peer, tt.xff); got != tt.want {
				t.Errorf("forwarded(%q, %q) = %q, want %q", tt.peer, tt.xff, got, tt.want)
			}
		})
	}
	if got := trustedProxies(nil).forwarded("10.1.2.3", []string{"198.51.100.1"}); got != "10.1.2.3" {
		t.Errorf("with no trusted proxy the header counted: %q", got)
	}
}

func TestParseTrustedProxiesRefusesGarbage(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0"} {
		if _, err := parseTrustedProxies([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	cfg := DefaultConfig("x")
	cfg.AuthKeysFile = "keys.json"
	cfg.TrustedProxies = []string{"nope"}
	if err := cfg.Validate(); err == nil {
		t.Error("Validate accepted TRUSTED_PROXIES=nope")
	}
}

// TestAnonymousCallsBehindAProxyAreLimitedPerClient: behind a trusted
// proxy (the test's loopback peer), anonymous callers forwarded from two
// addresses have a bucket each; without the proxy trusted, the header is
// ignored and they share the peer's.
func TestAnonymousCallsBehindAProxyAreLimitedPerClient(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{true, false} {
		h := start(t, func(c *Config) {
			c.RateLimitRPS, c.RateLimitBurst = 0.01, 2
			if trusted {
				c.TrustedProxies = []string{"127.0.0.0/8", "::1"}
			}
		})
		tc := testpb.NewTestServiceClient(h.conn(t, ""))
		call := func(client string) error {
			ctx := metadata.AppendToOutgoingContext(t.Context(), forwardedFor, client)
			_, err := tc.EmptyCall(ctx, &testpb.Empty{})
			return err
		}
		for i := range 2 {
			if err := call("198.51.100.1"); err != nil {
				t.Fatalf("trusted=%v: call %d of the first client within its burst: %v", trusted, i, err)
			}
		}
		if err := call("198.51.100.1"); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("trusted=%v: the first client's third call = %v, want RESOURCE_EXHAUSTED", trusted, err)
		}
		err := call("198.51.100.2")
		if trusted && err != nil {
			t.Errorf("behind a trusted proxy another client was limited: %v", err)
		}
		if !trusted && status.Code(err) != codes.ResourceExhausted {
			t.Errorf("an untrusted peer chose its bucket with X-Forwarded-For: %v", err)
		}
	}
}
