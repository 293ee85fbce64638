package main

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

// watchStream is the client side of a WatchMatch stream.
type watchStream = grpc.ServerStreamingClient[matchv1.WatchMatchResponse]

// follower reads one stream and checks it against the match's history
// as the players saw it.
type follower struct {
	name   string
	stream watchStream
	last   uint64
	live   bool // a player's stream: no delay
}

// TestSpectatorDelay plays a match on an instance with the default delay
// (4 plies). After every change, Red's stream has every event, while a
// spectator's stream, a second spectator's stream resumed mid-game, and the
// spectator's GetMatch and ExportGame stop at the last event whose ply is
// 4 behind the live ply (Blue's resignation with its ply). Blue, out after
// resigning, still sees the game live, and resumes live. At the end every
// stream gets the rest at once, event for event what Red got.
func TestSpectatorDelay(t *testing.T) {
	forEachBackend(t, testSpectatorDelay)
}

func testSpectatorDelay(t *testing.T, e *env) {
	const delay = 4
	inst := e.start(nil)
	id := e.create(inst.addr, nil).GetMatchId()
	cs := e.seatClients(inst.addr)
	spec := e.client(inst.addr, e.token("spectator", auth.RolePlayer))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	watch := func(c matchv1.MatchServiceClient, from uint64) watchStream {
		t.Helper()
		s, err := c.WatchMatch(ctx, &matchv1.WatchMatchRequest{MatchId: id, FromVersion: from})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// history[v] is the event of version v as Red received it.
	history := []*eventsv1.MatchEvent{nil, nil}
	red := watch(cs[0], 0)
	first := recvN(t, red, 1)[0].GetSnapshot()
	fens := []string{first.GetFen4()} // the position after each ply
	live := func() *matchv1.Match {
		t.Helper()
		resp, err := cs[0].GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetMatch()
	}
	specs := []*follower{{name: "spectator", stream: watch(spec, 0)}}
	if s := recvN(t, specs[0].stream, 1)[0].GetSnapshot(); s.GetVersion() != 1 {
		t.Fatalf("spectator's first snapshot at version %d, want 1", s.GetVersion())
	}
	specs[0].last = 1

	// check brings Red's stream to the live version and each follower to
	// the last version visible with the delay, and checks the views.
	check := func(what string) {
		t.Helper()
		m := live()
		for uint64(len(history)) <= m.GetVersion() {
			it := recvN(t, red, 1)[0]
			if it.GetVersion() != uint64(len(history)) {
				t.Fatalf("%s: Red got version %d, want %d", what, it.GetVersion(), len(history))
			}
			history = append(history, it.GetEvent())
		}
		for len(fens) <= int(m.GetPly()) {
			fens = append(fens, "")
		}
		fens[m.GetPly()] = m.GetFen4()
		want := uint64(1)
		for v := uint64(2); v <= m.GetVersion() && history[v].GetPly()+delay <= m.GetPly(); v++ {
			want = v
		}
		for _, f := range specs {
			target := want
			if f.live {
				target = m.GetVersion()
			}
			for f.last < target {
				it := recvN(t, f.stream, 1)[0]
				v := it.GetVersion()
				if v != f.last+1 || !proto.Equal(it.GetEvent(), history[v]) {
					t.Fatalf("%s: %s got %v, want event %d as Red got it", what, f.name, it, f.last+1)
				}
				if ply := it.GetEvent().GetPly(); !f.live && ply+delay > m.GetPly() {
					t.Fatalf("%s: %s got version %d of ply %d at live ply %d", what, f.name, v, ply, m.GetPly())
				}
				if len(it.GetLegalMoves()) > 0 {
					t.Fatalf("%s: %s was offered moves", what, f.name)
				}
				f.last = v
			}
		}
		ply := history[want].GetPly()
		if want == 1 {
			ply = 0
		}
		resp, err := spec.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
		if err != nil {
			t.Fatal(err)
		}
		v := resp.GetMatch()
		if v.GetVersion() != want || v.GetPly() != ply || (fens[ply] != "" && v.GetFen4() != fens[ply]) || len(v.GetLegalMoves()) > 0 {
			t.Fatalf("%s: spectator's GetMatch at version %d ply %d (%d legal moves), want version %d ply %d", what,
				v.GetVersion(), v.GetPly(), len(v.GetLegalMoves()), want, ply)
		}
		// Last move, points and remaining times are those of the last
		// visible events that carry them.
		var lastMove *eventsv1.MoveApplied
		var points []*gamev1.SeatPoints
		for _, ev := range history[2 : want+1] {
			if mv := ev.GetMoveApplied(); mv != nil {
				lastMove, points = mv, mv.GetPoints()
			}
			if el := ev.GetPlayerEliminated(); el != nil {
				points = el.GetPoints()
			}
		}
		if !proto.Equal(v.GetLastMove(), lastMove.GetEffects()) {
			t.Fatalf("%s: spectator's last move %v, want %v", what, v.GetLastMove(), lastMove.GetEffects())
		}
		for _, p := range points {
			if got := v.GetSeats()[p.GetSeat()-1].GetPoints(); got != p.GetPoints() {
				t.Fatalf("%s: spectator sees %v with %d points, the last visible event %d", what, p.GetSeat(), got, p.GetPoints())
			}
		}
		for i, cl := range v.GetClocks() {
			if cl.GetRunning() || cl.GetTurnDeadline() != nil {
				t.Fatalf("%s: the spectator sees a running clock %v", what, cl)
			}
			if lastMove != nil && !proto.Equal(cl.GetRemaining(), lastMove.GetClocks()[i].GetRemaining()) {
				t.Fatalf("%s: spectator's clock %v, the last visible move recorded %v", what, cl, lastMove.GetClocks()[i])
			}
		}
		if pl := exportedPlies(t, ctx, spec, id); pl != int(ply) {
			t.Fatalf("%s: spectator's export has %d plies, want %d", what, pl, ply)
		}
		// Players, Blue out or not, see the live game.
		for s, c := range cs[:2] {
			resp, err := c.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
			if err != nil {
				t.Fatal(err)
			}
			if v := resp.GetMatch(); v.GetVersion() != m.GetVersion() || v.GetPly() != m.GetPly() {
				t.Fatalf("%s: %v's GetMatch at version %d, want the live %d", what, v.GetSeats()[s].GetSeat(), v.GetVersion(), m.GetVersion())
			}
			if pl := exportedPlies(t, ctx, c, id); pl != int(m.GetPly()) {
				t.Fatalf("%s: seat %d's export has %d plies, want %d", what, s, pl, m.GetPly())
			}
		}
	}

	rng := rand.New(rand.NewPCG(3, 5))
	for k := 1; k <= 6; k++ {
		playMoves(t, cs, id, 1, rng)
		check("move " + strconv.Itoa(k))
	}
	// A spectator resumes from a version it saw: the visible events after
	// it at once, later ones as they become visible. Beyond what it was
	// shown it may not resume.
	if _, err := watch(spec, live().GetVersion()).Recv(); status.Code(err) != codes.OutOfRange {
		t.Fatalf("spectator resuming from the live version: %v, want OUT_OF_RANGE", err)
	}
	resumed := &follower{name: "resumed spectator", stream: watch(spec, specs[0].last-1), last: specs[0].last - 1}
	specs = append(specs, resumed)
	check("resume")

	// Blue resigns: the event travels with its ply.
	if _, err := cs[1].Resign(ctx, &matchv1.ResignRequest{MatchId: id}); err != nil {
		t.Fatal(err)
	}
	check("Blue's resignation")
	// Blue is out, and resumes its stream: still live.
	v := live().GetVersion()
	specs = append(specs, &follower{name: "Blue", stream: watch(cs[1], v), last: v, live: true})
	for k := 7; k <= 14; k++ {
		playMoves(t, cs, id, 1, rng)
		check("move " + strconv.Itoa(k))
	}
	for _, c := range []matchv1.MatchServiceClient{cs[2], cs[3]} {
		if _, err := c.Resign(ctx, &matchv1.ResignRequest{MatchId: id}); err != nil {
			t.Fatal(err)
		}
	}
	m := live()
	if m.GetStatus() != matchv1.MatchStatus_MATCH_STATUS_FINISHED {
		t.Fatalf("status %v after three resignations", m.GetStatus())
	}
	for uint64(len(history)) <= m.GetVersion() {
		history = append(history, recvN(t, red, 1)[0].GetEvent())
	}
	// The end: everything at once, then the stream ends.
	for _, f := range specs {
		for f.last < m.GetVersion() {
			it := recvN(t, f.stream, 1)[0]
			if v := it.GetVersion(); v != f.last+1 || !proto.Equal(it.GetEvent(), history[v]) {
				t.Fatalf("end: %s got %v, want event %d as Red got it", f.name, it, f.last+1)
			}
			f.last++
		}
		if _, err := f.stream.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("%s's stream after GameOver: %v, want its end", f.name, err)
		}
	}
	resp, err := spec.GetMatch(ctx, &matchv1.GetMatchRequest{MatchId: id})
	if err != nil || !proto.Equal(resp.GetMatch(), m) {
		t.Fatalf("spectator's GetMatch after the end differs from Red's: %v", err)
	}
	if exportedPlies(t, ctx, spec, id) != int(m.GetPly()) {
		t.Fatal("spectator's export after the end is not the whole game")
	}
}

// exportedPlies returns the plies of the match's PGN4 export as c sees it.
func exportedPlies(t *testing.T, ctx context.Context, c matchv1.MatchServiceClient, id string) int {
	t.Helper()
	resp, err := c.ExportGame(ctx, &matchv1.ExportGameRequest{MatchId: id})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rules.ParsePGN4(resp.GetPgn4(), nil)
	if err != nil {
		t.Fatalf("export does not re-import: %v\n%s", err, resp.GetPgn4())
	}
	return rec.Game.Ply()
}

// TestSpectatorDelaySetting: MATCH_SPECTATOR_DELAY sets how many plies
// behind a spectator's GetMatch and ExportGame are; 0 is live. Players,
// services and operators see the live game whatever the setting.
func TestSpectatorDelaySetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, standalone(t))
	tests := []struct {
		setting string
		delay   int
	}{
		{"", 4},
		{"0", 0},
		{"2", 2},
	}
	const moves = 5
	for _, tt := range tests {
		t.Run("delay="+tt.setting, func(t *testing.T) {
			env := map[string]string{}
			if tt.setting != "" {
				env["MATCH_SPECTATOR_DELAY"] = tt.setting
			}
			inst := e.start(env)
			id := e.create(inst.addr, nil).GetMatchId()
			cs := e.seatClients(inst.addr)
			playMoves(t, cs, id, moves, rand.New(rand.NewPCG(9, 9)))
			viewers := []struct {
				name string
				c    matchv1.MatchServiceClient
				ply  int
			}{
				{"spectator", e.client(inst.addr, e.token("spectator", auth.RolePlayer)), moves - tt.delay},
				{"Green", cs[3], moves},
				{"service", e.client(inst.addr, e.token("tables", auth.RoleService)), moves},
				{"operator", e.client(inst.addr, e.token("admin", auth.RoleOperator)), moves},
			}
			for _, v := range viewers {
				resp, err := v.c.GetMatch(t.Context(), &matchv1.GetMatchRequest{MatchId: id})
				if err != nil {
					t.Fatal(err)
				}
				if got := int(resp.GetMatch().GetPly()); got != v.ply {
					t.Errorf("%s's GetMatch at ply %d, want %d", v.name, got, v.ply)
				}
				if got := exportedPlies(t, t.Context(), v.c, id); got != v.ply {
					t.Errorf("%s's export has %d plies, want %d", v.name, got, v.ply)
				}
			}
		})
	}
}
