package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Outages (docs/match.md "Outages"). While an instance holds a keeper
// range it notes, on every scan, when it last served it: a field per range
// in {fk:keeper}:served (unix ms, the instance's clock). A range released
// on purpose (a stop, a rebalance) is forgotten there; one whose holder
// died or lost Redis keeps its last note, so the instance that takes the
// range next learns how long nobody served it.

// The fields of {fk:keeper}:served besides the ranges': when an instance
// last heartbeated, and the last outage of every instance.
const (
	servedAlive  = "alive"
	servedOutage = "outage"
)

// Alive notes that an instance works now. If no instance did for longer
// than stale before, it records that time as the last outage: every
// instance dead or cut off from Redis, so no move could be made.
func (s *Store) Alive(ctx context.Context, now time.Time, stale time.Duration) error {
	key := s.keys.keeperServed()
	last, err := s.rdb.HGet(ctx, key, servedAlive).Int64()
	if err == nil && now.UnixMilli()-last > stale.Milliseconds() {
		err = s.rdb.HSet(ctx, key, servedOutage, strconv.FormatInt(last, 10)+":"+strconv.FormatInt(now.UnixMilli(), 10)).Err()
	} else if errors.Is(err, redis.Nil) {
		err = nil
	}
	if err == nil {
		err = s.rdb.HSet(ctx, key, servedAlive, now.UnixMilli()).Err()
	}
	if err != nil {
		return fmt.Errorf("note keeper alive: %w", err)
	}
	return nil
}

// LastOutage returns the last outage of every instance that Alive
// recorded (zero times when none).
func (s *Store) LastOutage(ctx context.Context) (from, to time.Time, err error) {
	v, err := s.rdb.HGet(ctx, s.keys.keeperServed(), servedOutage).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("read last outage: %w", err)
	}
	a, b, _ := strings.Cut(v, ":")
	f, err1 := strconv.ParseInt(a, 10, 64)
	t, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("bad last outage %q", v)
	}
	return time.UnixMilli(f), time.UnixMilli(t), nil
}

// MarkServed notes now as the last moment the given ranges were served.
func (s *Store) MarkServed(ctx context.Context, ranges []int, now time.Time) error {
	if len(ranges) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(ranges))
	for _, r := range ranges {
		args = append(args, strconv.Itoa(r), now.UnixMilli())
	}
	if err := s.rdb.HSet(ctx, s.keys.keeperServed(), args...).Err(); err != nil {
		return fmt.Errorf("mark ranges served: %w", err)
	}
	return nil
}

// LastServed returns when each of the given ranges was last served by a
// holder that did not release it (ranges with no note are missing).
func (s *Store) LastServed(ctx context.Context, ranges []int) (map[int]time.Time, error) {
	if len(ranges) == 0 {
		return nil, nil
	}
	fields := make([]string, len(ranges))
	for i, r := range ranges {
		fields[i] = strconv.Itoa(r)
	}
	vals, err := s.rdb.HMGet(ctx, s.keys.keeperServed(), fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("read ranges served: %w", err)
	}
	out := map[int]time.Time{}
	for i, v := range vals {
		if str, ok := v.(string); ok {
			if ms, err := strconv.ParseInt(str, 10, 64); err == nil {
				out[ranges[i]] = time.UnixMilli(ms)
			}
		}
	}
	return out, nil
}

// ForgetServed drops the notes of ranges released on purpose.
func (s *Store) ForgetServed(ctx context.Context, ranges []int) error {
	if len(ranges) == 0 {
		return nil
	}
	fields := make([]string, len(ranges))
	for i, r := range ranges {
		fields[i] = strconv.Itoa(r)
	}
	if err := s.rdb.HDel(ctx, s.keys.keeperServed(), fields...).Err(); err != nil {
		return fmt.Errorf("forget ranges served: %w", err)
	}
	return nil
}

// Running lists the matches of a partition whose clock runs (the members
// of its deadline set), at most limit.
func (s *Store) Running(ctx context.Context, partition int, limit int64) ([]string, error) {
	ids, err := s.rdb.ZRange(ctx, s.keys.deadlines(partition), 0, limit-1).Result()
	if err != nil {
		return nil, fmt.Errorf("running matches of partition %d: %w", partition, err)
	}
	return ids, nil
}

// A partition's outage outlives the keeper that saw it begin (docs/match.md
// "Outages"): the keeper whose scans find a partition unreachable notes it
// in {fk:keeper}:down, a field per partition, and the keeper that credits
// the outage drops the note once every credit is committed. The note lives
// in the keeper's slot, not the partition's: it must be written while the
// partition's master is down.

// OutageNote is the noted outage of one partition: From is when the
// partition was last read before it, Last the last failure seen, To when
// it was seen served again (zero while not). The times are whole
// milliseconds, as stored.
type OutageNote struct {
	From, Last, To time.Time
}

// Equal reports whether n and o are the same note.
func (n OutageNote) Equal(o OutageNote) bool {
	return n.From.Equal(o.From) && n.Last.Equal(o.Last) && n.To.Equal(o.To)
}

// String is the note as stored: "<from>:<last>:<to>", unix ms (to 0
// while the outage goes on).
func (n OutageNote) String() string {
	to := int64(0)
	if !n.To.IsZero() {
		to = n.To.UnixMilli()
	}
	return fmt.Sprintf("%d:%d:%d", n.From.UnixMilli(), n.Last.UnixMilli(), to)
}

// NewOutageNote returns the note of an outage, its times cut to whole
// milliseconds as stored.
func NewOutageNote(from, last, to time.Time) OutageNote {
	ms := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return time.UnixMilli(t.UnixMilli())
	}
	return OutageNote{From: ms(from), Last: ms(last), To: ms(to)}
}

func parseOutageNote(v string) (OutageNote, error) {
	parts := strings.Split(v, ":")
	var ms [3]int64
	if len(parts) != len(ms) {
		return OutageNote{}, fmt.Errorf("bad outage note %q", v)
	}
	for i, s := range parts {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return OutageNote{}, fmt.Errorf("bad outage note %q", v)
		}
		ms[i] = n
	}
	n := OutageNote{From: time.UnixMilli(ms[0]), Last: time.UnixMilli(ms[1])}
	if ms[2] != 0 {
		n.To = time.UnixMilli(ms[2])
	}
	return n, nil
}

// NoteOutages writes the notes of the given partitions.
func (s *Store) NoteOutages(ctx context.Context, notes map[int]OutageNote) error {
	if len(notes) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(notes))
	for p, n := range notes {
		args = append(args, strconv.Itoa(p), n.String())
	}
	if err := s.rdb.HSet(ctx, s.keys.keeperDown(), args...).Err(); err != nil {
		return fmt.Errorf("note partition outages: %w", err)
	}
	return nil
}

// OutageNotes returns every partition's outage note. A note that does not
// parse is left out (and dropped by no one: it cannot be told from one a
// newer version wrote).
func (s *Store) OutageNotes(ctx context.Context) (map[int]OutageNote, error) {
	vals, err := s.rdb.HGetAll(ctx, s.keys.keeperDown()).Result()
	if err != nil {
		return nil, fmt.Errorf("read partition outage notes: %w", err)
	}
	out := make(map[int]OutageNote, len(vals))
	for f, v := range vals {
		p, err := strconv.Atoi(f)
		if err != nil || p < 0 || p >= Partitions {
			continue
		}
		if n, err := parseOutageNote(v); err == nil {
			out[p] = n
		}
	}
	return out, nil
}

// DropOutageNote deletes the note of partition p if it is still n: a new
// outage noted meanwhile stays.
func (s *Store) DropOutageNote(ctx context.Context, p int, n OutageNote) error {
	key, field := s.keys.keeperDown(), strconv.Itoa(p)
	err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.HGet(ctx, key, field).Result()
		if errors.Is(err, redis.Nil) || err == nil && v != n.String() {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.HDel(ctx, key, field)
			return nil
		})
		return err
	}, key)
	if errors.Is(err, redis.TxFailedErr) {
		return nil // changed meanwhile: a newer note, which stays
	}
	if err != nil {
		return fmt.Errorf("drop outage note of partition %d: %w", p, err)
	}
	return nil
}
