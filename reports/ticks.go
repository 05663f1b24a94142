package reports

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// niceTicks is a plot.Ticker whose major ticks are evenly spaced at a
// step of 1, 2 or 5 × 10^k, chosen as the smallest such step that gives at
// most Max intervals over the axis (default 8), labelled in the shortest
// decimal form; one unlabelled minor tick sits halfway between majors.
// Unlike gonum's default ticker it never mixes spacings (no 0, 3, 5, 6).
// Marks adds labelled ticks at given values (the pause bound): a major
// label closer to a mark than 6 % of the axis loses its label (its tick is
// kept) so the two never overlap.
type niceTicks struct {
	Max   int
	Marks []plot.Tick
}

// niceStep returns the smallest 1, 2 or 5 × 10^k step that divides span
// into at most n intervals.
func niceStep(span float64, n int) float64 {
	if !(span > 0) || n < 1 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if s := m * mag; s >= raw*(1-1e-9) {
			return s
		}
	}
	return 10 * mag
}

// formatTick prints v rounded to the step's decimals, without "-0".
func formatTick(v, step float64) string {
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if f, _ := strconv.ParseFloat(s, 64); f == 0 {
		return strconv.FormatFloat(0, 'f', dec, 64)
	}
	return s
}

// Ticks implements plot.Ticker.
func (n niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi < lo {
		lo, hi = hi, lo
	}
	maxN := n.Max
	if maxN <= 0 {
		maxN = 8
	}
	step := niceStep(hi-lo, maxN)
	first := math.Ceil(lo/step-1e-9) * step
	near := 0.06 * (hi - lo)
	var out []plot.Tick
	for i := 0; ; i++ {
		v := first + float64(i)*step
		if v > hi+step*1e-9 {
			break
		}
		v = math.Round(v/step) * step
		label := formatTick(v, step)
		for _, m := range n.Marks {
			if math.Abs(v-m.Value) < near {
				label = ""
			}
		}
		if label != "" || !markAt(n.Marks, v) {
			out = append(out, plot.Tick{Value: v, Label: label})
		}
		if half := v + step/2; half < hi {
			out = append(out, plot.Tick{Value: half})
		}
	}
	if lo < first-step/2 {
		out = append(out, plot.Tick{Value: first - step/2})
	}
	for _, m := range n.Marks {
		if m.Value >= lo && m.Value <= hi {
			out = append(out, m)
		}
	}
	return out
}

func markAt(marks []plot.Tick, v float64) bool {
	for _, m := range marks {
		if m.Value == v {
			return true
		}
	}
	return false
}
