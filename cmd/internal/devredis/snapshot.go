package devredis

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Snapshots.
//
// miniredis keeps everything in memory and has no RDB or AOF, so the local
// cluster's data would be gone at every restart. Save writes every key of
// database 0 (the only one the services use) to a file and Load puts them
// back into an empty store:
//
//   - strings, hashes, lists, sets and sorted sets, with their values as
//     bytes (event payloads are protobuf, not text);
//   - streams: the entries, the last generated id (so that new ids stay
//     above the trimmed ones), every consumer group with its last delivered
//     id, its consumers and its pending entries (consumer, delivery count;
//     the idle time is kept as the time of the last delivery);
//   - key expiry as an absolute time, as Redis's RDB does: a key whose time
//     passed while the cluster was stopped is not loaded.
//
// Not kept, because the services use none of them: other databases than 0,
// HyperLogLogs (Save refuses them rather than dropping them), per-field hash
// TTLs, pub/sub subscriptions (connections re-subscribe) and loaded
// scripts (clients reload them on NOSCRIPT).
//
// Save reads the whole store in one Lua script, which miniredis runs under
// its lock: a snapshot is a consistent point in time even while the
// services write (a match's state and its outbox entry are never split).
//
// The file is a gzip stream (its CRC catches a truncated or damaged file)
// of a gob-encoded header and key list. Save writes a temporary file in the
// same directory, syncs it and renames it over the old one, so a crash
// leaves either the old snapshot or the new one, never half of one.

// SnapshotVersion is the version of the snapshot format Save writes; Load
// refuses any other.
const SnapshotVersion = 1

// snapshotFormat names the file format in its header, so that Load can tell
// a snapshot from some other gzip file.
const snapshotFormat = "fourkingdoms devredis snapshot"

// ErrBadSnapshot is returned (wrapped) by Load when the file exists but is
// not a snapshot it can load: damaged, truncated, of another format or of
// another version. The caller should not start with an empty store then,
// which would overwrite the user's data at the next save.
var ErrBadSnapshot = errors.New("unreadable snapshot")

// snapshot is the file's content after the gzip layer.
type snapshot struct {
	Format  string
	Version int
	// Taken is when the snapshot was taken.
	Taken time.Time
	Keys  []snapKey
}

// snapKey is one key. Exactly the field of its Type is set.
type snapKey struct {
	Name string
	// Type is Redis's TYPE: string, hash, list, set, zset or stream.
	Type string
	// ExpireAt is when the key expires; zero when it does not.
	ExpireAt time.Time
	// Values: a string's value (one), a hash's fields and values
	// alternately, a list's or a set's elements, a sorted set's members and
	// scores alternately (scores as Redis prints them, which parse back to
	// the same float64).
	Values []string
	Stream *snapStream
}

// snapStream is a stream's content.
type snapStream struct {
	Entries []snapEntry
	// LastID is the last id the stream generated, at or above its last
	// entry's.
	LastID string
	Groups []snapGroup
}

// snapEntry is one stream entry: its id and its fields and values.
type snapEntry struct {
	ID     string
	Values []string
}

// snapGroup is a consumer group.
type snapGroup struct {
	Name      string
	LastID    string
	Consumers []string
	Pending   []snapPending
}

// snapPending is a pending (delivered, unacknowledged) entry of a group.
type snapPending struct {
	ID       string
	Consumer string
	// Delivered is the time of the last delivery (the snapshot's time less
	// the idle time).
	Delivered  time.Time
	Deliveries int64
}

// dumpScript returns every key of the database with its type, its PTTL and
// its content, in one atomic step. A stream's content is {entries, last
// generated id, groups}; a group is {name, last delivered id, consumer
// names, XPENDING's extended reply}. Replies that miniredis writes as maps
// reach Lua as flat arrays of names and values; nil values become false.
var dumpScript = redis.NewScript(`
local function field(t, name)
  for i = 1, #t, 2 do
    if t[i] == name then return t[i+1] end
  end
  return false
end
local out = {}
for _, k in ipairs(redis.call('KEYS', '*')) do
  local t = redis.call('TYPE', k)['ok']
  local v
  if t == 'string' then
    v = {redis.call('GET', k)}
  elseif t == 'hash' then
    v = redis.call('HGETALL', k)
  elseif t == 'list' then
    v = redis.call('LRANGE', k, 0, -1)
  elseif t == 'set' then
    v = redis.call('SMEMBERS', k)
  elseif t == 'zset' then
    v = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
  elseif t == 'stream' then
    local groups = {}
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', k)) do
      local name = field(g, 'name')
      local consumers = {}
      for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', k, name)) do
        consumers[#consumers+1] = field(c, 'name')
      end
      local pending = redis.call('XPENDING', k, name, '-', '+', 1000000000)
      groups[#groups+1] = {name, field(g, 'last-delivered-id'), consumers, pending}
    end
    local info = redis.call('XINFO', 'STREAM', k)
    v = {redis.call('XRANGE', k, '-', '+'), field(info, 'last-generated-id'), groups}
  else
    v = {}
  end
  out[#out+1] = {k, t, redis.call('PTTL', k), v}
end
return out
`)

// Save writes a snapshot of the store at addr to path, atomically, and
// returns the number of keys saved.
func Save(ctx context.Context, addr, path string) (int, error) {
	snap, err := read(ctx, addr)
	if err != nil {
		return 0, fmt.Errorf("snapshot the embedded store: %w", err)
	}
	if err := writeFile(path, snap); err != nil {
		return 0, fmt.Errorf("snapshot the embedded store: %w", err)
	}
	return len(snap.Keys), nil
}

// read takes the snapshot.
func read(ctx context.Context, addr string) (*snapshot, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	now := time.Now()
	res, err := dumpScript.Eval(ctx, rdb, nil).Slice()
	if err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	snap := &snapshot{Format: snapshotFormat, Version: SnapshotVersion, Taken: now.UTC()}
	for _, r := range res {
		k, err := parseKey(r, now)
		if err != nil {
			return nil, err
		}
		snap.Keys = append(snap.Keys, k)
	}
	return snap, nil
}

// parseKey turns one {name, type, pttl, content} of dumpScript into a key.
func parseKey(r any, now time.Time) (snapKey, error) {
	f, _ := r.([]any)
	if len(f) != 4 {
		return snapKey{}, fmt.Errorf("dump: unexpected reply %v", r)
	}
	k := snapKey{Name: str(f[0]), Type: str(f[1])}
	if ttl, ok := f[2].(int64); ok && ttl > 0 {
		k.ExpireAt = now.Add(time.Duration(ttl) * time.Millisecond).UTC()
	}
	v, _ := f[3].([]any)
	switch k.Type {
	case "string", "hash", "list", "set", "zset":
		k.Values = strs(v)
	case "stream":
		s, err := parseStream(v, now)
		if err != nil {
			return snapKey{}, fmt.Errorf("dump stream %s: %w", k.Name, err)
		}
		k.Stream = s
	default:
		return snapKey{}, fmt.Errorf("dump %s: type %q cannot be saved", k.Name, k.Type)
	}
	return k, nil
}

func parseStream(v []any, now time.Time) (*snapStream, error) {
	if len(v) != 3 {
		return nil, fmt.Errorf("unexpected reply %v", v)
	}
	s := &snapStream{LastID: str(v[1])}
	entries, _ := v[0].([]any)
	for _, e := range entries {
		e, _ := e.([]any)
		if len(e) != 2 {
			return nil, fmt.Errorf("unexpected entry %v", e)
		}
		vals, _ := e[1].([]any)
		s.Entries = append(s.Entries, snapEntry{ID: str(e[0]), Values: strs(vals)})
	}
	groups, _ := v[2].([]any)
	for _, g := range groups {
		g, _ := g.([]any)
		if len(g) != 4 {
			return nil, fmt.Errorf("unexpected group %v", g)
		}
		consumers, _ := g[2].([]any)
		grp := snapGroup{Name: str(g[0]), LastID: str(g[1]), Consumers: strs(consumers)}
		pending, _ := g[3].([]any)
		for _, p := range pending {
			p, _ := p.([]any)
			if len(p) != 4 {
				return nil, fmt.Errorf("unexpected pending entry %v", p)
			}
			idle, _ := p[2].(int64)
			n, _ := p[3].(int64)
			grp.Pending = append(grp.Pending, snapPending{
				ID: str(p[0]), Consumer: str(p[1]), Delivered: now.Add(-time.Duration(idle) * time.Millisecond).UTC(), Deliveries: n,
			})
		}
		s.Groups = append(s.Groups, grp)
	}
	return s, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func strs(v []any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = str(x)
	}
	return out
}

// writeFile writes snap to path through a synced temporary file renamed
// over path.
func writeFile(path string, snap *snapshot) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriter(tmp)
	zw := gzip.NewWriter(bw)
	if err := gob.NewEncoder(zw).Encode(snap); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readFile reads a snapshot file. A file that is not a snapshot of this
// version is ErrBadSnapshot; a missing one is os.ErrNotExist.
func readFile(path string) (*snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrBadSnapshot, path, err)
	}
	var snap snapshot
	if err := gob.NewDecoder(zr).Decode(&snap); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrBadSnapshot, path, err)
	}
	// Read to the end: the gzip CRC and length are checked there.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrBadSnapshot, path, err)
	}
	if snap.Format != snapshotFormat {
		return nil, fmt.Errorf("%w %s: not a snapshot of the embedded store", ErrBadSnapshot, path)
	}
	if snap.Version != SnapshotVersion {
		return nil, fmt.Errorf("%w %s: format version %d, this launcher reads version %d", ErrBadSnapshot, path, snap.Version, SnapshotVersion)
	}
	return &snap, nil
}

// Load fills the empty store m from the snapshot at path and returns the
// number of keys loaded (keys that expired meanwhile are skipped) and when
// the snapshot was taken. A missing file is an error that matches
// os.ErrNotExist; a file it cannot load, ErrBadSnapshot.
func Load(ctx context.Context, m *miniredis.Miniredis, path string) (int, time.Time, error) {
	snap, err := readFile(path)
	if err != nil {
		return 0, time.Time{}, err
	}
	if n := len(m.Keys()); n > 0 {
		return 0, time.Time{}, fmt.Errorf("load %s: the store is not empty (%d keys)", path, n)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	now := time.Now()
	n := 0
	for _, k := range snap.Keys {
		if !k.ExpireAt.IsZero() && !k.ExpireAt.After(now) {
			continue
		}
		if err := restore(ctx, rdb, k, now); err != nil {
			return 0, time.Time{}, fmt.Errorf("load %s: key %s: %w", path, k.Name, err)
		}
		n++
	}
	return n, snap.Taken, nil
}

// restore writes one key; the store is otherwise idle (nobody knows its
// address yet), so one pipeline per key is enough.
func restore(ctx context.Context, rdb *redis.Client, k snapKey, now time.Time) error {
	p := rdb.Pipeline()
	args := func(cmd string, vals []string) []any {
		a := []any{cmd, k.Name}
		for _, v := range vals {
			a = append(a, v)
		}
		return a
	}
	switch k.Type {
	case "string":
		if len(k.Values) != 1 {
			return fmt.Errorf("%w: a string with %d values", ErrBadSnapshot, len(k.Values))
		}
		p.Set(ctx, k.Name, k.Values[0], 0)
	case "hash":
		p.Do(ctx, args("HSET", k.Values)...)
	case "list":
		p.Do(ctx, args("RPUSH", k.Values)...)
	case "set":
		p.Do(ctx, args("SADD", k.Values)...)
	case "zset":
		// ZRANGE WITHSCORES gives member, score; ZADD takes score, member.
		vals := make([]string, len(k.Values))
		for i := 0; i+1 < len(k.Values); i += 2 {
			vals[i], vals[i+1] = k.Values[i+1], k.Values[i]
		}
		p.Do(ctx, args("ZADD", vals)...)
	case "stream":
		if k.Stream == nil {
			return fmt.Errorf("%w: a stream without content", ErrBadSnapshot)
		}
		restoreStream(ctx, p, k.Name, k.Stream)
	default:
		return fmt.Errorf("%w: type %q", ErrBadSnapshot, k.Type)
	}
	if !k.ExpireAt.IsZero() {
		p.PExpire(ctx, k.Name, k.ExpireAt.Sub(now))
	}
	_, err := p.Exec(ctx)
	return err
}

// restoreStream queues the commands that rebuild a stream: its entries
// with their ids, its last generated id (an entry added and deleted at that
// id: miniredis has no XSETID), then each group at its last delivered id,
// its consumers, and its pending entries claimed back with XCLAIM FORCE
// with their consumer, delivery count and delivery time.
func restoreStream(ctx context.Context, p redis.Pipeliner, key string, s *snapStream) {
	for _, e := range s.Entries {
		a := []any{"XADD", key, e.ID}
		for _, v := range e.Values {
			a = append(a, v)
		}
		p.Do(ctx, a...)
	}
	last := ""
	if n := len(s.Entries); n > 0 {
		last = s.Entries[n-1].ID
	}
	if s.LastID != "" && s.LastID != "0-0" && s.LastID != last {
		p.Do(ctx, "XADD", key, s.LastID, "-", "-")
		p.Do(ctx, "XDEL", key, s.LastID)
	}
	for _, g := range s.Groups {
		p.Do(ctx, "XGROUP", "CREATE", key, g.Name, g.LastID, "MKSTREAM")
		for _, c := range g.Consumers {
			p.Do(ctx, "XGROUP", "CREATECONSUMER", key, g.Name, c)
		}
		for _, pe := range g.Pending {
			p.Do(ctx, "XCLAIM", key, g.Name, pe.Consumer, "0", pe.ID,
				"TIME", strconv.FormatInt(pe.Delivered.UnixMilli(), 10),
				"RETRYCOUNT", strconv.FormatInt(pe.Deliveries, 10), "FORCE", "JUSTID")
		}
	}
}
