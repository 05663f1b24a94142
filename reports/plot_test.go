package reports

import (
	"fmt"
	"image/color"
	"math"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"github.com/fiomig/fiomig/record"
)

// manyMigrations is a summary of n migrations mig-0001 ... with pauses
// from 1 to 9 s.
func manyMigrations(n int) record.Summary {
	var sum record.Summary
	for i := 1; i <= n; i++ {
		sum.Migrations = append(sum.Migrations, record.MigrationSummary{ID: fmt.Sprintf("mig-%04d", i),
			Hosts: map[string]record.HostPauses{"worker-1": {LongestPauseS: 1 + float64(i%9)}}})
	}
	return sum
}

// labelled returns the labelled ticks of an axis and their positions (pt)
// along it in the plot's real data area at the size PausePlotBytes uses.
func labelled(p *plot.Plot, a *plot.Axis, horizontal bool) ([]plot.Tick, []vg.Length) {
	dc := p.DataCanvas(draw.NewCanvas(new(recorder.Canvas), plotWidth, plotHeight))
	var ts []plot.Tick
	var at []vg.Length
	for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if t.IsMinor() {
			continue
		}
		ts = append(ts, t)
		if horizontal {
			at = append(at, dc.X(a.Norm(t.Value)))
		} else {
			at = append(at, dc.Y(a.Norm(t.Value)))
		}
	}
	return ts, at
}

// TestPausePlotXLabelsDoNotOverlap: with 2, 23, 80 and 400 migrations,
// consecutive x labels are at least their own extent apart along the axis
// in the rendered data area (the width of a horizontal label, the height
// of a rotated one), the first migration is labelled, and the labels stay
// dense enough to find a migration: never fewer than min(n, 10), and when
// some are skipped, consecutive labels at most 3 extents apart.
func TestPausePlotXLabelsDoNotOverlap(t *testing.T) {
	plan, _ := fixture()
	for _, n := range []int{2, 23, 80, 400} {
		p, err := PausePlot(plan, manyMigrations(n))
		if err != nil {
			t.Fatal(err)
		}
		ts, at := labelled(p, &p.X, true)
		if len(ts) == 0 || ts[0].Label != "mig-0001" {
			t.Fatalf("n=%d: first labelled tick %v, want mig-0001", n, ts)
		}
		if want := min(n, 10); len(ts) < want {
			t.Errorf("n=%d: %d labels, want at least %d", n, len(ts), want)
		}
		rotated := p.X.Tick.Label.Rotation != 0
		for i := 1; i < len(ts); i++ {
			extent := p.X.Tick.Label.Width(ts[i].Label)
			if rotated {
				extent = p.X.Tick.Label.Height(ts[i].Label)
			}
			gap := at[i] - at[i-1]
			if gap < extent {
				t.Fatalf("n=%d (rotated %v): labels %s and %s are %.1f pt apart, each needs %.1f pt",
					n, rotated, ts[i-1].Label, ts[i].Label, gap, extent)
			}
			if len(ts) < n && gap > 3*extent {
				t.Fatalf("n=%d: labels %s and %s are %.1f pt apart, more than 3 × %.1f pt: too few labels",
					n, ts[i-1].Label, ts[i].Label, gap, extent)
			}
		}
	}
}

// TestPausePlotYTickAtBound: the y axis has a labelled tick at
// CUTOVER_PAUSE_CRIT_S, and no two y labels overlap.
func TestPausePlotYTickAtBound(t *testing.T) {
	plan, _ := fixture()
	for _, crit := range []float64{5, 3.7, 4} {
		plan.Params.PauseCritS = crit
		p, err := PausePlot(plan, manyMigrations(23))
		if err != nil {
			t.Fatal(err)
		}
		ts, at := labelled(p, &p.Y, false)
		found := 0
		for _, tk := range ts {
			if tk.Value == crit && tk.Label == record.FormatT(crit) {
				found++
			}
		}
		if found != 1 {
			t.Errorf("crit %v: y ticks %v, want exactly one labelled %q at the bound", crit, ts, record.FormatT(crit))
		}
		for i := range ts {
			for j := i + 1; j < len(ts); j++ {
				if d := math.Abs(float64(at[i] - at[j])); d < float64(p.Y.Tick.Label.Height(ts[i].Label)) {
					t.Errorf("crit %v: y labels %q and %q overlap (%.1f pt apart)", crit, ts[i].Label, ts[j].Label, d)
				}
			}
		}
	}
}

// TestSwimlaneLegendColoursApart (issue 27 item 9): the fault band and the
// shading of a fault's pause window, as drawn over white, are far from
// every lane state's colour and from the pause shading, so that a reader
// tells "fault" from "connecting" (they were two near purples) in the
// legend. Distance: Euclidean in 8-bit RGB; 40 is the least kept here.
func TestSwimlaneLegendColoursApart(t *testing.T) {
	over := func(c color.Color) [3]float64 { // straight alpha over white
		r, g, b, a := c.RGBA() // premultiplied, 16 bit
		w := 65535 - float64(a)
		return [3]float64{(float64(r) + w) / 257, (float64(g) + w) / 257, (float64(b) + w) / 257}
	}
	dist := func(x, y [3]float64) float64 {
		return math.Sqrt((x[0]-y[0])*(x[0]-y[0]) + (x[1]-y[1])*(x[1]-y[1]) + (x[2]-y[2])*(x[2]-y[2]))
	}
	others := map[string]color.Color{"pause window": colorPause}
	for st, c := range laneColors {
		others[st] = c
	}
	for name, c := range map[string]color.Color{"fault": colorFault, "fault's pause window": colorFaultPause} {
		for st, o := range others {
			if d := dist(over(c), over(o)); d < 40 {
				t.Errorf("legend colour of %s is %.0f from %s's (want >= 40)", name, d, st)
			}
		}
	}
}
