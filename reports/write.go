package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/fiomig/fiomig/record"
)

// File names Write produces inside the run directory.
const (
	ReportFile     = "report.md"
	HTMLReportFile = "report.html"
	JUnitFile      = "junit.xml"
	PlotsDir       = "plots"
	PausePlotFile  = "plots/pause.png"
	PauseSVGFile   = "plots/pause.svg"
)

// MaxSwimlanes is how many swimlane plots WriteRun draws at most, whatever
// Input.Swimlanes asks: every migration that does not pass, then the
// others by longest pause; the report names how many were left out.
const MaxSwimlanes = 100

// DefaultSwimlanes is how many swimlanes WriteRun draws when
// Input.Swimlanes is 0: the worst cutovers (every migration that does not
// pass first, then by longest pause). A swimlane is most of a report's
// drawing time (a PNG of ~0.7 Mpixel each); `fiomig report --swimlanes all`
// draws the others from the record.
const DefaultSwimlanes = 10

// Input is what WriteRun turns into a run's reports.
type Input struct {
	Plan    record.Plan
	Summary record.Summary
	// Timeline holds at least the run's sample, phase and fault lines
	// (other kinds are ignored); nil draws no swimlane and counts no churn.
	Timeline []record.Line
	// FioSeconds are the real fio processes' per-second figures (runs with
	// --workload=fio; see ReadFioSeconds), nil otherwise.
	FioSeconds []FioSeconds
	// Swimlanes is how many swimlanes to draw, the worst first:
	// 0 DefaultSwimlanes, < 0 every migration; at most MaxSwimlanes.
	Swimlanes int
}

// Figure kinds.
const (
	FigPause    = "pause"
	FigECDF     = "ecdf"
	FigSwimlane = "swimlane"
	FigFio      = "fio"
)

// Figure is one plot of the report: its files (relative to the run
// directory) and, for report.html, its SVG bytes.
type Figure struct {
	// ID is unique within a report ("pause", "ecdf", "swimlane-mig-0001").
	ID, Kind  string
	Migration string // swimlane and fio figures
	Title     string
	Caption   string
	PNG, SVG  string
	// embed is the image report.html embeds, of MIME type mime.
	embed []byte
	mime  string
}

// baseFigures are the figures every report has: the pause bars and the
// ECDF of pause windows.
func baseFigures(plan record.Plan, sum record.Summary) []Figure {
	crit := secs(plan.Params.PauseCritS)
	return []Figure{
		{ID: "pause", Kind: FigPause, Title: "Longest pause per migration", PNG: PausePlotFile, SVG: PauseSVGFile,
			Caption: "Longest pause per migration over its consumer hosts; the dashed line is CUTOVER_PAUSE_CRIT_S = " + crit + "."},
		{ID: "ecdf", Kind: FigECDF, Title: "ECDF of pause windows", PNG: ECDFPlotFile, SVG: ECDFSVGFile,
			Caption: "Empirical CDF of every pause window and of the longest pause per (migration, host); the dashed line is CUTOVER_PAUSE_CRIT_S = " + crit + "."},
	}
}

// Write is WriteRun without the timeline or fio figures: the reports of
// plan and sum with the pause and ECDF plots and no swimlane (the
// signature callers had before the swimlanes; prefer WriteRun).
func Write(dir string, plan record.Plan, sum record.Summary) error {
	return WriteRun(dir, Input{Plan: plan, Summary: sum})
}

// WriteRun writes into dir, which must exist: summary.json (in.Summary with
// Stats filled in and, with a timeline, Churn and each pause window's
// anatomy, WithAnatomy; indented JSON), the plots —
// plots/pause.png|svg, plots/ecdf.png|svg, one plots/swimlane-<migration>.png|svg
// per migration of the worst (Input.Swimlanes of them) and, with fio
// figures, plots/fio-<migration>.png|svg — report.md, report.html (every
// plot embedded as its PNG) and junit.xml. Equal inputs give equal bytes in
// every file. Errors name the file.
func WriteRun(dir string, in Input) error {
	plan, sum := in.Plan, WithStats(in.Summary)
	var ix *timelineIndex
	if in.Timeline != nil {
		ch := ChurnOf(in.Timeline)
		sum.Churn = &ch
		ix = indexTimeline(in.Timeline)
		sum = ix.withAnatomy(sum)
	}
	if err := record.WriteJSON(filepath.Join(dir, record.SummaryFile), sum); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, PlotsDir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(dir, PlotsDir), err)
	}
	figs := baseFigures(plan, sum)
	render := map[string]func(format string) ([]byte, error){
		"pause": func(f string) ([]byte, error) { return PausePlotBytes(plan, sum, f) },
		"ecdf": func(f string) ([]byte, error) {
			return ECDFBytes(fmt.Sprintf("Pause windows over %d migration(s) (seed %d)", len(sum.Migrations), sum.Seed), []record.Summary{sum}, plan.Params.PauseCritS, f)
		},
	}
	var omitted []string
	if in.Timeline != nil {
		cuts := ix.cutovers(sum)
		order := worstFirst(plan, sum)
		limit := in.Swimlanes
		switch {
		case limit == 0:
			limit = DefaultSwimlanes
		case limit < 0 || limit > MaxSwimlanes:
			limit = MaxSwimlanes
		}
		if len(order) > limit {
			how := "`fiomig report <run-dir> --swimlanes all` draws them"
			if limit == MaxSwimlanes {
				how = fmt.Sprintf("at most %d per report", MaxSwimlanes)
			}
			omitted = append(omitted, fmt.Sprintf("%d swimlane(s) of the other migrations are not drawn (the %d worst are; %s).", len(order)-limit, limit, how))
			order = order[:limit]
		}
		for _, i := range order {
			c := cuts[i]
			id := "swimlane-" + safeName(c.Migration.ID)
			figs = append(figs, Figure{ID: id, Kind: FigSwimlane, Migration: c.Migration.ID,
				Title: "Swimlane of " + c.Migration.ID, PNG: SwimlaneFile(c.Migration.ID, "png"), SVG: SwimlaneFile(c.Migration.ID, "svg"),
				Caption: fmt.Sprintf("%s: every consumer host's paths to %s coloured by ANA/controller state, the pause windows shaded, faults and phase lines marked%s.",
					c.Migration.ID, shortOr(c.Migration.NQN), fioCaption(c))})
			render[id] = func(f string) ([]byte, error) { return SwimlaneBytes(plan, c, f) }
		}
		for _, i := range order {
			m := sum.Migrations[i]
			series := fioAround(in.FioSeconds, m)
			if len(series) == 0 {
				continue
			}
			id := "fio-" + safeName(m.ID)
			figs = append(figs, Figure{ID: id, Kind: FigFio, Migration: m.ID, Title: "fio around " + m.ID,
				PNG: PlotsDir + "/" + id + ".png", SVG: PlotsDir + "/" + id + ".svg",
				Caption: m.ID + ": fio's completions per second and p99 total latency per second of each volume of the subsystem, with the migration's phases and pause windows."})
			render[id] = func(f string) ([]byte, error) { return FioPlotBytes(plan, m, series, f) }
		}
	}
	// The figures are drawn on every processor (each figure's bytes are
	// its own; the first error in figure order is returned).
	errs := make([]error, len(figs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(figs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = writeFigure(dir, &figs[i], render[figs[i].ID])
			}
		}()
	}
	for i := range figs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if err := writeFile(dir, ReportFile, markdown(plan, sum, figs, omitted)); err != nil {
		return err
	}
	page, err := htmlPage(plan, sum, figs, omitted)
	if err != nil {
		return err
	}
	if err := writeFile(dir, HTMLReportFile, page); err != nil {
		return err
	}
	junit, err := JUnit(plan, sum)
	if err != nil {
		return err
	}
	return writeFile(dir, JUnitFile, junit)
}

// writeFigure renders f as PNG and SVG with render and writes both files;
// report.html embeds the PNG: its text is drawn with the fonts gonum/plot
// embeds, where an SVG's text would take the browser's fonts, whose other
// widths cut labels off.
func writeFigure(dir string, f *Figure, render func(format string) ([]byte, error)) error {
	png, err := render("png")
	if err != nil {
		return err
	}
	if err := writeFile(dir, f.PNG, png); err != nil {
		return err
	}
	f.embed, f.mime = png, "image/png"
	svg, err := render("svg")
	if err != nil {
		return err
	}
	return writeFile(dir, f.SVG, svg)
}

// worstFirst returns the indexes of sum's migrations: the cutovers not
// passing first, then by longest pause (descending), then those that never
// cut over; ties in run order.
func worstFirst(plan record.Plan, sum record.Summary) []int {
	longest := LongestPerMigration(sum)
	idx := make([]int, len(sum.Migrations))
	rank := make([]int, len(sum.Migrations)) // 0 not passing, 1 passing, 2 no cutover
	for i, m := range sum.Migrations {
		idx[i] = i
		switch MigrationVerdict(plan, m) {
		case record.Pass:
			rank[i] = 1
		case VerdictNoCutover:
			rank[i] = 2
		}
	}
	sortStable(idx, func(a, b int) bool {
		if rank[a] != rank[b] {
			return rank[a] < rank[b]
		}
		return longest[a] > longest[b]
	})
	return idx
}

func sortStable(idx []int, less func(a, b int) bool) {
	sort.SliceStable(idx, func(i, j int) bool { return less(idx[i], idx[j]) })
}

func fioCaption(c Cutover) string {
	if c.FioRan {
		return ", fio's I/O gaps in black"
	}
	return ""
}

func writeFile(dir, name string, b []byte) error {
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
