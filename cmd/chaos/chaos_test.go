package main

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

func TestPlanIsSeededAndFair(t *testing.T) {
	start, end, every := 10*time.Second, 10*time.Minute, 20*time.Second
	a := plan(7, allKinds, start, end, every)
	if b := plan(7, allKinds, start, end, every); !slices.Equal(a, b) {
		t.Fatalf("same seed, different plans:\n%v\n%v", a, b)
	}
	if c := plan(8, allKinds, start, end, every); slices.Equal(a, c) {
		t.Fatal("seeds 7 and 8 give the same plan")
	}
	counts := map[faultKind]int{}
	prev := time.Duration(-1)
	for _, f := range a {
		if f.at < start || f.at >= end || f.at <= prev {
			t.Fatalf("fault %v out of [%v, %v) or not after %v", f, start, end, prev)
		}
		prev = f.at
		counts[f.kind]++
		if f.instance < 0 || f.instance > 1 || f.master < 0 || f.master > 2 || !slices.Contains(serviceNames, f.service) {
			t.Fatalf("fault %v: target out of range", f)
		}
	}
	// Cycling through shuffled kinds: no kind more than one ahead.
	lo, hi := len(a), 0
	for _, k := range allKinds {
		lo, hi = min(lo, counts[k]), max(hi, counts[k])
	}
	if hi-lo > 1 || lo == 0 {
		t.Errorf("kinds unevenly planned: %v", counts)
	}
	if got := plan(7, nil, start, end, every); got != nil {
		t.Errorf("no kinds, yet a plan: %v", got)
	}
}

func TestReplicaOf(t *testing.T) {
	nodes := "abc 127.0.0.1:1@2 master - 0 0 1 connected 0-5460\n" +
		"def 127.0.0.1:3@4 myself,slave abc 0 0 1 connected\n"
	if !replicaOf(nodes, "abc") || replicaOf(nodes, "xyz") {
		t.Error("replicaOf misread CLUSTER NODES")
	}
}

// game builds a match log: MatchCreated, then the moves given (each by the
// next seat, clocks running with a deadline 60 s after the move), then the
// extra events.
type game struct {
	id      string
	players []string
	evs     []*eventsv1.MatchEvent
	t       time.Time
}

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

func newGame(id string, players ...string) *game {
	g := &game{id: id, players: players, t: t0}
	created := &eventsv1.MatchCreated{RuleSet: "fourkingdoms", Clocks: clocks(gamev1.Seat_SEAT_RED, t0)}
	for i, p := range players {
		created.Players = append(created.Players, &gamev1.SeatPlayer{Seat: gamev1.Seat(i + 1), Player: &gamev1.Player{PlayerId: p}})
	}
	g.add(0, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_MatchCreated{MatchCreated: created}})
	return g
}

func clocks(running gamev1.Seat, at time.Time) []*gamev1.Clock {
	var out []*gamev1.Clock
	for s := gamev1.Seat_SEAT_RED; s <= gamev1.Seat_SEAT_GREEN; s++ {
		c := &gamev1.Clock{Seat: s, Remaining: durationpb.New(time.Minute)}
		if s == running {
			c.Running, c.TurnDeadline = true, timestamppb.New(at.Add(time.Minute))
		}
		out = append(out, c)
	}
	return out
}

func (g *game) add(ply uint32, ev *eventsv1.MatchEvent) *eventsv1.MatchEvent {
	ev.MatchId, ev.Version, ev.Ply, ev.OccurredAt = g.id, uint64(len(g.evs)+1), ply, timestamppb.New(g.t)
	g.evs = append(g.evs, ev)
	return ev
}

func (g *game) ply() uint32 {
	if len(g.evs) == 0 {
		return 0
	}
	return g.evs[len(g.evs)-1].GetPly()
}

// move appends a move and returns its acknowledgement.
func (g *game) move(text string) ack {
	g.t = g.t.Add(time.Second)
	ply := g.ply() + 1
	seat := gamev1.Seat((ply-1)%4 + 1)
	next := gamev1.Seat(ply%4 + 1)
	ev := g.add(ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_MoveApplied{MoveApplied: &eventsv1.MoveApplied{
		Effects: &gamev1.MoveEffects{Move: text, Seat: seat}, ToMove: next, Clocks: clocks(next, g.t)}}})
	return ack{player: g.players[seat-1], match: g.id, version: ev.GetVersion(), ply: ply, move: text}
}

// flag appends the flag of the seat to move, off from its deadline.
func (g *game) flag(off time.Duration) {
	ply := g.ply()
	g.t = g.t.Add(time.Minute + off)
	g.add(ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_PlayerTimedOut{PlayerTimedOut: &eventsv1.PlayerTimedOut{Seat: gamev1.Seat(ply%4 + 1)}}})
}

func (g *game) over() {
	g.add(g.ply(), &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{}}})
}

// cleanWorld is a run with nothing wrong: one finished rated game, one
// running, their players' tickets and ratings.
func cleanWorld() world {
	a := newGame("m1", "p1", "p2", "p3", "p4")
	w := world{games: map[string][]*eventsv1.MatchEvent{}, tickets: map[string]*ticketRec{},
		running: map[string]runningGame{}, ratings: map[string]playerRating{}, checkAt: t0.Add(10 * time.Second)}
	w.acks = append(w.acks, a.move("h2-h3"), a.move("b7-c7"), a.move("g13-g12"))
	a.flag(200 * time.Millisecond)
	a.over()
	b := newGame("m2", "p5", "p6", "p7", "p8")
	w.acks = append(w.acks, b.move("e2-e4"))
	w.running["m2"] = runningGame{active: true, deadline: b.t.Add(time.Minute)}
	for _, g := range []*game{a, b} {
		w.games[g.id] = g.evs
		for _, p := range g.players {
			w.tickets["t-"+p] = &ticketRec{id: "t-" + p, player: p, matches: map[string]bool{g.id: true}, final: "matched"}
		}
	}
	for _, p := range a.players {
		w.ratings[p] = playerRating{history: map[string]int{"m1": 1}, gamesPlayed: 1}
	}
	return w
}

func TestVerifyFindsEachLoss(t *testing.T) {
	tests := []struct {
		name   string
		change func(w *world)
		field  func(v verdict) int
		says   string
	}{
		{"nothing wrong", func(*world) {}, func(v verdict) int { return v.losses() }, ""},
		{"an acknowledged move missing from its game", func(w *world) {
			w.acks = append(w.acks, ack{player: "p5", match: "m2", version: 3, ply: 2, move: "d13-d12"})
		}, func(v verdict) int { return v.lost }, "not in the game"},
		{"another move at the acknowledged version", func(w *world) {
			w.acks[1].move = "a7-b7"
		}, func(v verdict) int { return v.lost }, "the log has move b7-c7"},
		{"an acknowledged move in a game that does not exist", func(w *world) {
			w.acks = append(w.acks, ack{player: "p1", match: "m9", version: 2, ply: 1, move: "h2-h3"})
		}, func(v verdict) int { return v.lost }, "not in the game"},
		{"a move applied twice", func(w *world) {
			evs := w.games["m2"]
			dup := proto.Clone(evs[1]).(*eventsv1.MatchEvent)
			dup.Version = 3
			w.games["m2"] = append(evs, dup)
		}, func(v verdict) int { return v.duplicates + v.outOfOrder }, "appears again"},
		{"a gap in the versions", func(w *world) {
			w.games["m2"][1].Version = 5
		}, func(v verdict) int { return v.outOfOrder }, "has version 5"},
		{"a running game without a running clock", func(w *world) {
			w.running["m2"] = runningGame{active: true}
		}, func(v verdict) int { return v.stuck }, "no clock running"},
		{"a running game past its deadline", func(w *world) {
			w.checkAt = w.running["m2"].deadline.Add(5 * time.Second)
		}, func(v verdict) int { return v.stuck }, "unflagged"},
		{"a running game that could not be read", func(w *world) {
			delete(w.running, "m2")
		}, func(v verdict) int { return v.stuck }, "could not be read"},
		{"a late flag", func(w *world) {
			g := newGame("m3", "p9", "p10", "p11", "p12")
			w.acks = append(w.acks, g.move("h2-h3"))
			g.flag(1500 * time.Millisecond)
			g.over()
			w.games["m3"] = g.evs
			for _, p := range g.players {
				w.tickets["t-"+p] = &ticketRec{id: "t-" + p, player: p, matches: map[string]bool{"m3": true}, final: "matched"}
				w.ratings[p] = playerRating{history: map[string]int{"m3": 1}, gamesPlayed: 1}
			}
		}, func(v verdict) int { return v.flagsLate }, "no Redis or network fault"},
		{"an early flag", func(w *world) {
			evs := w.games["m1"]
			evs[len(evs)-2].OccurredAt = timestamppb.New(evs[len(evs)-2].GetOccurredAt().AsTime().Add(-1500 * time.Millisecond))
		}, func(v verdict) int { return v.flagsLate }, "-1.3s from its deadline"},
		{"a ticket matched twice", func(w *world) {
			w.tickets["t-p1"].matches["m2"] = true
		}, func(v verdict) int { return v.ticketsTwice }, "matched to 2 matches"},
		{"a ticket the matchmaker forgot", func(w *world) {
			w.tickets["t-p1"].final = "not found"
		}, func(v verdict) int { return v.ticketsLost }, `final state "not found"`},
		{"a ticket matched to a match that does not exist", func(w *world) {
			w.tickets["t-x"] = &ticketRec{id: "t-x", player: "x", matches: map[string]bool{"m9": true}, final: "matched"}
		}, func(v verdict) int { return v.ticketsLost }, "does not exist"},
		{"a match no ticket names (formed twice)", func(w *world) {
			delete(w.tickets, "t-p6")
		}, func(v verdict) int { return v.matchesWithoutTicket }, "no ticket of its player p6"},
		{"a match rated twice", func(w *world) {
			w.ratings["p2"] = playerRating{history: map[string]int{"m1": 2}, gamesPlayed: 2}
		}, func(v verdict) int { return v.ratingMismatches }, "2 times in the rating history"},
		{"a finished match never rated", func(w *world) {
			w.ratings["p3"] = playerRating{history: map[string]int{}}
		}, func(v verdict) int { return v.ratingMismatches }, "0 times in the rating history"},
		{"a running match rated", func(w *world) {
			w.ratings["p4"] = playerRating{history: map[string]int{"m1": 1, "m2": 1}, gamesPlayed: 2}
		}, func(v verdict) int { return v.ratingMismatches }, "did not finish rated (its log ends v"},
		{"a running match rated, still running when the logs are read again", func(w *world) {
			w.ended = endedWorld(w, false)
			w.ratings["p5"] = playerRating{history: map[string]int{"m2": 1}, gamesPlayed: 1}
		}, func(v verdict) int { return v.ratingMismatches }, "did not finish rated (its log ends v"},
		{"a match that ended while the ratings were read, rated twice", func(w *world) {
			w.ended = endedWorld(w, true)
			w.ratings["p5"] = playerRating{history: map[string]int{"m2": 2}, gamesPlayed: 2}
		}, func(v verdict) int { return v.ratingMismatches }, "2 times in the rating history"},
		{"more games played than finished by the end of the checks", func(w *world) {
			w.ended = endedWorld(w, true)
			w.ratings["p6"] = playerRating{history: map[string]int{"m2": 1}, gamesPlayed: 2}
		}, func(v verdict) int { return v.ratingMismatches }, "2 rated games played, 0 finished rated matches (1 by the end"},
		{"a rated match whose log goes on after its end", func(w *world) {
			evs := w.games["m1"]
			last := evs[len(evs)-1]
			w.games["m1"] = append(evs, &eventsv1.MatchEvent{MatchId: "m1", Version: last.GetVersion() + 1, OccurredAt: last.GetOccurredAt(),
				Event: &eventsv1.MatchEvent_ClockCredited{ClockCredited: &eventsv1.ClockCredited{}}})
		}, func(v verdict) int { return v.ratingMismatches }, "game_over at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := cleanWorld()
			tt.change(&w)
			v := verify(w)
			if tt.says == "" {
				if v.losses() != 0 || v.acked != 4 || v.finished != 1 || v.running != 1 || v.flags != 1 || v.ratedMatches != 1 {
					t.Fatalf("clean world: %+v", v)
				}
				return
			}
			if tt.field(v) == 0 || v.losses() == 0 {
				t.Errorf("not found: %+v", v)
			}
			if !strings.Contains(strings.Join(v.problems, "\n"), tt.says) {
				t.Errorf("problems do not say %q:\n%s", tt.says, strings.Join(v.problems, "\n"))
			}
		})
	}
}

// endedWorld returns w's logs as read again after the ratings, with the
// running game m2 ended meanwhile (by a flag) if over.
func endedWorld(w *world, over bool) map[string][]*eventsv1.MatchEvent {
	ended := maps.Clone(w.games)
	if over {
		evs := slices.Clone(w.games["m2"])
		last := evs[len(evs)-1]
		ended["m2"] = append(evs, &eventsv1.MatchEvent{MatchId: "m2", Version: last.GetVersion() + 1, OccurredAt: last.GetOccurredAt(),
			Event: &eventsv1.MatchEvent_GameOver{GameOver: &eventsv1.GameOver{}}})
	}
	return ended
}

// TestVerifyRatingOfAGameThatEndedDuringTheChecks: the services run on
// while the checker reads, so a game running at the first read of the
// logs may end, and be rated, before its players' histories are read
// (a chaos run once reported 16 such "losses"). Rated in the history or
// not yet, it is no loss, as long as the logs read after the ratings show
// it ended.
func TestVerifyRatingOfAGameThatEndedDuringTheChecks(t *testing.T) {
	for _, rated := range []bool{true, false} {
		w := cleanWorld()
		w.ended = endedWorld(&w, true)
		for _, p := range []string{"p5", "p6", "p7", "p8"} {
			w.ratings[p] = playerRating{history: map[string]int{}}
			if rated {
				w.ratings[p] = playerRating{history: map[string]int{"m2": 1}, gamesPlayed: 1}
			}
		}
		v := verify(w)
		if v.losses() != 0 || v.ratedMatches != 1 || v.ratedLate != 1 {
			t.Errorf("rated %v: %+v\n%s", rated, v, strings.Join(v.problems, "\n"))
		}
	}
}

func TestLateFlagDuringAFault(t *testing.T) {
	w := cleanWorld()
	evs := w.games["m1"]
	flag := evs[len(evs)-2]
	at := flag.GetOccurredAt().AsTime().Add(3 * time.Second)
	flag.OccurredAt = timestamppb.New(at)
	for _, tt := range []struct {
		w        window
		excused  bool
		describe string
	}{
		{window{faultRedisKill, at.Add(-5 * time.Second), at.Add(-2 * time.Second)}, true, "failover ending during the wait"},
		{window{faultNetem, at.Add(-time.Second), at.Add(time.Second)}, true, "network fault over the flag"},
		{window{faultRedisKill, at.Add(-time.Hour), at.Add(-time.Hour + time.Minute)}, false, "failover long before"},
		{window{faultPause, at.Add(-5 * time.Second), at}, false, "a paused instance (leases lapse within a second)"},
		{window{faultKill, at.Add(-5 * time.Second), at}, false, "a killed instance"},
	} {
		t.Run(tt.describe, func(t *testing.T) {
			w.windows = []window{tt.w}
			v := verify(w)
			if got := v.flagsLate == 0 && v.flagsLateInFault[tt.w.kind] == 1; got != tt.excused {
				t.Errorf("excused %v, want %v: %+v", got, tt.excused, v)
			}
		})
	}
}

func TestReportSaysPassOrFail(t *testing.T) {
	var out strings.Builder
	cl := &cluster{nsSkipped: "not root"}
	flog := &faultLog{counts: map[faultKind]int{faultKill: 2}, failed: map[faultKind]int{}}
	report(&out, defaultConfig(), cl, flog, &gameSamples{}, newRecorder(), verify(cleanWorld()))
	for _, want := range []string{"| moves acknowledged", "| 4 ", "skipped: not root", "PASS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	w := cleanWorld()
	w.acks[0].move = "x"
	out.Reset()
	report(&out, defaultConfig(), cl, flog, &gameSamples{}, newRecorder(), verify(w))
	if !strings.Contains(out.String(), fmt.Sprintf("FAIL: %d losses", 1)) {
		t.Errorf("report of a lost move:\n%s", out.String())
	}
}

func TestRunAddrsStayInTheirBlock(t *testing.T) {
	seen := map[string]bool{}
	for _, pid := range []int{0, 1, 31, 32, 8191, 8192, 123457} {
		host, ns, guard := runAddrs(pid)
		_, block, err := net.ParseCIDR(guard)
		if err != nil {
			t.Fatalf("pid %d: guard %q: %v", pid, guard, err)
		}
		bench := &net.IPNet{IP: net.IPv4(198, 18, 0, 0), Mask: net.CIDRMask(15, 32)}
		for _, a := range []string{host, ns} {
			ip := net.ParseIP(a)
			if ip == nil || !block.Contains(ip) || !bench.Contains(ip) {
				t.Errorf("pid %d: %s outside %s or 198.18.0.0/15", pid, a, guard)
			}
		}
		if pid%8192 == pid && seen[guard] {
			t.Errorf("pid %d: block %s used twice", pid, guard)
		}
		seen[guard] = true
	}
}

// credit appends the ClockCredited of the seat to move: its deadline moves
// by d (the match service gave back an outage).
func (g *game) credit(d time.Duration) {
	ply := g.ply()
	seat := gamev1.Seat(ply%4 + 1)
	cs := clocks(seat, g.t)
	for _, c := range cs {
		if c.GetRunning() {
			c.TurnDeadline = timestamppb.New(c.GetTurnDeadline().AsTime().Add(d))
		}
	}
	g.add(ply, &eventsv1.MatchEvent{Event: &eventsv1.MatchEvent_ClockCredited{ClockCredited: &eventsv1.ClockCredited{
		Seat: seat, Credited: durationpb.New(d), Clocks: cs}}})
}

// TestFlagAfterACredit: a flag is checked against the deadline of the last
// ClockCredited, not the one the outage moved: 3 s after the move's
// deadline is on time after a 3 s credit, and late after none.
func TestFlagAfterACredit(t *testing.T) {
	for _, tt := range []struct {
		credit time.Duration
		late   int
	}{{3 * time.Second, 0}, {0, 1}} {
		t.Run(fmt.Sprint("credit ", tt.credit), func(t *testing.T) {
			w := cleanWorld()
			g := newGame("m3", "p9", "p10", "p11", "p12")
			w.acks = append(w.acks, g.move("h2-h3"))
			if tt.credit > 0 {
				g.credit(tt.credit)
			}
			g.flag(3 * time.Second)
			g.over()
			w.games["m3"] = g.evs
			for _, p := range g.players {
				w.tickets["t-"+p] = &ticketRec{id: "t-" + p, player: p, matches: map[string]bool{"m3": true}, final: "matched"}
				w.ratings[p] = playerRating{history: map[string]int{"m3": 1}, gamesPlayed: 1}
			}
			if v := verify(w); v.flagsLate != tt.late {
				t.Errorf("%d late flags, want %d: %s", v.flagsLate, tt.late, strings.Join(v.problems, "\n"))
			}
		})
	}
}
