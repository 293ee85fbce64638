package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
)

// Partitions is the number of partitions match ids are spread over. It is a
// deployment constant: every match id carries its partition in its first two
// hex digits, so changing it would orphan existing matches.
const Partitions = 256

// idRandomLen is the number of random hex digits after the partition prefix
// (80 bits: collisions are not a practical concern, and Create refuses to
// overwrite an existing match anyway).
const idRandomLen = 20

// ErrBadID reports a match id that is not of the form this store issues.
var ErrBadID = errors.New("malformed match id")

// NewID returns a fresh match id in the given partition.
func NewID(partition int) string {
	var b [idRandomLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return fmt.Sprintf("%02x%s", partition%Partitions, hex.EncodeToString(b[:]))
}

// PartitionOf returns the partition a match id belongs to, or ErrBadID.
func PartitionOf(id string) (int, error) {
	if len(id) != 2+idRandomLen {
		return 0, ErrBadID
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return 0, ErrBadID
		}
	}
	p, err := strconv.ParseUint(id[:2], 16, 8)
	if err != nil {
		return 0, ErrBadID
	}
	return int(p), nil
}

// PartitionForRequest maps a create request id to a partition, so that the
// idempotency key and the match it names share one hash slot.
func PartitionForRequest(requestID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(requestID))
	return int(h.Sum32() % Partitions)
}

// keys builds the Redis key names. Every key of a match, and the per-partition
// deadline set and outbox, carry the partition hash tag "{fk:pNN}", so one Lua
// script can touch all of them on a Redis Cluster node.
type keys struct {
	prefix string
	// tags holds every partition's tag, built once: key names are built on
	// every commit.
	tags *[Partitions]string
}

func newKeys(prefix string) keys {
	k := keys{prefix: prefix, tags: new([Partitions]string)}
	for p := range Partitions {
		k.tags[p] = fmt.Sprintf("%s{fk:p%02x}", prefix, p)
	}
	return k
}

func (k keys) tag(p int) string { return k.tags[p%Partitions] }

func (k keys) match(p int, id string) string  { return k.tag(p) + ":m:" + id }
func (k keys) events(p int, id string) string { return k.tag(p) + ":m:" + id + ":ev" }
func (k keys) moves(p int, id string) string  { return k.tag(p) + ":m:" + id + ":mv" }
func (k keys) channel(p int, id string) string {
	return k.tag(p) + ":m:" + id + ":ch"
}
func (k keys) request(p int, requestID string) string { return k.tag(p) + ":req:" + requestID }
func (k keys) deadlines(p int) string                 { return k.tag(p) + ":deadlines" }
func (k keys) outbox(p int) string                    { return k.tag(p) + ":outbox" }
func (k keys) barrier(p int) string                   { return k.tag(p) + ":barrier" }
func (k keys) presence(p int, id string) string       { return k.tag(p) + ":m:" + id + ":pr" }
func (k keys) presenceDue(p int) string               { return k.tag(p) + ":presence" }
func (k keys) roundTrips(p int, id string) string     { return k.tag(p) + ":m:" + id + ":rt" }

// The keeper's keys share the hash tag "{fk:keeper}", so that one script
// reads the membership and every range lease on a Redis Cluster node.
func (k keys) keeperTag() string     { return k.prefix + "{fk:keeper}" }
func (k keys) keeperMembers() string { return k.keeperTag() + ":members" }
func (k keys) keeperFence() string   { return k.keeperTag() + ":fence" }
func (k keys) keeperServed() string  { return k.keeperTag() + ":served" }
func (k keys) keeperDown() string    { return k.keeperTag() + ":down" }
func (k keys) pingKey() string       { return k.keeperTag() + ":ping-key" }
func (k keys) rangeLease(r int) string {
	return k.keeperTag() + ":range:" + strconv.Itoa(r)
}
