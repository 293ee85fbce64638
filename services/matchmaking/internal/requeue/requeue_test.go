package requeue_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/backoff"
	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/requeue"
	"github.com/fourkingdoms/fourkingdoms/services/matchmaking/internal/store"
)

func TestMain(m *testing.M) { redistest.Main(m) }

const queue = "fourkingdoms/5+5"

var settings = store.Settings{TicketTTL: 10 * time.Minute, Retention: 10 * time.Minute, FormationTimeout: 30 * time.Second,
	PointerGrace: 5 * time.Second, WaitSamples: 100}

// TestConsumer: the consumer requeues the three players of an abandoned
// match who moved (or would have), acknowledges a malformed entry and a
// table's (unknown) match without doing anything, a redelivered event
// requeues nobody twice, and a player who enqueued after the event's
// occurred_at (and cancelled) is not requeued. Standalone and cluster
// Redis.
func TestConsumer(t *testing.T) {
	t.Parallel()
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := kind.Client(t)
			ctx := t.Context()
			st := store.New(rdb, prefix, []string{queue}, settings)
			// The players queued a minute before the abort.
			start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
			es, seats := formMatch(t, st, "p", "m1", start)

			cfg := requeue.DefaultConfig(prefix+eventstream.MatchAbandoned().Key(), "test")
			cfg.Block, cfg.ClaimInterval = 50*time.Millisecond, 50*time.Millisecond
			cfg.Retry = backoff.Policy{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}
			metrics := sdkmetric.NewManualReader()
			meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(metrics)).Meter("test")
			c, err := requeue.New(rdb, st, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), meter, nil)
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { _ = c.Run(runCtx) })
			defer func() { stop(); wg.Wait() }()

			ab := eventstream.MatchAbandoned()
			event := func(match string, seats []*gamev1.SeatPlayer) []any {
				fields, err := ab.Encode(&eventsv1.MatchAbandoned{MatchId: match, Players: seats, MissedSeat: gamev1.Seat(2),
					OccurredAt: timestamppb.Now()})
				if err != nil {
					t.Fatal(err)
				}
				return fields
			}
			for _, values := range [][]any{event("m1", seats), {"type", "nonsense", "data", "x"}, event("table-match", seats)} {
				if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: cfg.Stream, Values: values}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			waitHandled(t, rdb, cfg, 3)
			tickets := requeued(t, st, es)
			if got, delays := outcomes(t, metrics); got != "adopted=0 done=0 kept=0 moved_on=0 requeued=3" || delays != 3 {
				t.Errorf("players by outcome %s, %d delays recorded; want 3 requeued, 3 delays", got, delays)
			}
			// The same event again, as a relay that lost its mark publishes it.
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: cfg.Stream, Values: event("m1", seats)}).Err(); err != nil {
				t.Fatal(err)
			}
			waitHandled(t, rdb, cfg, 4)
			if again := requeued(t, st, es); again != tickets {
				t.Errorf("after a redelivery the tickets are %v, want still %v", again, tickets)
			}
			if got, delays := outcomes(t, metrics); got != "adopted=0 done=3 kept=0 moved_on=0 requeued=3" || delays != 3 {
				t.Errorf("after a redelivery, players by outcome %s, %d delays recorded; want 3 requeued and 3 done, 3 delays", got, delays)
			}
			if w, err := st.Waiting(ctx, queue); err != nil || len(w) != 3 {
				t.Errorf("Waiting = %+v, %v; want the three requeued", w, err)
			}

			// Another match aborts; q0's client enqueues after the event's
			// occurred_at and cancels before the consumer reads it: q0 is
			// not requeued (moved on), the other two are.
			_, seats2 := formMatch(t, st, "q", "m2", start)
			abort := event("m2", seats2)
			q0 := store.Player{ID: "q0", DisplayName: "P"}
			tk, _, err := st.Enqueue(ctx, queue, q0, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Cancel(ctx, tk.ID, q0.ID); err != nil {
				t.Fatal(err)
			}
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: cfg.Stream, Values: abort}).Err(); err != nil {
				t.Fatal(err)
			}
			waitHandled(t, rdb, cfg, 5)
			if got, delays := outcomes(t, metrics); got != "adopted=0 done=3 kept=0 moved_on=1 requeued=5" || delays != 5 {
				t.Errorf("after a player moved on, players by outcome %s, %d delays recorded; want 5 requeued, 3 done, 1 moved on, 5 delays", got, delays)
			}
			if again, existing, err := st.Enqueue(ctx, queue, q0, time.Now()); err != nil || existing {
				t.Errorf("Enqueue of the player who moved on = %+v, %v, %v; want a new ticket", again, existing, err)
			}
		})
	}
}

// formMatch enqueues four players named prefix0..3 a second apart from
// start and forms match from them, seats 1-4 in order (the third a bot).
func formMatch(t *testing.T, st *store.Store, prefix, match string, start time.Time) ([4]store.Entry, []*gamev1.SeatPlayer) {
	t.Helper()
	ctx := t.Context()
	var es [4]store.Entry
	var seats []*gamev1.SeatPlayer
	for i := range es {
		p := store.Player{ID: fmt.Sprintf("%s%d", prefix, i), DisplayName: "P", Bot: i == 2}
		tk, _, err := st.Enqueue(ctx, queue, p, start.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		es[i] = store.Entry{TicketID: tk.ID, Player: p, EnqueuedMs: tk.EnqueuedAt.UnixMilli()}
		seats = append(seats, &gamev1.SeatPlayer{Seat: gamev1.Seat(i + 1), Player: &gamev1.Player{PlayerId: p.ID, IsBot: p.Bot}})
	}
	f := store.NewFormation(queue, es, 1, start)
	if ok, err := st.Claim(ctx, queue, []*store.Formation{f}, start); err != nil || !ok[0] {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	if _, err := st.Complete(ctx, queue, []store.Outcome{{Formation: f, MatchID: match, Seats: [4]int{1, 2, 3, 4}}}, start); err != nil {
		t.Fatal(err)
	}
	return es, seats
}

// outcomes returns the consumer's matchmaking.requeue.players by outcome
// ("adopted=0 done=0 ...") and the number of delays recorded.
func outcomes(t *testing.T, r *sdkmetric.ManualReader) (string, uint64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	var parts []string
	var delays uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name != "matchmaking.requeue.players" {
					continue
				}
				for _, p := range d.DataPoints {
					o, _ := p.Attributes.Value("outcome")
					parts = append(parts, fmt.Sprintf("%s=%d", o.AsString(), p.Value))
				}
			case metricdata.Histogram[float64]:
				if m.Name == "matchmaking.requeue.delay" {
					for _, p := range d.DataPoints {
						delays += p.Count
					}
				}
			}
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " "), delays
}

// requeued checks that the players of es but the second (who missed their
// move) search again since their original enqueue time, and returns their
// tickets.
func requeued(t *testing.T, st *store.Store, es [4]store.Entry) [4]string {
	t.Helper()
	var ids [4]string
	for i, e := range es {
		tk, existing, err := st.Enqueue(t.Context(), queue, e.Player, time.Now())
		if i == 1 {
			if err != nil || existing {
				t.Errorf("the missed player's Enqueue = %+v, %v, %v; want a new ticket", tk, existing, err)
			}
			if _, err := st.Cancel(t.Context(), tk.ID, e.Player.ID); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil || !existing || !tk.EnqueuedAt.Equal(e.EnqueuedAt()) || tk.State != store.Searching {
			t.Errorf("Enqueue of %s = %+v, %v, %v; want their requeued ticket since %v", e.Player.ID, tk, existing, err, e.EnqueuedAt())
		}
		ids[i] = tk.ID
	}
	return ids
}

// waitHandled waits until the group has read n entries and acknowledged
// them all.
func waitHandled(t *testing.T, rdb redis.UniversalClient, cfg requeue.Config, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		groups, err := rdb.XInfoGroups(t.Context(), cfg.Stream).Result()
		if err == nil && len(groups) == 1 && groups[0].EntriesRead == n && groups[0].Pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group state %+v, %v; want %d entries read, none pending", groups, err, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
