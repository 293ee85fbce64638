package main

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	eventsv1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/events/v1"
	gamev1 "github.com/fourkingdoms/fourkingdoms/proto/gen/fourkingdoms/game/v1"
)

// world is what the checks read at the end of a run: the clients' record,
// the matches' event logs from Redis, the running games' clocks, the
// tickets' final states and the rating service's view of each player.
type world struct {
	acks    []ack
	tickets map[string]*ticketRec
	// games by match id: every event of the match, in stream order.
	games map[string][]*eventsv1.MatchEvent
	// ended holds the logs read again after the ratings (nil: as games).
	// The services run on while the checker reads, and the clocks of the
	// games still running when play stopped run out: a game that ended
	// between the two reads may be rated in a history read before it.
	ended map[string][]*eventsv1.MatchEvent
	// running holds, for each game without a last event, its clocks as
	// GetMatch answered at checkAt.
	running map[string]runningGame
	checkAt time.Time
	// ratings by player id, for the players of finished rated matches.
	ratings map[string]playerRating
	// windows are the faults as they happened, for telling late flags
	// that a fault explains from those nothing explains.
	windows []window
}

// window is one injected fault, from its start until the system was whole
// again.
type window struct {
	kind     faultKind
	from, to time.Time
}

// explains reports whether the fault can explain a flag due at deadline
// but made at flagged: it is a fault that leaves the keeper unable to
// work for a while (Redis without a master for some slots during a
// failover, or an instance whose path to Redis is degraded but which keeps
// its leases) and it overlapped the time between the two.
func (w window) explains(deadline, flagged time.Time) bool {
	switch w.kind {
	case faultRedisKill, faultRedisFailover, faultNetem:
	default:
		return false
	}
	return !w.from.After(flagged) && !w.to.Add(2*flagTolerance).Before(deadline)
}

type runningGame struct {
	active   bool
	deadline time.Time // of the running clock; zero when none runs
}

type playerRating struct {
	history     map[string]int // match id -> entries in the player's history
	gamesPlayed int
	err         string // why the rating could not be read
}

// verdict is what the checks found.
type verdict struct {
	games, finished, running, aborted int
	acked, lost, duplicates           int
	outOfOrder                        int // event logs whose versions or plies skip or repeat
	stuck                             int
	flags, flagsLate, flagsUnchecked  int
	worstFlag                         time.Duration
	// flagsLateInFault are the late flags a fault in progress explains, by kind.
	flagsLateInFault                   map[faultKind]int
	tickets, ticketsTwice, ticketsLost int
	ticketsOpen                        int // still searching when read (a cancel lost at the end)
	matchesWithoutTicket               int
	ratedMatches, ratingMismatches     int
	// ratedLate counts rated matches that finished while the checker
	// read the ratings (in the logs read after them, not before).
	ratedLate int
	problems  []string
}

// flagTolerance is how far a flag may fall from its deadline.
const flagTolerance = time.Second

func (v *verdict) problem(format string, args ...any) {
	if len(v.problems) < 200 {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

// losses counts what must be zero for a run to pass.
func (v verdict) losses() int {
	return v.lost + v.duplicates + v.outOfOrder + v.stuck + v.flagsLate + v.ticketsTwice + v.ticketsLost +
		v.matchesWithoutTicket + v.ratingMismatches
}

func verify(w world) verdict {
	var v verdict
	v.games = len(w.games)
	ids := make([]string, 0, len(w.games))
	for id := range w.games {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		evs := w.games[id]
		checkLog(&v, id, evs)
		switch last := lastEvent(evs); {
		case last.GetGameOver() != nil:
			v.finished++
		case last.GetMatchAborted() != nil:
			v.aborted++
		default:
			v.running++
			rg, ok := w.running[id]
			switch {
			case !ok:
				v.stuck++
				v.problem("game %s: running but its state could not be read", id)
			case !rg.active:
				v.stuck++
				v.problem("game %s: its log has no end but GetMatch says it is not active", id)
			case rg.deadline.IsZero():
				v.stuck++
				v.problem("game %s: running with no clock running", id)
			case w.checkAt.Sub(rg.deadline) > 2*flagTolerance:
				v.stuck++
				v.problem("game %s: its running clock's deadline %v passed %v before the check, unflagged", id, rg.deadline.Format(time.TimeOnly), w.checkAt.Sub(rg.deadline).Round(time.Millisecond))
			}
		}
		checkFlags(&v, id, evs, w.windows)
	}
	checkAcks(&v, w)
	checkTickets(&v, w)
	checkRatings(&v, w)
	return v
}

func lastEvent(evs []*eventsv1.MatchEvent) *eventsv1.MatchEvent {
	if len(evs) == 0 {
		return nil
	}
	return evs[len(evs)-1]
}

// logTail describes the last events of a game's log, for a problem line:
// enough to tell a finish lost in a failover from events after the end.
func logTail(evs []*eventsv1.MatchEvent) string {
	if len(evs) == 0 {
		return "nowhere: no log"
	}
	var parts []string
	for _, ev := range evs[max(0, len(evs)-4):] {
		kind := "?"
		if f := ev.ProtoReflect().WhichOneof(ev.ProtoReflect().Descriptor().Oneofs().ByName("event")); f != nil {
			kind = string(f.Name())
		}
		parts = append(parts, fmt.Sprintf("v%d %s at %s", ev.GetVersion(), kind, ev.GetOccurredAt().AsTime().Format("15:04:05.000")))
	}
	return strings.Join(parts, ", ")
}

// checkLog checks that a game's log runs from version 1 without gaps or
// repeats and that each move adds one ply.
func checkLog(v *verdict, id string, evs []*eventsv1.MatchEvent) {
	var ply uint32
	for i, ev := range evs {
		if ev.GetVersion() != uint64(i+1) {
			v.outOfOrder++
			v.problem("game %s: event %d has version %d", id, i+1, ev.GetVersion())
			return
		}
		if ev.GetMoveApplied() != nil {
			if ev.GetPly() != ply+1 {
				v.outOfOrder++
				v.problem("game %s: version %d moves to ply %d after ply %d", id, ev.GetVersion(), ev.GetPly(), ply)
				return
			}
			ply = ev.GetPly()
		}
	}
}

// checkAcks finds every acknowledged move in its game, at the version it
// was acknowledged with; a move found elsewhere too is a duplicate.
func checkAcks(v *verdict, w world) {
	v.acked = len(w.acks)
	for _, a := range w.acks {
		evs := w.games[a.match]
		if a.version == 0 || a.version > uint64(len(evs)) {
			v.lost++
			v.problem("move %s by %s in %s acknowledged at version %d ply %d: not in the game (log has %d events)", a.move, a.player, a.match, a.version, a.ply, len(evs))
			continue
		}
		ev := evs[a.version-1]
		mv := ev.GetMoveApplied()
		if mv == nil || mv.GetEffects().GetMove() != a.move || ev.GetPly() != a.ply || mv.GetEffects().GetIsZombieMove() {
			v.lost++
			v.problem("move %s by %s in %s acknowledged at version %d ply %d: the log has %s there", a.move, a.player, a.match, a.version, a.ply, describe(ev))
			continue
		}
		seat := mv.GetEffects().GetSeat()
		for _, other := range evs {
			om := other.GetMoveApplied()
			if other != ev && om != nil && other.GetPly() == a.ply && om.GetEffects().GetSeat() == seat {
				v.duplicates++
				v.problem("move %s in %s at ply %d appears again at version %d", a.move, a.match, a.ply, other.GetVersion())
			}
		}
	}
}

func describe(ev *eventsv1.MatchEvent) string {
	if mv := ev.GetMoveApplied(); mv != nil {
		return fmt.Sprintf("move %s (zombie %v) at ply %d", mv.GetEffects().GetMove(), mv.GetEffects().GetIsZombieMove(), ev.GetPly())
	}
	return fmt.Sprintf("%T", ev.GetEvent())
}

// checkFlags compares every PlayerTimedOut with the deadline of the flagged
// seat's running clock, as the last event that listed clocks set it
// (turn_deadline includes delay and the first-move limit; a ClockCredited,
// the match service's outage compensation, lists them too). A flag whose
// turn began without a clock list (after a resignation or another flag)
// is counted as unchecked.
func checkFlags(v *verdict, id string, evs []*eventsv1.MatchEvent, windows []window) {
	var clocks []*gamev1.Clock
	for _, ev := range evs {
		switch {
		case ev.GetMatchCreated() != nil:
			clocks = ev.GetMatchCreated().GetClocks()
		case ev.GetMoveApplied() != nil:
			clocks = ev.GetMoveApplied().GetClocks()
		case ev.GetClockCredited() != nil:
			// An outage given back: the credited deadline is the one the
			// flag answers to.
			clocks = ev.GetClockCredited().GetClocks()
		case ev.GetPlayerTimedOut() != nil:
			v.flags++
			seat := ev.GetPlayerTimedOut().GetSeat()
			var deadline time.Time
			for _, c := range clocks {
				if c.GetSeat() == seat && c.GetRunning() && c.GetTurnDeadline() != nil {
					deadline = c.GetTurnDeadline().AsTime()
				}
			}
			if deadline.IsZero() {
				v.flagsUnchecked++
			} else {
				at := ev.GetOccurredAt().AsTime()
				off := at.Sub(deadline)
				if abs(off) > abs(v.worstFlag) {
					v.worstFlag = off
				}
				if off > flagTolerance || off < -flagTolerance {
					explained := faultKind("")
					for _, w := range windows {
						if w.explains(deadline, at) {
							explained = w.kind
						}
					}
					if explained != "" {
						if v.flagsLateInFault == nil {
							v.flagsLateInFault = map[faultKind]int{}
						}
						v.flagsLateInFault[explained]++
						v.problem("game %s: %v flagged at version %d %v from its deadline %s, during a fault: %s (not counted as a loss)", id, seat, ev.GetVersion(), off.Round(time.Millisecond), deadline.Format(time.StampMilli), explained)
					} else {
						v.flagsLate++
						v.problem("game %s: %v flagged at version %d %v from its deadline %s, with no Redis or network fault in progress", id, seat, ev.GetVersion(), off.Round(time.Millisecond), deadline.Format(time.StampMilli))
					}
				}
			}
			clocks = nil
		case ev.GetPlayerResigned() != nil, ev.GetPlayerEliminated() != nil, ev.GetWinClaimed() != nil:
			clocks = nil
		}
	}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// checkTickets: no ticket matched to two matches, none without an end,
// and every match the matchmaker made has each of its players' tickets
// pointing at it (a match that no ticket names was formed twice).
func checkTickets(v *verdict, w world) {
	v.tickets = len(w.tickets)
	named := map[string]map[string]bool{} // match -> players whose ticket names it
	for _, t := range w.tickets {
		switch {
		case len(t.matches) > 1:
			v.ticketsTwice++
			v.problem("ticket %s of %s matched to %d matches: %v", t.id, t.player, len(t.matches), keys(t.matches))
		case t.final == "searching":
			v.ticketsOpen++
		case t.final != "matched" && t.final != "cancelled" && t.final != "expired":
			v.ticketsLost++
			v.problem("ticket %s of %s: final state %q", t.id, t.player, t.final)
		case t.final == "matched" && len(t.matches) == 0:
			v.ticketsLost++
			v.problem("ticket %s of %s: matched without a match id", t.id, t.player)
		}
		for m := range t.matches {
			if named[m] == nil {
				named[m] = map[string]bool{}
			}
			named[m][t.player] = true
			if _, ok := w.games[m]; !ok {
				v.ticketsLost++
				v.problem("ticket %s of %s matched to %s, which does not exist", t.id, t.player, m)
			}
		}
	}
	for id, evs := range w.games {
		for _, sp := range evs[0].GetMatchCreated().GetPlayers() {
			if !named[id][sp.GetPlayer().GetPlayerId()] {
				v.matchesWithoutTicket++
				v.problem("match %s: no ticket of its player %s names it", id, sp.GetPlayer().GetPlayerId())
				break
			}
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkRatings: each finished rated match is in each of its players'
// histories exactly once, each match in a history is a rated match that
// finished (by the time the histories were read: in w.ended), and each
// player's games played lies between their finished rated matches before
// and after the ratings were read.
func checkRatings(v *verdict, w world) {
	finished := ratedFinished(w.games) // player -> match -> true
	v.ratedMatches = countMatches(finished)
	ended := finished
	if w.ended != nil {
		ended = ratedFinished(w.ended)
		v.ratedLate = countMatches(ended) - v.ratedMatches
	}
	// Every player read (collect reads every player of a rated game), not
	// only those with a finished match: a rated match whose end was lost
	// may be its players' only one.
	players := map[string]bool{}
	for p := range finished {
		players[p] = true
	}
	for p := range w.ratings {
		players[p] = true
	}
	for p := range players {
		ms := finished[p]
		r, ok := w.ratings[p]
		if !ok || r.err != "" {
			v.ratingMismatches++
			v.problem("player %s: rating not read: %s", p, r.err)
			continue
		}
		for m := range ms {
			if n := r.history[m]; n != 1 {
				v.ratingMismatches++
				v.problem("player %s: finished match %s is %d times in the rating history", p, m, n)
			}
		}
		for m, n := range r.history {
			switch {
			case ms[m]:
			case !ended[p][m]:
				v.ratingMismatches++
				log := w.games[m]
				if w.ended != nil {
					log = w.ended[m]
				}
				v.problem("player %s: rating history has match %s (%d times), which did not finish rated (its log ends %s)", p, m, n, logTail(log))
			case n != 1:
				v.ratingMismatches++
				v.problem("player %s: match %s, which finished while the ratings were read, is %d times in the rating history", p, m, n)
			}
		}
		if r.gamesPlayed < len(ms) || r.gamesPlayed > len(ended[p]) {
			v.ratingMismatches++
			v.problem("player %s: %d rated games played, %d finished rated matches (%d by the end of the checks)", p, r.gamesPlayed, len(ms), len(ended[p]))
		}
	}
}

// ratedFinished maps each player to the rated matches of games whose log
// ends with GameOver.
func ratedFinished(games map[string][]*eventsv1.MatchEvent) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for id, evs := range games {
		created := evs[0].GetMatchCreated()
		if lastEvent(evs).GetGameOver() == nil || created.GetUnrated() {
			continue
		}
		for _, sp := range created.GetPlayers() {
			p := sp.GetPlayer().GetPlayerId()
			if out[p] == nil {
				out[p] = map[string]bool{}
			}
			out[p][id] = true
		}
	}
	return out
}

// countMatches counts the distinct matches of a player -> match map.
func countMatches(byPlayer map[string]map[string]bool) int {
	all := map[string]bool{}
	for _, ms := range byPlayer {
		maps.Copy(all, ms)
	}
	return len(all)
}
