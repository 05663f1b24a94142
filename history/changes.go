package history

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/montanaflynn/stats"
)

// ChangeOptions tune the change-point search (EDivisive).
type ChangeOptions struct {
	// Alpha is the significance level of each permutation test (default
	// 0.01: on a series with no shift a change is flagged about 1 time in
	// 100).
	Alpha float64
	// Permutations per test (default 999; the smallest p-value is
	// 1/(Permutations+1)).
	Permutations int
	// MinSegment is the fewest runs on each side of a change (default 3,
	// at least 2).
	MinSegment int
	// Seed seeds the permutations (PCG): the same series and options give
	// the same answer. Default 1.
	Seed uint64
}

// DefaultChangeOptions are fiomig history changes' defaults.
var DefaultChangeOptions = ChangeOptions{Alpha: 0.01, Permutations: 999, MinSegment: 3, Seed: 1}

func (o ChangeOptions) withDefaults() ChangeOptions {
	d := DefaultChangeOptions
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = d.Alpha
	}
	if o.Permutations <= 0 {
		o.Permutations = d.Permutations
	}
	if o.MinSegment < 2 {
		o.MinSegment = d.MinSegment
	}
	if o.Seed == 0 {
		o.Seed = d.Seed
	}
	return o
}

// Method names the change-point method with o's settings.
func (o ChangeOptions) Method() string {
	o = o.withDefaults()
	return fmt.Sprintf("E-divisive means (Matteson & James, JASA 109, 2014): energy distance with exponent 1 between the runs before and after each split, "+
		"the best split of a segment kept when a permutation test of %d permutations (PCG seeded %d) gives p <= %g, then each side searched again (binary segmentation); at least %d runs each side",
		o.Permutations, o.Seed, o.Alpha, o.MinSegment)
}

// ChangePoint is one shift found in a series.
type ChangePoint struct {
	// Index is the first position after the shift (0-based in the series).
	Index int
	// Statistic is the energy statistic q̂ of the split; PValue its
	// permutation p-value.
	Statistic, PValue float64
	// Before and After are the medians of the segments on either side (the
	// neighbouring change points or the series' ends bound them).
	Before, After float64
}

// EDivisive finds change points in xs: the split of xs maximising the
// energy statistic
//
//	q̂(k) = k(n−k)/n · [ 2/(k(n−k)) Σ_{i<k≤j} |x_i−x_j| − 1/C(k,2) Σ_{i<j<k} |x_i−x_j| − 1/C(n−k,2) Σ_{k≤i<j} |x_i−x_j| ]
//
// over k with at least MinSegment values each side is kept when the same
// maximum over Permutations random permutations of the segment reaches it
// in at most a fraction Alpha of them (p = (1 + #{q̂_perm ≥ q̂})/(1 +
// Permutations)); the segments on both sides are then searched again, the
// segment with the largest statistic first, until a test fails or no
// segment is long enough. Change points are returned in series order. The
// search costs O(n²) per permutation.
func EDivisive(xs []float64, o ChangeOptions) []ChangePoint {
	o = o.withDefaults()
	rng := rand.New(rand.NewPCG(o.Seed, 0x6564_6976)) // "ediv"
	type seg struct{ a, b int }
	segs := []seg{{0, len(xs)}}
	var found []ChangePoint
	for {
		best, bestK, bestQ := -1, -1, 0.0
		for i, s := range segs {
			k, q := bestSplit(xs[s.a:s.b], o.MinSegment)
			if k >= 0 && (best < 0 || q > bestQ) {
				best, bestK, bestQ = i, k, q
			}
		}
		if best < 0 || bestQ <= 0 {
			break
		}
		s := segs[best]
		part := slices.Clone(xs[s.a:s.b])
		reach := 0
		for range o.Permutations {
			rng.Shuffle(len(part), func(i, j int) { part[i], part[j] = part[j], part[i] })
			if _, q := bestSplit(part, o.MinSegment); q >= bestQ {
				reach++
			}
		}
		p := float64(1+reach) / float64(1+o.Permutations)
		if p > o.Alpha {
			break
		}
		found = append(found, ChangePoint{Index: s.a + bestK, Statistic: bestQ, PValue: p})
		segs = append(segs[:best], append([]seg{{s.a, s.a + bestK}, {s.a + bestK, s.b}}, segs[best+1:]...)...)
	}
	slices.SortFunc(found, func(x, y ChangePoint) int { return x.Index - y.Index })
	for i := range found {
		lo, hi := 0, len(xs)
		if i > 0 {
			lo = found[i-1].Index
		}
		if i+1 < len(found) {
			hi = found[i+1].Index
		}
		found[i].Before = median(xs[lo:found[i].Index])
		found[i].After = median(xs[found[i].Index:hi])
	}
	return found
}

// bestSplit returns the k in [minSeg, n−minSeg] maximising q̂(k) over ys
// and that maximum; k = −1 when ys is too short to split.
func bestSplit(ys []float64, minSeg int) (int, float64) {
	n := len(ys)
	if n < 2*minSeg {
		return -1, 0
	}
	// row[i] = Σ_j |y_i − y_j| over all j; total within-sum W = Σ_{i<j}.
	d := func(i, j int) float64 { return math.Abs(ys[i] - ys[j]) }
	// Sweep k upwards keeping: left = Σ_{i<j<k} d, cross = Σ_{i<k≤j} d,
	// right = Σ_{k≤i<j} d. Moving y_k from the right to the left side:
	// toLeft = Σ_{i<k} d(i,k), toRight = Σ_{j>k} d(k,j).
	var left, cross, right float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			right += d(i, j)
		}
	}
	bestK, bestQ := -1, math.Inf(-1)
	for k := 0; k < n; k++ {
		// Move y_k into the left segment: the split becomes k+1.
		var toLeft, toRight float64
		for i := 0; i < k; i++ {
			toLeft += d(i, k)
		}
		for j := k + 1; j < n; j++ {
			toRight += d(k, j)
		}
		left += toLeft
		cross += toRight - toLeft
		right -= toRight
		m := k + 1 // left size
		r := n - m
		if m < minSeg || r < minSeg {
			continue
		}
		mf, rf := float64(m), float64(r)
		e := 2*cross/(mf*rf) - left/(mf*(mf-1)/2) - right/(rf*(rf-1)/2)
		q := mf * rf / float64(n) * e
		if q > bestQ {
			bestK, bestQ = m, q
		}
	}
	return bestK, bestQ
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m, _ := stats.Median(xs)
	return m
}
