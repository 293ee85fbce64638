package match

import (
	"slices"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	"github.com/fourkingdoms/fourkingdoms/pkg/timecontrol"
)

// premoveEntry is a match at its start (Red to move) whose other seats
// have the given queues.
func premoveEntry(t *testing.T, tc timecontrol.TimeControl, t0 time.Time, queues map[rules.Seat][]string) *entry {
	t.Helper()
	g, err := rules.NewGame(rules.FourKingdoms(), 1, "")
	if err != nil {
		t.Fatal(err)
	}
	e := &entry{id: "m", game: g, version: 1, tc: tc, rec: record{Status: StatusActive, Clocks: newClocks(tc, rules.Red, t0)}}
	for s, q := range queues {
		e.rec.Premoves[s] = Premoves{Seat: s, Moves: q, Change: PremoveSet, Version: 1}
	}
	return e
}

// TestSettlePremoves: what a premove costs on the clock under each time
// control, and when a queue is dropped instead of played.
func TestSettlePremoves(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_700_000_000_000)
	now := t0.Add(3 * time.Second) // Red moves 3 s into its turn
	incr := timecontrol.TimeControl{Initial: time.Minute, Increment: 5 * time.Second}
	delay := timecontrol.TimeControl{Initial: time.Minute, Delay: 2 * time.Second}
	tests := []struct {
		name   string
		tc     timecontrol.TimeControl
		blue   time.Duration // Blue's time before its turn
		queues map[rules.Seat][]string
		// want: the moves played after Red's, Blue's and Yellow's clocks
		// after them, and the notices.
		moves      []string
		blueAfter  time.Duration
		yellowLeft time.Duration
		notices    []Premoves
	}{
		{"increment: 0.1 s charged, increment added", incr, time.Minute, map[rules.Seat][]string{rules.Blue: {"m4-l4", "m5-l5"}},
			[]string{"d2-d3", "m4-l4"}, time.Minute - 100*time.Millisecond + 5*time.Second, time.Minute,
			[]Premoves{{Seat: rules.Blue, Moves: []string{"m5-l5"}, Change: PremovePlayed, Version: 3, Move: "m4-l4"}}},
		{"delay: the 0.1 s fall in the free delay", delay, time.Minute, map[rules.Seat][]string{rules.Blue: {"m4-l4"}},
			[]string{"d2-d3", "m4-l4"}, time.Minute, time.Minute,
			[]Premoves{{Seat: rules.Blue, Moves: []string{}, Change: PremovePlayed, Version: 3, Move: "m4-l4"}}},
		{"two seats in one step", incr, time.Minute, map[rules.Seat][]string{rules.Blue: {"m4-l4"}, rules.Yellow: {"d13-d12"}},
			[]string{"d2-d3", "m4-l4", "d13-d12"}, time.Minute - 100*time.Millisecond + 5*time.Second, time.Minute - 100*time.Millisecond + 5*time.Second,
			[]Premoves{{Seat: rules.Blue, Moves: []string{}, Change: PremovePlayed, Version: 3, Move: "m4-l4"},
				{Seat: rules.Yellow, Moves: []string{}, Change: PremovePlayed, Version: 4, Move: "d13-d12"}}},
		{"illegal: the queue is dropped, the clock runs", incr, time.Minute, map[rules.Seat][]string{rules.Blue: {"m4-k5", "m5-l5"}},
			[]string{"d2-d3"}, time.Minute, time.Minute,
			[]Premoves{{Seat: rules.Blue, Change: PremoveIllegal, Version: 2, Move: "m4-k5"}}},
		{"less time than a premove costs", incr, 80 * time.Millisecond, map[rules.Seat][]string{rules.Blue: {"m4-l4"}},
			[]string{"d2-d3"}, 80 * time.Millisecond, time.Minute,
			[]Premoves{{Seat: rules.Blue, Change: PremoveNoTime, Version: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &Service{cfg: DefaultConfig()}
			e := premoveEntry(t, tt.tc, t0, tt.queues)
			e.rec.Clocks.Remaining[rules.Blue] = tt.blue
			e.rec.Clocks.Moved = [rules.NumSeats]bool{true, true, true, true}
			rec := e.rec
			g := e.game
			before := g.Points()
			_, eff, err := g.PlayText(rules.Red, "d2-d3")
			if err != nil {
				t.Fatal(err)
			}
			rec.Clocks.follow(e.tc, g, now, true, true)
			events := eventsOf(e.id, g, &eff, before, e.version+1, now, nil, &rec)
			events, notices := s.settlePremoves(e, &rec, now, events)
			var moves []string
			for i, ev := range events {
				if ev.GetVersion() != uint64(i)+2 {
					t.Fatalf("event %d has version %d", i, ev.GetVersion())
				}
				moves = append(moves, ev.GetMoveApplied().GetEffects().GetMove())
			}
			if !slices.Equal(moves, tt.moves) {
				t.Errorf("moves %v, want %v", moves, tt.moves)
			}
			if got := rec.Clocks.Remaining[rules.Blue]; got != tt.blueAfter {
				t.Errorf("Blue's clock %v, want %v", got, tt.blueAfter)
			}
			if got := rec.Clocks.Remaining[rules.Yellow]; got != tt.yellowLeft {
				t.Errorf("Yellow's clock %v, want %v", got, tt.yellowLeft)
			}
			if want := rules.Seat(len(tt.moves) % rules.NumSeats); g.ToMove() != want || rec.Clocks.Running != int(want) || !rec.Clocks.TurnStart.Equal(now) {
				t.Errorf("to move %v, running %d from %v; want %v from %v", g.ToMove(), rec.Clocks.Running, rec.Clocks.TurnStart, want, now)
			}
			if len(notices) != len(tt.notices) {
				t.Fatalf("notices %+v, want %+v", notices, tt.notices)
			}
			for i, n := range notices {
				w := tt.notices[i]
				if n.Seat != w.Seat || n.Change != w.Change || n.Version != w.Version || n.Move != w.Move || !slices.Equal(n.Moves, w.Moves) {
					t.Errorf("notice %d: %+v, want %+v", i, n, w)
				}
				if q := rec.Premoves[n.Seat]; q.Change != n.Change || !slices.Equal(q.Moves, n.Moves) {
					t.Errorf("record's queue of %v: %+v, want the notice's", n.Seat, q)
				}
			}
		})
	}
}

// TestLeavingDropsPremoves: a seat that resigns loses its queue; an aborted
// match drops every queue.
func TestLeavingDropsPremoves(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_700_000_000_000)
	tc := timecontrol.TimeControl{Initial: time.Minute}
	s := &Service{cfg: DefaultConfig()}
	e := premoveEntry(t, tc, t0, map[rules.Seat][]string{rules.Blue: {"m4-l4"}, rules.Yellow: {"d13-d12"}})
	ch, err := s.leave(e, t0.Add(time.Second), rules.Yellow, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.notices) != 1 || ch.notices[0].Seat != rules.Yellow || ch.notices[0].Change != PremoveSeatLeft || ch.notices[0].Version != 2 {
		t.Fatalf("notices after Yellow resigned: %+v", ch.notices)
	}
	if q := ch.rec.Premoves[rules.Blue]; len(q.Moves) != 1 {
		t.Fatalf("Blue's queue after Yellow resigned: %+v", q)
	}
	e.rec = ch.rec
	e.game.Abort()
	rec := e.rec
	rec.Status = StatusAborted
	_, notices := s.settlePremoves(e, &rec, t0, nil)
	if len(notices) != 1 || notices[0].Seat != rules.Blue || notices[0].Change != PremoveMatchOver || len(rec.Premoves[rules.Blue].Moves) != 0 {
		t.Fatalf("notices after the abort: %+v", notices)
	}
}

// TestPremoveEncoding: queues survive the record and the live notice.
func TestPremoveEncoding(t *testing.T) {
	t.Parallel()
	r := record{Status: StatusActive, LastMove: []byte("last")}
	plain := r.marshal()
	if plain[0] != recordFormat {
		t.Fatalf("a record without queues is written in format %d", plain[0])
	}
	r.Premoves[rules.Green] = Premoves{Seat: rules.Green, Moves: []string{"b4-c4", "O-O"}, Change: PremoveSet, Version: 300}
	r.Premoves[rules.Blue] = Premoves{Seat: rules.Blue, Change: PremoveIllegal, Version: 7, Move: "m4-k5"}
	var got record
	if err := got.unmarshal(r.marshal()); err != nil {
		t.Fatal(err)
	}
	for s := range r.Premoves {
		a, b := r.Premoves[s], got.Premoves[s]
		if a.Change != b.Change || a.Version != b.Version || a.Move != b.Move || !slices.Equal(a.Moves, b.Moves) || b.Seat != rules.Seat(s) {
			t.Errorf("seat %d: %+v, want %+v", s, b, a)
		}
	}
	if string(got.LastMove) != "last" {
		t.Errorf("last move %q", got.LastMove)
	}
	n, err := decodeNotice(encodeNotice(&r.Premoves[rules.Green]))
	if err != nil || n.Seat != rules.Green || !slices.Equal(n.Moves, r.Premoves[rules.Green].Moves) || n.Version != 300 {
		t.Errorf("notice: %+v, %v", n, err)
	}
}

// TestTimeLossFiresTheNextPremoves: a time loss (the keeper's Flag) gives
// the turn on like a move: the zombie moves, then the queued premoves of
// the seats after it are played in the same change.
func TestTimeLossFiresTheNextPremoves(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_700_000_000_000)
	tc := timecontrol.TimeControl{Initial: time.Minute, Increment: time.Second}
	s := &Service{cfg: DefaultConfig()}
	e := premoveEntry(t, tc, t0, map[rules.Seat][]string{rules.Blue: {"m4-l4"}, rules.Yellow: {"d13-d12", "e13-e12"}})
	ch, err := s.leave(e, t0.Add(time.Minute), rules.Red, true)
	if err != nil {
		t.Fatal(err)
	}
	var moves []string
	for _, ev := range ch.events {
		if m := ev.GetMoveApplied(); m != nil {
			moves = append(moves, m.GetEffects().GetMove())
		}
	}
	if len(moves) != 3 || moves[1] != "m4-l4" || moves[2] != "d13-d12" || e.game.ToMove() != rules.Green {
		t.Fatalf("after Red's time loss: moves %v, %v to move; want Red's zombie move, m4-l4, d13-d12, Green", moves, e.game.ToMove())
	}
	if len(ch.notices) != 2 || ch.notices[0].Change != PremovePlayed || ch.notices[1].Change != PremovePlayed ||
		!slices.Equal(ch.rec.Premoves[rules.Yellow].Moves, []string{"e13-e12"}) {
		t.Fatalf("notices %+v, Yellow's queue %+v", ch.notices, ch.rec.Premoves[rules.Yellow])
	}
	if got := ch.rec.Clocks.Remaining[rules.Blue]; got != time.Minute-100*time.Millisecond+time.Second {
		t.Errorf("Blue's clock %v", got)
	}
}
