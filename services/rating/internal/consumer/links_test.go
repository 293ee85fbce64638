package consumer

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/eventstream"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/ladder"
)

// startLinks runs a link consumer until the test ends.
func (fx *fixture) startLinks(t *testing.T) *Consumer {
	t.Helper()
	c, err := NewLinks(fx.rdb, fx.store, fx.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("link consumer: %v", err)
		}
	})
	return c
}

func linkEntry(t testing.TB, guest, account string) map[string]any {
	t.Helper()
	fields, err := eventstream.PlayerLinked().Encode(&eventsv1.PlayerLinked{
		GuestPlayerId: guest, AccountPlayerId: account, AccountDisplayName: "Account", LinkedAt: timestamppb.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	for i := 0; i < len(fields); i += 2 {
		m[fields[i].(string)] = fields[i+1]
	}
	return m
}

// waitLinksDrained waits until the group has read and acknowledged n
// entries of the link stream.
func (fx *fixture) waitLinksDrained(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		groups, err := fx.rdb.XInfoGroups(t.Context(), fx.cfg.LinkStream).Result()
		if err == nil && len(groups) == 1 && groups[0].EntriesRead >= int64(n) && groups[0].Pending == 0 && groups[0].Lag == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("link stream not drained: groups %+v, err %v", groups, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func renamedResults(rs []ladder.Result, from, to string) []ladder.Result {
	out := slices.Clone(rs)
	for i := range out {
		for p := range out[i].Places {
			if out[i].Places[p].PlayerID == from {
				out[i].Places[p].PlayerID = to
			}
		}
	}
	return out
}

// TestLinkThroughTheStreams: a guest plays two rated matches, is linked
// (the link published twice, as a retried LinkGuest does, and handled
// twice, as after a crash before the acknowledgement), then plays a third
// that finishes after the link: the account holds exactly the rating of
// the three matches. A malformed link entry is dead-lettered.
func TestLinkThroughTheStreams(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, fx *fixture) {
		before := []*eventsv1.MatchFinished{
			event("m1", pool, "g-guest", "b", "c", "d"),
			event("m2", pool, "b", "g-guest", "c", "d"),
		}
		ids := fx.publish(t, entry(before[0]), entry(before[1]))
		fx.start(t, "c", 1)
		fx.waitDrained(t, len(ids))

		pub := func(values map[string]any) string {
			id, err := fx.rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: fx.cfg.LinkStream, Values: values}).Result()
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		link := linkEntry(t, "g-guest", "o-acct")
		pub(link)
		pub(link)
		bad := pub(linkEntry(t, "o-acct", "g-guest")) // the wrong way round
		lc := fx.startLinks(t)
		fx.waitLinksDrained(t, 3)
		// A crash before the acknowledgement: the same entry again.
		msgs, err := fx.rdb.XRange(t.Context(), fx.cfg.LinkStream, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := lc.handleLinks(t.Context(), msgs[:1]); err != nil {
			t.Fatal(err)
		}

		after := event("m3", pool, "c", "d", "g-guest", "b")
		ids = append(ids, fx.publish(t, entry(after))...)
		fx.waitDrained(t, len(ids))

		all := renamedResults(results(t, append(before, after)), "g-guest", "o-acct")
		fx.checkReplay(t, all)
		p, err := fx.store.Players(t.Context(), pool, []string{"o-acct"})
		if err != nil || p[0].Standing.Games != 3 || p[0].Name != "Account" {
			t.Fatalf("account = %+v, %v; want 3 games named Account", p, err)
		}
		dead, err := fx.rdb.XRange(t.Context(), fx.cfg.LinkDeadLetter, "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) != 1 || dead[0].Values["dead_id"] != bad || !strings.Contains(dead[0].Values["dead_reason"].(string), "not a guest's") {
			t.Fatalf("link dead letters = %+v, want the malformed one", dead)
		}
	})
}
