package devredis

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/go-redis/v9"
)

// startStore starts an embedded store and a client for it, both closed at
// the end of the test.
func startStore(t *testing.T) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), Protocol: 2})
	t.Cleanup(func() { rdb.Close() })
	return m, rdb
}

// Every type the services use survives Save and Load: the content read back
// from the new store equals the old one's, and the new store behaves like
// the old one where the content alone would not show it.
func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	binary := string([]byte{0, 0xff, 0xfe, '\n', 0x80})
	for _, tc := range []struct {
		name  string
		fill  func(ctx context.Context, rdb *redis.Client) error
		check func(ctx context.Context, t *testing.T, rdb *redis.Client)
	}{
		{name: "string", fill: func(ctx context.Context, rdb *redis.Client) error {
			if err := rdb.Set(ctx, "s", binary, 0).Err(); err != nil {
				return err
			}
			return rdb.Set(ctx, "empty", "", 0).Err()
		}},
		{name: "string with TTL", fill: func(ctx context.Context, rdb *redis.Client) error {
			return rdb.Set(ctx, "lease", "holder", time.Hour).Err()
		}, check: func(ctx context.Context, t *testing.T, rdb *redis.Client) {
			if ttl := rdb.PTTL(ctx, "lease").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
				t.Errorf("TTL after load = %v, want about an hour", ttl)
			}
		}},
		{name: "hash", fill: func(ctx context.Context, rdb *redis.Client) error {
			return rdb.HSet(ctx, "{p1}:match:m1", "state", binary, "version", "7", "seat:red", "alice").Err()
		}},
		{name: "list", fill: func(ctx context.Context, rdb *redis.Client) error {
			return rdb.RPush(ctx, "l", "c", "a", "b", "a", binary).Err()
		}},
		{name: "set", fill: func(ctx context.Context, rdb *redis.Client) error {
			return rdb.SAdd(ctx, "set", "x", "y", binary).Err()
		}},
		{name: "sorted set", fill: func(ctx context.Context, rdb *redis.Client) error {
			return rdb.ZAdd(ctx, "lb", redis.Z{Score: 1523.0625, Member: "alice"}, redis.Z{Score: -0.1, Member: "bob"},
				redis.Z{Score: 1e17 + 3, Member: "carol"}, redis.Z{Score: 1.0 / 3, Member: binary}).Err()
		}, check: func(ctx context.Context, t *testing.T, rdb *redis.Client) {
			if got := rdb.ZScore(ctx, "lb", binary).Val(); got != 1.0/3 {
				t.Errorf("score after load = %v, want exactly 1/3", got)
			}
		}},
		{name: "stream with a consumer group and pending entries", fill: func(ctx context.Context, rdb *redis.Client) error {
			for i := range 5 {
				if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "events", ID: "1000-" + string(rune('1'+i)), Values: []string{"payload", binary, "n", string(rune('a' + i))}}).Err(); err != nil {
					return err
				}
			}
			if err := rdb.XGroupCreate(ctx, "events", "rating", "0").Err(); err != nil {
				return err
			}
			// worker-1 reads three and acknowledges one; worker-2 reads one
			// and reads it again (claim), idle worker-3 reads nothing.
			if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "rating", Consumer: "worker-1", Streams: []string{"events", ">"}, Count: 3}).Err(); err != nil {
				return err
			}
			if err := rdb.XAck(ctx, "events", "rating", "1000-1").Err(); err != nil {
				return err
			}
			if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "rating", Consumer: "worker-2", Streams: []string{"events", ">"}, Count: 1}).Err(); err != nil {
				return err
			}
			if err := rdb.XClaim(ctx, &redis.XClaimArgs{Stream: "events", Group: "rating", Consumer: "worker-2", Messages: []string{"1000-4"}}).Err(); err != nil {
				return err
			}
			if err := rdb.XGroupCreateConsumer(ctx, "events", "rating", "worker-3").Err(); err != nil {
				return err
			}
			return rdb.XGroupCreate(ctx, "events", "audit", "$").Err()
		}, check: func(ctx context.Context, t *testing.T, rdb *redis.Client) {
			p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "events", Group: "rating", Start: "-", End: "+", Count: 10}).Result()
			if err != nil {
				t.Fatal(err)
			}
			want := []redis.XPendingExt{
				{ID: "1000-2", Consumer: "worker-1", RetryCount: 1},
				{ID: "1000-3", Consumer: "worker-1", RetryCount: 1},
				{ID: "1000-4", Consumer: "worker-2", RetryCount: 2},
			}
			if diff := cmp.Diff(want, p, cmpopts.IgnoreFields(redis.XPendingExt{}, "Idle")); diff != "" {
				t.Errorf("pending entries after load (-want +got):\n%s", diff)
			}
			// The group goes on where it stopped: the next read gets the
			// one entry never delivered.
			res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "rating", Consumer: "worker-3", Streams: []string{"events", ">"}, Count: 10}).Result()
			if err != nil || len(res) != 1 || len(res[0].Messages) != 1 || res[0].Messages[0].ID != "1000-5" {
				t.Errorf("next read of the group = %v, %v; want entry 1000-5", res, err)
			}
		}},
		{name: "trimmed stream keeps its last id", fill: func(ctx context.Context, rdb *redis.Client) error {
			for _, id := range []string{"5-1", "9-1"} {
				if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "outbox", ID: id, Values: []string{"k", "v"}}).Err(); err != nil {
					return err
				}
			}
			if err := rdb.XGroupCreate(ctx, "outbox", "relay", "9-1").Err(); err != nil {
				return err
			}
			return rdb.XDel(ctx, "outbox", "9-1").Err()
		}, check: func(ctx context.Context, t *testing.T, rdb *redis.Client) {
			// miniredis checks explicit ids against the last entry only;
			// generated ones stay above the last generated id.
			if id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "outbox", ID: "9-*", Values: []string{"k", "v"}}).Result(); err != nil || id != "9-2" {
				t.Errorf("XADD 9-* after load = %q, %v; want 9-2, above the last generated id 9-1", id, err)
			}
		}},
		{name: "emptied stream with a group", fill: func(ctx context.Context, rdb *redis.Client) error {
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "gone", ID: "3-0", Values: []string{"k", "v"}}).Err(); err != nil {
				return err
			}
			if err := rdb.XGroupCreate(ctx, "gone", "g", "$").Err(); err != nil {
				return err
			}
			return rdb.XDel(ctx, "gone", "3-0").Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			old, oldRDB := startStore(t)
			if err := tc.fill(ctx, oldRDB); err != nil {
				t.Fatalf("fill: %v", err)
			}
			path := filepath.Join(t.TempDir(), "store.snapshot")
			n, err := Save(ctx, old.Addr(), path)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(old.Keys()); n != want {
				t.Errorf("saved %d keys, want %d", n, want)
			}
			fresh, freshRDB := startStore(t)
			loaded, _, err := Load(ctx, fresh, path)
			if err != nil {
				t.Fatal(err)
			}
			if loaded != n {
				t.Errorf("loaded %d keys, saved %d", loaded, n)
			}
			want, err := read(ctx, old.Addr())
			if err != nil {
				t.Fatal(err)
			}
			got, err := read(ctx, fresh.Addr())
			if err != nil {
				t.Fatal(err)
			}
			// Times are taken at each read: equal within the test's run.
			opts := cmp.Options{
				cmpopts.IgnoreFields(snapshot{}, "Taken"),
				cmpopts.EquateApproxTime(5 * time.Second),
				cmpopts.SortSlices(func(a, b snapKey) bool { return a.Name < b.Name }),
				cmpopts.SortSlices(func(a, b snapGroup) bool { return a.Name < b.Name }),
				cmpopts.SortSlices(func(a, b string) bool { return a < b }), // set and consumer order
			}
			if diff := cmp.Diff(want, got, opts); diff != "" {
				t.Errorf("store after Save and Load (-old +new):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(ctx, t, freshRDB)
			}
		})
	}
}

// A key whose expiry passed while the cluster was stopped is not loaded,
// as Redis does with an RDB file.
func TestSnapshotSkipsExpiredKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.snapshot")
	snap := &snapshot{Format: snapshotFormat, Version: SnapshotVersion, Keys: []snapKey{
		{Name: "gone", Type: "string", Values: []string{"x"}, ExpireAt: time.Now().Add(-time.Second)},
		{Name: "kept", Type: "string", Values: []string{"y"}, ExpireAt: time.Now().Add(time.Minute)},
		{Name: "forever", Type: "string", Values: []string{"z"}},
	}}
	if err := writeFile(path, snap); err != nil {
		t.Fatal(err)
	}
	m, rdb := startStore(t)
	n, _, err := Load(ctx, m, path)
	if err != nil {
		t.Fatal(err)
	}
	if keys := m.Keys(); n != 2 || !cmp.Equal(keys, []string{"forever", "kept"}) {
		t.Errorf("loaded %d keys %v, want forever and kept", n, keys)
	}
	if ttl := rdb.PTTL(ctx, "kept").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL of kept = %v", ttl)
	}
}

// A file that is not a loadable snapshot is ErrBadSnapshot, never an empty
// store; a missing one is os.ErrNotExist.
func TestLoadRefusesBadSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	m, rdb := startStore(t)
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(ctx, m.Addr(), good); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)-6] ^= 0xff // inside the gzip trailer's CRC
	other := filepath.Join(dir, "other")
	if err := writeFile(other, &snapshot{Format: snapshotFormat, Version: SnapshotVersion + 1}); err != nil {
		t.Fatal(err)
	}
	otherData, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"not gzip", []byte("hello")},
		{"truncated", data[:len(data)/2]},
		{"damaged", flipped},
		{"other version", otherData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "store.snapshot")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			fresh, _ := startStore(t)
			if _, _, err := Load(ctx, fresh, path); !errors.Is(err, ErrBadSnapshot) {
				t.Errorf("Load = %v, want ErrBadSnapshot", err)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		fresh, _ := startStore(t)
		if _, _, err := Load(ctx, fresh, filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Load = %v, want os.ErrNotExist", err)
		}
	})
}
