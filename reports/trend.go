package reports

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fiomig/fiomig/record"
)

// Trend is one figure across the runs of a history (fiomig history trend):
// one value per run in series order, the runs' labels for the x axis, the
// positions of change points (the first run after each shift) and, for a
// pause figure, the bound to draw.
type Trend struct {
	Title, YLabel string
	Labels        []string
	Values        []float64
	// Changes are indexes into Values: the first run after a shift.
	Changes []int
	// BoundS draws CUTOVER_PAUSE_CRIT_S as a dashed line when > 0.
	BoundS float64
}

// TrendPlot draws t in the report's style: the values as points joined by
// a line (the pause plot's blue), every change point as a red dashed
// vertical line just before the first run after it, the bound dashed
// black; runs label the x axis as migrations label the pause plot's
// (rotated, or every k-th, when they would overlap). An empty t gives an
// empty plot titled "no run".
func TrendPlot(t Trend) (*plot.Plot, []LegendItem, error) {
	p := plot.New()
	p.Title.Text = t.Title
	p.Y.Label.Text = t.YLabel
	p.X.Label.Text = "run (series order)"
	n := len(t.Values)
	if n == 0 {
		p.Title.Text += ": no run"
		p.X.Min, p.X.Max = 0, 1
		return p, nil, nil
	}
	top, bottom := t.BoundS, 0.0
	for _, v := range t.Values {
		top, bottom = math.Max(top, v), math.Min(bottom, v)
	}
	if top <= bottom {
		top = bottom + 1
	}
	p.Y.Min, p.Y.Max = bottom, top*1.15
	var marks []plot.Tick
	if t.BoundS > 0 {
		marks = append(marks, plot.Tick{Value: t.BoundS, Label: record.FormatT(t.BoundS)})
	}
	p.Y.Tick.Marker = niceTicks{Max: 6, Marks: marks}
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Add(plotter.NewGrid())
	pts := make(plotter.XYs, n)
	for i, v := range t.Values {
		pts[i] = plotter.XY{X: float64(i), Y: v}
	}
	line, scatter, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, nil, fmt.Errorf("trend plot: %w", err)
	}
	line.Color, line.Width = colorWithin, vg.Points(1.2)
	scatter.Color, scatter.Shape, scatter.Radius = colorWithin, draw.CircleGlyph{}, vg.Points(2.5)
	p.Add(line, scatter)
	items := []LegendItem{{Text: fmt.Sprintf("%s, %d run(s)", t.YLabel, n), Fill: colorWithin}}
	for _, c := range t.Changes {
		x := float64(c) - 0.5
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
		if err != nil {
			return nil, nil, fmt.Errorf("trend plot: %w", err)
		}
		l.Color, l.Width = colorOver, vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(l)
	}
	if len(t.Changes) > 0 {
		items = append(items, LegendItem{Text: fmt.Sprintf("change point (%d): before the first run after the shift", len(t.Changes)), Fill: colorOver})
	}
	if t.BoundS > 0 {
		b, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: t.BoundS}, {X: p.X.Max, Y: t.BoundS}})
		if err != nil {
			return nil, nil, fmt.Errorf("trend plot: %w", err)
		}
		b.Color, b.Width = color.Black, vg.Points(1.2)
		b.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(b)
		items = append(items, LegendItem{Text: "CUTOVER_PAUSE_CRIT_S = " + secs(t.BoundS), Dashed: true})
	}
	p.X.Tick.Marker = migrationTicks(p, t.Labels, plotWidth)
	return p, items, nil
}

// TrendBytes renders TrendPlot with its legend, 8 × 4.5 inches, in format
// ("png", "svg").
func TrendBytes(t Trend, format string) ([]byte, error) {
	p, items, err := TrendPlot(t)
	if err != nil {
		return nil, err
	}
	return renderWithLegend(p, items, plotWidth, plotHeight, format)
}
