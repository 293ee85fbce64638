package main

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// TestWatchStreamsShareOnlyWhatIsTheSame: the streams of one match on one
// instance send each live event from one shared encoding (api's
// watchResponse); what differs per viewer must not travel with it. Four
// players and a spectator watch; Blue queues a premove that fires after
// Red's move, then Yellow and Green move. Every stream gets the same
// events; legal moves only on the stream of the seat to move after the
// event (never the spectator's; Red's after Green's move); premove items
// only on Blue's. A stream
// that appended its legal moves to the shared bytes, or a premove notice
// sent through them, fails here.
func TestWatchStreamsShareOnlyWhatIsTheSame(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, e *env) {
		inst := e.start(map[string]string{"MATCH_SPECTATOR_DELAY": "0"})
		id := e.create(inst.addr, nil).GetMatchId()
		cs := e.seatClients(inst.addr)
		spec := e.client(inst.addr, e.token("spectator", auth.RolePlayer))
		var streams [5]*watchItems
		for s := range cs {
			streams[s] = watchAll(t, cs[s], id, 0)
		}
		streams[4] = watchAll(t, spec, id, 0)

		setPremoves(t, cs[1], id, rounds[0][1])
		// Red's move and Blue's premove (versions 2 and 3), then Yellow's
		// and Green's (4 and 5).
		for _, s := range []int{0, 2, 3} {
			if _, err := cs[s].MakeMove(t.Context(), &matchv1.MakeMoveRequest{MatchId: id, Move: rounds[0][s]}); err != nil {
				t.Fatalf("seat %d: %v", s, err)
			}
		}
		const last = 5
		var events [5][]*eventsv1.MatchEvent
		for i, w := range streams {
			who := fmt.Sprintf("stream %d", i)
			if i == 4 {
				who = "spectator"
			}
			items := w.until(t, eventAt(last))
			premoves, _ := premovesOf(t, who, items, 0)
			for _, q := range premoves {
				if i != 1 || q.GetSeat() != gamev1.Seat_SEAT_BLUE {
					t.Errorf("%s got premove item %v", who, q)
				}
			}
			if i == 1 && len(premoves) == 0 {
				t.Errorf("Blue's stream shows no premove item")
			}
			for _, r := range items {
				ev := r.GetEvent()
				if ev == nil {
					continue
				}
				events[i] = append(events[i], ev)
				toMove := ev.GetMoveApplied().GetToMove()
				// Only the last event of a change carries them (Red's
				// move and Blue's premove are one change).
				mine := i < 4 && toMove == gamev1.Seat(i+1)
				if len(r.GetLegalMoves()) > 0 && !mine {
					t.Errorf("%s: event %d (%v to move) came with legal moves %v", who, ev.GetVersion(), toMove, r.GetLegalMoves())
				}
				if ev.GetVersion() == last && mine && len(r.GetLegalMoves()) == 0 {
					t.Errorf("%s: event %d, after which it is to move, came without its legal moves", who, last)
				}
			}
		}
		for i := 1; i < len(events); i++ {
			if len(events[i]) != len(events[0]) {
				t.Fatalf("stream %d got %d events, stream 0 %d", i, len(events[i]), len(events[0]))
			}
			for j := range events[i] {
				if !proto.Equal(events[i][j], events[0][j]) {
					t.Errorf("stream %d event %d differs:\n%v\nstream 0:\n%v", i, j, events[i][j], events[0][j])
				}
			}
		}
		if n := len(events[0]); n != last-1 {
			t.Errorf("%d events after the snapshot, want %d", n, last-1)
		}
	})
}
