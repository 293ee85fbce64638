package matchcheck

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	matchv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/match/v1"
)

const (
	R, B, Y, G = gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN
	// Yellow and Green out, Red to move mates Blue with Qc4-b5.
	fenRedMatesBlue = "R-0,0,1,1-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/14/14/13,gK/14/1,bP,12/bK,13/1,rR,rQ,11/14/14/7,rK,6"
	// Blue is a zombie; Red's Re5xQe10 takes its queen.
	fenBlueZombie = "R-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/4,bQ,9/14/13,bK/gK,13/14/4,rR,9/14/14/14/7,rK,6-{zombie:0,1,0,0}"
	// Green's zombie king (alone on a4) is stalemated when its turn comes
	// after Yellow's move.
	fenZombieKingStalemate = "Y-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/1,rR,12/14/14/13,bK/14/2,rN,11/14/gK,13/14/14/7,rK,6-{zombie:0,0,0,1}"
)

func pts(r, b, y, g int32) []*gamev1.SeatPoints {
	return []*gamev1.SeatPoints{{Seat: R, Points: r}, {Seat: B, Points: b}, {Seat: Y, Points: y}, {Seat: G, Points: g}}
}

// opening: Red moves, Blue resigns on its turn and its zombie moves at
// once, Yellow moves, then the match is aborted.
func opening(t *testing.T) []*eventsv1.MatchEvent {
	evs, _ := streamOf(t, rules.FourKingdoms(), "", 1, "h2-h3", "resign Blue", "h13-h12")
	return append(evs, &eventsv1.MatchEvent{Version: uint64(len(evs) + 1), Ply: 3,
		Event: &eventsv1.MatchEvent_MatchAborted{MatchAborted: &eventsv1.MatchAborted{Reason: "test"}}})
}

// capture: Red takes a zombie's queen (worth 0, not dead under
// fourkingdoms); the zombie moves.
func capture(t *testing.T) []*eventsv1.MatchEvent {
	evs, _ := streamOf(t, rules.FourKingdoms(), fenBlueZombie, 1, "Re5xQe10")
	return evs
}

// mate: Red mates Blue, the last opponent in play.
func mate(t *testing.T) []*eventsv1.MatchEvent {
	evs, _ := streamOf(t, rules.FourKingdoms(), fenRedMatesBlue, 1, "Qc4-b5")
	return evs
}

// resigned: Blue, the last opponent in play, resigns and Red gets the
// bonus for Blue's king.
func resigned(t *testing.T) []*eventsv1.MatchEvent {
	evs, _ := streamOf(t, rules.FourKingdoms(), fenRedMatesBlue, 1, "resign Blue")
	return evs
}

// timedOut: Red's time runs out at the start; its zombie moves at once.
func timedOut(t *testing.T) []*eventsv1.MatchEvent {
	evs, _ := streamOf(t, rules.FourKingdoms(), "", 1, "timeout Red")
	return evs
}

// zombieKingStalemate: under chesscom-ffa Green's zombie king is
// stalemated on its turn and pays each live seat 7 points.
func zombieKingStalemate(t *testing.T) []*eventsv1.MatchEvent {
	evs, _ := streamOf(t, rules.ChesscomFFA(), fenZombieKingStalemate, 1, "Kg14-f14")
	return evs
}

// passOn: under chesscom-ffa a resignation on turn passes the turn on.
func passOn(t *testing.T) []*eventsv1.MatchEvent {
	evs, _ := streamOf(t, rules.ChesscomFFA(), "", 1, "h2-h3", "resign Blue", "resign Yellow")
	return evs
}

// insufficient: under chesscom-ffa Blue, with a queen, resigns against
// Red's bare king, the last opponent in play: a draw by insufficient
// material, 10 each (docs/rules.md section 13.3.14).
func insufficient(t *testing.T) []*eventsv1.MatchEvent {
	evs, _ := streamOf(t, rules.ChesscomFFA(), fenBlueQueenRedBareKing, 1, "resign Blue")
	return evs
}

// claimed: under chesscom-ffa Red, 50 to Green's 29 with Blue and Yellow
// out, claims the win: +20 for Green's king (docs/rules.md section 8.3).
func claimed(t *testing.T) []*eventsv1.MatchEvent {
	evs, _ := streamOf(t, rules.ChesscomFFA(), fenRedLeadsGreen, 1, "claim Red")
	return evs
}

// autoClaimed: under fourkingdoms with the auto-claim on, Red 60, Green
// 0, Yellow a bare king, Blue out. Yellow resigns: Green can reach at most
// 49 (Red's king and queen, Yellow's zombie king), so the server claims for
// Red.
func autoClaimed(t *testing.T) []*eventsv1.MatchEvent {
	rs := rules.FourKingdoms()
	rs.AutoClaimWin = true
	evs, _ := streamOf(t, rs, fenRedFarAhead, 1, "resign Yellow")
	return evs
}

const fenRedFarAhead = "R-0,1,0,0-0,0,0,0-0,0,0,0-60,0,0,0-0-6,yK,7/14/14/14/14/14/13,gK/14/14/14/4,rQ,9/14/14/7,rK,6"

const fenRedLeadsGreen = "R-0,1,1,0-0,0,0,0-0,0,0,0-50,0,0,29-0-14/14/14/14/14/14/13,gK/14/14/14/4,rQ,9/14/14/7,rK,6"

// Yellow and Green out; Red has a bare king, Blue a queen.
const fenBlueQueenRedBareKing = "R-0,0,1,1-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/14/14/13,gK/14/1,bQ,12/bK,13/14/14/14/7,rK,6"

func check(evs []*eventsv1.MatchEvent) error {
	var c Checker
	for _, ev := range evs {
		if err := c.Event(ev); err != nil {
			return err
		}
	}
	return nil
}

func TestValidStreams(t *testing.T) {
	t.Parallel()
	for name, evs := range map[string][]*eventsv1.MatchEvent{
		"opening": opening(t), "capture": capture(t), "mate": mate(t), "resigned": resigned(t), "timed out": timedOut(t),
		"zombie king stalemate": zombieKingStalemate(t), "resigning passes the turn": passOn(t), "insufficient": insufficient(t),
		"claimed win": claimed(t), "auto-claimed win": autoClaimed(t),
	} {
		var c Checker
		for _, ev := range evs {
			if err := c.Event(ev); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if !c.Replaying() {
			t.Errorf("%s: not replayed from MatchCreated", name)
		}
	}
}

// The scenarios' shapes the mutations below rely on.
func TestScenarios(t *testing.T) {
	t.Parallel()
	kinds := func(evs []*eventsv1.MatchEvent) string {
		var out []string
		for _, ev := range evs {
			out = append(out, strings.TrimPrefix(string(ev.ProtoReflect().WhichOneof(ev.ProtoReflect().Descriptor().Oneofs().ByName("event")).Name()), "player_"))
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		name string
		evs  []*eventsv1.MatchEvent
		want string
	}{
		{"opening", opening(t), "match_created move_applied resigned move_applied move_applied match_aborted"},
		{"capture", capture(t), "match_created move_applied move_applied"},
		{"mate", mate(t), "match_created move_applied eliminated game_over"},
		{"resigned", resigned(t), "match_created resigned game_over"},
		{"insufficient", insufficient(t), "match_created resigned game_over"},
		{"timed out", timedOut(t), "match_created timed_out move_applied"},
		{"zombie king stalemate", zombieKingStalemate(t), "match_created move_applied eliminated"},
		{"resigning passes the turn", passOn(t), "match_created move_applied resigned resigned"},
		{"auto-claimed win", autoClaimed(t), "match_created resigned win_claimed game_over"},
	} {
		if got := kinds(tt.evs); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	if bp := zombieKingStalemate(t)[2].GetPlayerEliminated().GetBonusPoints(); len(bp) != 3 || bp[0].GetPoints() != 7 {
		t.Errorf("zombie king stalemate pays %v, want 7 to each of three live seats", bp)
	}
}

func TestViolations(t *testing.T) {
	t.Parallel()
	type stream = []*eventsv1.MatchEvent
	move := func(ev *eventsv1.MatchEvent) *gamev1.MoveEffects { return ev.GetMoveApplied().GetEffects() }
	tests := []struct {
		name    string
		base    func(*testing.T) stream
		version uint64 // the version the error must name
		want    string // in the error
		mutate  func(e stream) stream
	}{
		{"no MatchCreated first", opening, 2, "not MatchCreated", func(e stream) stream { return e[1:] }},
		{"claim by the trailing seat", claimed, 2, "claimed the win leading by", func(e stream) stream { e[1].GetWinClaimed().Seat = G; return e }},
		{"claim called automatic", claimed, 2, "does not allow it", func(e stream) stream { e[1].GetWinClaimed().Automatic = true; return e }},
		{"auto-claim the match turned off", autoClaimed, 3, "does not allow it", func(e stream) stream {
			e[0].GetMatchCreated().AutoClaimWin = proto.Bool(false)
			return e
		}},
		{"claimed win without WinClaimed", claimed, 2, "without a WinClaimed", func(e stream) stream {
			e = append(e[:1], e[2:]...)
			e[1].Version = 2
			return e
		}},
		{"version gap", opening, 5, "follows", func(e stream) stream { e[3].Version = 5; return e }},
		{"repeated version", opening, 2, "follows", func(e stream) stream { e[2].Version = 2; return e }},
		{"ply not +1", opening, 4, "ply", func(e stream) stream { e[3].Ply = 3; return e }},
		{"ply moves without a move", opening, 3, "ply", func(e stream) stream { e[2].Ply = 2; return e }},
		{"wrong mover", opening, 4, "was named to move", func(e stream) stream { move(e[3]).Seat = Y; return e }},
		{"first mover not MatchCreated's", opening, 2, "was named to move", func(e stream) stream { move(e[1]).Seat = B; return e }},
		{"zombie move not flagged", opening, 4, "is_zombie_move", func(e stream) stream { move(e[3]).IsZombieMove = false; return e }},
		{"points do not add up", opening, 2, "add up", func(e stream) stream { e[1].GetMoveApplied().Points = pts(1, 0, 0, 0); return e }},
		{"points gained without a reason", opening, 5, "gained", func(e stream) stream {
			move(e[4]).PointsGained = 1
			e[4].GetMoveApplied().Points = pts(0, 0, 1, 0)
			return e
		}},
		{"frozen points differ", opening, 3, "frozen", func(e stream) stream { e[2].GetPlayerResigned().FrozenPoints = 5; return e }},
		{"illegal move", opening, 5, "not legal", func(e stream) stream { move(e[4]).Move = "h12-h10"; return e }},
		{"a zombie move the zombie may not make", opening, 4, "not legal", func(e stream) stream { move(e[3]).Move = "n5-m6"; return e }},
		{"move effects differ from the engine's", opening, 2, "effects", func(e stream) stream { move(e[1]).To.Name = "h4"; return e }},
		{"to_move differs from the engine's", opening, 5, "to_move", func(e stream) stream { e[4].GetMoveApplied().ToMove = R; return e }},
		{"event after the end", opening, 7, "after the match ended", func(e stream) stream {
			return append(e, &eventsv1.MatchEvent{Version: 7, Ply: 3, Event: &eventsv1.MatchEvent_MatchAborted{MatchAborted: &eventsv1.MatchAborted{}}})
		}},
		{"zombie's piece worth points", capture, 2, "gained", func(e stream) stream {
			move(e[1]).PointsGained = 9
			e[1].GetMoveApplied().Points = pts(9, 0, 0, 0)
			return e
		}},
		{"zombie's piece dead under fourkingdoms", capture, 2, "dead", func(e stream) stream { move(e[1]).Captured.Dead = true; return e }},
		{"capture not reported", capture, 2, "effects", func(e stream) stream { move(e[1]).Captured = nil; return e }},
		{"announced elimination missing", mate, 3, "missing", func(e stream) stream {
			e[3].Version = 3
			return append(e[:2], e[3])
		}},
		{"elimination differs from the move's", mate, 3, "announced", func(e stream) stream {
			e[2].GetPlayerEliminated().Elimination.AwardedPoints = 0
			return e
		}},
		{"mated seat without elimination", mate, 2, "without an elimination", func(e stream) stream {
			move(e[1]).MatedSeats = []gamev1.Seat{G}
			return e
		}},
		{"mated seat listed as checked", mate, 2, "effects", func(e stream) stream { move(e[1]).CheckedSeats = []gamev1.Seat{B}; return e }},
		{"unannounced king capture", mate, 3, "not announced", func(e stream) stream {
			move(e[1]).Eliminations = nil
			move(e[1]).MatedSeats = nil
			move(e[1]).PointsGained = 0
			e[1].GetMoveApplied().Points = pts(0, 0, 0, 0)
			e[2].GetPlayerEliminated().Elimination.Reason = gamev1.ExitReason_EXIT_REASON_KING_CAPTURED
			return e
		}},
		{"result points of eliminated seat", mate, 3, "result points", func(e stream) stream {
			e[2].GetPlayerEliminated().ResultPoints = 3
			return e
		}},
		{"all out is not last player standing", mate, 4, "termination", func(e stream) stream {
			e[3].GetGameOver().Result.Termination = gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING
			return e
		}},
		{"a zombie left is not all opponents out", resigned, 3, "termination", func(e stream) stream {
			e[2].GetGameOver().Result.Termination = gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT
			return e
		}},
		{"insufficient material under fourkingdoms", insufficient, 3, "termination", func(e stream) stream {
			e[0].GetMatchCreated().RuleSet = "fourkingdoms"
			return e
		}},
		{"insufficient material without the leaver's draw points", insufficient, 3, "result points", func(e stream) stream {
			e[2].GetGameOver().Result.Points = pts(10, 0, 0, 0)
			e[2].GetGameOver().Result.Ranking = []gamev1.Seat{R, G, Y, B}
			return e
		}},
		{"missing last-player bonus", resigned, 3, "result points", func(e stream) stream {
			e[2].GetGameOver().Result.Points = pts(0, 0, 0, 0)
			return e
		}},
		{"result points do not add up", mate, 4, "result points", func(e stream) stream {
			e[3].GetGameOver().Result.Points = pts(20, 1, 0, 0)
			return e
		}},
		{"tie broken the wrong way", mate, 4, "ranking", func(e stream) stream {
			e[3].GetGameOver().Result.Ranking = []gamev1.Seat{R, B, Y, G}
			return e
		}},
		{"move by a seat that is out", mate, 4, "is out", func(e stream) stream {
			e[1].GetMoveApplied().ToMove = B
			e[3] = &eventsv1.MatchEvent{Version: 4, Ply: 2, Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{
				Effects: &gamev1.MoveEffects{Move: "a5-a6", Seat: B}, ToMove: R, Points: pts(20, 0, 0, 0)}}}
			return e
		}},
		{"the engine stalemates a seat the stream keeps", zombieKingStalemate, 3, "the replay expects", func(e stream) stream {
			e[2] = &eventsv1.MatchEvent{Version: 3, Ply: 1, Event: &eventsv1.MatchEvent_MatchAborted{MatchAborted: &eventsv1.MatchAborted{}}}
			return e
		}},
		{"the replay catches an out seat named to move", mate, 2, "to_move", func(e stream) stream {
			e[1].GetMoveApplied().ToMove = B
			return e
		}},
		{"zombie king's stalemate bonus not reported", zombieKingStalemate, 3, "bonus", func(e stream) stream {
			e[2].GetPlayerEliminated().BonusPoints = nil
			e[2].GetPlayerEliminated().Points = pts(0, 0, 0, 0)
			return e
		}},
		{"bonus reported but not in the points", zombieKingStalemate, 3, "add up", func(e stream) stream {
			e[2].GetPlayerEliminated().Points = pts(0, 0, 0, 0)
			return e
		}},
		{"bonus paid to a zombie", zombieKingStalemate, 3, "bonus", func(e stream) stream {
			pe := e[2].GetPlayerEliminated()
			pe.BonusPoints = append(pe.BonusPoints, &gamev1.SeatPoints{Seat: G, Points: 7})
			return e
		}},
		{"timed out seat's zombie does not move", timedOut, 3, "SEAT_BLUE moved", func(e stream) stream {
			move(e[2]).Seat = B
			return e
		}},
	}
	// These turn the replay off after MatchCreated, to test the event
	// layer's own checks where the replay would see the violation first.
	eventsOnly := map[string]bool{"elimination differs from the move's": true, "unannounced king capture": true,
		"move by a seat that is out": true, "mated seat without elimination": true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := check(tt.base(t)); err != nil {
				t.Fatalf("the unmutated stream fails: %v", err)
			}
			var c Checker
			for _, ev := range tt.mutate(tt.base(t)) {
				err := c.Event(ev)
				if eventsOnly[tt.name] {
					c.g = nil
				}
				if err == nil {
					continue
				}
				if !errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want a violation saying %q", err, tt.want)
				}
				if ev.GetVersion() != tt.version {
					t.Fatalf("%v reported at version %d, want %d", err, ev.GetVersion(), tt.version)
				}
				return
			}
			t.Fatal("no violation found")
		})
	}
}

// snapshotOf is the match state after evs[:n], as the server sends it.
func snapshotOf(t *testing.T, evs []*eventsv1.MatchEvent, n int, g *rules.Game) *matchv1.Match {
	t.Helper()
	last := evs[n-1]
	m := &matchv1.Match{RuleSet: g.Rules().Name, Status: matchv1.MatchStatus_MATCH_STATUS_ACTIVE, Version: last.GetVersion(),
		Ply: uint32(g.Ply()), ToMove: gamev1.Seat(g.ToMove() + 1), Fen4: g.FEN4()}
	p, rp := g.Points(), g.ResultPoints()
	for s := range rules.NumSeats {
		m.Seats = append(m.Seats, &matchv1.SeatState{Seat: gamev1.Seat(s + 1), Status: seatStatus(g.Status(rules.Seat(s))),
			Points: int32(p[s]), ResultPoints: int32(rp[s])})
	}
	return m
}

// TestSnapshotThenEvents starts from a snapshot, as Follow does: after
// version 1 only the event layer runs; at version 1 the replay starts.
func TestSnapshotThenEvents(t *testing.T) {
	t.Parallel()
	evs, _ := streamOf(t, rules.FourKingdoms(), "", 1, "h2-h3", "resign Blue", "h13-h12")
	_, g := streamOf(t, rules.FourKingdoms(), "", 1, "h2-h3", "resign Blue")
	// After the resignation's two events.
	var c Checker
	if err := c.Snapshot(snapshotOf(t, evs, 4, g)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs[4:] {
		if err := c.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if c.Replaying() {
		t.Error("replaying from a snapshot after version 1")
	}
	c = Checker{}
	if err := c.Snapshot(snapshotOf(t, evs, 4, g)); err != nil {
		t.Fatal(err)
	}
	gap := proto.Clone(evs[4]).(*eventsv1.MatchEvent)
	gap.Version++
	if err := c.Event(gap); !errors.Is(err, ErrViolation) {
		t.Fatalf("gap after a snapshot: got %v", err)
	}

	start, _ := streamOf(t, rules.FourKingdoms(), "", 1)
	g0, _ := rules.NewGame(rules.FourKingdoms(), 1, "")
	c = Checker{}
	if err := c.Snapshot(snapshotOf(t, start, 1, g0)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs[1:] {
		if err := c.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if !c.Replaying() {
		t.Error("not replaying from the snapshot at version 1")
	}
}

// TestSnapshotAgreesWithReplay: a snapshot at the version the checker has
// replayed must be the replayed state.
func TestSnapshotAgreesWithReplay(t *testing.T) {
	t.Parallel()
	evs, g := streamOf(t, rules.FourKingdoms(), "", 1, "h2-h3", "resign Blue")
	tests := []struct {
		name   string
		mutate func(m *matchv1.Match)
		want   string // "" for no violation
	}{
		{"the same state", func(*matchv1.Match) {}, ""},
		{"another position", func(m *matchv1.Match) { m.Fen4 = "G" + m.Fen4[1:] }, "fen4"},
		{"another seat to move", func(m *matchv1.Match) { m.ToMove = G }, "to move"},
		{"another status", func(m *matchv1.Match) { m.Seats[1].Status = gamev1.SeatStatus_SEAT_STATUS_LIVE }, "SEAT_STATUS"},
		{"other points", func(m *matchv1.Match) { m.Seats[0].Points = 3 }, "points"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c Checker
			for _, ev := range evs {
				if err := c.Event(ev); err != nil {
					t.Fatal(err)
				}
			}
			m := snapshotOf(t, evs, len(evs), g)
			tt.mutate(m)
			err := c.Snapshot(m)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Snapshot: %v", err)
			case tt.want != "" && (!errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Snapshot = %v, want a violation saying %q", err, tt.want)
			}
		})
	}
}

func TestLegalMoves(t *testing.T) {
	t.Parallel()
	evs, g := streamOf(t, rules.FourKingdoms(), "", 1, "h2-h3")
	var blue []string
	for _, m := range g.LegalMoves(rules.Blue) {
		blue = append(blue, g.MoveText(m))
	}
	reversed := slices.Clone(blue)
	slices.Reverse(reversed)
	tests := []struct {
		name  string
		seat  gamev1.Seat
		moves []string
		ok    bool
	}{
		{"the seat to move's moves", B, blue, true},
		{"in another order", B, reversed, true},
		{"caller unknown", gamev1.Seat_SEAT_UNSPECIFIED, blue, true},
		{"none offered", R, nil, true},
		{"offered to a seat not to move", R, blue, false},
		{"one missing", B, blue[1:], false},
		{"one too many", B, append(slices.Clone(blue), "m7-m5"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c Checker
			for _, ev := range evs {
				if err := c.Event(ev); err != nil {
					t.Fatal(err)
				}
			}
			err := c.LegalMoves(tt.seat, tt.moves)
			if tt.ok != (err == nil) || err != nil && !errors.Is(err, ErrViolation) {
				t.Fatalf("LegalMoves(%v, %d moves) = %v, want ok=%v", tt.seat, len(tt.moves), err, tt.ok)
			}
		})
	}
	// Blue resigned: its zombie's turn is nobody's to play.
	resign, _ := streamOf(t, rules.FourKingdoms(), "", 1, "resign Blue")
	var c Checker
	for _, ev := range resign[:2] {
		if err := c.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.LegalMoves(gamev1.Seat_SEAT_UNSPECIFIED, []string{"h2-h3"}); !errors.Is(err, ErrViolation) {
		t.Fatalf("moves offered in the middle of a step: %v", err)
	}
}

func TestExport(t *testing.T) {
	t.Parallel()
	steps := []string{"h2-h3", "resign Blue", "h13-h12", "resign Green", "resign Yellow"}
	evs, g := streamOf(t, rules.FourKingdoms(), "", 1, steps...)
	if !g.Over() {
		t.Fatal("the game is not over")
	}
	pgn := g.PGN4(nil)
	other, _ := streamOf(t, rules.FourKingdoms(), "", 2, steps...) // other zombie moves
	_, og := streamOf(t, rules.FourKingdoms(), "", 2, steps...)
	tests := []struct {
		name string
		evs  []*eventsv1.MatchEvent
		pgn  string
		ok   bool
	}{
		{"the same game", evs, pgn, true},
		{"another game", other, pgn, false},
		{"another game's record", evs, og.PGN4(nil), false},
		{"cut short", evs, pgn[:strings.LastIndex(pgn, "..")], false},
		{"not a record", evs, "1. zz", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c Checker
			for _, ev := range tt.evs {
				if err := c.Event(proto.Clone(ev).(*eventsv1.MatchEvent)); err != nil {
					t.Fatal(err)
				}
			}
			err := c.Export(tt.pgn)
			if tt.ok != (err == nil) || err != nil && !errors.Is(err, ErrViolation) {
				t.Fatalf("Export = %v, want ok=%v\n%s", err, tt.ok, tt.pgn)
			}
		})
	}
}
