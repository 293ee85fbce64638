package skill

import (
	"errors"
	"math"
	"testing"
)

func TestRateReference(t *testing.T) {
	t.Parallel()
	noTau := Default()
	noTau.Tau = 0
	fresh := noTau.New()

	tests := []struct {
		name   string
		model  Model
		before []Rating
		ranks  []int
		want   []Rating
		tol    float64
	}{
		{
			name:   "four fresh players, no tau",
			model:  noTau,
			before: []Rating{fresh, fresh, fresh, fresh},
			ranks:  []int{1, 2, 3, 4},
			want: []Rating{
				{27.795084971874736, 8.263160757613477},
				{26.552824984374855, 8.179213704945203},
				{24.68943500312503, 8.083731307186588},
				{20.96265504062538, 8.083731307186588},
			},
			tol: 1e-12,
		},
		{
			name:   "two fresh players, no tau",
			model:  noTau,
			before: []Rating{fresh, fresh},
			ranks:  []int{1, 2},
			want: []Rating{
				{27.63523138347365, 8.065506316323548},
				{22.36476861652635, 8.065506316323548},
			},
			tol: 1e-12,
		},
		{
			name:   "three fresh players, no tau",
			model:  noTau,
			before: []Rating{fresh, fresh, fresh},
			ranks:  []int{1, 2, 3},
			want: []Rating{
				{27.868876552746237, 8.204837030780652},
				{25.717219138186557, 8.057829747583874},
				{21.413904309067206, 8.057829747583874},
			},
			tol: 1e-12,
		},
		{
			name:   "input order does not matter, only ranks",
			model:  noTau,
			before: []Rating{fresh, fresh, fresh, fresh},
			ranks:  []int{4, 2, 1, 3},
			want: []Rating{
				{20.96265504062538, 8.083731307186588},
				{26.552824984374855, 8.179213704945203},
				{27.795084971874736, 8.263160757613477},
				{24.68943500312503, 8.083731307186588},
			},
			tol: 1e-12,
		},
		{
			name:  "established players with tau",
			model: Default(),
			before: []Rating{
				{29.182, 4.782},
				{27.174, 4.922},
				{16.672, 6.217},
				{25.0, 8.3333333},
			},
			ranks: []int{1, 2, 3, 4},
			want: []Rating{
				{30.210227447000438, 4.765617924939384},
				{27.644725221915632, 4.883479590134575},
				{17.4036218889969, 6.101259408259549},
				{19.21460876538932, 7.854669920480409},
			},
			tol: 1e-6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.model.Rate(tt.before, tt.ranks)
			if err != nil {
				t.Fatalf("Rate: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Rate returned %d ratings, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if math.Abs(got[i].Mu-tt.want[i].Mu) > tt.tol || math.Abs(got[i].Sigma-tt.want[i].Sigma) > tt.tol {
					t.Errorf("player %d: got (%.15g, %.15g), want (%.15g, %.15g)",
						i, got[i].Mu, got[i].Sigma, tt.want[i].Mu, tt.want[i].Sigma)
				}
			}
		})
	}
}

func TestRateTies(t *testing.T) {
	t.Parallel()
	m := Default()
	fresh := m.New()
	got, err := m.Rate([]Rating{fresh, fresh, fresh, fresh}, []int{1, 2, 2, 4})
	if err != nil {
		t.Fatal(err)
	}
	if got[1] != got[2] {
		t.Errorf("tied players with equal priors got different ratings: %v and %v", got[1], got[2])
	}
	if !(got[0].Mu > got[1].Mu && got[2].Mu > got[3].Mu) {
		t.Errorf("ratings do not follow the ranking: %v", got)
	}
}

func TestRateConservesOrderAndShrinksSigma(t *testing.T) {
	t.Parallel()
	m := Default()
	m.Tau = 0
	before := []Rating{{30, 3}, {20, 5}, {25, 8}, {28, 2}}
	got, err := m.Rate(before, []int{3, 1, 4, 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i].Sigma >= before[i].Sigma {
			t.Errorf("player %d: sigma %v did not shrink from %v", i, got[i].Sigma, before[i].Sigma)
		}
	}
	if !(got[1].Mu > before[1].Mu) || !(got[2].Mu < before[2].Mu) {
		t.Errorf("winner or loser moved the wrong way: %v -> %v", before, got)
	}
}

func TestRateBadInput(t *testing.T) {
	t.Parallel()
	m := Default()
	fresh := m.New()
	tests := []struct {
		name    string
		ratings []Rating
		ranks   []int
	}{
		{"one player", []Rating{fresh}, []int{1}},
		{"rank count mismatch", []Rating{fresh, fresh}, []int{1}},
		{"zero sigma", []Rating{fresh, {25, 0}}, []int{1, 2}},
		{"NaN mu", []Rating{fresh, {math.NaN(), 1}}, []int{1, 2}},
		{"infinite sigma", []Rating{fresh, {25, math.Inf(1)}}, []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := m.Rate(tt.ratings, tt.ranks); !errors.Is(err, ErrBadInput) {
				t.Errorf("Rate error = %v, want ErrBadInput", err)
			}
		})
	}
}

func TestModelValidate(t *testing.T) {
	t.Parallel()
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	for _, mut := range []func(*Model){
		func(m *Model) { m.Sigma = 0 },
		func(m *Model) { m.Beta = -1 },
		func(m *Model) { m.Kappa = 0 },
		func(m *Model) { m.Tau = -1 },
		func(m *Model) { m.Mu = math.NaN() },
	} {
		m := Default()
		mut(&m)
		if err := m.Validate(); err == nil {
			t.Errorf("Validate accepted %+v", m)
		}
	}
}

func BenchmarkRateFour(b *testing.B) {
	m := Default()
	before := []Rating{{29.182, 4.782}, {27.174, 4.922}, {16.672, 6.217}, {25.0, 8.3333333}}
	ranks := []int{1, 2, 3, 4}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Rate(before, ranks); err != nil {
			b.Fatal(err)
		}
	}
}
