package rematch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn"
	"github.com/fourkingdoms/fourkingdoms/pkg/redisconn/scripttest"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
)

// TestMain stops the Redis servers the tests started and checks for leaked
// goroutines.
func TestMain(m *testing.M) { redistest.Main(m) }

func TestScriptSources(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		l    redisconn.Layout
		body string
	}{{changeLayout, offerLua}, {changeLayout, declineLua}, {startedLayout, startedLua}} {
		if err := scripttest.CheckSource(c.l, c.body); err != nil {
			t.Errorf("%s: %v", c.l.Name, err)
		}
	}
	k, a := changeArgs("k", "p", []byte("[]"), 1, 2, 3)
	if err := scripttest.CheckCall(changeLayout, k, a); err != nil {
		t.Error(err)
	}
	k, a = startedArgs("k", "m")
	if err := scripttest.CheckCall(startedLayout, k, a); err != nil {
		t.Error(err)
	}
}

var humans = []string{"a", "b", "c"}

// TestOfferLifeCycle walks offers through every transition, on standalone
// Redis and a cluster.
func TestOfferLifeCycle(t *testing.T) {
	t.Parallel()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := kind.Client(t)
			s := New(rdb, prefix, time.Minute)
			ctx := t.Context()
			now := time.Now()
			if _, err := s.Get(ctx, "m1", now); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get before any offer = %v, want ErrNotFound", err)
			}
			type step struct {
				name    string
				do      func() (Offer, error)
				state   State
				version uint64
				accept  []string
			}
			for _, st := range []step{
				{"first offer", func() (Offer, error) { return s.Offer(ctx, "m1", "b", humans, now) }, Offered, 1, []string{"b"}},
				{"same offer again", func() (Offer, error) { return s.Offer(ctx, "m1", "b", humans, now) }, Offered, 1, []string{"b"}},
				{"second accept", func() (Offer, error) { return s.Offer(ctx, "m1", "a", humans, now) }, Offered, 2, []string{"a", "b"}},
				{"started too early", func() (Offer, error) { return s.Started(ctx, "m1", "new") }, Offered, 2, []string{"a", "b"}},
				{"last accept", func() (Offer, error) { return s.Offer(ctx, "m1", "c", humans, now) }, Accepted, 3, humans},
				{"decline too late", func() (Offer, error) { return s.Decline(ctx, "m1", "a", humans, now) }, Accepted, 3, humans},
				{"late offer past the window", func() (Offer, error) { return s.Offer(ctx, "m1", "a", humans, now.Add(time.Hour)) }, Accepted, 3, humans},
				{"started", func() (Offer, error) { return s.Started(ctx, "m1", "new") }, Started, 4, humans},
				{"started again", func() (Offer, error) { return s.Started(ctx, "m1", "other") }, Started, 4, humans},
				{"declined first", func() (Offer, error) { return s.Decline(ctx, "m2", "c", humans, now) }, Declined, 1, nil},
				{"offer after the decline", func() (Offer, error) { return s.Offer(ctx, "m2", "a", humans, now) }, Declined, 1, nil},
				{"offer", func() (Offer, error) { return s.Offer(ctx, "m3", "a", humans, now) }, Offered, 1, []string{"a"}},
				{"read in the window", func() (Offer, error) { return s.Get(ctx, "m3", now.Add(59*time.Second)) }, Offered, 1, []string{"a"}},
				{"read past the window", func() (Offer, error) { return s.Get(ctx, "m3", now.Add(time.Minute)) }, Expired, 1, []string{"a"}},
				{"accept past the window", func() (Offer, error) { return s.Offer(ctx, "m3", "b", humans, now.Add(time.Minute)) }, Expired, 2, []string{"a"}},
				{"decline past the window", func() (Offer, error) { return s.Decline(ctx, "m3", "b", humans, now.Add(time.Minute)) }, Expired, 2, []string{"a"}},
			} {
				o, err := st.do()
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if o.State != st.state || o.Version != st.version || !slices.Equal(o.AcceptedBy, st.accept) || !slices.Equal(o.Humans, humans) {
					t.Fatalf("%s: %+v, want state %v version %d accepted %v", st.name, o, st.state, st.version, st.accept)
				}
			}
			o, err := s.Get(ctx, "m1", now)
			if err != nil || o.NewMatchID != "new" || !o.ExpiresAt.Equal(time.UnixMilli(now.Add(time.Minute).UnixMilli())) {
				t.Errorf("started offer = %+v, %v", o, err)
			}
			if o, _ := s.Get(ctx, "m2", now); o.DeclinedBy != "c" {
				t.Errorf("declined by %q, want c", o.DeclinedBy)
			}
			ttl, err := rdb.PTTL(ctx, s.key("m1")).Result()
			if err != nil || ttl <= Retention || ttl > time.Minute+Retention {
				t.Errorf("offer TTL %v, %v; want the window plus %v", ttl, err, Retention)
			}
		})
	}
}

// TestConcurrentAccepts: every human accepting at once, many times, moves
// the offer to A exactly once and loses no acceptance.
func TestConcurrentAccepts(t *testing.T) {
	t.Parallel()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := kind.Client(t)
			s := New(rdb, prefix, time.Minute)
			four := []string{"a", "b", "c", "d"}
			var wg sync.WaitGroup
			var mu sync.Mutex
			seen := map[uint64]State{}
			for i := range 16 {
				wg.Go(func() {
					o, err := s.Offer(context.Background(), "m", four[i%4], four, time.Now())
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen[o.Version] = o.State
					mu.Unlock()
				})
			}
			wg.Wait()
			o, err := s.Get(t.Context(), "m", time.Now())
			// Four accepts, the last of which also made A: version 4.
			if err != nil || o.State != Accepted || o.Version != 4 || !slices.Equal(o.AcceptedBy, four) {
				t.Fatalf("after concurrent accepts: %+v, %v", o, err)
			}
			for v, st := range seen {
				if (st == Accepted) != (v == 4) {
					t.Errorf("version %d answered as %v", v, st)
				}
			}
		})
	}
}
