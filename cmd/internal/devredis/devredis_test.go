package devredis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The match service publishes from a Lua script with SPUBLISH and its
// watchers listen with SSUBSCRIBE; both must work on the embedded store.
func TestShardedPubSubFromScripts(t *testing.T) {
	m, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	ps := rdb.SSubscribe(ctx, "{p1}:m1")
	msg, err := ps.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sub, ok := msg.(*redis.Subscription); !ok || sub.Kind != "ssubscribe" || sub.Channel != "{p1}:m1" {
		t.Fatalf("confirmation = %#v, want ssubscribe of {p1}:m1", msg)
	}
	if err := rdb.Eval(ctx, "return redis.call('SPUBLISH', KEYS[1], ARGV[1])", []string{"{p1}:m1"}, "hello").Err(); err != nil {
		t.Fatalf("SPUBLISH from a script: %v", err)
	}
	if err := rdb.SPublish(ctx, "{p1}:m1", "again").Err(); err != nil {
		t.Fatalf("SPUBLISH: %v", err)
	}
	for _, want := range []string{"hello", "again"} {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Channel != "{p1}:m1" || msg.Payload != want {
			t.Fatalf("message = %s %q, want %q", msg.Channel, msg.Payload, want)
		}
	}
	if err := ps.SUnsubscribe(ctx, "{p1}:m1"); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	// After the subscriber left, publishing must not block the store.
	if err := rdb.SPublish(ctx, "{p1}:m1", "nobody").Err(); err != nil {
		t.Fatal(err)
	}
}

// Redis gives scripts the struct library; the match service packs event
// lengths with it.
func TestScriptsCanPackIntegersWithStruct(t *testing.T) {
	m, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	tests := []struct {
		name string
		fn   string
		want string
	}{
		{"big-endian 4 bytes", "struct.pack('>I4', 258)", "\x00\x00\x01\x02"},
		{"little-endian 2 bytes", "struct.pack('<I2', 258)", "\x02\x01"},
		{"two values", "struct.pack('>I4>I4', 1, 70000)", "\x00\x00\x00\x01\x00\x01\x11\x70"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := redis.NewScript("return " + tt.fn)
			// Run twice: EVAL (NOSCRIPT fallback) first, then EVALSHA.
			for range 2 {
				got, err := script.Run(ctx, rdb, nil).Text()
				if err != nil {
					t.Fatal(err)
				}
				if got != tt.want {
					t.Fatalf("%s = %q, want %q", tt.fn, got, tt.want)
				}
			}
			if err := script.Load(ctx, rdb).Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := script.EvalSha(ctx, rdb, nil).Text(); err != nil || got != tt.want {
				t.Fatalf("after SCRIPT LOAD: %q, %v", got, err)
			}
		})
	}
}
