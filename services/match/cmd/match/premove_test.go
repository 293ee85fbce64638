package main

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// Opening moves of each seat for three rounds from the standard position
// (pawns one step forward; many others pin or check in four-player chess).
var rounds = [3][4]string{
	{"d2-d3", "m4-l4", "d13-d12", "b4-c4"},
	{"e2-e3", "m5-l5", "e13-e12", "b5-c5"},
	{"k2-k3", "m11-l11", "k13-k12", "b11-c11"},
}

// watchItems reads a WatchMatch stream in the background: items until the
// stream ends, then (items closed) its error in err. watchAll returns once
// the first item arrived.
type watchItems struct {
	items chan *matchv1.WatchMatchResponse
	err   error
}

func watchAll(t *testing.T, c matchv1.MatchServiceClient, id string, from uint64) *watchItems {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	st, err := c.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id, FromVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	w := &watchItems{items: make(chan *matchv1.WatchMatchResponse, 1024)}
	first := make(chan struct{})
	go func() {
		defer close(w.items)
		for n := 0; ; n++ {
			r, err := st.Recv()
			if n == 0 {
				close(first)
			}
			if err != nil {
				w.err = err
				return
			}
			w.items <- r
		}
	}()
	// The first item (a snapshot from version 0) comes once the server
	// follows the match live: what the test does next reaches the stream
	// as it happens, not folded into a later snapshot.
	select {
	case <-first:
	case <-time.After(20 * time.Second):
		t.Fatal("no first item")
	}
	return w
}

// until reads items until ok says stop, and returns them all.
func (w *watchItems) until(t *testing.T, ok func(*matchv1.WatchMatchResponse) bool) []*matchv1.WatchMatchResponse {
	t.Helper()
	var out []*matchv1.WatchMatchResponse
	timeout := time.After(20 * time.Second)
	for {
		select {
		case r, open := <-w.items:
			if !open {
				t.Fatalf("stream ended after %d items: %v", len(out), w.err)
			}
			out = append(out, r)
			if ok(r) {
				return out
			}
		case <-timeout:
			t.Fatalf("no matching item after %d items", len(out))
		}
	}
}

func eventAt(v uint64) func(*matchv1.WatchMatchResponse) bool {
	return func(r *matchv1.WatchMatchResponse) bool { return r.GetEvent().GetVersion() == v }
}

// premovesOf returns the premove queues a stream's items show (in
// snapshots and premove items) and checks the versions: events go up by
// one, premove items do not move the version.
func premovesOf(t *testing.T, who string, items []*matchv1.WatchMatchResponse, last uint64) ([]*matchv1.PremoveQueue, uint64) {
	t.Helper()
	var out []*matchv1.PremoveQueue
	for _, r := range items {
		switch x := r.GetItem().(type) {
		case *matchv1.WatchMatchResponse_Snapshot:
			last = x.Snapshot.GetVersion()
			out = append(out, x.Snapshot.GetPremoves()...)
		case *matchv1.WatchMatchResponse_Event:
			if x.Event.GetVersion() != last+1 {
				t.Fatalf("%s: event %d after version %d", who, x.Event.GetVersion(), last)
			}
			last = x.Event.GetVersion()
		case *matchv1.WatchMatchResponse_Premoves:
			out = append(out, x.Premoves)
		}
		if r.GetVersion() != last {
			t.Fatalf("%s: item %v says version %d, the stream is at %d", who, r, r.GetVersion(), last)
		}
	}
	return out, last
}

func setPremoves(t *testing.T, c matchv1.MatchServiceClient, id string, moves ...string) *matchv1.PremoveQueue {
	t.Helper()
	resp, err := c.SetPremoves(t.Context(), &matchv1.SetPremovesRequest{MatchId: id, Moves: moves})
	if err != nil {
		t.Fatalf("SetPremoves %v: %v", moves, err)
	}
	return resp.GetQueue()
}

func queue(seat gamev1.Seat, change matchv1.PremoveChange, version uint64, move string, moves ...string) *matchv1.PremoveQueue {
	return &matchv1.PremoveQueue{Seat: seat, Moves: moves, Change: change, Version: version, Move: move}
}

func checkQueues(t *testing.T, who string, got []*matchv1.PremoveQueue, want ...*matchv1.PremoveQueue) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: premove items %v, want %v", who, got, want)
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("%s: premove item %d is %v, want %v", who, i, got[i], want[i])
		}
	}
}

// TestPremovesChainAcrossRoundsOnTwoInstances: Blue, Yellow and Green
// queue three premoves each through one instance; each of Red's three
// moves, made through another instance sharing the store, fires one
// premove of each in the same step. Each premove is charged 0.1 s (less
// the 5 s increment); only the owner's streams see the queues.
func TestPremovesChainAcrossRoundsOnTwoInstances(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		// The spectator sees the game live (no spectator delay, which
		// TestSpectatorDelay covers), so that its stream shows, move for
		// move, that no queue item ever reaches it. The test counts
		// versions, so presence and outage credits are off: on a starved
		// machine a late lease push shows a watching seat disconnected,
		// and a keeper scan that times out credits Red's clock, each a
		// versioned event the rounds do not expect (this test once saw
		// version 2 where it wanted 1 with two clusters running beside
		// it). Their own tests cover both.
		live := map[string]string{"MATCH_SPECTATOR_DELAY": "0", "MATCH_DISCONNECT_GRACE": "0", "MATCH_OUTAGE_CREDIT_MAX": "0"}
		a, b := e.start(live), e.start(live)
		id := e.create(a.addr, nil).GetMatchId()
		onA, onB := e.seatClients(a.addr), e.seatClients(b.addr)
		spec := e.client(b.addr, e.token("spectator", auth.RolePlayer))
		blueW, yellowW := watchAll(t, onA[1], id, 0), watchAll(t, onB[2], id, 0)
		redW, specW := watchAll(t, onA[0], id, 0), watchAll(t, spec, id, 0)

		for s := 1; s < 4; s++ {
			q := setPremoves(t, onA[s], id, rounds[0][s], rounds[1][s], rounds[2][s])
			want := queue(gamev1.Seat(s+1), matchv1.PremoveChange_PREMOVE_CHANGE_SET, 1, "", rounds[0][s], rounds[1][s], rounds[2][s])
			if !proto.Equal(q, want) {
				t.Fatalf("SetPremoves answered %v, want %v", q, want)
			}
		}
		for r := range rounds {
			resp, err := onB[0].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: rounds[r][0]})
			if err != nil {
				t.Fatalf("round %d: %v", r+1, err)
			}
			var played []string
			for _, ev := range resp.GetEvents() {
				played = append(played, ev.GetMoveApplied().GetEffects().GetMove())
			}
			if !slices.Equal(played, rounds[r][:]) || resp.GetToMove() != gamev1.Seat_SEAT_RED || resp.GetVersion() != uint64(1+4*(r+1)) {
				t.Fatalf("round %d: moves %v, to move %v, version %d; want %v, Red, %d", r+1, played, resp.GetToMove(), resp.GetVersion(), rounds[r], 1+4*(r+1))
			}
		}

		// Each premove is charged 0.1 s and earns the 5 s increment.
		m, err := onA[1].GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range m.GetMatch().GetClocks()[1:] {
			if got, want := c.GetRemaining().AsDuration(), 10*time.Minute+3*(5*time.Second-100*time.Millisecond); got != want {
				t.Errorf("%v's clock after three premoves: %v, want %v", c.GetSeat(), got, want)
			}
		}
		// GetMatch shows the caller's own queue only.
		blueDone := queue(gamev1.Seat_SEAT_BLUE, matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED, 11, rounds[2][1])
		checkQueues(t, "Blue's GetMatch", m.GetMatch().GetPremoves(), blueDone)
		for _, c := range []matchv1.MatchServiceClient{onB[0], spec} {
			m, err := c.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
			if err != nil {
				t.Fatal(err)
			}
			checkQueues(t, "another's GetMatch", m.GetMatch().GetPremoves())
		}

		// The owners' streams see their own queue change, after the
		// events, without a version of its own.
		blueItems := blueW.until(t, func(r *matchv1.WatchMatchResponse) bool { return proto.Equal(r.GetPremoves(), blueDone) })
		got, _ := premovesOf(t, "Blue", blueItems, 0)
		checkQueues(t, "Blue's stream", got,
			queue(gamev1.Seat_SEAT_BLUE, matchv1.PremoveChange_PREMOVE_CHANGE_SET, 1, "", rounds[0][1], rounds[1][1], rounds[2][1]),
			queue(gamev1.Seat_SEAT_BLUE, matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED, 3, rounds[0][1], rounds[1][1], rounds[2][1]),
			queue(gamev1.Seat_SEAT_BLUE, matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED, 7, rounds[1][1], rounds[2][1]),
			blueDone)
		yellowDone := queue(gamev1.Seat_SEAT_YELLOW, matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED, 12, rounds[2][2])
		yellowItems := yellowW.until(t, func(r *matchv1.WatchMatchResponse) bool { return proto.Equal(r.GetPremoves(), yellowDone) })
		got, _ = premovesOf(t, "Yellow", yellowItems, 0)
		if len(got) != 4 || got[0].GetChange() != matchv1.PremoveChange_PREMOVE_CHANGE_SET {
			t.Fatalf("Yellow's stream: %v", got)
		}
		for _, q := range got {
			if q.GetSeat() != gamev1.Seat_SEAT_YELLOW {
				t.Fatalf("Yellow's stream shows %v", q)
			}
		}

		// Another player and a spectator never see a queue: one more move
		// follows version 13 on their streams, with nothing between.
		if _, err := onA[0].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: "j2-j3"}); err != nil {
			t.Fatal(err)
		}
		for who, w := range map[string]*watchItems{"Red": redW, "spectator": specW} {
			got, _ := premovesOf(t, who, w.until(t, eventAt(14)), 0)
			checkQueues(t, who, got)
		}
	})
}

// TestPremoveDroppedWhenIllegal: a premove that is illegal when its turn
// comes drops the whole queue, the owner is told, and the seat's clock
// runs; a seat that resigns and a match that is aborted drop theirs; a
// resumed stream shows the queue as it is.
func TestPremoveDroppedWhenIllegal(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(nil)
		// The seed fixes Yellow's zombie move below.
		id := e.create(inst.addr, func(r *matchv1.CreateMatchRequest) { r.Seed = proto.Uint64(1) }).GetMatchId()
		cs := e.seatClients(inst.addr)
		blueW, greenW := watchAll(t, cs[1], id, 0), watchAll(t, cs[3], id, 0)

		// The second m4-l4 is illegal once the first was played.
		setPremoves(t, cs[1], id, "m4-l4", "m4-l4", "m5-l5")
		if _, err := cs[0].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: "d2-d3"}); err != nil {
			t.Fatal(err)
		}
		for s := 2; s < 4; s++ {
			if _, err := cs[s].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: rounds[0][s]}); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := cs[0].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: "e2-e3"})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetEvents()) != 1 || resp.GetToMove() != gamev1.Seat_SEAT_BLUE {
			t.Fatalf("Red's move with Blue's premove illegal: %d events, %v to move; want 1, Blue", len(resp.GetEvents()), resp.GetToMove())
		}
		dropped := queue(gamev1.Seat_SEAT_BLUE, matchv1.PremoveChange_PREMOVE_CHANGE_ILLEGAL, 6, "m4-l4")
		got, _ := premovesOf(t, "Blue", blueW.until(t, func(r *matchv1.WatchMatchResponse) bool {
			return r.GetPremoves().GetChange() == matchv1.PremoveChange_PREMOVE_CHANGE_ILLEGAL
		}), 0)
		checkQueues(t, "Blue", got,
			queue(gamev1.Seat_SEAT_BLUE, matchv1.PremoveChange_PREMOVE_CHANGE_SET, 1, "", "m4-l4", "m4-l4", "m5-l5"),
			queue(gamev1.Seat_SEAT_BLUE, matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED, 3, "m4-l4", "m4-l4", "m5-l5"),
			dropped)
		m, err := cs[1].GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		if c := m.GetMatch().GetClocks()[1]; !c.GetRunning() || len(m.GetMatch().GetLegalMoves()) == 0 {
			t.Fatalf("Blue after the dropped premove: clock %v, %d legal moves; want its clock running and moves", c, len(m.GetMatch().GetLegalMoves()))
		}
		// A stream resumed after the drop shows the queue as it is, after
		// the missed events.
		resumed := watchAll(t, cs[1], id, 3)
		got, _ = premovesOf(t, "Blue resumed", resumed.until(t, func(r *matchv1.WatchMatchResponse) bool { return r.GetPremoves() != nil }), 3)
		checkQueues(t, "Blue resumed", got, dropped)

		// Blue plays; Yellow resigns with a queue; Green's queue is
		// dropped when the match is aborted.
		if _, err := cs[1].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: "m5-l5"}); err != nil {
			t.Fatal(err)
		}
		setPremoves(t, cs[3], id, "b5-c5")
		if q := setPremoves(t, cs[3], id, "b11-c11", "b10-c10"); len(q.GetMoves()) != 2 {
			t.Fatalf("a second SetPremoves gives %v, want it to replace the queue", q)
		}
		if _, err := cs[3].ClearPremoves(t.Context(), &matchv1.ClearPremovesRequest{MatchId: id}); err != nil {
			t.Fatal(err)
		}
		setPremoves(t, cs[3], id, "b5-c5")
		if _, err := cs[2].Resign(t.Context(), &matchv1.ResignRequest{MatchId: id}); err != nil {
			t.Fatal(err)
		}
		// Yellow resigned on its turn: its zombie moved, and Green's
		// premove fired at once.
		m, err = cs[3].GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		if m.GetMatch().GetToMove() != gamev1.Seat_SEAT_RED || m.GetMatch().GetPremoves()[0].GetChange() != matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED {
			t.Fatalf("after Yellow's resignation: %v to move, Green's queue %v; want Red, played", m.GetMatch().GetToMove(), m.GetMatch().GetPremoves())
		}
		v := m.GetMatch().GetVersion()
		setPremoves(t, cs[3], id, "b11-c11")
		op := e.client(inst.addr, e.token("op", auth.RoleOperator))
		if _, err := op.AbortMatch(t.Context(), &matchv1.AbortMatchRequest{MatchId: id, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		items := greenW.until(t, func(r *matchv1.WatchMatchResponse) bool { return r.GetEvent().GetMatchAborted() != nil })
		got, _ = premovesOf(t, "Green", items, 0)
		checkQueues(t, "Green", got,
			queue(gamev1.Seat_SEAT_GREEN, matchv1.PremoveChange_PREMOVE_CHANGE_SET, 7, "", "b5-c5"),
			queue(gamev1.Seat_SEAT_GREEN, matchv1.PremoveChange_PREMOVE_CHANGE_SET, 7, "", "b11-c11", "b10-c10"),
			queue(gamev1.Seat_SEAT_GREEN, matchv1.PremoveChange_PREMOVE_CHANGE_CLEARED, 7, ""),
			queue(gamev1.Seat_SEAT_GREEN, matchv1.PremoveChange_PREMOVE_CHANGE_SET, 7, "", "b5-c5"),
			queue(gamev1.Seat_SEAT_GREEN, matchv1.PremoveChange_PREMOVE_CHANGE_PLAYED, v, "b5-c5"),
			queue(gamev1.Seat_SEAT_GREEN, matchv1.PremoveChange_PREMOVE_CHANGE_SET, v, "", "b11-c11"))
		// The stream ends with the final event; GetMatch shows the queue
		// dropped with it.
		select {
		case r, open := <-greenW.items:
			if open {
				t.Fatalf("Green's stream after the abort: %v", r)
			}
			if greenW.err != io.EOF {
				t.Fatalf("Green's stream after the abort: %v, want its end", greenW.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Green's stream did not end after the abort")
		}
		m, err = cs[3].GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		checkQueues(t, "Green's GetMatch", m.GetMatch().GetPremoves(), queue(gamev1.Seat_SEAT_GREEN, matchv1.PremoveChange_PREMOVE_CHANGE_MATCH_OVER, v+1, ""))
	})
}
