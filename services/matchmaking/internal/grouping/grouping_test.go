package grouping

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var testWindow = Window{Initial: 50, GrowthPerSecond: 5, ProvisionalFactor: 3, Max: 400}

func TestHalfWidth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		wait        time.Duration
		provisional bool
		want        float64
	}{
		{"just enqueued", 0, false, 50},
		{"ten seconds", 10 * time.Second, false, 100},
		{"ten seconds provisional", 10 * time.Second, true, 200},
		{"capped", time.Hour, false, 400},
		{"negative wait counts as zero", -time.Second, false, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := testWindow.HalfWidth(tt.wait, tt.provisional); got != tt.want {
				t.Errorf("HalfWidth(%v, %v) = %v, want %v", tt.wait, tt.provisional, got, tt.want)
			}
		})
	}
}

func TestForm(t *testing.T) {
	t.Parallel()
	h := func(rating float64, wait time.Duration) Ticket { return Ticket{Rating: rating, Wait: wait} }
	bot := Ticket{Bot: true}
	tests := []struct {
		name       string
		params     Params
		tickets    []Ticket
		want       [][]int // groups as sorted index sets, in any order
		botsNeeded int
	}{
		{
			name:    "four equal ratings",
			params:  Params{Window: testWindow},
			tickets: []Ticket{h(1500, 0), h(1500, 0), h(1500, 0), h(1500, 0)},
			want:    [][]int{{0, 1, 2, 3}},
		},
		{
			name:    "three players wait",
			params:  Params{Window: testWindow},
			tickets: []Ticket{h(1500, 0), h(1500, 0), h(1500, 0)},
		},
		{
			name:   "two clusters form two groups",
			params: Params{Window: testWindow},
			tickets: []Ticket{
				h(1000, 0), h(2000, 0), h(1010, 0), h(2010, 0),
				h(1020, 0), h(2020, 0), h(1030, 0), h(2030, 0),
			},
			want: [][]int{{0, 2, 4, 6}, {1, 3, 5, 7}},
		},
		{
			name:    "spread too wide for fresh tickets",
			params:  Params{Window: testWindow},
			tickets: []Ticket{h(1400, 0), h(1500, 0), h(1500, 0), h(1500, 0)},
		},
		{
			name:    "the same spread is fine once everybody waited",
			params:  Params{Window: testWindow},
			tickets: []Ticket{h(1400, 10*time.Second), h(1500, 10*time.Second), h(1500, 10*time.Second), h(1500, 10*time.Second)},
			want:    [][]int{{0, 1, 2, 3}},
		},
		{
			name:   "one fresh ticket in the group is enough to refuse it",
			params: Params{Window: testWindow},
			// The 1400 player waited long, but the fresh 1500 players
			// accept only 50 points.
			tickets: []Ticket{h(1400, time.Minute), h(1500, 0), h(1500, 0), h(1500, 0)},
		},
		{
			name:   "provisional players widen faster",
			params: Params{Window: testWindow},
			tickets: []Ticket{
				{Rating: 1400, Wait: 4 * time.Second, Provisional: true}, // 50+60 = 110
				{Rating: 1500, Wait: 4 * time.Second, Provisional: true},
				{Rating: 1500, Wait: 4 * time.Second, Provisional: true},
				{Rating: 1500, Wait: 4 * time.Second, Provisional: true},
			},
			want: [][]int{{0, 1, 2, 3}},
		},
		{
			name:   "the oldest ticket is served first",
			params: Params{Window: testWindow},
			// Five close tickets: the one left out is the youngest.
			tickets: []Ticket{h(1500, 1*time.Second), h(1501, 9*time.Second), h(1502, 8*time.Second), h(1503, 7*time.Second), h(1504, 6*time.Second)},
			want:    [][]int{{1, 2, 3, 4}},
		},
		{
			name:   "bots are ignored without bot fill",
			params: Params{Window: testWindow},
			tickets: []Ticket{
				h(1500, time.Hour), bot, bot, bot,
			},
		},
		{
			name:    "bot fill completes a long wait",
			params:  Params{Window: testWindow, BotFillAfter: 30 * time.Second},
			tickets: []Ticket{h(1500, time.Minute), bot, bot, bot, bot},
			want:    [][]int{{0, 1, 2, 3}},
		},
		{
			name:    "bot fill waits for its delay",
			params:  Params{Window: testWindow, BotFillAfter: 30 * time.Second},
			tickets: []Ticket{h(1500, 10*time.Second), bot, bot, bot},
		},
		{
			name:    "bot fill groups eligible humans together",
			params:  Params{Window: testWindow, BotFillAfter: 30 * time.Second},
			tickets: []Ticket{h(1500, time.Minute), h(1510, time.Minute), bot, bot, bot},
			want:    [][]int{{0, 1, 2, 3}},
		},
		{
			name:       "bot fill reports missing bots",
			params:     Params{Window: testWindow, BotFillAfter: 30 * time.Second},
			tickets:    []Ticket{h(1500, time.Minute), bot, h(3000, time.Minute)},
			botsNeeded: 5,
		},
		{
			name:    "bots never play among themselves",
			params:  Params{Window: testWindow, BotFillAfter: time.Second},
			tickets: []Ticket{bot, bot, bot, bot, bot},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := Form(tt.tickets, tt.params)
			var got [][]int
			for _, g := range res.Groups {
				s := slices.Clone(g[:])
				slices.Sort(s)
				got = append(got, s)
			}
			slices.SortFunc(got, slices.Compare)
			want := slices.Clone(tt.want)
			slices.SortFunc(want, slices.Compare)
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("groups = %v, want %v", got, want)
			}
			if res.BotsNeeded != tt.botsNeeded {
				t.Errorf("BotsNeeded = %d, want %d", res.BotsNeeded, tt.botsNeeded)
			}
		})
	}
}

// TestFormProperties checks, over many random queues, that every formed
// group respects the spread its members accept for their waits (computed
// here independently of Acceptable), that no ticket is used twice, that
// groups have at least one human, that no group holds two players who must
// avoid each other (recent co-players, in two thirds of the queues), and
// that the pass leaves no acceptable run of four consecutive human tickets
// without such a pair behind.
func TestFormProperties(t *testing.T) {
	t.Parallel()
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for seed := range uint64(rounds) {
		rng := rand.New(rand.NewPCG(seed, 42))
		w := Window{
			Initial:           float64(rng.IntN(100)),
			GrowthPerSecond:   rng.Float64() * 20,
			ProvisionalFactor: 1 + rng.Float64()*3,
			Max:               100 + float64(rng.IntN(500)),
		}
		p := Params{Window: w}
		if rng.IntN(2) == 0 {
			p.BotFillAfter = time.Duration(1+rng.IntN(60)) * time.Second
		}
		tickets := make([]Ticket, rng.IntN(400))
		for i := range tickets {
			tickets[i] = Ticket{
				Rating:      math.Round(1500 + rng.NormFloat64()*300),
				Provisional: rng.IntN(4) == 0,
				Wait:        time.Duration(rng.IntN(120_000)) * time.Millisecond,
				Bot:         rng.IntN(10) == 0,
			}
		}
		if seed%3 != 0 {
			addRecentCoPlayers(rng, tickets)
		}
		res := Form(tickets, p)

		seen := make([]bool, len(tickets))
		for _, g := range res.Groups {
			humans := 0
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, i := range g {
				if seen[i] {
					t.Fatalf("seed %d: ticket %d in two groups", seed, i)
				}
				seen[i] = true
				if !tickets[i].Bot {
					humans++
					lo, hi = min(lo, tickets[i].Rating), max(hi, tickets[i].Rating)
				}
			}
			if humans == 0 {
				t.Fatalf("seed %d: group %v has no human", seed, g)
			}
			for a, i := range g {
				for _, j := range g[a+1:] {
					if mustAvoid(w, tickets, i, j) {
						t.Fatalf("seed %d: group %v holds tickets %d and %d, who must avoid each other", seed, g, i, j)
					}
				}
			}
			for _, i := range g {
				tk := tickets[i]
				if tk.Bot {
					continue
				}
				if p.BotFillAfter == 0 && slices.ContainsFunc(g[:], func(j int) bool { return tickets[j].Bot }) {
					t.Fatalf("seed %d: bots in group %v without bot fill", seed, g)
				}
				growth := w.GrowthPerSecond
				if tk.Provisional {
					growth *= w.ProvisionalFactor
				}
				allowed := math.Min(w.Initial+growth*tk.Wait.Seconds(), w.Max)
				if d := math.Max(hi-tk.Rating, tk.Rating-lo); d > allowed+1e-9 {
					t.Fatalf("seed %d: group %v: ticket %d (rating %v, wait %v) is %v away from another member, accepts %v",
						seed, g, i, tk.Rating, tk.Wait, d, allowed)
				}
			}
		}

		// Completeness: among the free humans in rating order, no four
		// consecutive ones would have been acceptable.
		var free []int
		for i, tk := range tickets {
			if !seen[i] && !tk.Bot {
				free = append(free, i)
			}
		}
		// The same order Form uses: rating, then longest wait, then input.
		slices.SortFunc(free, func(a, b int) int {
			return cmp.Or(cmp.Compare(tickets[a].Rating, tickets[b].Rating),
				cmp.Compare(tickets[b].Wait, tickets[a].Wait), cmp.Compare(a, b))
		})
		for k := 0; k+GroupSize <= len(free); k++ {
			if Acceptable(w, tickets, free[k:k+GroupSize]) && !anyAvoid(w, tickets, free[k:k+GroupSize]) {
				t.Fatalf("seed %d: free tickets %v would have formed an acceptable group", seed, free[k:k+GroupSize])
			}
		}
	}
}

func BenchmarkForm(b *testing.B) { benchForm(b, false) }

// BenchmarkFormRecentCoPlayers is BenchmarkForm with half of the tickets
// naming one to three recent co-players among their rating neighbours.
func BenchmarkFormRecentCoPlayers(b *testing.B) { benchForm(b, true) }

func benchForm(b *testing.B, coPlayers bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	tickets := make([]Ticket, 100_000)
	for i := range tickets {
		tickets[i] = Ticket{
			Rating:      math.Round(1500 + rng.NormFloat64()*300),
			Provisional: rng.IntN(5) == 0,
			Wait:        time.Duration(rng.IntN(60_000)) * time.Millisecond,
		}
	}
	if coPlayers {
		addRecentCoPlayers(rng, tickets)
	}
	p := Params{Window: Window{Initial: 50, GrowthPerSecond: 5, ProvisionalFactor: 2, Max: 400}}
	b.ReportAllocs()
	groups := 0
	for b.Loop() {
		groups = len(Form(tickets, p).Groups)
	}
	b.ReportMetric(float64(groups)*float64(b.N)/b.Elapsed().Seconds(), "groups/s")
}

// addRecentCoPlayers gives about half of the tickets one to three recent
// co-players among their nearest neighbours in rating (where they would
// otherwise be grouped), the way players who just finished a game together
// queue again.
func addRecentCoPlayers(rng *rand.Rand, tickets []Ticket) {
	order := make([]int, len(tickets))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(tickets[a].Rating, tickets[b].Rating) })
	for k, i := range order {
		if rng.IntN(2) == 0 {
			continue
		}
		for range 1 + rng.IntN(3) {
			if j := k + rng.IntN(11) - 5; j >= 0 && j < len(order) && j != k {
				tickets[i].Avoid = append(tickets[i].Avoid, order[j])
			}
		}
	}
}

// mustAvoid is the anti-teaming rule, written out independently of Form:
// two humans one of whom names the other, neither of whom has waited until
// their window reached its cap.
func mustAvoid(w Window, tickets []Ticket, i, j int) bool {
	a, b := tickets[i], tickets[j]
	if a.Bot || b.Bot || !(slices.Contains(a.Avoid, j) || slices.Contains(b.Avoid, i)) {
		return false
	}
	capped := func(t Ticket) bool {
		growth := w.GrowthPerSecond
		if t.Provisional {
			growth *= w.ProvisionalFactor
		}
		return w.Initial+growth*t.Wait.Seconds() >= w.Max
	}
	return !capped(a) && !capped(b)
}

func anyAvoid(w Window, tickets []Ticket, idx []int) bool {
	for a, i := range idx {
		for _, j := range idx[a+1:] {
			if mustAvoid(w, tickets, i, j) {
				return true
			}
		}
	}
	return false
}

func TestFormAntiTeaming(t *testing.T) {
	t.Parallel()
	// testWindow reaches its cap (400) after 70 s (35 s provisional).
	h := func(rating float64, wait time.Duration, avoid ...int) Ticket {
		return Ticket{Rating: rating, Wait: wait, Avoid: avoid}
	}
	bot := Ticket{Bot: true}
	tests := []struct {
		name    string
		params  Params
		tickets []Ticket
		want    [][]int
	}{
		{
			name:    "a blocked pair is not grouped, even as the only four",
			params:  Params{Window: testWindow},
			tickets: []Ticket{h(1500, 10*time.Second, 1), h(1500, 10*time.Second), h(1500, 10*time.Second), h(1500, 10*time.Second)},
		},
		{
			name:   "one side naming the other is enough",
			params: Params{Window: testWindow},
			tickets: []Ticket{
				h(1500, 10*time.Second), h(1500, 10*time.Second), h(1500, 10*time.Second), h(1500, 10*time.Second, 0),
			},
		},
		{
			name:   "the fifth player takes the blocked one's seat",
			params: Params{Window: testWindow},
			// Without anti-teaming 0-3 would be the group (longest waits).
			tickets: []Ticket{
				h(1500, 20*time.Second, 1), h(1501, 19*time.Second), h(1502, 18*time.Second), h(1503, 17*time.Second), h(1504, 5*time.Second),
			},
			want: [][]int{{0, 2, 3, 4}},
		},
		{
			name:   "blocked players are skipped over in rating order",
			params: Params{Window: testWindow},
			// 0 just played with 1, 2 and 3, its nearest neighbours in
			// rating; the next three play with it, and 1-3 wait.
			tickets: []Ticket{
				h(1500, 30*time.Second, 1, 2, 3), h(1501, 20*time.Second), h(1502, 20*time.Second), h(1503, 20*time.Second),
				h(1504, 20*time.Second), h(1505, 20*time.Second), h(1506, 20*time.Second),
			},
			want: [][]int{{0, 4, 5, 6}},
		},
		{
			name:   "two games' players are mixed into new groups",
			params: Params{Window: testWindow},
			// Two groups of four that just played together queue again.
			tickets: []Ticket{
				h(1500, 10*time.Second, 1, 2, 3), h(1500, 10*time.Second, 2, 3), h(1500, 10*time.Second, 3), h(1500, 10*time.Second),
				h(1500, 10*time.Second, 5, 6, 7), h(1500, 10*time.Second, 6, 7), h(1500, 10*time.Second, 7), h(1500, 10*time.Second),
			},
			// No group may hold two of 0-3 or two of 4-7: impossible
			// with groups of four from eight, so nobody is grouped.
		},
		{
			name:   "a player whose window reached its cap may play the same people again",
			params: Params{Window: testWindow},
			tickets: []Ticket{
				h(1500, 70*time.Second, 1), h(1500, 10*time.Second), h(1500, 10*time.Second), h(1500, 10*time.Second),
			},
			want: [][]int{{0, 1, 2, 3}},
		},
		{
			name:   "either side's capped window lifts the block",
			params: Params{Window: testWindow},
			tickets: []Ticket{
				h(1500, 10*time.Second, 1), {Rating: 1500, Wait: 35 * time.Second, Provisional: true}, h(1500, 10*time.Second), h(1500, 10*time.Second),
			},
			want: [][]int{{0, 1, 2, 3}},
		},
		{
			name:   "a window just short of its cap keeps the block",
			params: Params{Window: testWindow},
			tickets: []Ticket{
				h(1500, 69*time.Second, 1), h(1500, 10*time.Second), h(1500, 10*time.Second), h(1500, 10*time.Second),
			},
		},
		{
			name:    "bot fill keeps blocked players apart",
			params:  Params{Window: testWindow, BotFillAfter: 30 * time.Second},
			tickets: []Ticket{h(1500, 60*time.Second, 1), h(1510, 60*time.Second), bot, bot, bot, bot, bot, bot},
			want:    [][]int{{0, 2, 3, 4}, {1, 5, 6, 7}},
		},
		{
			name:    "bots ignore the list",
			params:  Params{Window: testWindow, BotFillAfter: 30 * time.Second},
			tickets: []Ticket{h(1500, 60*time.Second, 1, 2, 3), bot, bot, bot},
			want:    [][]int{{0, 1, 2, 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := Form(tt.tickets, tt.params)
			var got [][]int
			for _, g := range res.Groups {
				s := slices.Clone(g[:])
				slices.Sort(s)
				got = append(got, s)
			}
			slices.SortFunc(got, slices.Compare)
			want := slices.Clone(tt.want)
			slices.SortFunc(want, slices.Compare)
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("groups = %v, want %v", got, want)
			}
		})
	}
}
