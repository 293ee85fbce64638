package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeeperRanges is the number of partition ranges the keeper's work (clock
// deadlines and the outbox relay) is split into. Each range is leased to
// one instance at a time; 16 ranges of 16 partitions spread the work
// evenly over up to 16 instances, and an instance renews all of its
// leases with one script per scan.
const KeeperRanges = 16

// RangePartitions returns the partitions of keeper range r, in order: range
// r is partitions r*16 to r*16+15.
func RangePartitions(r int) []int {
	per := Partitions / KeeperRanges
	ps := make([]int, per)
	for i := range ps {
		ps[i] = r*per + i
	}
	return ps
}

// LeaseOwner returns the owner named in a range lease value
// ("<fencing token>:<owner>"), or "" for a free range.
func LeaseOwner(value string) string {
	_, owner, _ := strings.Cut(value, ":")
	return owner
}

// Membership is the keeper's view of the instances and the range leases,
// as one heartbeat read it.
type Membership struct {
	// Members are the instances whose announcement has not expired, the
	// caller included, sorted by name.
	Members []string
	// Leases holds each range's lease value, "<fencing token>:<owner>",
	// or "" when the range is free.
	Leases [KeeperRanges]string
}

// Heartbeat announces owner as a keeper instance for ttl and renews, for
// ttl, every range lease whose value is exactly held[r] (owner and fencing
// token); it returns the membership and every lease after the renewals. A
// held lease whose value differs in the answer was lost (it lapsed, and
// maybe another instance took it).
//
// Expiry is judged by the Redis server's clock, in one script: an instance
// that stops announcing itself leaves the membership when its last
// renewed leases lapse.
func (s *Store) Heartbeat(ctx context.Context, owner string, held *[KeeperRanges]string, ttl time.Duration) (Membership, error) {
	leases := make([]string, KeeperRanges)
	for r := range leases {
		leases[r] = s.keys.rangeLease(r)
	}
	ks, args := heartbeatArgs(s.keys.keeperMembers(), leases, owner, ttl.Milliseconds(), held[:])
	res, err := heartbeatScript.Run(ctx, s.rdb, ks, args...).Slice()
	if err != nil {
		return Membership{}, fmt.Errorf("keeper heartbeat: %w", err)
	}
	if len(res) != 2 {
		return Membership{}, fmt.Errorf("keeper heartbeat: unexpected reply %v", res)
	}
	members, _ := res[0].([]any)
	values, _ := res[1].([]any)
	if len(values) != KeeperRanges {
		return Membership{}, fmt.Errorf("keeper heartbeat: %d lease values, want %d", len(values), KeeperRanges)
	}
	var m Membership
	for _, v := range members {
		name, _ := v.(string)
		m.Members = append(m.Members, name)
	}
	slices.Sort(m.Members)
	for r, v := range values {
		m.Leases[r], _ = v.(string)
	}
	return m, nil
}

// AcquireRanges takes, for owner and ttl, up to want of the candidate
// ranges that are free, in the order given; it returns the value of each
// lease taken, by range. Each taken lease carries a fencing token never
// used before.
func (s *Store) AcquireRanges(ctx context.Context, owner string, candidates []int, want int, ttl time.Duration) (map[int]string, error) {
	if want <= 0 || len(candidates) == 0 {
		return nil, nil
	}
	keys := make([]string, len(candidates))
	for i, r := range candidates {
		keys[i] = s.keys.rangeLease(r)
	}
	ks, args := acquireArgs(s.keys.keeperFence(), keys, owner, ttl.Milliseconds(), want)
	res, err := acquireScript.Run(ctx, s.rdb, ks, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("acquire keeper ranges: %w", err)
	}
	if len(res) != len(candidates) {
		return nil, fmt.Errorf("acquire keeper ranges: %d replies for %d candidates", len(res), len(candidates))
	}
	got := map[int]string{}
	for i, v := range res {
		if v != "" {
			got[candidates[i]] = v
		}
	}
	return got, nil
}

// ReleaseRanges deletes the given range leases (range -> the value owner
// holds) where they still hold that value, and with leave also removes
// owner from the membership, so that the others take the ranges over at
// their next heartbeat. It returns how many leases it deleted.
func (s *Store) ReleaseRanges(ctx context.Context, owner string, held map[int]string, leave bool) (int, error) {
	ranges := make([]int, 0, len(held))
	for r := range held {
		ranges = append(ranges, r)
	}
	slices.Sort(ranges)
	keys := make([]string, len(ranges))
	values := make([]string, len(ranges))
	for i, r := range ranges {
		keys[i], values[i] = s.keys.rangeLease(r), held[r]
	}
	ks, args := releaseArgs(s.keys.keeperMembers(), keys, owner, leave, values)
	n, err := releaseScript.Run(ctx, s.rdb, ks, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("release keeper ranges: %w", err)
	}
	return n, nil
}

// KeeperMembers returns the keeper instances whose announcement has not
// expired by now (this process's clock; the announcements carry the Redis
// server's), sorted by name. It announces nothing: a keeper that stepped
// down (match.Keeper, "degraded instances") reads it to learn whether any
// other instance still works the ranges.
func (s *Store) KeeperMembers(ctx context.Context, now time.Time) ([]string, error) {
	members, err := s.rdb.ZRangeByScore(ctx, s.keys.keeperMembers(), &redis.ZRangeBy{
		Min: "(" + strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("keeper members: %w", err)
	}
	slices.Sort(members)
	return members, nil
}
