package reports

import (
	"math"
	"strconv"
	"testing"

	"gonum.org/v1/plot"
)

// TestNiceTicksEvenlySpaced: over axes of many ranges, the labelled ticks
// (the mark aside) are evenly spaced at 1, 2 or 5 × 10^k, at most Max+1 of
// them, at least 2, each label the tick's value; the mark is labelled once
// and no label sits within 6 % of the axis of it. (gonum's default ticker
// gave 0, 3, 5, 6 on the pause plot: uneven, and the bound's 5 among them.)
func TestNiceTicksEvenlySpaced(t *testing.T) {
	for _, r := range [][2]float64{{0, 7}, {0, 1.02}, {0, 8.4}, {0, 11.2}, {12.3, 47.9}, {0, 0.35}, {100, 2400}, {-0.5, 60}} {
		for _, mark := range []float64{math.NaN(), 5} {
			nt := niceTicks{Max: 8}
			if !math.IsNaN(mark) {
				nt.Marks = []plot.Tick{{Value: mark, Label: "5"}}
			}
			var vals []float64
			marks := 0
			for _, tk := range nt.Ticks(r[0], r[1]) {
				if tk.Label == "" {
					continue
				}
				if !math.IsNaN(mark) && tk.Value == mark {
					marks++
					continue
				}
				if f, err := strconv.ParseFloat(tk.Label, 64); err != nil || math.Abs(f-tk.Value) > 1e-9 {
					t.Errorf("range %v: label %q at %v", r, tk.Label, tk.Value)
				}
				if !math.IsNaN(mark) && math.Abs(tk.Value-mark) < 0.06*(r[1]-r[0]) {
					t.Errorf("range %v: label %q within 6 %% of the mark at %v", r, tk.Label, mark)
				}
				vals = append(vals, tk.Value)
			}
			if !math.IsNaN(mark) && mark >= r[0] && mark <= r[1] && marks != 1 {
				t.Errorf("range %v: mark labelled %d times, want once", r, marks)
			}
			if len(vals) < 2 || len(vals) > 9 {
				t.Errorf("range %v mark %v: %d labelled ticks %v", r, mark, len(vals), vals)
				continue
			}
			step := niceStep(r[1]-r[0], 8)
			mant := step / math.Pow(10, math.Floor(math.Log10(step)))
			if math.Abs(mant-1) > 1e-9 && math.Abs(mant-2) > 1e-9 && math.Abs(mant-5) > 1e-9 {
				t.Errorf("range %v: step %v is not 1, 2 or 5 × 10^k", r, step)
			}
			for i := 1; i < len(vals); i++ {
				// Consecutive labels are one step apart, or two where a
				// label near the mark was dropped.
				d := (vals[i] - vals[i-1]) / step
				if math.Abs(d-math.Round(d)) > 1e-6 || d < 0.5 || d > 2.5 {
					t.Errorf("range %v mark %v: labels %v not evenly spaced at %v", r, mark, vals, step)
					break
				}
			}
		}
	}
}
