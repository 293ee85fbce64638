package match

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/fanout"
)

// TestWatchHoldsEventsBack feeds a watcher the changes of a match one by
// one and checks which versions it sends after each: with a delay, only
// the events whose ply is at least delay plies behind the last one
// received (a resignation travels with its ply), and everything once the
// final event is in.
func TestWatchHoldsEventsBack(t *testing.T) {
	// The kinds are MatchEvent's oneof field numbers.
	move, resign, elim, over := fanout.KindMoveApplied, protowire.Number(12), protowire.Number(14), fanout.KindGameOver
	ev := func(v uint64, ply uint32, kind protowire.Number) fanout.Event {
		return fanout.Event{Version: v, Ply: ply, Kind: kind}
	}
	// One match: a change per line (a move and the zombie move after it
	// are one change).
	changes := [][]fanout.Event{
		{ev(2, 1, move)},
		{ev(3, 2, move)},
		{ev(4, 3, move)},
		{ev(5, 4, move)},
		{ev(6, 5, move)},
		{ev(7, 5, resign)},
		{ev(8, 6, move), ev(9, 7, move)},
		{ev(10, 8, move)},
		{ev(11, 9, move), ev(12, 9, elim)},
		{ev(13, 9, resign), ev(14, 9, over)},
	}
	tests := []struct {
		name  string
		delay int
		from  uint64 // the last version the watcher had
		// feed is the batches the watcher gets (a resuming watcher reads
		// the stored events after from in one batch).
		feed [][]fanout.Event
		// sent is the versions sent after each batch.
		sent [][]uint64
	}{
		{"live", 0, 1, changes, [][]uint64{{2}, {3}, {4}, {5}, {6}, {7}, {8, 9}, {10}, {11, 12}, {13, 14}}},
		{"one round behind", 4, 1, changes, [][]uint64{nil, nil, nil, nil, {2}, nil, {3, 4}, {5}, {6, 7}, {8, 9, 10, 11, 12, 13, 14}}},
		{"two plies behind", 2, 1, changes, [][]uint64{nil, nil, {2}, {3}, {4}, nil, {5, 6, 7}, {8}, {9}, {10, 11, 12, 13, 14}}},
		{"resuming mid-game", 4, 3, nil, nil},
	}
	// The resuming watcher had version 3; its first batch is the stored
	// events 4 to 9 (the match at ply 7), then the live changes.
	resume := &tests[3]
	resume.feed = [][]fanout.Event{slices.Concat(changes[2:7]...), changes[7], changes[8], changes[9]}
	resume.sent = [][]uint64{{4}, {5}, {6, 7}, {8, 9, 10, 11, 12, 13, 14}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []uint64
			ws := &watchState{svc: &Service{}, id: "m", last: tt.from, delay: tt.delay, send: func(it WatchItem) error {
				got = append(got, it.Version)
				return nil
			}}
			for i, batch := range tt.feed {
				got = nil
				if err := ws.live(t.Context(), batch); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, tt.sent[i]) {
					t.Fatalf("after batch %d (up to version %d): sent %v, want %v", i, batch[len(batch)-1].Version, got, tt.sent[i])
				}
			}
			if !ws.done {
				t.Error("the stream did not end after GameOver")
			}
		})
	}
}

// TestDelayedReplayFollowsTheEvents plays random games as the service does
// (seeded zombies, resignations and time losses whose zombies move at once)
// and checks, after every change and for several delays, that the replay a
// delayed viewer sees stops at the version of the last event the delay
// lets through (counted as the replay counts them, the events of actions:
// TestDelayedViewCountsNotices adds the notices only the log holds), and
// equals the live game at each version where a change ended; with no
// delay it is the live game.
func TestDelayedReplayFollowsTheEvents(t *testing.T) {
	t.Parallel()
	svc := &Service{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, rs := range []rules.RuleSet{rules.FourKingdoms(), rules.ChesscomFFA()} {
		for seed := range uint64(6) {
			rng := rand.New(rand.NewPCG(seed, 11))
			g, err := rules.NewGame(rs, seed, "")
			if err != nil {
				t.Fatal(err)
			}
			// plies[v] is the ply of the event of version v; fens[v] the
			// position after it where a change ended there.
			plies := []uint32{0, 0}
			fens := map[uint64]string{1: g.FEN4()}
			rec := &record{}
			// One entry per delay, each advancing its cached replay.
			entries := map[int]*entry{}
			for _, d := range []int{0, 1, 4, 9} {
				entries[d] = &entry{id: "m"}
			}
			for !g.Over() && g.Ply() < 400 {
				before := g.Points()
				var eff rules.Effects
				switch r := rng.IntN(80); {
				case r < 2:
					s := g.ToMove()
					if r == 1 {
						s = rules.Seat(rng.IntN(rules.NumSeats))
					}
					if g.Status(s) != rules.Live {
						continue
					}
					if r == 0 {
						eff, err = g.TimeOut(s)
					} else {
						eff, err = g.Resign(s)
					}
				default:
					ms := g.LegalMoves(g.ToMove())
					eff, err = g.Play(g.ToMove(), ms[rng.IntN(len(ms))])
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range eventsOf("m", g, &eff, before, uint64(len(plies)), time.Unix(0, 0), nil, rec) {
					plies = append(plies, ev.GetPly())
				}
				version := uint64(len(plies) - 1)
				fens[version] = g.FEN4()
				for delay, e := range entries {
					e.game, e.version = g, version
					d, err := svc.delayedAt(e, delay)
					if err != nil {
						t.Fatal(err)
					}
					want := uint64(1)
					for v := uint64(2); v <= version && visible(v, plies[v], uint32(g.Ply()), delay); v++ {
						want = v
					}
					if d.counted != want || d.stuck {
						t.Fatalf("%s seed %d ply %d delay %d: replay at version %d (stuck %v), want %d", rs.Name, seed, g.Ply(), delay, d.counted, d.stuck, want)
					}
					if fen, ok := fens[want]; ok && d.game.FEN4() != fen {
						t.Fatalf("%s seed %d version %d delay %d: replay %s, live game was %s", rs.Name, seed, want, delay, d.game.FEN4(), fen)
					}
					if delay == 0 && (d.game.Points() != g.Points() || d.game.Over() != g.Over() || d.game.Ply() != g.Ply()) {
						t.Fatalf("%s seed %d ply %d: replay without delay differs from the game", rs.Name, seed, g.Ply())
					}
				}
			}
		}
	}
}

// BenchmarkDelayedView measures what a spectator's view costs the service
// on a 400-ply random game: "cold" replays the whole game (the first
// spectator read of a match on an instance), "advance" replays one more
// ply onto the kept replay (every later read after a move).
//
//	go test ./internal/match -run '^$' -bench DelayedView
func BenchmarkDelayedView(b *testing.B) {
	svc := &Service{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	rng := rand.New(rand.NewPCG(1, 2))
	g, err := rules.NewGame(rules.FourKingdoms(), 1, "")
	if err != nil {
		b.Fatal(err)
	}
	var games []*rules.Game
	for !g.Over() && g.Ply() < 400 {
		ms := g.LegalMoves(g.ToMove())
		if _, err := g.Play(g.ToMove(), ms[rng.IntN(len(ms))]); err != nil {
			b.Fatal(err)
		}
		games = append(games, g.Clone())
	}
	b.Logf("%d plies", g.Ply())
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			if _, err := svc.delayedAt(&entry{id: "m", game: g}, DefaultSpectatorDelay); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("advance", func(b *testing.B) {
		e := &entry{id: "m", game: games[len(games)-2]}
		for b.Loop() {
			b.StopTimer()
			e.game = games[len(games)-2]
			if _, err := svc.delayedAt(e, DefaultSpectatorDelay); err != nil {
				b.Fatal(err)
			}
			e.game = games[len(games)-1]
			b.StartTimer()
			if _, err := svc.delayedAt(e, DefaultSpectatorDelay); err != nil {
				b.Fatal(err)
			}
		}
	})
}
