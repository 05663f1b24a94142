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
// horizontal line at plan.Params.PauseCritS (CUTOVER_PAUSE_CRIT_S), which
// also gets a y tick labelled with its value. Migration IDs label the x
// axis: horizontal when they fit, else rotated, and when even rotated they
// would overlap only every k-th is labelled (see migrationTicks).
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
		p.X.Tick.Marker = migrationTicks(p, names, plotWidth)
		p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	} else {
		p.X.Min, p.X.Max = 0, 1
		p.Title.Text += ": no migration"
	}

	p.Y.Tick.Marker = niceTicks{Max: 6, Marks: []plot.Tick{{Value: crit, Label: record.FormatT(crit)}}}

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
	wt, err := p.WriterTo(plotWidth, plotHeight, format)
	if err != nil {
		return nil, fmt.Errorf("pause plot as %s: %w", format, err)
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("pause plot as %s: %w", format, err)
	}
	return b.Bytes(), nil
}

// The pause plot's size.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 4.5 * vg.Inch
)

// migrationTicks labels the x axis of a plot of width w with the migration
// names, one tick per migration at 0, 1, ...: horizontal labels when the
// widest fits its slot with a gap; otherwise labels rotated 90° and, when a
// rotated label's height (plus a gap) exceeds the slot, only every k-th
// migration labelled (k the smallest that makes labelled ticks that far
// apart; the others stay unlabelled ticks). The slot is estimated from w
// less a margin for the y axis; the test measures the real data area.
func migrationTicks(p *plot.Plot, names []string, w vg.Length) plot.ConstantTicks {
	n := len(names)
	style := p.X.Tick.Label
	slot := (w - 80) / vg.Length(n) // the y axis, its label and padding take < 80 pt
	widest := vg.Length(0)
	for _, name := range names {
		widest = max(widest, style.Width(name))
	}
	gap := style.Font.Size / 2
	k := 1
	if widest+gap > slot {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
		need := style.Height(names[0]) + gap
		k = int(math.Ceil(float64(need / slot)))
	}
	ticks := make(plot.ConstantTicks, n)
	for i, name := range names {
		ticks[i] = plot.Tick{Value: float64(i)}
		if i%k == 0 {
			ticks[i].Label = name
		}
	}
	return ticks
}
