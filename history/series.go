package history

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/ci"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// Point is one entry's value of a figure.
type Point struct {
	// Position is the entry's 1-based place in the series it was taken
	// from (entries lacking the figure keep their place, so positions may
	// skip).
	Position int
	ID       string
	Commit   string
	Value    float64
}

// Series returns figure's values over entries in order, skipping entries
// that lack it (ci.Figure.Known false when added). Errors: a figure name
// ci.FigureNames does not hold.
func Series(entries []Entry, figure string) ([]Point, error) {
	if !slices.Contains(ci.FigureNames, figure) {
		return nil, fmt.Errorf("unknown figure %q (figures: %s)", figure, strings.Join(ci.FigureNames, ", "))
	}
	var out []Point
	for i, e := range entries {
		if v, ok := e.Figures[figure]; ok {
			out = append(out, Point{Position: i + 1, ID: e.ID, Commit: e.Commit, Value: v})
		}
	}
	return out, nil
}

// NamedChange is a change point named by its runs.
type NamedChange struct {
	ChangePoint
	// Run is the first run after the shift, Position its place in the
	// entries (1-based); Previous is the run before it.
	Run, Previous string
	Position      int
}

// ChangeReport is the change-point search on one figure.
type ChangeReport struct {
	Figure, Method string
	Points         []Point
	Changes        []NamedChange
}

// Changes searches figure's series over entries for change points
// (EDivisive with o) and names the first run after each shift.
func Changes(entries []Entry, figure string, o ChangeOptions) (ChangeReport, error) {
	pts, err := Series(entries, figure)
	if err != nil {
		return ChangeReport{}, err
	}
	rep := ChangeReport{Figure: figure, Method: o.Method(), Points: pts}
	xs := make([]float64, len(pts))
	for i, p := range pts {
		xs[i] = p.Value
	}
	for _, c := range EDivisive(xs, o) {
		rep.Changes = append(rep.Changes, NamedChange{ChangePoint: c, Run: pts[c.Index].ID, Previous: pts[c.Index-1].ID, Position: pts[c.Index].Position})
	}
	return rep, nil
}

// ChangesMarkdown renders reports, one section per figure: the change
// points with the runs on both sides, medians, statistic and p-value; the
// method once at the end.
func ChangesMarkdown(reps []ChangeReport) []byte {
	var b bytes.Buffer
	b.WriteString("# fiomig history changes\n\n")
	for _, r := range reps {
		fmt.Fprintf(&b, "## %s\n\n", r.Figure)
		switch {
		case len(r.Points) < 2*DefaultChangeOptions.MinSegment:
			fmt.Fprintf(&b, "%d run(s) hold it: too few to split.\n\n", len(r.Points))
			continue
		case len(r.Changes) == 0:
			fmt.Fprintf(&b, "No change point over %d runs.\n\n", len(r.Points))
			continue
		}
		fmt.Fprintf(&b, "%d change point(s) over %d runs:\n\n| First run after the shift | Position | Run before | Median before | Median after | Statistic | p-value |\n|---|---|---|---|---|---|---|\n", len(r.Changes), len(r.Points))
		for _, c := range r.Changes {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %.4g | %.4g |\n", c.Run, c.Position, c.Previous, record.FormatT(c.Before), record.FormatT(c.After), c.Statistic, c.PValue)
		}
		b.WriteString("\n")
	}
	if len(reps) > 0 {
		fmt.Fprintf(&b, "Method: %s.\n", reps[0].Method)
	}
	return b.Bytes()
}

// TrendFile is one figure's trend plot as written.
type TrendFile struct {
	Figure   string
	PNG, SVG string
	Points   []Point
	Changes  []NamedChange
}

// WriteTrends writes, for each figure, dir/trend-<figure>.png and .svg
// (reports.TrendBytes: the values in series order, change points found
// with o marked, the pause bound drawn on pause figures when every entry
// holding ci.FigPauseCrit has the same) and returns what it wrote. Figures no entry
// holds are written as empty plots. Errors name the file.
func WriteTrends(dir string, entries []Entry, figures []string, o ChangeOptions) ([]TrendFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("trend: %w", err)
	}
	var out []TrendFile
	for _, fig := range figures {
		rep, err := Changes(entries, fig, o)
		if err != nil {
			return nil, err
		}
		t := reports.Trend{Title: fmt.Sprintf("%s over %d run(s)", fig, len(rep.Points)), YLabel: fig}
		for _, p := range rep.Points {
			t.Labels = append(t.Labels, p.ID)
			t.Values = append(t.Values, p.Value)
		}
		for _, c := range rep.Changes {
			t.Changes = append(t.Changes, c.Index)
		}
		if strings.HasPrefix(fig, "pause_") {
			t.BoundS = commonBound(entries)
		}
		tf := TrendFile{Figure: fig, PNG: filepath.Join(dir, "trend-"+fig+".png"), SVG: filepath.Join(dir, "trend-"+fig+".svg"), Points: rep.Points, Changes: rep.Changes}
		for _, f := range []struct{ path, format string }{{tf.PNG, "png"}, {tf.SVG, "svg"}} {
			bs, err := reports.TrendBytes(t, f.format)
			if err != nil {
				return nil, fmt.Errorf("trend %s: %w", fig, err)
			}
			if err := os.WriteFile(f.path, bs, 0o644); err != nil {
				return nil, fmt.Errorf("trend: %w", err)
			}
		}
		out = append(out, tf)
	}
	return out, nil
}

// commonBound is the pause bound (ci.FigPauseCrit) every entry holding it
// shares, 0 when they differ or none holds it.
func commonBound(entries []Entry) float64 {
	bound := 0.0
	for _, e := range entries {
		v, ok := e.Figures[ci.FigPauseCrit]
		switch {
		case !ok:
		case bound == 0:
			bound = v
		case v != bound:
			return 0
		}
	}
	return bound
}

// TrendMarkdown lists each figure's trend: runs, first and last value,
// minimum and maximum, change points, and the plot files.
func TrendMarkdown(files []TrendFile) []byte {
	var b bytes.Buffer
	b.WriteString("# fiomig history trend\n\n| Figure | Runs | First | Last | Min | Max | Change points (first run after) | Plot |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range files {
		if len(f.Points) == 0 {
			fmt.Fprintf(&b, "| %s | 0 | — | — | — | — | — | %s |\n", f.Figure, f.PNG)
			continue
		}
		lo, hi := f.Points[0].Value, f.Points[0].Value
		for _, p := range f.Points {
			lo, hi = min(lo, p.Value), max(hi, p.Value)
		}
		var cs []string
		for _, c := range f.Changes {
			cs = append(cs, fmt.Sprintf("%s (#%d: %s → %s)", c.Run, c.Position, record.FormatT(c.Before), record.FormatT(c.After)))
		}
		changes := "none"
		if len(cs) > 0 {
			changes = strings.Join(cs, "; ")
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", f.Figure, len(f.Points), record.FormatT(f.Points[0].Value), record.FormatT(f.Points[len(f.Points)-1].Value),
			record.FormatT(lo), record.FormatT(hi), changes, f.PNG)
	}
	return b.Bytes()
}

// FlakesMarkdown renders Flakes' result.
func FlakesMarkdown(flakes []Flake, by string, runs int) []byte {
	var b bytes.Buffer
	if by == "" {
		by = ByCommitSeeds
	}
	fmt.Fprintf(&b, "# fiomig history flakes\n\nOver %d history entries, grouped by %s.\n\n| Check | Flips | Transitions | Rate | 95 %% interval | Groups | Latest flip |\n|---|---|---|---|---|---|---|\n", runs, by)
	for _, f := range flakes {
		last := f.LastFlip
		if last == "" {
			last = "—"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.3f | [%.3f, %.3f] | %d | %s |\n", f.Check, f.Flips, f.Transitions, f.Rate, f.Low95, f.High95, f.Groups, last)
	}
	if len(flakes) == 0 {
		b.WriteString("| — | | | | | | no check recorded |\n")
	}
	fmt.Fprintf(&b, "\nMethod: %s.\n", FlakeMethod)
	return b.Bytes()
}
