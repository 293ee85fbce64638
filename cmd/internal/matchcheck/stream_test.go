package matchcheck

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/fourkingdoms/fourkingdoms/pkg/rules"
	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

// streamOf plays steps in a game with seeded zombies and writes its events
// as the proto comments describe them: the valid streams the checker's
// tests mutate. A step is a move of the seat to move, "resign Blue" or
// "timeout Blue". The real server's streams are checked end to end
// (cmd/loadgen's tests, the devcluster e2e).
func streamOf(t *testing.T, rs rules.RuleSet, fen4 string, seed uint64, steps ...string) ([]*eventsv1.MatchEvent, *rules.Game) {
	t.Helper()
	g, err := rules.NewGame(rs, seed, fen4)
	if err != nil {
		t.Fatal(err)
	}
	evs := []*eventsv1.MatchEvent{{Version: 1, Event: &eventsv1.MatchEvent_MatchCreated{MatchCreated: &eventsv1.MatchCreated{
		RuleSet: rs.Name, Fen4: g.FEN4(), ToMove: gamev1.Seat(g.ToMove() + 1), ClaimWin: &rs.ClaimWin, AutoClaimWin: &rs.AutoClaimWin}}}}
	add := func(ply int, ev *eventsv1.MatchEvent) {
		ev.Version, ev.Ply = uint64(len(evs)+1), uint32(ply)
		evs = append(evs, ev)
	}
	for _, st := range steps {
		pts := g.Points()
		var eff rules.Effects
		verb, seat, _ := strings.Cut(st, " ")
		s := seatNamed(seat)
		switch verb {
		case "resign":
			eff, err = g.Resign(s)
		case "timeout":
			eff, err = g.TimeOut(s)
		case "claim":
			eff, err = g.ClaimWin(s)
		default:
			var m rules.Move
			if m, err = g.ParseMove(st); err == nil {
				eff, err = g.Play(g.ToMove(), m)
			}
		}
		if err != nil {
			t.Fatalf("step %q: %v", st, err)
		}
		ei := 0
		emit := func(upTo int) {
			for ; ei < len(eff.Events) && eff.Events[ei].Ply <= upTo; ei++ {
				ev := eff.Events[ei]
				ws := gamev1.Seat(ev.Seat + 1)
				switch ev.Kind {
				case rules.EventResigned:
					add(ev.Ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerResigned{PlayerResigned: &eventsv1.PlayerResigned{
						Seat: ws, FrozenPoints: int32(pts[ev.Seat])}}})
				case rules.EventTimedOut:
					add(ev.Ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerTimedOut{PlayerTimedOut: &eventsv1.PlayerTimedOut{
						Seat: ws, FrozenPoints: int32(pts[ev.Seat])}}})
				case rules.EventStalemated, rules.EventMatedOnTurn:
					el := owedOf(rules.Effects{Events: eff.Events[ei : ei+1]})[0].elim
					pts[ev.Seat] += ev.Points
					var bonus []*gamev1.SeatPoints
					for ei+1 < len(eff.Events) && eff.Events[ei+1].Kind == rules.EventBonus && eff.Events[ei+1].Reason == rules.NotOver {
						ei++
						b := eff.Events[ei]
						pts[b.Seat] += b.Points
						bonus = append(bonus, &gamev1.SeatPoints{Seat: gamev1.Seat(b.Seat + 1), Points: int32(b.Points)})
					}
					add(ev.Ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerEliminated{PlayerEliminated: &eventsv1.PlayerEliminated{
						Elimination: el, ResultPoints: int32(g.ResultPoints()[ev.Seat]), Points: points(pts), BonusPoints: bonus}}})
				case rules.EventClaimedWin:
					add(ev.Ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_WinClaimed{WinClaimed: &eventsv1.WinClaimed{
						Seat: ws, Automatic: ev.Auto}}})
				case rules.EventBonus:
					pts[ev.Seat] += ev.Points
				}
			}
		}
		for i := range eff.Moves {
			m := &eff.Moves[i]
			emit(m.Ply)
			pts[m.Seat] += m.Points
			next := gamev1.Seat(g.ToMove() + 1)
			switch {
			case i+1 < len(eff.Moves):
				next = gamev1.Seat(eff.Moves[i+1].Seat + 1)
			case g.Over():
				next = none
			}
			me := moveEffects(m, rs)
			add(m.Ply+1, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{
				Effects: me, ToMove: next, Points: points(pts)}}})
			for _, el := range me.GetEliminations() {
				add(m.Ply+1, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerEliminated{PlayerEliminated: &eventsv1.PlayerEliminated{
					Elimination: proto.Clone(el).(*gamev1.Elimination), ResultPoints: int32(g.ResultPoints()[el.GetSeat()-1]), Points: points(pts)}}})
			}
		}
		emit(int(^uint(0) >> 1))
		if g.Over() {
			add(g.Ply(), &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{Result: result(g)}}})
		}
	}
	return evs, g
}

func seatNamed(name string) rules.Seat {
	for s := range rules.Seat(rules.NumSeats) {
		if s.String() == name {
			return s
		}
	}
	return rules.NumSeats
}

func points(p [rules.NumSeats]int) []*gamev1.SeatPoints {
	out := make([]*gamev1.SeatPoints, rules.NumSeats)
	for s := range rules.NumSeats {
		out[s] = &gamev1.SeatPoints{Seat: gamev1.Seat(s + 1), Points: int32(p[s])}
	}
	return out
}
