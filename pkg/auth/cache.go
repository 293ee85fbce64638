package auth

import (
	"sync"
	"time"
)

// verifiedCap bounds the verified-token cache. A token is a few hundred bytes, so the cache stays
// within a few tens of MiB even when full.
const verifiedCap = 1 << 16

// verified remembers tokens whose signature and claims have been checked. An Ed25519 verification
// costs tens of microseconds, a third of a match service's CPU per move when every call paid it, while
// a player sends the same token on every call of a session. A key set never changes after it is built,
// so a token that verified once stays valid until its expiry, which is checked again on every hit.
type verified struct {
	mu  sync.Mutex
	ids map[string]Identity
}

func (v *verified) get(token string) (Identity, bool) {
	v.mu.Lock()
	id, ok := v.ids[token]
	v.mu.Unlock()
	return id, ok
}

func (v *verified) put(token string, id Identity, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ids == nil {
		v.ids = make(map[string]Identity)
	}
	if len(v.ids) >= verifiedCap {
		for tok, old := range v.ids {
			if expired(old, now) {
				delete(v.ids, tok)
			}
		}
		if len(v.ids) >= verifiedCap {
			// Still full of live tokens: start over rather than track recency on the hot path; the next
			// call of each session verifies once more.
			clear(v.ids)
		}
	}
	v.ids[token] = id
}

// expired reports whether id's token is past its expiry with the clock skew allowed by Verify.
func expired(id Identity, now time.Time) bool {
	return !id.ExpiresAt.IsZero() && !now.Before(id.ExpiresAt.Add(ClockSkew))
}
