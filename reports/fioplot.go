package reports

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"github.com/montanaflynn/stats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/fiomig/fiomig/fio"
	"github.com/fiomig/fiomig/record"
)

// FioSeconds is one volume's fio per whole second of the run: second k
// covers [k, k+1) seconds since run start.
type FioSeconds struct {
	Volume, NQN, Host string
	// FirstS is the run second of IOPS[0] and P99Ms[0].
	FirstS int
	// IOPS are the completions logged in each second.
	IOPS []int
	// P99Ms is the 99th percentile of the total latency (ms) of the I/Os
	// that completed in each second (PercentileMethod), NaN in a second
	// without a completion.
	P99Ms []float64
}

// ReadFioSeconds reads fio's per-I/O total-latency log at path (fio's
// "time, value(ns), direction, bs[, offset], prio" lines with Unix-epoch
// ms times: fio.MigrationWorkload's log_unix_epoch) and bins it per second
// of the run, t = 0 at epochMs. The error names the file and line; a
// truncated last line (fio killed mid-write) is dropped without error.
func ReadFioSeconds(path string, epochMs int64, v record.FioWorkloadVolume) (FioSeconds, error) {
	out := FioSeconds{Volume: v.Volume, NQN: v.NQN, Host: v.Host}
	f, err := os.Open(path)
	if err != nil {
		return out, fmt.Errorf("fio per-second figures: %w", err)
	}
	defer f.Close()
	lat := map[int][]float64{}
	lo, hi := math.MaxInt, math.MinInt
	lr := fio.NewLogReader(f, path)
	for lr.Scan() {
		e := lr.Entry()
		ms := e.TimeMs - epochMs
		if ms < 0 {
			continue
		}
		s := int(ms / 1000)
		lat[s] = append(lat[s], float64(e.Value)/1e6)
		lo, hi = min(lo, s), max(hi, s)
	}
	if err := lr.Err(); err != nil && !errors.Is(err, fio.ErrTruncated) {
		return out, fmt.Errorf("fio per-second figures: %w", err)
	}
	if lo > hi {
		return out, nil
	}
	out.FirstS = lo
	for s := lo; s <= hi; s++ {
		ls := lat[s]
		out.IOPS = append(out.IOPS, len(ls))
		p := math.NaN()
		if len(ls) > 0 {
			p, _ = stats.Percentile(ls, 99)
		}
		out.P99Ms = append(out.P99Ms, p)
	}
	return out, nil
}

// fioPadS is how far the fio plot reaches around a migration.
const fioPadS = 10

// fioAround returns the series of fs for m's subsystem that have a second
// within m's span (± fioPadS).
func fioAround(fs []FioSeconds, m record.MigrationSummary) []FioSeconds {
	var out []FioSeconds
	for _, s := range fs {
		if s.NQN != m.NQN || len(s.IOPS) == 0 {
			continue
		}
		last := float64(s.FirstS + len(s.IOPS))
		if last >= m.StartS-fioPadS && float64(s.FirstS) <= m.EndS+fioPadS {
			out = append(out, s)
		}
	}
	return out
}

// FioPlot builds the fio plot of migration m: two panels over the
// migration's span ± fioPadS seconds — completions per second (IOPS) and
// the p99 total latency per second (ms) of each volume in series — with
// the pause windows of the hosts fio ran on shaded.
func FioPlot(plan record.Plan, m record.MigrationSummary, series []FioSeconds) ([]*plot.Plot, []LegendItem, error) {
	from, to := math.Max(0, m.StartS-fioPadS), m.EndS+fioPadS
	iops, lat := plot.New(), plot.New()
	iops.Title.Text = fmt.Sprintf("fio around %s (%s)", m.ID, shortOr(m.NQN))
	iops.Y.Label.Text = "completions / s"
	lat.Y.Label.Text = "p99 latency (ms)"
	lat.X.Label.Text = "seconds since run start"
	palette := []color.Color{colorWithin, colorOver, color.RGBA{R: 0x2d, G: 0xa4, B: 0x4e, A: 0xff}, color.RGBA{R: 0x82, G: 0x50, B: 0xdf, A: 0xff}}
	var items []LegendItem
	ymaxI, ymaxL := 1.0, 1.0
	for k, s := range series {
		var pi, pl plotter.XYs
		for i := range s.IOPS {
			t := float64(s.FirstS + i)
			if t+1 < from || t > to {
				continue
			}
			pi = append(pi, plotter.XY{X: t, Y: float64(s.IOPS[i])})
			ymaxI = math.Max(ymaxI, float64(s.IOPS[i]))
			if !math.IsNaN(s.P99Ms[i]) {
				pl = append(pl, plotter.XY{X: t, Y: s.P99Ms[i]})
				ymaxL = math.Max(ymaxL, s.P99Ms[i])
			}
		}
		c := palette[k%len(palette)]
		for _, d := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{iops, pi}, {lat, pl}} {
			if len(d.xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(d.xys)
			if err != nil {
				return nil, nil, fmt.Errorf("fio plot of %s: %w", m.ID, err)
			}
			l.StepStyle = plotter.PostStep
			l.Color, l.Width = c, vg.Points(1.2)
			d.p.Add(l)
		}
		items = append(items, LegendItem{Text: s.Volume + " on " + s.Host, Fill: c})
	}
	for _, d := range []struct {
		p   *plot.Plot
		top float64
	}{{iops, ymaxI}, {lat, ymaxL}} {
		d.p.X.Min, d.p.X.Max = from, to
		d.p.Y.Min, d.p.Y.Max = 0, d.top*1.15
		d.p.X.Tick.Marker = niceTicks{Max: 10}
		d.p.Y.Tick.Marker = niceTicks{Max: 5}
		sh := &shapes{x0: from, x1: to, y0: 0, y1: d.top * 1.15}
		for _, h := range sortedHosts(m) {
			if !slices.ContainsFunc(series, func(s FioSeconds) bool { return s.Host == h }) {
				continue // only the hosts whose head fio's I/O follows
			}
			for _, w := range m.Hosts[h].Windows {
				sh.rects = append(sh.rects, rect{x0: w[0], x1: w[1], y0: 0, y1: d.top * 1.15, c: colorPause})
			}
		}
		d.p.Add(sh)
	}
	items = append(items, LegendItem{Text: "pause window (ANA samples)", Fill: colorPause})
	return []*plot.Plot{iops, lat}, items, nil
}

// FioPlotBytes renders FioPlot, 9 × 5 inches plus its legend, in format
// ("png", "svg").
func FioPlotBytes(plan record.Plan, m record.MigrationSummary, series []FioSeconds, format string) ([]byte, error) {
	ps, items, err := FioPlot(plan, m, series)
	if err != nil {
		return nil, err
	}
	b, err := renderStacked(ps, items, swimlaneWidth, 5*vg.Inch, format)
	if err != nil {
		return nil, fmt.Errorf("fio plot of %s: %w", m.ID, err)
	}
	return b, nil
}
