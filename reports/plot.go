package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/fiomig/fiomig/record"
)

var (
	colorWithin = color.RGBA{R: 0x3b, G: 0x75, B: 0xaf, A: 0xff}
	colorOver   = color.RGBA{R: 0xc4, G: 0x3c, B: 0x39, A: 0xff}
)

// LongestPerMigration returns, for each migration of sum in order, the
// longest pause any of its consumer hosts saw, in seconds.
func LongestPerMigration(sum record.Summary) []float64 {
	out := make([]float64, len(sum.Migrations))
	for i, m := range sum.Migrations {
		for _, hp := range m.Hosts {
			out[i] = math.Max(out[i], hp.LongestPauseS)
		}
	}
	return out
}

// PausePlot builds the pause plot: the longest pause per migration (over its
// consumer hosts) as bars, blue within and red over the bound, and a dashed
// horizontal line at plan.Params.PauseCritS (CUTOVER_PAUSE_CRIT_S).
func PausePlot(plan record.Plan, sum record.Summary) (*plot.Plot, error) {
	crit := plan.Params.PauseCritS
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Longest pause per migration (seed %d)", sum.Seed)
	p.Y.Label.Text = "longest pause (s)"
	p.X.Label.Text = "migration"

	longest := LongestPerMigration(sum)
	n := len(longest)
	within, over := make(plotter.Values, n), make(plotter.Values, n)
	top := crit
	for i, v := range longest {
		if v > crit {
			over[i] = v
		} else {
			within[i] = v
		}
		top = math.Max(top, v)
	}
	p.Y.Min, p.Y.Max = 0, math.Max(top*1.4, 1) // headroom for the legend

	if n > 0 {
		names := make([]string, n)
		for i, m := range sum.Migrations {
			names[i] = m.ID
		}
		width := vg.Points(math.Max(2, math.Min(24, 400/float64(n))))
		for _, s := range []struct {
			vs    plotter.Values
			c     color.Color
			label string
		}{{within, colorWithin, "within the bound"}, {over, colorOver, "over the bound"}} {
			bars, err := plotter.NewBarChart(s.vs, width)
			if err != nil {
				return nil, fmt.Errorf("pause plot: %w", err)
			}
			bars.Color = s.c
			bars.LineStyle.Width = 0
			p.Add(bars)
			p.Legend.Add(s.label, bars)
		}
		p.NominalX(names...)
		if n > 12 {
			p.X.Tick.Label.Rotation = math.Pi / 2
			p.X.Tick.Label.XAlign = draw.XRight
			p.X.Tick.Label.YAlign = draw.YCenter
		}
		p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	} else {
		p.X.Min, p.X.Max = 0, 1
		p.Title.Text += ": no migration"
	}

	line, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: crit}, {X: p.X.Max, Y: crit}})
	if err != nil {
		return nil, fmt.Errorf("pause plot: %w", err)
	}
	line.Color = color.Black
	line.Width = vg.Points(1.5)
	line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(line)
	p.Legend.Add(fmt.Sprintf("CUTOVER_PAUSE_CRIT_S = %s", secs(crit)), line)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	return p, nil
}

// PausePlotBytes renders PausePlot in format ("png", "svg", "pdf"),
// 8 × 4.5 inches, and returns the file's bytes. SVG text refers to the
// font by name (not embedded) and is byte-for-byte deterministic.
func PausePlotBytes(plan record.Plan, sum record.Summary, format string) ([]byte, error) {
	p, err := PausePlot(plan, sum)
	if err != nil {
		return nil, err
	}
	wt, err := p.WriterTo(8*vg.Inch, 4.5*vg.Inch, format)
	if err != nil {
		return nil, fmt.Errorf("pause plot as %s: %w", format, err)
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("pause plot as %s: %w", format, err)
	}
	return b.Bytes(), nil
}

// SavePausePlot renders PausePlot to path (format from the extension:
// .png, .svg, .pdf), 8 × 4.5 inches.
func SavePausePlot(path string, plan record.Plan, sum record.Summary) error {
	p, err := PausePlot(plan, sum)
	if err != nil {
		return err
	}
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}
