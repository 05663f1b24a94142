package reports

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/fiomig/fiomig/record"
)

// PauseSample is what one run contributes to a pause distribution, in
// seconds: the length of every pause window attributed to a migration that
// reached a terminal phase, and the longest pause per (migration, consumer
// host) pair of those migrations (the figure the bound judges), but a
// pair whose cutover lies inside a fault window (HostPauses.MaskedBy:
// its longest pause is not known).
type PauseSample struct {
	Windows []float64
	Longest []float64
}

// Pauses collects sum's PauseSample over the Counted migrations, as Stats
// does.
func Pauses(sum record.Summary) PauseSample {
	var ps PauseSample
	for _, m := range sum.Migrations {
		if !Counted(m) {
			continue
		}
		for _, h := range sortedHosts(m) {
			hp := m.Hosts[h]
			if hp.MaskedBy == nil {
				ps.Longest = append(ps.Longest, hp.LongestPauseS)
			}
			for _, w := range hp.Windows {
				ps.Windows = append(ps.Windows, record.RoundT(w[1]-w[0]))
			}
		}
	}
	return ps
}

// ecdfXY returns the points of the empirical CDF of vs as a post-step
// line: (0, 0), then (x_(i), i/n) for the sorted values, then on to
// xmax at 1.
func ecdfXY(vs []float64, xmax float64) plotter.XYs {
	s := slices.Clone(vs)
	slices.Sort(s)
	pts := plotter.XYs{{X: 0, Y: 0}}
	for i, v := range s {
		pts = append(pts, plotter.XY{X: v, Y: float64(i+1) / float64(len(s))})
	}
	return append(pts, plotter.XY{X: math.Max(xmax, pts[len(pts)-1].X), Y: pts[len(pts)-1].Y})
}

// ECDFPlot builds the empirical CDF of pause windows over the summaries of
// one run or many (a sweep's seeds): every pause window (solid) and the
// longest pause per (migration, host) pair (dashed), pooled over sums, with
// the bound crit (CUTOVER_PAUSE_CRIT_S) as a vertical line and labelled x
// tick. With more than one summary, each summary's longest pauses are also
// drawn as a thin grey line (up to 50 summaries) so a seed that differs
// stands out. title names the set. Only Counted migrations count
// (Pauses).
func ECDFPlot(title string, sums []record.Summary, crit float64) (*plot.Plot, []LegendItem, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "pause (s)"
	p.Y.Label.Text = "fraction ≤ x"
	var all PauseSample
	top := crit
	for _, s := range sums {
		ps := Pauses(s)
		all.Windows = append(all.Windows, ps.Windows...)
		all.Longest = append(all.Longest, ps.Longest...)
	}
	for _, v := range all.Windows {
		top = math.Max(top, v)
	}
	for _, v := range all.Longest {
		top = math.Max(top, v)
	}
	p.X.Min, p.X.Max = 0, top*1.1
	p.Y.Min, p.Y.Max = 0, 1.02
	p.X.Tick.Marker = niceTicks{Max: 10, Marks: []plot.Tick{{Value: crit, Label: record.FormatT(crit)}}}
	p.Y.Tick.Marker = niceTicks{Max: 6}
	p.Add(plotter.NewGrid())

	var items []LegendItem
	if len(sums) > 1 {
		grey := color.RGBA{R: 0xaf, G: 0xb8, B: 0xc1, A: 0xff}
		for _, s := range sums[:min(len(sums), 50)] {
			ps := Pauses(s)
			if len(ps.Longest) == 0 {
				continue
			}
			l, err := plotter.NewLine(ecdfXY(ps.Longest, p.X.Max))
			if err != nil {
				return nil, nil, fmt.Errorf("ecdf plot: %w", err)
			}
			l.StepStyle = plotter.PostStep
			l.Color, l.Width = grey, vg.Points(0.6)
			p.Add(l)
		}
		items = append(items, LegendItem{Text: fmt.Sprintf("longest pause per (migration, host), each of %d runs", len(sums)), Fill: grey})
	}
	for _, s := range []struct {
		vs     []float64
		c      color.Color
		dashed bool
		text   string
	}{
		{all.Windows, colorWithin, false, fmt.Sprintf("every pause window (n = %d)", len(all.Windows))},
		{all.Longest, colorOver, true, fmt.Sprintf("longest pause per (migration, host) (n = %d)", len(all.Longest))},
	} {
		if len(s.vs) == 0 {
			continue
		}
		l, err := plotter.NewLine(ecdfXY(s.vs, p.X.Max))
		if err != nil {
			return nil, nil, fmt.Errorf("ecdf plot: %w", err)
		}
		l.StepStyle = plotter.PostStep
		l.Color, l.Width = s.c, vg.Points(1.6)
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(2)}
		}
		p.Add(l)
		items = append(items, LegendItem{Text: s.text, Fill: s.c})
	}
	if len(all.Windows) == 0 && len(all.Longest) == 0 {
		p.Title.Text += ": no pause"
	}
	bound, err := plotter.NewLine(plotter.XYs{{X: crit, Y: 0}, {X: crit, Y: 1.02}})
	if err != nil {
		return nil, nil, fmt.Errorf("ecdf plot: %w", err)
	}
	bound.Color, bound.Width = color.Black, vg.Points(1.2)
	bound.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(bound)
	items = append(items, LegendItem{Text: "CUTOVER_PAUSE_CRIT_S = " + secs(crit), Dashed: true})
	return p, items, nil
}

// ECDFBytes renders ECDFPlot with its legend, 8 × 4.5 inches, in format
// ("png", "svg").
func ECDFBytes(title string, sums []record.Summary, crit float64, format string) ([]byte, error) {
	p, items, err := ECDFPlot(title, sums, crit)
	if err != nil {
		return nil, err
	}
	return renderWithLegend(p, items, plotWidth, plotHeight, format)
}

// ECDF file names under the run directory.
const (
	ECDFPlotFile = "plots/ecdf.png"
	ECDFSVGFile  = "plots/ecdf.svg"
)

func sortedHosts(m record.MigrationSummary) []string {
	hs := make([]string, 0, len(m.Hosts))
	for h := range m.Hosts {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}
