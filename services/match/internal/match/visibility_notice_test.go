package match

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fourkingdoms/fourkingdoms/pkg/redistest"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/store"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// TestDelayedViewCountsNotices: the events no action of the game makes
// (PlayerDisconnected, PlayerReconnected, ClockCredited) take versions
// too. A spectator's GetMatch, ExportGame and WatchMatch start and resume
// must agree with the event log after them as after moves: after every
// change of a match that has such events before, at and after the delay's
// limit, a spectator's view is at the version of the last event of the
// log it may see (what its stream delivers), with that event's position,
// the clocks of the last move up to it, and the export up to its ply; a
// stream started from scratch sends that view and nothing more, resumed
// from it sends nothing, resumed one version earlier sends exactly it.
// The same holds on an instance that has just started (no replay kept).
func TestDelayedViewCountsNotices(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.Standalone(t)
	cfg := store.DefaultConfig()
	cfg.Prefix = redistest.Prefix(t)
	st, err := store.New(rdb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := NewFakeClock(time.UnixMilli(1_800_000_000_000))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	newService := func() *Service {
		t.Helper()
		svc, err := New(st, nil, DefaultConfig(), log, clock.Now)
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	svc := newService()
	ctx := t.Context()
	req := &matchv1.CreateMatchRequest{RequestId: cfg.Prefix, TimeControl: &gamev1.TimeControl{Name: "10+5"}}
	for s := range rules.NumSeats {
		req.Players = append(req.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(s + 1), Player: &gamev1.Player{PlayerId: fmt.Sprint("p", s)}})
	}
	operator := Caller{ID: "matchmaker", Service: true}
	created, err := svc.Create(ctx, operator, req)
	if err != nil {
		t.Fatal(err)
	}
	id := created.ID
	spectator := Caller{ID: "spectator"}
	delay := DefaultConfig().SpectatorDelay

	rng := rand.New(rand.NewPCG(7, 9))
	move := func() {
		t.Helper()
		clock.Advance(time.Second)
		live, err := svc.Get(ctx, operator, id)
		if err != nil {
			t.Fatal(err)
		}
		player := Caller{ID: fmt.Sprint("p", int(live.ToMove))}
		v, err := svc.Get(ctx, player, id)
		if err != nil || len(v.LegalMoves) == 0 {
			t.Fatalf("legal moves of %v: %v, %v", live.ToMove, v, err)
		}
		if _, err := svc.MakeMove(ctx, player, &matchv1.MakeMoveRequest{MatchId: id, Move: v.LegalMoves[rng.IntN(len(v.LegalMoves))]}); err != nil {
			t.Fatal(err)
		}
	}
	presence := func(seat rules.Seat, back bool) func() {
		return func() {
			t.Helper()
			clock.Advance(time.Second)
			// As CheckPresence and touchPresence announce them.
			err := svc.announce(ctx, id, func(*entry) (*eventsv1.MatchEvent, error) {
				if back {
					return &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerReconnected{
						PlayerReconnected: &eventsv1.PlayerReconnected{Seat: wire.Seat(seat)}}}, nil
				}
				return &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerDisconnected{PlayerDisconnected: &eventsv1.PlayerDisconnected{
					Seat: wire.Seat(seat), GraceEndsAt: timestamppb.New(clock.Now().Add(time.Minute))}}}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	credit := func() {
		t.Helper()
		clock.Advance(2 * time.Second)
		now := clock.Now()
		ok, err := svc.creditOutage(ctx, id, window{from: now.Add(-time.Minute), to: now})
		if err != nil || !ok {
			t.Fatalf("outage credit: %v, %v", ok, err)
		}
	}

	// fens[p] is the position after ply p.
	fens := []string{created.FEN4}
	check := func(what string) {
		t.Helper()
		live, err := svc.Get(ctx, operator, id)
		if err != nil {
			t.Fatal(err)
		}
		for len(fens) <= live.Ply {
			fens = append(fens, "")
		}
		fens[live.Ply] = live.FEN4
		// What a delayed stream delivers: the log up to the last event
		// visible at the live ply.
		stored, err := st.Events(ctx, id, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != int(live.Version) {
			t.Fatalf("%s: %d events stored, the match is at version %d", what, len(stored), live.Version)
		}
		want, wantPly := uint64(1), 0
		wantClocks := created.Clocks.Remaining
		for _, s := range stored {
			ev := &eventsv1.MatchEvent{}
			if err := proto.Unmarshal(s.Data, ev); err != nil {
				t.Fatal(err)
			}
			if !visible(s.Version, ev.GetPly(), uint32(live.Ply), delay) {
				break
			}
			want, wantPly = s.Version, int(ev.GetPly())
			if mv := ev.GetMoveApplied(); mv != nil {
				for _, cl := range mv.GetClocks() {
					seat, _ := wire.SeatOf(cl.GetSeat())
					wantClocks[seat] = cl.GetRemaining().AsDuration()
				}
			}
		}
		for _, inst := range []struct {
			name string
			svc  *Service
		}{{"this instance", svc}, {"a restarted instance", newService()}} {
			v, err := inst.svc.Get(ctx, spectator, id)
			if err != nil {
				t.Fatal(err)
			}
			if v.Version != want || v.Ply != wantPly || v.FEN4 != fens[wantPly] || v.Clocks.Remaining != wantClocks {
				t.Fatalf("%s, %s: spectator's view at version %d ply %d clocks %v, want version %d ply %d clocks %v (live: version %d ply %d)\nposition %s\nwant     %s",
					what, inst.name, v.Version, v.Ply, v.Clocks.Remaining, want, wantPly, wantClocks, live.Version, live.Ply, v.FEN4, fens[wantPly])
			}
			pgn, err := inst.svc.Export(ctx, spectator, id)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := rules.ParsePGN4(pgn, nil)
			if err != nil {
				t.Fatalf("%s: export does not re-import: %v\n%s", what, err, pgn)
			}
			if rec.Game.Ply() != wantPly {
				t.Fatalf("%s, %s: spectator's export has %d plies, want %d", what, inst.name, rec.Game.Ply(), wantPly)
			}
			// The stream, from scratch and resumed.
			for _, from := range []uint64{0, want, want - 1} {
				if from == 0 && want == 1 {
					continue
				}
				var got []WatchItem
				ws := &watchState{svc: inst.svc, c: spectator, id: id, send: func(it WatchItem) error {
					got = append(got, it)
					return nil
				}}
				if err := ws.start(ctx, from); err != nil {
					t.Fatalf("%s, %s: spectator's stream from version %d: %v", what, inst.name, from, err)
				}
				var versions []uint64
				for _, it := range got {
					versions = append(versions, it.Version)
				}
				switch {
				case from == 0 && (len(got) != 1 || got[0].Snapshot == nil || got[0].Version != want):
					t.Fatalf("%s, %s: spectator's new stream sent versions %v, want the snapshot of version %d alone", what, inst.name, versions, want)
				case from == want && len(got) != 0:
					t.Fatalf("%s, %s: spectator's stream resumed from version %d sent %v, want nothing", what, inst.name, from, versions)
				case from == want-1 && (len(got) != 1 || got[0].Event == nil || got[0].Version != want):
					t.Fatalf("%s, %s: spectator's stream resumed from version %d sent %v, want event %d", what, inst.name, from, versions, want)
				}
			}
		}
	}

	steps := []struct {
		name string
		do   func()
	}{
		{"Yellow disconnects before the first move", presence(rules.Yellow, false)},
		{"move 1", move},
		{"move 2", move},
		{"move 3", move},
		{"outage credit at ply 3", credit},
		{"move 4", move},
		{"move 5", move},
		{"Yellow reconnects at ply 5", presence(rules.Yellow, true)},
		{"move 6", move},
		{"Green disconnects at ply 6", presence(rules.Green, false)},
		{"outage credit at ply 6", credit},
		{"move 7", move},
		{"move 8", move},
		{"move 9", move},
		{"move 10", move},
		{"move 11", move},
		{"move 12", move},
	}
	check("created")
	for _, s := range steps {
		s.do()
		check(s.name)
	}
}
