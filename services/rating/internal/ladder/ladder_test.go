package ladder

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/skill"
)

var finished = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func players(points [Seats]int) []Participant {
	ids := [Seats]string{"ann", "bob", "cat", "dan"}
	out := make([]Participant, Seats)
	for s := range Seats {
		out[s] = Participant{PlayerID: ids[s], Seat: Seat(s), Points: points[s]}
	}
	return out
}

func TestNewResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		players []Participant
		ranking []Seat
		want    [Seats]string // player ids first to fourth; empty when invalid
	}{
		{
			name:    "distinct points",
			players: players([Seats]int{10, 40, 20, 30}),
			ranking: []Seat{Blue, Green, Yellow, Red},
			want:    [Seats]string{"bob", "dan", "cat", "ann"},
		},
		{
			name:    "all equal: later in turn order ranks higher",
			players: players([Seats]int{0, 0, 0, 0}),
			ranking: []Seat{Green, Yellow, Blue, Red},
			want:    [Seats]string{"dan", "cat", "bob", "ann"},
		},
		{
			name:    "tie between red and yellow: yellow ahead",
			players: players([Seats]int{25, 50, 25, 10}),
			ranking: []Seat{Blue, Yellow, Red, Green},
			want:    [Seats]string{"bob", "cat", "ann", "dan"},
		},
		{
			name:    "players given out of seat order",
			players: []Participant{{"dan", "", Green, 5, false}, {"ann", "", Red, 9, false}, {"cat", "", Yellow, 7, true}, {"bob", "", Blue, 1, false}},
			ranking: []Seat{Red, Yellow, Green, Blue},
			want:    [Seats]string{"ann", "cat", "dan", "bob"},
		},
		{
			name:    "tie broken the wrong way",
			players: players([Seats]int{25, 50, 25, 10}),
			ranking: []Seat{Blue, Red, Yellow, Green},
		},
		{
			name:    "ranking against the points",
			players: players([Seats]int{10, 40, 20, 30}),
			ranking: []Seat{Red, Blue, Yellow, Green},
		},
		{
			name:    "seat ranked twice",
			players: players([Seats]int{10, 10, 10, 10}),
			ranking: []Seat{Green, Green, Blue, Red},
		},
		{
			name:    "three seats ranked",
			players: players([Seats]int{10, 10, 10, 10}),
			ranking: []Seat{Green, Yellow, Blue},
		},
		{
			name:    "three players",
			players: players([Seats]int{1, 2, 3, 4})[:3],
			ranking: []Seat{Green, Yellow, Blue, Red},
		},
		{
			name:    "two players in one seat",
			players: []Participant{{"ann", "", Red, 0, false}, {"bob", "", Red, 0, false}, {"cat", "", Yellow, 0, false}, {"dan", "", Green, 0, false}},
			ranking: []Seat{Green, Yellow, Blue, Red},
		},
		{
			name:    "one player in two seats",
			players: []Participant{{"ann", "", Red, 0, false}, {"ann", "", Blue, 0, false}, {"cat", "", Yellow, 0, false}, {"dan", "", Green, 0, false}},
			ranking: []Seat{Green, Yellow, Blue, Red},
		},
		{
			name:    "seat out of range",
			players: []Participant{{"ann", "", Red, 0, false}, {"bob", "", Seat(7), 0, false}, {"cat", "", Yellow, 0, false}, {"dan", "", Green, 0, false}},
			ranking: []Seat{Green, Yellow, Blue, Red},
		},
		{
			name:    "empty player id",
			players: []Participant{{"", "", Red, 0, false}, {"bob", "", Blue, 0, false}, {"cat", "", Yellow, 0, false}, {"dan", "", Green, 0, false}},
			ranking: []Seat{Green, Yellow, Blue, Red},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := NewResult("m1", "fourkingdoms", finished, tt.players, tt.ranking)
			if tt.want[0] == "" {
				if !errors.Is(err, ErrInvalidResult) {
					t.Fatalf("NewResult error = %v, want ErrInvalidResult", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewResult: %v", err)
			}
			for i, p := range res.Places {
				if p.PlayerID != tt.want[i] {
					t.Errorf("place %d = %q, want %q", i+1, p.PlayerID, tt.want[i])
				}
			}
		})
	}
}

func TestNewResultIDs(t *testing.T) {
	t.Parallel()
	ok := players([Seats]int{0, 0, 0, 0})
	ranking := []Seat{Green, Yellow, Blue, Red}
	tests := []struct {
		name, match, pool string
		valid             bool
	}{
		{"valid", "m-1", "chesscom-ffa", true},
		{"empty match", "", "fourkingdoms", false},
		{"long match", strings.Repeat("m", MaxIDLen+1), "fourkingdoms", false},
		{"match with space", "m 1", "fourkingdoms", false},
		{"empty pool", "m1", "", false},
		{"pool with brace", "m1", "four}kingdoms", false},
		{"upper-case pool", "m1", "FourKingdoms", false},
		{"long pool", "m1", strings.Repeat("p", MaxPoolLen+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewResult(tt.match, tt.pool, finished, ok, ranking)
			if tt.valid != (err == nil) {
				t.Errorf("NewResult(%q, %q) error = %v, want valid=%v", tt.match, tt.pool, err, tt.valid)
			}
		})
	}
}

func TestDisplay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r    skill.Rating
		want int
	}{
		{skill.Default().New(), 1500},
		{skill.Rating{Mu: 30, Sigma: 2}, 1500 + 20*24},
		{skill.Rating{Mu: 0, Sigma: 8}, 1500 - 20*24},
		{skill.Rating{Mu: -100, Sigma: 8}, 0},
		{skill.Rating{Mu: 1000, Sigma: 1}, MaxDisplay},
	}
	for _, tt := range tests {
		if got := Display(tt.r); got != tt.want {
			t.Errorf("Display(%+v) = %d, want %d", tt.r, got, tt.want)
		}
	}
}

func TestProvisional(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	tests := []struct {
		name  string
		games int64
		sigma float64
		want  bool
	}{
		{"new player", 0, 25.0 / 3, true},
		{"29 games", 29, 3, true},
		{"30 games, low sigma", 30, 3.9, false},
		{"30 games, high sigma", 30, 4.1, true},
		{"many games", 500, 2, false},
	}
	for _, tt := range tests {
		s := Standing{Rating: skill.Rating{Mu: 25, Sigma: tt.sigma}, Games: tt.games}
		if got := p.Provisional(s); got != tt.want {
			t.Errorf("%s: Provisional = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRateNextStanding(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	res, err := NewResult("m1", "fourkingdoms", finished, players([Seats]int{10, 40, 20, 30}), []Seat{Blue, Green, Yellow, Red})
	if err != nil {
		t.Fatal(err)
	}
	before := [Seats]Standing{p.New(), {Rating: skill.Rating{Mu: 30, Sigma: 3}, Games: 40, Version: 41}, p.New(), p.New()}
	at := finished.Add(time.Second)
	changes, err := p.Rate(res, before, at)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range changes {
		if c.Place != i+1 || c.PlayerID != res.Places[i].PlayerID {
			t.Errorf("change %d is for place %d player %q", i, c.Place, c.PlayerID)
		}
		if c.After.Games != before[i].Games+1 || c.After.Version != before[i].Version+1 || !c.After.UpdatedAt.Equal(at) {
			t.Errorf("place %d: after = %+v from before = %+v", i+1, c.After, before[i])
		}
	}
	if changes[0].DisplayAfter() <= changes[0].DisplayBefore() {
		t.Errorf("winner's display went from %d to %d", changes[0].DisplayBefore(), changes[0].DisplayAfter())
	}
	if changes[3].DisplayAfter() >= changes[3].DisplayBefore() {
		t.Errorf("last place's display went from %d to %d", changes[3].DisplayBefore(), changes[3].DisplayAfter())
	}
}

// Beating stronger opponents must raise the displayed rating more than
// beating weaker ones, and losing to weaker ones must cost more.
func TestRateStrongerOpponentsMoveMore(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	me := Standing{Rating: skill.Rating{Mu: 25, Sigma: 3}, Games: 50, Version: 50}
	opponents := func(mu float64) Standing {
		return Standing{Rating: skill.Rating{Mu: mu, Sigma: 3}, Games: 50, Version: 50}
	}
	change := func(myPlace int, oppMu float64) float64 {
		res, err := NewResult("m", "fourkingdoms", finished, players([Seats]int{0, 0, 0, 0}), []Seat{Green, Yellow, Blue, Red})
		if err != nil {
			t.Fatal(err)
		}
		var before [Seats]Standing
		for i := range before {
			before[i] = opponents(oppMu)
		}
		before[myPlace] = me
		changes, err := p.Rate(res, before, finished)
		if err != nil {
			t.Fatal(err)
		}
		c := changes[myPlace]
		// Compare on the unrounded scale so that small differences count.
		return 20 * ((c.After.Rating.Mu - 3*c.After.Rating.Sigma) - (c.Before.Rating.Mu - 3*c.Before.Rating.Sigma))
	}
	winStrong, winWeak := change(0, 32), change(0, 18)
	if !(winStrong > winWeak && winWeak > 0) {
		t.Errorf("win gain against stronger %.2f, against weaker %.2f: want stronger > weaker > 0", winStrong, winWeak)
	}
	loseStrong, loseWeak := change(3, 32), change(3, 18)
	if !(loseWeak < loseStrong) {
		t.Errorf("last place against weaker %.2f, against stronger %.2f: want the loss to weaker opponents to cost more", loseWeak, loseStrong)
	}
	// The displayed (rounded) numbers show the same order.
	if int(math.Round(winStrong)) <= int(math.Round(winWeak)) {
		t.Errorf("displayed gains %0.f and %0.f do not differ", winStrong, winWeak)
	}
}

// After the provisional games the same results move the rating less.
func TestRateChangesShrinkWhenEstablished(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	rng := rand.New(rand.NewPCG(7, 11))
	me := p.New()
	field := Standing{Rating: skill.Rating{Mu: 25, Sigma: 2.5}, Games: 100, Version: 100}
	var early, late float64  // sum of |Δμ| over games 1-30 and 31-60
	var established Standing // after 30 games
	for g := 1; g <= 2*p.ProvisionalGames; g++ {
		place := rng.IntN(Seats)
		var before [Seats]Standing
		for i := range before {
			before[i] = field
		}
		before[place] = me
		res, err := NewResult("m", "fourkingdoms", finished, players([Seats]int{0, 0, 0, 0}), []Seat{Green, Yellow, Blue, Red})
		if err != nil {
			t.Fatal(err)
		}
		changes, err := p.Rate(res, before, finished)
		if err != nil {
			t.Fatal(err)
		}
		d := math.Abs(changes[place].After.Rating.Mu - me.Rating.Mu)
		if g <= p.ProvisionalGames {
			early += d
		} else {
			late += d
		}
		me = changes[place].After
		if g == p.ProvisionalGames {
			established = me
		}
		if g == p.ProvisionalGames && p.Provisional(me) {
			t.Errorf("still provisional after %d games with sigma %.2f", g, me.Rating.Sigma)
		}
	}
	if !(late < early) {
		t.Errorf("mean change: games 1-30 %.3f, games 31-60 %.3f; want the later smaller", early/30, late/30)
	}
	// The same win moves the established player at least three times less
	// than a new player (the package documentation says about four).
	win := func(s Standing) float64 {
		res, err := NewResult("m", "fourkingdoms", finished, players([Seats]int{0, 0, 0, 0}), []Seat{Green, Yellow, Blue, Red})
		if err != nil {
			t.Fatal(err)
		}
		changes, err := p.Rate(res, [Seats]Standing{s, field, field, field}, finished)
		if err != nil {
			t.Fatal(err)
		}
		return changes[0].After.Rating.Mu - s.Rating.Mu
	}
	if newGain, estGain := win(p.New()), win(established); !(estGain > 0 && 3*estGain < newGain) {
		t.Errorf("a win moves a new player by %.3f and an established one (sigma %.2f) by %.3f", newGain, established.Rating.Sigma, estGain)
	}
	if me.Rating.Sigma < p.Model.Tau {
		t.Errorf("sigma %.3f collapsed below tau", me.Rating.Sigma)
	}
}

// Replay chains Rate: the second match starts from the first one's
// standings, and a player's standing is their last one.
func TestReplay(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	first, err := NewResult("m1", "fourkingdoms", finished, players([Seats]int{10, 40, 20, 30}), []Seat{Blue, Green, Yellow, Red})
	if err != nil {
		t.Fatal(err)
	}
	second, err := NewResult("m2", "fourkingdoms", finished.Add(time.Minute), players([Seats]int{40, 30, 20, 10}), []Seat{Red, Blue, Yellow, Green})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Replay([]Result{first, second})
	if err != nil {
		t.Fatal(err)
	}
	c1, err := p.Rate(first, [Seats]Standing{p.New(), p.New(), p.New(), p.New()}, first.FinishedAt)
	if err != nil {
		t.Fatal(err)
	}
	after := map[string]Standing{}
	for _, c := range c1 {
		after[c.PlayerID] = c.After
	}
	// second's places: ann (Red), bob (Blue), cat (Yellow), dan (Green).
	c2, err := p.Rate(second, [Seats]Standing{after["ann"], after["bob"], after["cat"], after["dan"]}, second.FinishedAt)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("replay has %d players, want 4", len(got))
	}
	for _, c := range c2 {
		if got[c.PlayerID] != c.After || c.After.Games != 2 {
			t.Errorf("%s: replay %+v, want %+v after two games", c.PlayerID, got[c.PlayerID], c.After)
		}
	}
}

// TestGamesToEstablish checks the estimate against the rule it estimates:
// in a replayed new pool (four new players meeting only each other, places
// rotating) the estimate never promises fewer games than remain, and is at
// most a quarter too high (equal μ, the estimate's assumption, keeps σ up a
// little longer than real results do).
func TestGamesToEstablish(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	// A new pool, simulated with the policy itself: the four players' σ
	// stay equal, so this is the estimate's own assumption, played out.
	pool := [Seats]Standing{p.New(), p.New(), p.New(), p.New()}
	var estimates []int
	for game := 0; p.Provisional(pool[0]) && game < maxEstablish; game++ {
		estimates = append(estimates, p.GamesToEstablish(pool[0]))
		// The places rotate, so that the players stay equally strong.
		res := Result{MatchID: "m", Pool: "fourkingdoms"}
		var before [Seats]Standing
		for place := range res.Places {
			j := (place + game) % Seats
			res.Places[place] = Participant{PlayerID: string(rune('a' + j)), Seat: Seat(place)}
			before[place] = pool[j]
		}
		changes, err := p.Rate(res, before, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			pool[c.PlayerID[0]-'a'] = c.After
		}
	}
	if len(estimates) == 0 || estimates[0] < 50 || estimates[0] > 65 {
		t.Fatalf("new player: estimates %v; the package documentation says about 57", estimates)
	}
	for i, e := range estimates {
		if left := len(estimates) - i; e < left || 4*e > 5*left+4 {
			t.Errorf("after %d games: estimate %d, but %d games were left", i, e, left)
		}
	}
	if got := p.GamesToEstablish(pool[0]); got != 0 {
		t.Errorf("established player: estimate %d, want 0", got)
	}

	tests := []struct {
		name string
		s    Standing
		want int
	}{
		// σ already low: only the game count is missing.
		{name: "low sigma, few games", s: Standing{Rating: skill.Rating{Mu: 25, Sigma: 3}, Games: 10}, want: 20},
		{name: "low sigma, enough games", s: Standing{Rating: skill.Rating{Mu: 25, Sigma: 3}, Games: 30}, want: 0},
		{name: "many games, sigma just above", s: Standing{Rating: skill.Rating{Mu: 25, Sigma: 4.01}, Games: 100}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := p.GamesToEstablish(tt.s); got != tt.want {
				t.Errorf("GamesToEstablish(%+v) = %d, want %d", tt.s, got, tt.want)
			}
		})
	}
}
