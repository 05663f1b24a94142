package history

import (
	"math"
	"math/rand/v2"
	"testing"
)

// series returns n values drawn around mean (normal, sd) with a step of
// size step from index at on (at < 0: no step), from PCG seed.
func series(seed uint64, n, at int, mean, sd, step float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = mean + sd*r.NormFloat64()
		if at >= 0 && i >= at {
			xs[i] += step
		}
	}
	return xs
}

// TestEDivisiveFindsAPlantedStep: a step of 4 standard deviations at
// position 19 (run 20) of 30 is found there, ±1, on 20 different noise
// draws; a step of 2 standard deviations is found (somewhere) on at least
// 18 of 20; and a step up then back down gives both change points.
func TestEDivisiveFindsAPlantedStep(t *testing.T) {
	found := 0
	for seed := uint64(1); seed <= 20; seed++ {
		if len(EDivisive(series(seed, 30, 19, 2, 0.25, 0.5), DefaultChangeOptions)) > 0 {
			found++
		}
	}
	if found < 18 {
		t.Errorf("a 2 sd step found on %d of 20 series, want >= 18", found)
	}
	for seed := uint64(1); seed <= 20; seed++ {
		xs := series(seed, 30, 19, 2, 0.25, 1)
		cps := EDivisive(xs, DefaultChangeOptions)
		if len(cps) != 1 {
			t.Errorf("seed %d: %d change points %+v, want 1 at 19", seed, len(cps), cps)
			continue
		}
		if d := cps[0].Index - 19; d < -1 || d > 1 {
			t.Errorf("seed %d: change at %d, want 19 ± 1", seed, cps[0].Index)
		}
		if cps[0].After <= cps[0].Before {
			t.Errorf("seed %d: after %v <= before %v on a step up", seed, cps[0].After, cps[0].Before)
		}
	}
	xs := series(3, 45, 15, 2, 0.2, 1)
	for i := 30; i < 45; i++ {
		xs[i] -= 1
	}
	cps := EDivisive(xs, DefaultChangeOptions)
	if len(cps) != 2 || math.Abs(float64(cps[0].Index-15)) > 1 || math.Abs(float64(cps[1].Index-30)) > 1 {
		t.Errorf("up at 15, down at 30: got %+v", cps)
	}
}

// TestEDivisiveFlatSeries: on series with no shift — normal noise, heavy
// tailed noise, constant — change points are flagged at about the
// significance level: at most 5 of 200 normal series at Alpha 0.01
// (binomial(200, 0.01) exceeds 5 with probability < 2 %), none on a
// constant series.
func TestEDivisiveFlatSeries(t *testing.T) {
	flagged := 0
	for seed := uint64(100); seed < 300; seed++ {
		if len(EDivisive(series(seed, 30, -1, 2, 0.25, 0), DefaultChangeOptions)) > 0 {
			flagged++
		}
	}
	if flagged > 5 {
		t.Errorf("%d of 200 flat series flagged at alpha 0.01, want <= 5", flagged)
	}
	t.Logf("flat normal series flagged: %d of 200", flagged)
	heavy := 0
	for seed := uint64(300); seed < 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		xs := make([]float64, 30)
		for i := range xs {
			xs[i] = 2 + 0.1*math.Tan(math.Pi*(r.Float64()-0.5)) // Cauchy
		}
		if len(EDivisive(xs, DefaultChangeOptions)) > 0 {
			heavy++
		}
	}
	t.Logf("flat Cauchy series flagged: %d of 100", heavy)
	if heavy > 4 {
		t.Errorf("%d of 100 Cauchy series flagged, want <= 4", heavy)
	}
	constant := make([]float64, 30)
	for i := range constant {
		constant[i] = 2.5
	}
	if cps := EDivisive(constant, DefaultChangeOptions); len(cps) != 0 {
		t.Errorf("constant series: %+v", cps)
	}
	if cps := EDivisive([]float64{1, 2, 3, 4, 5}, DefaultChangeOptions); len(cps) != 0 {
		t.Errorf("5 values, too short for two segments of 3: %+v", cps)
	}
}

// TestBestSplitMatchesTheDefinition compares the O(n²) sweep with q̂(k)
// computed from its definition.
func TestBestSplitMatchesTheDefinition(t *testing.T) {
	xs := series(9, 17, 6, 1, 1, 2)
	n := len(xs)
	bestK, bestQ := -1, math.Inf(-1)
	for k := 3; k <= n-3; k++ {
		var cross, left, right float64
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				d := math.Abs(xs[i] - xs[j])
				switch {
				case j < k:
					left += d
				case i >= k:
					right += d
				default:
					cross += d
				}
			}
		}
		m, r := float64(k), float64(n-k)
		q := m * r / float64(n) * (2*cross/(m*r) - left/(m*(m-1)/2) - right/(r*(r-1)/2))
		if q > bestQ {
			bestK, bestQ = k, q
		}
	}
	k, q := bestSplit(xs, 3)
	if k != bestK || math.Abs(q-bestQ) > 1e-9 {
		t.Errorf("bestSplit = %d, %v; by definition %d, %v", k, q, bestK, bestQ)
	}
}
