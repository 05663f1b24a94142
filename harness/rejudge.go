package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/scenario"
)

// RejudgeOptions are fiomig report's: other bounds to judge by (nil = the
// run's), how many swimlanes to draw (0 = reports.DefaultSwimlanes, -1 =
// all) and where to write (Out; "" = the run directory).
type RejudgeOptions struct {
	PauseCritS     *float64
	FreezesAllowed *int
	Swimlanes      int
	Out            string
	// Command is the re-judging command summary.json and the reports name
	// when other bounds judge ("" = one built from them).
	Command string
}

// SetSwimlanes sets Swimlanes from fiomig report's --swimlanes: "" (the
// default), a number >= 1, or all.
func (o *RejudgeOptions) SetSwimlanes(v string) error {
	switch v {
	case "":
	case "all":
		o.Swimlanes = -1
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Usagef("--swimlanes must be a number >= 1 or all, got %q", v)
		}
		o.Swimlanes = n
	}
	return nil
}

// Validate checks the bounds o judges by: --pause-crit > 0 seconds and
// finite, --freezes-allowed >= 0.
func (o RejudgeOptions) Validate() error {
	if c := o.PauseCritS; c != nil && !(*c > 0 && !math.IsInf(*c, 0)) {
		return Usagef("--pause-crit must be > 0 seconds, got %v", *c)
	}
	if f := o.FreezesAllowed; f != nil && *f < 0 {
		return Usagef("--freezes-allowed must be >= 0, got %d", *f)
	}
	return nil
}

// Rejudged is what Rejudge wrote: the summary, where, and what a person
// should know about the record (a cut-off last line, a short record, no
// swimlanes drawn).
type Rejudged struct {
	Dir      string
	Summary  record.Summary
	Warnings []string
}

// Rejudge judges run directory dir again from its record alone —
// plan.json and timeline.jsonl (either format version), streamed into the
// checks (checks.Judge), a real-fio run's fio/ evidence with fio's checks
// — with other bounds if o says so, and rewrites summary.json and the
// reports into o.Out (or dir; into o.Out with a copy of plan.json, so that
// it is a run directory of its own). A run summary.json says was
// interrupted stays so (failing on a violation it saw, else
// inconclusive). A timeline whose last line was cut off is judged up to
// its last complete line, and report.md says so. Bad input (plan.json,
// timeline.jsonl, an unwritable destination) is a UsageError naming the
// file, line or field.
func Rejudge(dir string, o RejudgeOptions) (Rejudged, error) {
	plan, err := record.ReadPlan(filepath.Join(dir, record.PlanFile))
	if _, serr := os.Stat(filepath.Join(dir, record.SweepFile)); errors.Is(err, fs.ErrNotExist) && serr == nil {
		return Rejudged{}, Usagef("%s is a sweep directory (%s): report takes one of its seed-N run directories (%s); fiomig compare and fiomig history read a whole sweep",
			dir, record.SweepFile, filepath.Join(dir, "seed-N"))
	}
	if err != nil {
		return Rejudged{}, UsageError{err}
	}
	dest := dir
	if o.Out != "" {
		dest = o.Out
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return Rejudged{}, Usagef("--out: %v", err)
		}
	}
	var rejudged *record.Rejudged
	if o.PauseCritS != nil || o.FreezesAllowed != nil {
		p := &plan.Params
		rejudged = &record.Rejudged{PauseCritS: p.PauseCritS, FreezesAllowed: p.FreezesAllowed,
			RunPauseCritS: p.PauseCritS, RunFreezesAllowed: p.FreezesAllowed}
		if o.PauseCritS != nil {
			p.PauseCritS, rejudged.PauseCritS = *o.PauseCritS, *o.PauseCritS
		}
		if o.FreezesAllowed != nil {
			p.FreezesAllowed, rejudged.FreezesAllowed = *o.FreezesAllowed, *o.FreezesAllowed
		}
		rejudged.Command = o.Command
		if rejudged.Command == "" {
			rejudged.Command = fmt.Sprintf("fiomig report %s --pause-crit %s --freezes-allowed %d", dir, record.FormatT(p.PauseCritS), p.FreezesAllowed)
		}
	}
	if err := writable(dest); err != nil {
		hint := "; --out DIR writes the report elsewhere"
		if o.Out != "" {
			hint = ""
		}
		return Rejudged{}, Usagef("cannot write the report into %s: %v%s", dest, err, hint)
	}
	out := Rejudged{Dir: dest}
	// The timeline is streamed into the checks: memory stays bounded by
	// hosts and controllers whatever the run's length.
	isFio := plan.Params.IsFio()
	judge := checks.NewJudge(plan)
	var lines []record.Line // every line, for fio's checks only (wall-clock runs are short)
	report := scenario.NewReportLines(plan)
	n, err := ScanTimeline(filepath.Join(dir, record.TimelineFile), plan, func(l record.Line) error {
		if isFio {
			lines = append(lines, l)
		}
		report.Add(l)
		return judge.Add(l)
	})
	truncated := errors.Is(err, record.ErrTruncated)
	if errors.Is(err, fs.ErrNotExist) && n == 0 {
		if _, serr := os.Stat(filepath.Join(filepath.Dir(filepath.Clean(dir)), record.SweepFile)); serr == nil {
			// A sweep keeps the timelines of failing seeds only (--timelines).
			return out, Usagef("%v: the sweep kept no timeline for this seed (fiomig sweep --timelines); its plan reruns it byte for byte: %s", err, plan.Command)
		}
	}
	switch {
	case truncated:
		out.Warnings = append(out.Warnings, fmt.Sprintf("%v; evaluating the %d complete line(s) before it", err, n))
	case err != nil:
		return out, UsageError{err}
	}
	judged, err := judge.Summary(plan)
	if err != nil {
		return out, UsageError{err}
	}
	sum := reports.WithStats(judged)
	if isFio { // plan.json says --workload=fio: fio's checks join, inconclusive if fio/ is gone
		if sum, err = scenario.FioEvaluate(dir, plan, lines, sum); err != nil {
			return out, UsageError{err}
		}
	}
	if wasInterrupted(dir) {
		// The run said it was stopped by a signal: that stays said; a
		// record cut short by one fails only on what it saw fail.
		sum = checks.Interrupted(sum)
	}
	if truncated && sum.Coverage != nil {
		sum.Coverage.TruncatedLine = true // report.md says so, not only stderr
	}
	if sum.Coverage != nil && sum.Coverage.Short {
		out.Warnings = append(out.Warnings, sum.Coverage.Note)
	}
	if o.Out == "" || filepath.Clean(o.Out) == filepath.Clean(dir) {
		if err := keepsFinishedSummary(dir, sum); err != nil {
			return out, err
		}
	}
	sum.Rejudged = rejudged
	in := reports.Input{Plan: plan, Summary: sum, Timeline: report.Lines(), Swimlanes: o.Swimlanes}
	if report.Dropped {
		out.Warnings = append(out.Warnings, fmt.Sprintf("over %d host states: no swimlanes drawn (the checks saw every one)", scenario.ReportStatesMax))
	}
	if isFio {
		in.FioSeconds = scenario.FioSeconds(dir)
	}
	if err := reports.WriteRun(dest, in); err != nil {
		return out, UsageError{err}
	}
	if o.Out != "" && filepath.Clean(o.Out) != filepath.Clean(dir) {
		// plan.json beside the new summary, byte for byte: the --out
		// directory is then a run directory that compare and shrink take.
		b, err := os.ReadFile(filepath.Join(dir, record.PlanFile))
		if err == nil {
			err = os.WriteFile(filepath.Join(dest, record.PlanFile), b, 0o644)
		}
		if err != nil {
			return out, UsageError{err}
		}
	}
	out.Summary = sum
	return out, nil
}

// keepsFinishedSummary refuses to judge dir in place when its
// summary.json says the run finished with its whole record (not
// interrupted, not short) but the timeline now read holds less (a cut-off
// last line, or too few migrations or too little time: judged short): the
// timeline is not the record summary.json was judged from, and rewriting
// summary.json from it would lose the run's verdict. A UsageError naming
// both files and --out, which judges what is left elsewhere.
func keepsFinishedSummary(dir string, now record.Summary) error {
	b, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		return nil // no summary (a killed run): nothing to lose
	}
	var was struct {
		Verdict     string           `json:"verdict"`
		Interrupted bool             `json:"interrupted"`
		Coverage    *record.Coverage `json:"coverage"`
	}
	if json.Unmarshal(b, &was) != nil || was.Verdict == "" || was.Interrupted || (was.Coverage != nil && was.Coverage.Short) {
		return nil
	}
	c := now.Coverage
	if c == nil || !(c.Short || c.TruncatedLine) {
		return nil
	}
	what := c.Note
	if c.TruncatedLine {
		what = "its last line is cut off"
		if c.Short {
			what += "; " + c.Note
		}
	}
	return Usagef("%s says the run finished (verdict %s), but %s holds less than it was judged from (%s): left as it was; fiomig report %s --out DIR judges what is left into DIR",
		filepath.Join(dir, record.SummaryFile), was.Verdict, filepath.Join(dir, record.TimelineFile), what, dir)
}

// wasInterrupted reports whether dir's summary.json says the run was
// interrupted (fiomig run exit 130); an absent or unreadable summary says
// nothing.
func wasInterrupted(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		return false
	}
	var s struct {
		Interrupted bool `json:"interrupted"`
	}
	return json.Unmarshal(b, &s) == nil && s.Interrupted
}

// writable checks that files can be created in dir (a read-only run
// directory, a read-only file system or missing permission fail here, in
// one line, before anything is evaluated).
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".fiomig-write-probe-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// ScanTimeline streams path (either format version) with record.ScanTimeline
// (malformed lines and t going backwards are errors naming file:line),
// checks every line against the plan with checks.LineValidator (a sample or
// heartbeat of a host not in the plan's topology is an error naming
// file:line) and passes every host's per-tick state (record.Expander) to fn.
// It returns how many lines it read; on a truncated last line, the lines
// before it were passed and the error wraps record.ErrTruncated.
func ScanTimeline(path string, plan record.Plan, fn func(record.Line) error) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read timeline: %w", err)
	}
	defer f.Close()
	valid := checks.LineValidator(plan)
	var states record.Expander
	n := 0
	err = record.ScanTimeline(f, path, func(l record.Line) error {
		if err := valid(l); err != nil {
			return err
		}
		n++
		return states.Push(l, fn)
	})
	return n, err
}

// ExportSeedCSV writes run directory dir's ANA samples as the seed
// harness's ana/<migration>.csv files into out (reports.WriteSeedCSV),
// judging the record first (as Rejudge does) to know which pause windows
// belong to which migration; dir is not changed. It returns the files
// written and a warning for a cut-off last line (exported up to it). Bad
// input is a UsageError naming the file and line.
func ExportSeedCSV(dir, out string) (files []string, warning string, err error) {
	plan, err := record.ReadPlan(filepath.Join(dir, record.PlanFile))
	if err != nil {
		return nil, "", UsageError{err}
	}
	// Per-tick states (either format version), every line kept: the seed
	// CSV export reads the whole record.
	var lines []record.Line
	n, err := ScanTimeline(filepath.Join(dir, record.TimelineFile), plan, func(l record.Line) error {
		lines = append(lines, l)
		return nil
	})
	switch {
	case errors.Is(err, record.ErrTruncated):
		warning = fmt.Sprintf("%v; exporting the %d complete line(s) before it", err, n)
	case err != nil:
		return nil, "", UsageError{err}
	}
	files, err = reports.WriteSeedCSV(out, plan, checks.Evaluate(plan, lines), lines)
	if err != nil {
		return nil, warning, UsageError{err}
	}
	return files, warning, nil
}
