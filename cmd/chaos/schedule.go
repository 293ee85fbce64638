package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// faultKind is a kind of fault the run injects.
type faultKind string

const (
	// kill SIGKILLs a service instance and starts it again.
	faultKill faultKind = "kill -9 + restart"
	// pause SIGSTOPs a service instance for longer than its lease or claim
	// timeout, then SIGCONTs it.
	faultPause faultKind = "SIGSTOP/SIGCONT"
	// redisKill SIGKILLs a Redis master (its replica is promoted) and
	// starts it again, when it rejoins as a replica.
	faultRedisKill faultKind = "redis master killed"
	// redisFailover promotes a master's replica with CLUSTER FAILOVER.
	faultRedisFailover faultKind = "redis CLUSTER FAILOVER"
	// netem adds latency and packet loss on the veth between the
	// namespaced instances and Redis (and their clients).
	faultNetem faultKind = "network delay+loss"
)

// allKinds lists every fault kind in report order.
var allKinds = []faultKind{faultKill, faultPause, faultRedisKill, faultRedisFailover, faultNetem}

// serviceNames are the services, each run as two instances.
var serviceNames = []string{"match", "matchmaking", "rating"}

// fault is one planned fault.
type fault struct {
	at       time.Duration // after the start of play
	kind     faultKind
	service  string // kill and pause: which service
	instance int    // kill and pause: which of its two instances
	master   int    // redis faults: which master, by index among the current masters
}

func (f fault) String() string {
	switch f.kind {
	case faultKill, faultPause:
		return fmt.Sprintf("%v %s %s-%d", f.at.Round(time.Second), f.kind, f.service, f.instance)
	case faultRedisKill, faultRedisFailover:
		return fmt.Sprintf("%v %s (master #%d)", f.at.Round(time.Second), f.kind, f.master)
	}
	return fmt.Sprintf("%v %s", f.at.Round(time.Second), f.kind)
}

// plan lays out the faults of a run from its seed: one every `every`
// (±25 %) from `start` until `end`, cycling through kinds in an order
// shuffled per cycle, so each kind comes up as often as the others and the
// same seed always gives the same plan.
func plan(seed int, kinds []faultKind, start, end, every time.Duration) []fault {
	if len(kinds) == 0 || every <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6368616f73))
	var out []fault
	var cycle []faultKind
	for at := start; at < end; {
		if len(cycle) == 0 {
			cycle = append([]faultKind(nil), kinds...)
			rng.Shuffle(len(cycle), func(i, j int) { cycle[i], cycle[j] = cycle[j], cycle[i] })
		}
		f := fault{at: at, kind: cycle[0]}
		cycle = cycle[1:]
		f.service = serviceNames[rng.IntN(len(serviceNames))]
		f.instance = rng.IntN(2)
		f.master = rng.IntN(3)
		out = append(out, f)
		at += every*3/4 + time.Duration(rng.Int64N(int64(every/2)+1))
	}
	return out
}
