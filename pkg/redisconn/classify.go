package redisconn

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Kind is what an error of a Redis call means for whoever decides to retry
// it or to report it.
type Kind int

// The kinds of errors, from [Classify].
const (
	// KindNone: no error.
	KindNone Kind = iota
	// KindTransient: Redis could not be reached, or refused the work for
	// now (failover, cluster reconfiguration, loading, busy, out of
	// connections or memory); the same call may succeed later. Services
	// answer UNAVAILABLE; workers retry after a pause.
	KindTransient
	// KindCanceled: the caller's context ended (context.Canceled or
	// context.DeadlineExceeded). It is not Redis's fault and no retry
	// should follow: services answer CANCELED / DEADLINE_EXCEEDED.
	KindCanceled
	// KindBug: anything else, including errors that do not come from
	// Redis at all: a script's own error reply or runtime error,
	// WRONGTYPE, NOSCRIPT after the fallback, syntax, CROSSSLOT, NOAUTH,
	// NOPERM, an unhandled redis.Nil. Retrying repeats the failure:
	// services answer INTERNAL and log it.
	KindBug
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindTransient:
		return "transient"
	case KindCanceled:
		return "canceled"
	case KindBug:
		return "bug"
	}
	return "unknown"
}

// transientPrefixes are the error codes with which Redis refuses a command
// for a while; nothing of the command ran. The code is the reply's first
// word, which also holds for a script whose redis.call met the error (Redis
// passes the code through and appends " script: ..."). A script could
// forge such a code with redis.error_reply; this project's scripts never
// do, and their own errors start with ERR or a code of their own.
//
//	READONLY     a write reached a replica (a failover demoted the master)
//	MOVED, ASK   a slot moved; the cluster client follows these itself, so
//	             one that surfaces means the slot map is being reloaded
//	TRYAGAIN     a multi-key command during slot migration
//	CLUSTERDOWN  the cluster lost a slot's master (failover in progress)
//	LOADING      the server is loading its data set after a restart
//	MASTERDOWN   a replica lost its master (replica-serve-stale-data no)
//	BUSY         a script or module command runs long; it ends or is killed
//	NOREPLICAS   too few replicas (min-replicas-to-write)
//	OOM          maxmemory reached: writes wait for memory to be freed
var transientPrefixes = []string{
	"READONLY", "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "LOADING",
	"MASTERDOWN", "BUSY", "NOREPLICAS", "OOM",
	"ERR max number of clients reached",
}

// Classify says what err, returned by a go-redis call (possibly wrapped),
// means; see [Kind].
//
// Connection failures of every kind are transient: refused, reset, EOF, a
// closed connection, dial and I/O timeouts, a pool timeout, and
// redis.ErrClosed (the client was closed: the process is shutting down and
// another instance answers a retry). A context error is KindCanceled, even
// if the socket deadline that fired came from the caller's context: the
// caller is gone, whatever Redis did. The one exception is a dial that
// timed out, which go-redis reports wrapped in context.DeadlineExceeded
// although the caller's context is alive: it is transient. Callers that
// answer a request still check ctx.Err() first ([Status] does).
func Classify(err error) Kind {
	if err == nil {
		return KindNone
	}
	// A failed dial first: go-redis may wrap it in a DeadlineExceeded of
	// its own dial timeout.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return KindTransient
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return KindCanceled
	}
	var re redis.Error
	if errors.As(err, &re) {
		if errors.Is(err, redis.Nil) {
			return KindBug // an absent value nobody handled
		}
		msg := re.Error()
		for _, p := range transientPrefixes {
			if strings.HasPrefix(msg, p) && (len(msg) == len(p) || msg[len(p)] == ' ') {
				return KindTransient
			}
		}
		return KindBug
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne), // timeouts included
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted):
		return KindTransient
	}
	return KindBug
}

// Transient reports whether err is [KindTransient]: retrying the same call
// later may succeed.
func Transient(err error) bool { return Classify(err) == KindTransient }
