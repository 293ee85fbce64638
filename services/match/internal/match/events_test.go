package match

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
	"github.com/fourkingdoms/fourkingdoms/services/match/internal/wire"
)

// step is one engine call in a test: a move as text for the seat to move,
// or a resignation ("resign Blue").
type step struct {
	resign rules.Seat
	move   string
}

func mv(text string) step      { return step{resign: rules.NumSeats, move: text} }
func resign(s rules.Seat) step { return step{resign: s} }
func newTestGame(t *testing.T, rs rules.RuleSet, fen4 string) *rules.Game {
	t.Helper()
	g, err := rules.NewGame(rs, 1, fen4)
	if err != nil {
		t.Fatalf("NewGame(%s): %v", fen4, err)
	}
	return g
}

// run applies the steps and returns every event they produced, as the
// service writes them.
func run(t *testing.T, g *rules.Game, steps ...step) []*eventsv1.MatchEvent {
	t.Helper()
	rec := &record{}
	var out []*eventsv1.MatchEvent
	for _, st := range steps {
		before := g.Points()
		var eff rules.Effects
		var err error
		if st.move == "" {
			eff, err = g.Resign(st.resign)
		} else {
			var m rules.Move
			if m, err = g.ParseMove(st.move); err == nil {
				eff, err = g.Play(g.ToMove(), m)
			}
		}
		if err != nil {
			t.Fatalf("%+v: %v", st, err)
		}
		out = append(out, eventsOf("m", g, &eff, before, uint64(len(out)+2), time.Unix(0, 0), nil, rec)...)
	}
	return out
}

func movesOf(evs []*eventsv1.MatchEvent) []*eventsv1.MoveApplied {
	var out []*eventsv1.MoveApplied
	for _, e := range evs {
		if m := e.GetMoveApplied(); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// Positions: Yellow and Green out, Red to move mates Blue with Qc4-b5 (or
// with Green a zombie); Green out, Red's Ql7-m8 mates Blue and Yellow.
const (
	fenRedMatesBlueAndYellow = "R-0,0,0,1-0,0,0,0-0,0,0,0-0,0,0,0-0-5,yB,yK,yB,6/5,yP,yP,7/14/14/14/12,bP,bR/13,bK/gK,9,rN,rQ,bP,bR/14/1,gP,12/14/14/14/7,rK,6"
	fenRedMatesBlue          = "R-0,0,1,1-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/14/14/13,gK/14/1,bP,12/bK,13/1,rR,rQ,11/14/14/7,rK,6"
	fenRedMatesBlueGreenZ    = "R-0,0,1,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/14/14/13,gK/14/1,bP,12/bK,13/1,rR,rQ,11/14/14/7,rK,6-{zombie:0,0,0,1}"
)

// TestMoveAppliedToMove checks that every MoveApplied names the seat to
// move right after it, also when zombie moves follow in the same call.
func TestMoveAppliedToMove(t *testing.T) {
	t.Parallel()
	R, B, Y, G, none := gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW, gamev1.Seat_SEAT_GREEN, gamev1.Seat_SEAT_UNSPECIFIED
	tests := []struct {
		name        string
		rs          rules.RuleSet
		fen4        string
		steps       []step
		movers, tos []gamev1.Seat
	}{
		{"two zombies follow a move", rules.FourKingdoms(), "", []step{resign(rules.Blue), resign(rules.Yellow), mv("h2-h3")},
			[]gamev1.Seat{R, B, Y}, []gamev1.Seat{B, Y, G}},
		{"two zombies follow a move, chesscom-ffa", rules.ChesscomFFA(), "", []step{resign(rules.Blue), resign(rules.Yellow), mv("h2-h3")},
			[]gamev1.Seat{R, B, Y}, []gamev1.Seat{B, Y, G}},
		{"resigning on turn: the zombie moves at once", rules.FourKingdoms(), "", []step{resign(rules.Red)},
			[]gamev1.Seat{R}, []gamev1.Seat{B}},
		{"zombie after a plain move", rules.FourKingdoms(), "", []step{resign(rules.Blue), mv("h2-h3"), mv("h13-h12")},
			[]gamev1.Seat{R, B, Y}, []gamev1.Seat{B, Y, G}},
		{"the game ends", rules.FourKingdoms(), fenRedMatesBlue, []step{mv("Qc4-b5")},
			[]gamev1.Seat{R}, []gamev1.Seat{none}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGame(t, tt.rs, tt.fen4)
			var movers, tos []gamev1.Seat
			for _, m := range movesOf(run(t, g, tt.steps...)) {
				movers, tos = append(movers, m.GetEffects().GetSeat()), append(tos, m.GetToMove())
			}
			if !slices.Equal(movers, tt.movers) || !slices.Equal(tos, tt.tos) {
				t.Fatalf("movers %v to move %v, want %v %v", movers, tos, tt.movers, tt.tos)
			}
		})
	}
}

// TestCaptureDead checks Capture.dead against the rule book: a piece is
// dead when its owner is out, or under chesscom-ffa when it belongs to a
// zombie and is not the king; a zombie's moving pieces score 0 without
// being dead.
func TestCaptureDead(t *testing.T) {
	t.Parallel()
	const (
		blueOut    = "R-0,1,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/4,bQ,5,yQ,3/14/13,bK/gK,13/14/4,rR,9/14/14/14/7,rK,6"
		blueOutK   = "R-0,1,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/4,bK,5,yQ,3/14/14/gK,13/14/4,rR,9/14/14/14/7,rK,6"
		blueZombie = "R-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/4,bQ,9/14/13,bK/gK,13/14/4,rR,9/14/14/14/7,rK,6-{zombie:0,1,0,0}"
		blueZK     = "R-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/4,bK,9/14/14/gK,13/14/4,rR,9/14/14/14/7,rK,6-{zombie:0,1,0,0}"
		blueLive   = "R-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/14/4,bQ,9/14/13,bK/gK,13/14/4,rR,9/14/14/14/7,rK,6"
	)
	tests := []struct {
		name       string
		rs         rules.RuleSet
		fen4, move string
		kind       gamev1.PieceKind
		dead       bool
		points     int32
		eliminated bool
	}{
		{"live queen", rules.FourKingdoms(), blueLive, "Re5xQe10", gamev1.PieceKind_PIECE_KIND_QUEEN, false, 9, false},
		{"zombie queen scores 0 but moves", rules.FourKingdoms(), blueZombie, "Re5xQe10", gamev1.PieceKind_PIECE_KIND_QUEEN, false, 0, false},
		{"zombie king", rules.FourKingdoms(), blueZK, "Re5xKe10", gamev1.PieceKind_PIECE_KIND_KING, false, 20, true},
		{"king-only zombie's queen is dead", rules.ChesscomFFA(), blueZombie, "Re5xQe10", gamev1.PieceKind_PIECE_KIND_QUEEN, true, 0, false},
		{"walking king", rules.ChesscomFFA(), blueZK, "Re5xKe10", gamev1.PieceKind_PIECE_KIND_KING, false, 20, true},
		{"out seat's queen", rules.FourKingdoms(), blueOut, "Re5xQe10", gamev1.PieceKind_PIECE_KIND_QUEEN, true, 0, false},
		{"out seat's king", rules.FourKingdoms(), blueOutK, "Re5xKe10", gamev1.PieceKind_PIECE_KIND_KING, true, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGame(t, tt.rs, tt.fen4)
			e := movesOf(run(t, g, mv(tt.move)))[0].GetEffects()
			c := e.GetCaptured()
			if c.GetKind() != tt.kind || c.GetOwner() != gamev1.Seat_SEAT_BLUE || c.GetDead() != tt.dead || e.GetPointsGained() != tt.points {
				t.Fatalf("captured %v, %d points; want %v dead=%v, %d points", c, e.GetPointsGained(), tt.kind, tt.dead, tt.points)
			}
			if got := len(e.GetEliminations()) == 1; got != tt.eliminated {
				t.Fatalf("eliminations %v, want eliminated=%v", e.GetEliminations(), tt.eliminated)
			}
		})
	}
}

// TestTermination checks which termination ends a game with one live
// player left: ALL_OPPONENTS_OUT when all three others are out (however
// they left), LAST_PLAYER_STANDING when a zombie remains.
func TestTermination(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fen4  string
		steps []step
		want  gamev1.Termination
		bonus int32
	}{
		{"last opponent mated", fenRedMatesBlue, []step{mv("Qc4-b5")}, gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT, 0},
		{"resigned, then mated", fenRedMatesBlueAndYellow, []step{resign(rules.Blue), mv("Ql7-m8")}, gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT, 0},
		{"a zombie remains", fenRedMatesBlueGreenZ, []step{mv("Qc4-b5")}, gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING, 20},
		{"last opponent resigned", fenRedMatesBlue, []step{resign(rules.Blue)}, gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGame(t, rules.FourKingdoms(), tt.fen4)
			before := g.Points()[rules.Red]
			evs := run(t, g, tt.steps...)
			if tt.name == "resigned, then mated" && g.Status(rules.Blue) != rules.Out {
				t.Fatalf("Blue %s, want out", g.Status(rules.Blue))
			}
			over := evs[len(evs)-1].GetGameOver()
			if over == nil {
				t.Fatalf("last event %v, want GameOver", evs[len(evs)-1])
			}
			if got := over.GetResult().GetTermination(); got != tt.want {
				t.Fatalf("termination %v, want %v", got, tt.want)
			}
			var mate int32
			for _, m := range movesOf(evs) {
				mate += 20 * int32(len(m.GetEffects().GetMatedSeats()))
			}
			if got := over.GetResult().GetPoints()[0].GetPoints(); got != int32(before)+mate+tt.bonus {
				t.Fatalf("Red's result %d, want %d+%d+%d", got, before, mate, tt.bonus)
			}
		})
	}
}

// TestEventsFoldRandomGames plays random games with random resignations
// under both rule sets and folds their events as a client does: each move
// is by the seat the previous MoveApplied named, captures are dead exactly
// when the rule book says, and the termination agrees with the seats'
// states at the end.
func TestEventsFoldRandomGames(t *testing.T) {
	t.Parallel()
	for _, rs := range []rules.RuleSet{rules.FourKingdoms(), rules.ChesscomFFA()} {
		for seed := range uint64(12) {
			rng := rand.New(rand.NewPCG(seed, 7))
			g, err := rules.NewGame(rs, seed, "")
			if err != nil {
				t.Fatal(err)
			}
			rec := &record{}
			var status [rules.NumSeats]gamev1.SeatStatus
			for s := range status {
				status[s] = gamev1.SeatStatus_SEAT_STATUS_LIVE
			}
			want := gamev1.Seat_SEAT_UNSPECIFIED // unknown until a MoveApplied names it
			version := uint64(2)
			for !g.Over() && g.Ply() < 800 {
				before := g.Points()
				var eff rules.Effects
				if rng.IntN(60) == 0 {
					s := rules.Seat(rng.IntN(rules.NumSeats))
					if g.Status(s) != rules.Live {
						continue
					}
					eff, err = g.Resign(s)
				} else {
					ms := g.LegalMoves(g.ToMove())
					eff, err = g.Play(g.ToMove(), ms[rng.IntN(len(ms))])
				}
				if err != nil {
					t.Fatal(err)
				}
				evs := eventsOf("m", g, &eff, before, version, time.Unix(0, 0), nil, rec)
				version += uint64(len(evs))
				for _, ev := range evs {
					switch e := ev.GetEvent().(type) {
					case *eventsv1.MatchEvent_MoveApplied:
						me := e.MoveApplied.GetEffects()
						if want != gamev1.Seat_SEAT_UNSPECIFIED && me.GetSeat() != want {
							t.Fatalf("%s seed %d version %d: %v moved, previous MoveApplied named %v", rs.Name, seed, ev.GetVersion(), me.GetSeat(), want)
						}
						if c := me.GetCaptured(); c != nil {
							st := status[c.GetOwner()-1]
							dead := st == gamev1.SeatStatus_SEAT_STATUS_OUT ||
								(rs.Zombie == rules.ZombieKingOnly && st == gamev1.SeatStatus_SEAT_STATUS_ZOMBIE && c.GetKind() != gamev1.PieceKind_PIECE_KIND_KING)
							if c.GetDead() != dead {
								t.Fatalf("%s seed %d version %d: %s captured %v of a %v seat, dead=%v", rs.Name, seed, ev.GetVersion(), me.GetMove(), c.GetKind(), st, c.GetDead())
							}
						}
						want = e.MoveApplied.GetToMove()
					case *eventsv1.MatchEvent_PlayerResigned:
						status[e.PlayerResigned.GetSeat()-1] = gamev1.SeatStatus_SEAT_STATUS_ZOMBIE
						want = gamev1.Seat_SEAT_UNSPECIFIED
					case *eventsv1.MatchEvent_PlayerEliminated:
						status[e.PlayerEliminated.GetElimination().GetSeat()-1] = gamev1.SeatStatus_SEAT_STATUS_OUT
						want = gamev1.Seat_SEAT_UNSPECIFIED
					case *eventsv1.MatchEvent_GameOver:
						live, zombies := 0, 0
						for _, st := range status {
							live += b2i(st == gamev1.SeatStatus_SEAT_STATUS_LIVE)
							zombies += b2i(st == gamev1.SeatStatus_SEAT_STATUS_ZOMBIE)
						}
						term := e.GameOver.GetResult().GetTermination()
						// A leave that leaves a bare king alone is a draw by
						// insufficient material under chesscom-ffa
						// (docs/rules.md section 13.3.14).
						leaveDraw := rs.LeaveInsufficientDraw && term == gamev1.Termination_TERMINATION_INSUFFICIENT_MATERIAL
						switch {
						case live == 1 && zombies == 0 && term != gamev1.Termination_TERMINATION_ALL_OPPONENTS_OUT,
							live == 1 && zombies > 0 && term != gamev1.Termination_TERMINATION_LAST_PLAYER_STANDING && !leaveDraw,
							live == 0 && term != gamev1.Termination_TERMINATION_NO_LIVE_PLAYER:
							t.Fatalf("%s seed %d: %d live, %d zombies, termination %v", rs.Name, seed, live, zombies, term)
						}
					}
				}
				if !g.Over() && want != gamev1.Seat_SEAT_UNSPECIFIED && want != wire.Seat(g.ToMove()) {
					t.Fatalf("%s seed %d: last MoveApplied named %v, %s to move", rs.Name, seed, want, g.ToMove())
				}
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Green's zombie king (alone, on a4) is boxed in by Red's rook and knight
// without being in check: stalemated when its turn comes after Yellow's.
const fenZombieKingStalemate = "Y-0,0,0,0-0,0,0,0-0,0,0,0-0,0,0,0-0-6,yK,7/14/14/1,rR,12/14/14/13,bK/14/2,rN,11/14/gK,13/14/14/7,rK,6-{zombie:0,0,0,1}"

// TestZombieKingStalemateReportsItsBonus: under chesscom-ffa a zombie
// king's stalemate pays each live seat its share; the PlayerEliminated
// lists those shares in bonus_points and its points include them, so the
// points of every event add up from the events alone. Under fourkingdoms
// the stalemated zombie scores for itself and pays nobody.
func TestZombieKingStalemateReportsItsBonus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rs    rules.RuleSet
		bonus int32 // to each live seat
		self  int32 // awarded to Green
	}{
		{rules.ChesscomFFA(), 7, 0}, // (2 x 10 + 1) / 3 live seats
		{rules.FourKingdoms(), 0, 20},
	}
	for _, tt := range tests {
		t.Run(tt.rs.Name, func(t *testing.T) {
			t.Parallel()
			g := newTestGame(t, tt.rs, fenZombieKingStalemate)
			evs := run(t, g, mv("Kg14-f14"))
			if len(evs) != 2 {
				t.Fatalf("events %v, want the move and Green's elimination", evs)
			}
			pe := evs[1].GetPlayerEliminated()
			el := pe.GetElimination()
			if el.GetSeat() != gamev1.Seat_SEAT_GREEN || el.GetReason() != gamev1.ExitReason_EXIT_REASON_STALEMATED || el.GetAwardedPoints() != tt.self {
				t.Fatalf("elimination %v, want Green stalemated, awarded %d", el, tt.self)
			}
			var want []*gamev1.SeatPoints
			if tt.bonus != 0 {
				for _, s := range []gamev1.Seat{gamev1.Seat_SEAT_RED, gamev1.Seat_SEAT_BLUE, gamev1.Seat_SEAT_YELLOW} {
					want = append(want, &gamev1.SeatPoints{Seat: s, Points: tt.bonus})
				}
			}
			if d := cmp.Diff(want, pe.GetBonusPoints(), protocmp.Transform()); d != "" {
				t.Errorf("bonus_points (-want +got):\n%s", d)
			}
			// The event's points are the engine's after the step.
			if d := cmp.Diff(wire.Points(g.Points()), pe.GetPoints(), protocmp.Transform()); d != "" {
				t.Errorf("points (-engine +event):\n%s", d)
			}
		})
	}
}

// TestCheckedSeatsLeaveOutMatedSeats: checked_seats lists the kings a move
// attacks and does not mate (proto comment); mated kings are only in
// mated_seats, although the engine counts them among the checks.
func TestCheckedSeatsLeaveOutMatedSeats(t *testing.T) {
	t.Parallel()
	g := newTestGame(t, rules.FourKingdoms(), fenRedMatesBlueAndYellow)
	me := movesOf(run(t, g, mv("Ql7-m8")))[0].GetEffects()
	if len(me.GetMatedSeats()) != 2 || len(me.GetCheckedSeats()) != 0 {
		t.Fatalf("mated %v, checked %v: want Blue and Yellow mated, nobody else checked", me.GetMatedSeats(), me.GetCheckedSeats())
	}
}
