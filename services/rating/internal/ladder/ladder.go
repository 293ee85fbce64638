// Package ladder is the rating policy of Four Kingdoms: it validates a
// finished match's result, turns it into rating changes with the skill
// model, and defines the displayed rating and the provisional status.
//
// Every rated game has a strict ranking of its four players (docs/rules.md
// section 9): by result points, equal points broken in favour of the seat
// that moves later in the turn order (Green, then Yellow, Blue, Red).
//
// Displayed rating. A player's skill is the belief N(μ, σ²); the displayed
// number is the conservative estimate μ−3σ on an Elo-like scale:
//
//	display = round(1500 + 20·(μ − 3σ)), clamped to [0, 9999]
//
// A new player (μ=25, σ=25/3) shows 1500. The factor 20 puts one μ point near
// one Elo step of 18.8 points between established players of a four-player
// game: the model's chance that a beats b is logistic((μa−μb)/c) with
// c ≈ 9.2 for four players at σ≈2, and Elo's is logistic(ln10·ΔElo/400).
// Because the estimate is conservative, a new player's number rises while σ
// shrinks even at an average score; they are provisional meanwhile.
//
// Provisional. A player is provisional while they have fewer than
// [Policy.ProvisionalGames] rated games (30) or σ is above
// [Policy.ProvisionalSigma] (4.0). How fast σ falls depends on the
// opponents' σ: after 30 games against established players (σ 2 to 3) it is
// 3.5 to 3.8, but four new players who only meet each other (a new pool)
// reach σ 4 after 57 games, so they stay provisional that long.
// Provisional players are rated like everyone else but not listed on the
// leaderboard.
//
// Smaller changes once established. The change of μ in one game is
// proportional to σ² (before the game), and σ shrinks with every game
// towards a floor kept up by τ: 8.33 for a new player, about 3.6 after 30
// games against established players, about 2 after 200. So the same result (a win against three players
// at σ=2.5) moves μ by 4.1 for a new player and by 1.0 after 30 games: about
// four times less; τ keeps it from freezing.
package ladder

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fourkingdoms/fourkingdoms/services/rating/internal/skill"
)

// Seat is a seat of the board, in turn order: Red moves first, Green last.
type Seat int

// The four seats, in turn order.
const (
	Red Seat = iota
	Blue
	Yellow
	Green
)

// Seats is the number of seats, and of players, in a rated game.
const Seats = 4

// String returns the seat's colour name.
func (s Seat) String() string {
	switch s {
	case Red:
		return "red"
	case Blue:
		return "blue"
	case Yellow:
		return "yellow"
	case Green:
		return "green"
	}
	return fmt.Sprintf("seat(%d)", int(s))
}

// Display rating scale: see the package documentation.
const (
	displayBase  = 1500
	displayScale = 20
	// MaxDisplay bounds the displayed rating (and keeps leaderboard scores
	// exact in a float64; see the store).
	MaxDisplay = 9999
)

// Limits on identifiers, which end up in Redis keys and in API answers.
const (
	MaxIDLen   = 128
	MaxPoolLen = 64
)

// ErrInvalidResult reports a match result that cannot be rated.
var ErrInvalidResult = errors.New("invalid match result")

// Policy is the rating policy: the skill model and the provisional rule.
type Policy struct {
	Model skill.Model
	// ProvisionalGames is the number of rated games a player needs before
	// they are no longer provisional.
	ProvisionalGames int
	// ProvisionalSigma is the σ above which a player stays provisional.
	ProvisionalSigma float64
}

// DefaultPolicy returns the policy used in production.
func DefaultPolicy() Policy {
	return Policy{Model: skill.Default(), ProvisionalGames: 30, ProvisionalSigma: 4}
}

// Validate reports whether the policy is usable.
func (p Policy) Validate() error {
	if err := p.Model.Validate(); err != nil {
		return err
	}
	if p.ProvisionalGames < 0 {
		return errors.New("ladder: provisional games must not be negative")
	}
	if !(p.ProvisionalSigma > 0) {
		return errors.New("ladder: provisional sigma must be positive")
	}
	return nil
}

// Standing is a player's rating state in one pool.
type Standing struct {
	Rating skill.Rating
	// Games is the number of rated games played in the pool.
	Games int64
	// Version increases by one with every change of the standing; the store
	// uses it for optimistic concurrency. Zero means "never rated".
	Version int64
	// UpdatedAt is when the standing last changed (zero if never).
	UpdatedAt time.Time
}

// New returns the standing of a player who has never played in the pool.
func (p Policy) New() Standing { return Standing{Rating: p.Model.New()} }

// Display returns the displayed rating of r.
func Display(r skill.Rating) int {
	d := math.Round(displayBase + displayScale*(r.Mu-3*r.Sigma))
	return int(max(0, min(MaxDisplay, d)))
}

// Provisional reports whether s is a provisional rating.
func (p Policy) Provisional(s Standing) bool {
	return s.Games < int64(p.ProvisionalGames) || s.Rating.Sigma > p.ProvisionalSigma
}

// maxEstablish bounds the simulation of GamesToEstablish. A valid model
// always shrinks σ towards a floor; a policy whose threshold is below that
// floor is never reached, and the estimate then stops here.
const maxEstablish = 1000

// GamesToEstablish estimates how many more rated games a player with
// standing s needs to stop being provisional: 0 if s is not provisional,
// else the larger of the games missing to ProvisionalGames and the games
// until σ falls to ProvisionalSigma if every opponent is exactly as
// uncertain as the player (the case of a new pool). It simulates the
// model's σ updates, which depend on the opponents' σ and hardly on the
// results: against established opponents σ falls faster, so the estimate
// is an upper bound there. The cost is one model update per game counted,
// small enough for every GetRating (at most maxEstablish).
func (p Policy) GamesToEstablish(s Standing) int {
	if !p.Provisional(s) {
		return 0
	}
	byGames := max(0, p.ProvisionalGames-int(min(s.Games, int64(p.ProvisionalGames))))
	r := s.Rating
	ranks := []int{1, 2, 3, 4}
	bySigma := 0
	for ; r.Sigma > p.ProvisionalSigma && bySigma < maxEstablish; bySigma++ {
		// Equal players, the player in second place: with equal μ the
		// places change μ, not σ.
		after, err := p.Model.Rate([]skill.Rating{r, r, r, r}, ranks)
		if err != nil {
			return max(byGames, maxEstablish)
		}
		r = skill.Rating{Mu: r.Mu, Sigma: after[1].Sigma}
	}
	return max(byGames, bySigma)
}

// Participant is a player in a seat of a finished match.
type Participant struct {
	PlayerID string
	// Name is the player's display name in the match (informational).
	Name   string
	Seat   Seat
	Points int
	Bot    bool
}

// Result is a validated match result: the participants from first place to
// fourth.
type Result struct {
	MatchID    string
	Pool       string
	FinishedAt time.Time
	Places     [Seats]Participant
}

// NewResult validates a finished match and returns its result. players are
// given in any order, one per seat; ranking lists the seats from first to
// fourth and must agree with the points and the tie-break of docs/rules.md
// section 9.
func NewResult(matchID, pool string, finishedAt time.Time, players []Participant, ranking []Seat) (Result, error) {
	var res Result
	if err := checkID("match id", matchID, MaxIDLen); err != nil {
		return res, err
	}
	if err := CheckPool(pool); err != nil {
		return res, err
	}
	if len(players) != Seats {
		return res, fmt.Errorf("%w: %d players, want %d", ErrInvalidResult, len(players), Seats)
	}
	if len(ranking) != Seats {
		return res, fmt.Errorf("%w: ranking has %d seats, want %d", ErrInvalidResult, len(ranking), Seats)
	}
	var bySeat [Seats]*Participant
	for i := range players {
		pl := &players[i]
		if pl.Seat < Red || pl.Seat > Green {
			return res, fmt.Errorf("%w: player %q has no valid seat (%d)", ErrInvalidResult, pl.PlayerID, int(pl.Seat))
		}
		if bySeat[pl.Seat] != nil {
			return res, fmt.Errorf("%w: two players in seat %v", ErrInvalidResult, pl.Seat)
		}
		if err := checkID("player id", pl.PlayerID, MaxIDLen); err != nil {
			return res, err
		}
		for _, other := range players[:i] {
			if other.PlayerID == pl.PlayerID {
				return res, fmt.Errorf("%w: player %q plays more than one seat", ErrInvalidResult, pl.PlayerID)
			}
		}
		bySeat[pl.Seat] = pl
	}
	var seen [Seats]bool
	for place, s := range ranking {
		if s < Red || s > Green || seen[s] {
			return res, fmt.Errorf("%w: ranking %v is not an order of the four seats", ErrInvalidResult, ranking)
		}
		seen[s] = true
		res.Places[place] = *bySeat[s]
	}
	for i := 1; i < Seats; i++ {
		if !Ahead(res.Places[i-1], res.Places[i]) {
			return res, fmt.Errorf("%w: ranking %v contradicts the points (%v with %d before %v with %d)",
				ErrInvalidResult, ranking, res.Places[i-1].Seat, res.Places[i-1].Points,
				res.Places[i].Seat, res.Places[i].Points)
		}
	}
	res.MatchID, res.Pool, res.FinishedAt = matchID, pool, finishedAt
	return res, nil
}

// Ahead reports whether a ranks above b: more result points, or equal points
// and a moves later in the turn order (docs/rules.md section 9).
func Ahead(a, b Participant) bool {
	if a.Points != b.Points {
		return a.Points > b.Points
	}
	return a.Seat > b.Seat
}

// CheckPool reports whether pool is a usable pool (rule set) name: 1 to
// MaxPoolLen characters of a-z, 0-9, '-', '_' and '.'. The name becomes part
// of a Redis hash tag, so braces and other punctuation are refused.
func CheckPool(pool string) error {
	if pool == "" || len(pool) > MaxPoolLen {
		return fmt.Errorf("%w: rule set %q must have 1 to %d characters", ErrInvalidResult, pool, MaxPoolLen)
	}
	for _, r := range pool {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("%w: rule set %q may contain only a-z, 0-9, '-', '_' and '.'", ErrInvalidResult, pool)
		}
	}
	return nil
}

// CheckPlayerID reports whether id is a usable player id.
func CheckPlayerID(id string) error { return checkID("player id", id, MaxIDLen) }

func checkID(what, id string, maxLen int) error {
	if id == "" || len(id) > maxLen {
		return fmt.Errorf("%w: %s %q must have 1 to %d bytes", ErrInvalidResult, what, id, maxLen)
	}
	for _, r := range id {
		if r < 0x21 || r == 0x7f {
			return fmt.Errorf("%w: %s %q contains spaces or control characters", ErrInvalidResult, what, id)
		}
	}
	return nil
}

// Change is one player's rating change from a match.
type Change struct {
	Participant
	// Place is 1 for the winner, 4 for the last.
	Place  int
	Before Standing
	After  Standing
}

// DisplayBefore returns the displayed rating before the match.
func (c Change) DisplayBefore() int { return Display(c.Before.Rating) }

// DisplayAfter returns the displayed rating after the match.
func (c Change) DisplayAfter() int { return Display(c.After.Rating) }

// Replay rates results one after the other, in the given order, from new
// standings, and returns every player's final standing: what the store must
// hold after applying the same matches in that order.
func (p Policy) Replay(results []Result) (map[string]Standing, error) {
	st := map[string]Standing{}
	for _, res := range results {
		var before [Seats]Standing
		for i, pl := range res.Places {
			s, ok := st[pl.PlayerID]
			if !ok {
				s = p.New()
			}
			before[i] = s
		}
		changes, err := p.Rate(res, before, res.FinishedAt)
		if err != nil {
			return nil, fmt.Errorf("replay match %s: %w", res.MatchID, err)
		}
		for _, c := range changes {
			st[c.PlayerID] = c.After
		}
	}
	return st, nil
}

// Rate computes the changes of a match. before holds the players' standings
// in place order (before[0] is the winner's). Each standing after the match
// has one more game and the next version; UpdatedAt is set to at.
func (p Policy) Rate(res Result, before [Seats]Standing, at time.Time) ([Seats]Change, error) {
	var out [Seats]Change
	ratings := make([]skill.Rating, Seats)
	ranks := make([]int, Seats)
	for i := range before {
		ratings[i] = before[i].Rating
		ranks[i] = i + 1
	}
	after, err := p.Model.Rate(ratings, ranks)
	if err != nil {
		return out, fmt.Errorf("rate match %s: %w", res.MatchID, err)
	}
	for i := range out {
		out[i] = Change{
			Participant: res.Places[i],
			Place:       i + 1,
			Before:      before[i],
			After: Standing{
				Rating:    after[i],
				Games:     before[i].Games + 1,
				Version:   before[i].Version + 1,
				UpdatedAt: at,
			},
		}
	}
	return out, nil
}
