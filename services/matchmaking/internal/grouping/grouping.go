// Package grouping chooses groups of four players from a queue's waiting
// tickets so that the rating spread inside each group stays small.
//
// Each ticket has an acceptable rating window centred on its own rating. The
// window starts at [Window.Initial] points either side and widens with the
// ticket's wait time (faster for provisional players) up to [Window.Max]. A
// group is acceptable when every member's rating lies inside every member's
// window; [Acceptable] is that rule, and [Form] never returns a group that
// breaks it.
//
// [Form] is deterministic for a given input and runs in O(n log n): tickets are
// taken oldest first as anchors, and each anchor is grouped with its nearest
// free neighbours in rating order (the best group of four that contains a
// given ticket is always a run of consecutive free tickets in rating order).
// Bot tickets never join the rating pass; they only fill the empty seats of
// players who have waited at least [Params.BotFillAfter].
//
// Anti-teaming: a ticket may name other tickets it must not share a group
// with ([Ticket.Avoid]: players it has just played with). No group holds
// such a pair unless one of the two has waited until its rating window
// reached [Window.Max]: past that point the matchmaker cannot widen
// anything, and fairness to the long wait wins. An anchor with such a pair
// among its nearest free neighbours looks at every group of four it can
// form with them ([avoidReach] on each side), not only at runs.
//
// The package has no I/O and holds no state between calls.
package grouping

import (
	"cmp"
	"slices"
	"time"
)

// GroupSize is the number of players in a match.
const GroupSize = 4

// Window says how wide a ticket's acceptable rating window is. All values are
// rating points (the rating service's display rating) or points per second.
type Window struct {
	// Initial is the half-width of the window of a ticket that has just
	// been enqueued.
	Initial float64
	// GrowthPerSecond widens the half-width for every second of waiting.
	GrowthPerSecond float64
	// ProvisionalFactor multiplies the growth for provisional players, whose
	// rating is uncertain anyway, so they wait less.
	ProvisionalFactor float64
	// Max caps the half-width.
	Max float64
}

// HalfWidth returns the half-width of the window of a ticket that has waited
// wait.
func (w Window) HalfWidth(wait time.Duration, provisional bool) float64 {
	if wait < 0 {
		wait = 0
	}
	growth := w.GrowthPerSecond
	if provisional {
		growth *= w.ProvisionalFactor
	}
	return min(w.Initial+growth*wait.Seconds(), w.Max)
}

// Params are the grouping settings of one queue.
type Params struct {
	Window Window
	// BotFillAfter is the wait after which a human ticket that found no
	// group may be completed with bots. Zero disables bot fill.
	BotFillAfter time.Duration
}

// Ticket is what grouping needs to know about a waiting ticket.
type Ticket struct {
	Rating      float64
	Provisional bool
	Wait        time.Duration
	Bot         bool
	// Avoid lists tickets (indices into the same input slice) this one
	// must not share a group with; one side naming the other is enough.
	// Bots ignore it.
	Avoid []int
}

// windowOpen reports whether t's window has reached its cap, which lifts
// the anti-teaming constraint for t.
func (w Window) windowOpen(t Ticket) bool {
	return w.HalfWidth(t.Wait, t.Provisional) >= w.Max
}

// Result is the outcome of one grouping pass.
type Result struct {
	// Groups holds indices into the input slice, four per group. In groups
	// completed by bots the humans come first.
	Groups [][GroupSize]int
	// BotsNeeded is how many more bot tickets would have let every human
	// eligible for bot fill be placed.
	BotsNeeded int
}

// Acceptable reports whether the tickets at idx form an acceptable group:
// every member's rating inside every member's window. Bots are ignored: they
// accept and are accepted by anyone.
func Acceptable(w Window, tickets []Ticket, idx []int) bool {
	lo, hi, humans := 0.0, 0.0, 0
	for _, i := range idx {
		t := tickets[i]
		if t.Bot {
			continue
		}
		if humans == 0 || t.Rating < lo {
			lo = t.Rating
		}
		if humans == 0 || t.Rating > hi {
			hi = t.Rating
		}
		humans++
	}
	for _, i := range idx {
		t := tickets[i]
		if t.Bot {
			continue
		}
		if max(hi-t.Rating, t.Rating-lo) > w.HalfWidth(t.Wait, t.Provisional) {
			return false
		}
	}
	return true
}

// Form groups the tickets. See the package documentation for the method.
func Form(tickets []Ticket, p Params) Result {
	var res Result
	// The rating order of the human tickets, as a doubly linked list so a
	// grouped ticket is unlinked in O(1).
	byRating := make([]int, 0, len(tickets))
	var bots []int
	for i, t := range tickets {
		if t.Bot {
			bots = append(bots, i)
			continue
		}
		byRating = append(byRating, i)
	}
	slices.SortFunc(byRating, func(a, b int) int {
		if c := cmp.Compare(tickets[a].Rating, tickets[b].Rating); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(tickets[b].Wait, tickets[a].Wait), cmp.Compare(a, b))
	})
	n := len(byRating)
	free := newList(n)
	apart := newConflicts(tickets, p.Window, byRating)

	// Anchors: oldest first, so the longest waits are served first.
	anchors := make([]int, n)
	for k := range anchors {
		anchors[k] = k
	}
	slices.SortStableFunc(anchors, func(a, b int) int {
		return cmp.Compare(tickets[byRating[b]].Wait, tickets[byRating[a]].Wait)
	})

	// A ticket whose neighbourhood changed after it failed to find a group
	// is tried again, so when Form returns no run of four consecutive free
	// tickets is acceptable. Each formed group requeues at most six tickets,
	// which keeps the whole pass O(n log n).
	queued := make([]bool, n)
	for k := range queued {
		queued[k] = true
	}
	for work := anchors; len(work) > 0; {
		var retry []int
		for _, a := range work {
			queued[a] = false
			if free.used[a] {
				continue
			}
			var run [GroupSize]int
			var ok bool
			if apart.near(free, a) {
				run, ok = bestGroup(tickets, p.Window, byRating, free, apart, a)
			} else {
				run, ok = bestRun(tickets, p.Window, byRating, free, a)
			}
			if !ok {
				continue
			}
			var g [GroupSize]int
			for m, k := range run {
				g[m] = byRating[k]
			}
			res.Groups = append(res.Groups, g)
			before, after := free.prev[run[0]], free.next[run[GroupSize-1]]
			// A group that skipped blocked tickets leaves them between
			// its members: their neighbourhood changes too.
			for k := free.next[run[0]]; k >= 0 && k != run[GroupSize-1]; k = free.next[k] {
				if !slices.Contains(run[:], k) && !queued[k] {
					queued[k] = true
					retry = append(retry, k)
				}
			}
			for _, k := range run {
				free.unlink(k)
			}
			for k, steps := before, 0; k >= 0 && steps < GroupSize-1; k, steps = free.prev[k], steps+1 {
				if !queued[k] {
					queued[k] = true
					retry = append(retry, k)
				}
			}
			for k, steps := after, 0; k >= 0 && steps < GroupSize-1; k, steps = free.next[k], steps+1 {
				if !queued[k] {
					queued[k] = true
					retry = append(retry, k)
				}
			}
		}
		slices.SortStableFunc(retry, func(a, b int) int {
			return cmp.Compare(tickets[byRating[b]].Wait, tickets[byRating[a]].Wait)
		})
		work = retry
	}

	if p.BotFillAfter > 0 {
		res.BotsNeeded = fillWithBots(tickets, p, byRating, free, apart, anchors, bots, &res)
	}
	return res
}

// botFillWalk bounds how many rating neighbours a bot-fill anchor looks at.
const botFillWalk = 64

// fillWithBots completes groups for the humans left over by the rating pass
// who have waited at least p.BotFillAfter: each such anchor (oldest first)
// takes the nearest other eligible humans that keep the group acceptable,
// and bots take the remaining seats. It returns the number of bots that were
// missing.
func fillWithBots(tickets []Ticket, p Params, byRating []int, free *list, apart conflicts, anchors, bots []int, res *Result) int {
	eligible := func(k int) bool {
		return !free.used[k] && tickets[byRating[k]].Wait >= p.BotFillAfter
	}
	missingSeats := 0
	for _, a := range anchors {
		if !eligible(a) {
			continue
		}
		group := []int{byRating[a]}
		members := []int{a}
		// Walk outwards in rating order, nearest first, taking eligible
		// humans while the group stays acceptable. The walk is bounded:
		// beyond the anchor's window nobody is acceptable, and a long
		// stretch of younger tickets is not worth crossing.
		l, r := free.prev[a], free.next[a]
		ra := tickets[byRating[a]].Rating
		reach := p.Window.HalfWidth(tickets[byRating[a]].Wait, tickets[byRating[a]].Provisional)
		for steps := 0; len(group) < GroupSize && (l >= 0 || r >= 0) && steps < botFillWalk; steps++ {
			if l >= 0 && ra-tickets[byRating[l]].Rating > reach {
				l = -1
			}
			if r >= 0 && tickets[byRating[r]].Rating-ra > reach {
				r = -1
			}
			var k int
			switch {
			case l < 0 && r < 0:
				continue
			case l < 0:
				k, r = r, free.next[r]
			case r < 0:
				k, l = l, free.prev[l]
			default:
				if ra-tickets[byRating[l]].Rating <= tickets[byRating[r]].Rating-ra {
					k, l = l, free.prev[l]
				} else {
					k, r = r, free.next[r]
				}
			}
			if !eligible(k) || slices.ContainsFunc(members, func(m int) bool { return apart.blocked(m, k) }) {
				continue
			}
			if Acceptable(p.Window, tickets, append(group, byRating[k])) {
				group = append(group, byRating[k])
				members = append(members, k)
			}
		}
		missing := GroupSize - len(group)
		if missing > len(bots) {
			// Younger anchors may still fit the bots that are left.
			missingSeats += missing
			continue
		}
		var g [GroupSize]int
		copy(g[:], group)
		copy(g[len(group):], bots[:missing])
		bots = bots[missing:]
		res.Groups = append(res.Groups, g)
		for _, k := range members {
			free.unlink(k)
		}
	}
	return max(missingSeats-len(bots), 0)
}

// bestRun returns the acceptable run of four consecutive free positions
// containing a with the smallest rating spread, in rating order.
func bestRun(tickets []Ticket, w Window, byRating []int, free *list, a int) ([GroupSize]int, bool) {
	// The run starts at most three free positions left of a.
	start := a
	for range GroupSize - 1 {
		if free.prev[start] < 0 {
			break
		}
		start = free.prev[start]
	}
	var run [GroupSize]int
	c := choice{tickets: tickets, w: w, byRating: byRating}
	for s := start; s >= 0; s = free.next[s] {
		m, k := 0, s
		for ; m < GroupSize && k >= 0; m, k = m+1, free.next[k] {
			run[m] = k
		}
		if m < GroupSize || !slices.Contains(run[:], a) {
			break
		}
		c.offer(run)
		if s == a {
			break
		}
	}
	return c.best, c.found
}

// choice keeps the best acceptable group of those offered: the smallest
// rating spread first; on a tie, the group that has waited longest in
// total, so the youngest ticket is the one left out.
type choice struct {
	tickets  []Ticket
	w        Window
	byRating []int

	best   [GroupSize]int
	found  bool
	spread float64
	wait   time.Duration
}

// offer considers g (positions in rating order).
func (c *choice) offer(g [GroupSize]int) {
	var idx [GroupSize]int
	var wait time.Duration
	for n, x := range g {
		idx[n] = c.byRating[x]
		wait += c.tickets[idx[n]].Wait
	}
	spread := spreadOf(c.tickets, idx[:])
	better := !c.found || spread < c.spread || (spread == c.spread && wait > c.wait)
	if better && Acceptable(c.w, c.tickets, idx[:]) {
		c.best, c.found, c.spread, c.wait = g, true, spread, wait
	}
}

// avoidReach is how many free neighbours on each side of an anchor
// bestGroup considers: enough to skip three blocked tickets on one side and
// still find three others.
const avoidReach = 2 * (GroupSize - 1)

// bestGroup is bestRun for an anchor with a blocked pair among its nearest
// free neighbours: it returns, in rating order, the acceptable group of
// four without a blocked pair, made of a and up to avoidReach free
// neighbours on each side, with the smallest rating spread (ties: the
// group that waited longest). It tries at most C(12, 3) = 220 groups.
func bestGroup(tickets []Ticket, w Window, byRating []int, free *list, apart conflicts, a int) ([GroupSize]int, bool) {
	hood, n := neighbourhood(free, a)
	// Tickets a must avoid are left out at once.
	var cand [2*avoidReach + 1]int
	m := 0
	for _, k := range hood[:n] {
		if k == a || !apart.blocked(a, k) {
			cand[m] = k
			m++
		}
	}
	c := choice{tickets: tickets, w: w, byRating: byRating}
	for i := range m {
		for j := i + 1; j < m; j++ {
			if apart.blocked(cand[i], cand[j]) {
				continue
			}
			for k := j + 1; k < m; k++ {
				if apart.blocked(cand[i], cand[k]) || apart.blocked(cand[j], cand[k]) {
					continue
				}
				for l := k + 1; l < m; l++ {
					g := [GroupSize]int{cand[i], cand[j], cand[k], cand[l]}
					if !slices.Contains(g[:], a) || apart.blocked(cand[i], cand[l]) || apart.blocked(cand[j], cand[l]) || apart.blocked(cand[k], cand[l]) {
						continue
					}
					c.offer(g)
				}
			}
		}
	}
	return c.best, c.found
}

// neighbourhood returns a and up to avoidReach free positions on each side
// of it, in rating order, and how many there are.
func neighbourhood(free *list, a int) ([2*avoidReach + 1]int, int) {
	var out [2*avoidReach + 1]int
	start := a
	for range avoidReach {
		if free.prev[start] < 0 {
			break
		}
		start = free.prev[start]
	}
	n, after := 0, -1
	for k := start; k >= 0 && after < avoidReach; k = free.next[k] {
		out[n] = k
		n++
		if k == a || after >= 0 {
			after++
		}
	}
	return out, n
}

// conflicts holds the anti-teaming constraint in rating-order positions:
// avoid[k] lists the positions k must not share a group with (both
// directions recorded), open[k] whether k's window has reached its cap,
// which lifts the constraint for k.
type conflicts struct {
	avoid [][]int
	open  []bool
}

func newConflicts(tickets []Ticket, w Window, byRating []int) conflicts {
	var c conflicts
	var pos []int // input index -> rating position, built on the first conflict
	for k, i := range byRating {
		for _, j := range tickets[i].Avoid {
			if j < 0 || j >= len(tickets) || j == i || tickets[j].Bot {
				continue
			}
			if pos == nil {
				pos = make([]int, len(tickets))
				for kk, ii := range byRating {
					pos[ii] = kk
				}
				c.avoid = make([][]int, len(byRating))
				c.open = make([]bool, len(byRating))
				for kk, ii := range byRating {
					c.open[kk] = w.windowOpen(tickets[ii])
				}
			}
			kj := pos[j]
			if !slices.Contains(c.avoid[k], kj) {
				c.avoid[k] = append(c.avoid[k], kj)
				c.avoid[kj] = append(c.avoid[kj], k)
			}
		}
	}
	return c
}

// blocked reports whether positions x and y must not share a group.
func (c conflicts) blocked(x, y int) bool {
	if c.avoid == nil || c.open[x] || c.open[y] {
		return false
	}
	return slices.Contains(c.avoid[x], y)
}

// near reports whether a blocked pair lies within avoidReach free
// positions of a (a included), where bestRun could miss a group.
func (c conflicts) near(free *list, a int) bool {
	if c.avoid == nil {
		return false
	}
	hood, n := neighbourhood(free, a)
	for i := range n {
		for j := i + 1; j < n; j++ {
			if c.blocked(hood[i], hood[j]) {
				return true
			}
		}
	}
	return false
}

func spreadOf(tickets []Ticket, idx []int) float64 {
	lo, hi := tickets[idx[0]].Rating, tickets[idx[0]].Rating
	for _, i := range idx[1:] {
		lo, hi = min(lo, tickets[i].Rating), max(hi, tickets[i].Rating)
	}
	return hi - lo
}

// list is a doubly linked list over positions 0..n-1 from which grouped
// positions are unlinked in O(1); -1 ends it on both sides.
type list struct {
	prev, next []int
	used       []bool
}

func newList(n int) *list {
	l := &list{prev: make([]int, n), next: make([]int, n), used: make([]bool, n)}
	for k := range n {
		l.prev[k], l.next[k] = k-1, k+1
	}
	if n > 0 {
		l.next[n-1] = -1
	}
	return l
}

func (l *list) unlink(k int) {
	l.used[k] = true
	if p := l.prev[k]; p >= 0 {
		l.next[p] = l.next[k]
	}
	if n := l.next[k]; n >= 0 {
		l.prev[n] = l.prev[k]
	}
}
