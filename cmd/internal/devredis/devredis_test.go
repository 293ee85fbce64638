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
