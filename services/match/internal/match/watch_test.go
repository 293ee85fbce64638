package match_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/match"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
)

// TestStuckWatcherDelaysNoPremoveCommit: Blue's player has two streams of
// a match; one is stuck in a send (a client that does not read) while Blue
// sets and clears premoves, each a commit whose private notice reaches
// both streams. Every commit returns (nothing the service or the hub holds
// while a send is stuck is needed by a commit: a stall hangs this test),
// the other stream gets every notice in order, and the stuck stream, once
// its send returns, ends with ErrSlowConsumer.
func TestStuckWatcherDelaysNoPremoveCommit(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.Standalone(t)
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(t)
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const buffer = 8
	hub := fanout.New(st, log, buffer)
	defer hub.Close()
	svc, err := match.New(st, hub, match.DefaultConfig(), log, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	req := &matchv1.CreateMatchRequest{RequestId: cfg.Prefix, TimeControl: &gamev1.TimeControl{Name: "60+0"}}
	for s := range rules.NumSeats {
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: fmt.Sprint("p", s)}})
	}
	m, err := svc.Create(ctx, match.Caller{ID: "matchmaker", Service: true}, req)
	if err != nil {
		t.Fatal(err)
	}
	blue := match.Caller{ID: "p1"} // Red is to move: Blue may queue premoves

	// watch starts a stream of Blue's; each item after the snapshot goes
	// to sent. It returns once the snapshot was sent, and the stream's end.
	watch := func(sent func(match.WatchItem)) <-chan error {
		started, end := make(chan struct{}), make(chan error, 1)
		go func() {
			first := true
			end <- svc.Watch(ctx, blue, m.ID, 0, func(it match.WatchItem) error {
				if first {
					first = false
					close(started)
					return nil
				}
				sent(it)
				return nil
			})
		}()
		select {
		case <-started:
		case err := <-end:
			t.Fatalf("Watch: %v", err)
		}
		return end
	}
	stuck, release := make(chan struct{}), make(chan struct{})
	stuckEnd := watch(func(match.WatchItem) {
		select {
		case <-stuck:
		default:
			close(stuck)
		}
		<-release
	})
	notices := make(chan *match.Premoves, 100)
	readerEnd := watch(func(it match.WatchItem) { notices <- it.Premoves })
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	// Enough changes to overflow the stuck stream's buffer. Each waits for
	// the reader to get its notice: the hub hands a notice to both streams
	// in turn, so the stuck stream was handed (or refused) it too, and the
	// reader is never behind (a reader whose goroutine waits for a CPU
	// while the commits run on is dropped as well once its buffer is full).
	const changes = 4 * buffer
	for i := range changes {
		var err error
		want := match.PremoveSet
		if i%2 == 0 {
			_, err = svc.SetPremoves(ctx, blue, m.ID, gamev1.Seat_SEAT_BLUE, []string{"m4-l4"})
		} else {
			want = match.PremoveCleared
			_, err = svc.ClearPremoves(ctx, blue, m.ID, gamev1.Seat_SEAT_BLUE)
		}
		if err != nil {
			t.Fatalf("premove change %d: %v", i, err)
		}
		var p *match.Premoves
		select {
		case p = <-notices:
		case err := <-readerEnd:
			t.Fatalf("the reading stream ended after %d notices: %v", i, err)
		}
		if p == nil || p.Change != want {
			t.Fatalf("notice %d = %+v, want change %v", i, p, want)
		}
	}
	<-stuck
	close(release)
	if err := <-stuckEnd; !errors.Is(err, match.ErrSlowConsumer) {
		t.Errorf("the stuck stream ended with %v, want ErrSlowConsumer", err)
	}
}
