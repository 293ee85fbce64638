// Package skill implements the Weng-Lin Bayesian rating model with the
// Plackett-Luce likelihood, as published by Weng and Lin ("A Bayesian
// Approximation Method for Online Ranking", JMLR 12, 2011, algorithm 4) and
// popularised by the OpenSkill libraries.
//
// A player's skill is a normal belief N(μ, σ²). After a game with a full
// ranking, every player's μ moves towards what the result suggests and σ
// shrinks, by closed-form updates (no iteration). The package rates players,
// not teams: each participant of a Four Kingdoms game is a team of one.
//
// The dynamics factor τ is applied explicitly and first, σ' = sqrt(σ² + τ²),
// so that σ never collapses to zero and old results slowly lose weight.
//
// The package is pure computation: no I/O, no clocks, no global state.
package skill

import (
	"errors"
	"fmt"
	"math"
)

// Rating is a skill belief: the mean μ and the standard deviation σ.
type Rating struct {
	Mu    float64
	Sigma float64
}

// Model holds the parameters of the rating model. The zero value is not
// useful; start from [Default].
type Model struct {
	// Mu is the mean of a new player's skill.
	Mu float64
	// Sigma is the uncertainty of a new player's skill.
	Sigma float64
	// Beta is the performance noise: how much a single game's performance
	// varies around the player's skill.
	Beta float64
	// Kappa is the lower bound of the factor that shrinks σ² in one update,
	// which keeps σ positive.
	Kappa float64
	// Tau is the dynamics factor added to σ (in quadrature) before every
	// update. Zero disables it.
	Tau float64
}

// Default returns the OpenSkill defaults: μ=25, σ=25/3, β=σ/2, κ=0.0001,
// τ=25/300.
func Default() Model {
	return Model{
		Mu:    25,
		Sigma: 25.0 / 3,
		Beta:  25.0 / 6,
		Kappa: 0.0001,
		Tau:   25.0 / 300,
	}
}

// New returns a new player's rating.
func (m Model) New() Rating { return Rating{Mu: m.Mu, Sigma: m.Sigma} }

// Validate reports whether the parameters describe a usable model.
func (m Model) Validate() error {
	switch {
	case !finite(m.Mu):
		return errors.New("skill: mu must be finite")
	case !(m.Sigma > 0) || !finite(m.Sigma):
		return errors.New("skill: sigma must be positive")
	case !(m.Beta > 0) || !finite(m.Beta):
		return errors.New("skill: beta must be positive")
	case !(m.Kappa > 0) || m.Kappa >= 1:
		return errors.New("skill: kappa must be in (0, 1)")
	case !(m.Tau >= 0) || !finite(m.Tau):
		return errors.New("skill: tau must be non-negative")
	}
	return nil
}

// ErrBadInput reports ratings or ranks that the model cannot rate.
var ErrBadInput = errors.New("skill: bad input")

// Rate returns the ratings after one game. ratings[i] is player i's rating
// before the game and ranks[i] their place (1 is best; equal ranks are ties,
// and only the order matters, not the values). τ is applied to every player
// before the update. The result has the same order as the input.
func (m Model) Rate(ratings []Rating, ranks []int) ([]Rating, error) {
	n := len(ratings)
	if n < 2 {
		return nil, fmt.Errorf("%w: need at least two players, got %d", ErrBadInput, n)
	}
	if len(ranks) != n {
		return nil, fmt.Errorf("%w: %d ratings but %d ranks", ErrBadInput, n, len(ranks))
	}
	for i, r := range ratings {
		if !finite(r.Mu) || !(r.Sigma > 0) || !finite(r.Sigma) {
			return nil, fmt.Errorf("%w: player %d has rating (%v, %v)", ErrBadInput, i, r.Mu, r.Sigma)
		}
	}

	// σ² after the dynamics step, per player.
	sigma2 := make([]float64, n)
	sum := 0.0
	for i, r := range ratings {
		sigma2[i] = r.Sigma*r.Sigma + m.Tau*m.Tau
		sum += sigma2[i] + m.Beta*m.Beta
	}
	c := math.Sqrt(sum)

	// e[i] = exp(μ_i / c), the Plackett-Luce strength of player i.
	// sumQ[q] sums the strengths of everybody ranked at or below q (the
	// players still "in the race" when q's place is decided); a[q] counts
	// the players tied with q.
	e := make([]float64, n)
	for i, r := range ratings {
		e[i] = math.Exp(r.Mu / c)
	}
	sumQ := make([]float64, n)
	a := make([]float64, n)
	for q := range n {
		for i := range n {
			if ranks[i] >= ranks[q] {
				sumQ[q] += e[i]
			}
			if ranks[i] == ranks[q] {
				a[q]++
			}
		}
	}

	out := make([]Rating, n)
	for i, r := range ratings {
		var omega, delta float64
		for q := range n {
			if ranks[q] > ranks[i] {
				continue // q's place was decided after i left the race
			}
			p := e[i] / sumQ[q] // chance that i takes q's place
			delta += p * (1 - p) / a[q]
			if q == i {
				omega += (1 - p) / a[q]
			} else {
				omega -= p / a[q]
			}
		}
		omega *= sigma2[i] / c
		delta *= sigma2[i] / (c * c)
		// γ = σ/c damps the variance update (Weng-Lin's default choice).
		delta *= math.Sqrt(sigma2[i]) / c

		sigma := math.Sqrt(sigma2[i])
		out[i] = Rating{
			Mu:    r.Mu + omega,
			Sigma: sigma * math.Sqrt(math.Max(1-delta, m.Kappa)),
		}
	}
	return out, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
