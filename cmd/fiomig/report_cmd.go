package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/scenario"
)

func init() {
	register(command{
		name:    "report",
		summary: "re-evaluate a run directory's record and rewrite its reports",
		run:     runReport,
	})
}

const reportHelp = `Usage: fiomig report [flags] <run-dir>

Re-reads <run-dir>/plan.json and <run-dir>/timeline.jsonl, evaluates every
check from that record alone (pause bound, freezes, leaked controllers,
ip:port path completeness, split brain, served after cutover, unattributed
pauses, faults landed), rewrites summary.json, report.md, report.html,
junit.xml and plots/ (pause, ecdf and one swimlane per migration of the
--swimlanes worst, as .png and .svg; fio-<migration> too for a
--workload=fio run) in <run-dir> (or
in --out DIR, leaving <run-dir> untouched), and prints the verdicts. Flags may come before or after <run-dir>.

--pause-crit and --freezes-allowed re-judge the stored run against other
bounds than the run's, without rerunning it:

  fiomig report <run-dir> --pause-crit 3 --freezes-allowed 2

plan.json is left as it was; summary.json ("rejudged"), report.md and
report.html name the bounds that judged and the command that re-judged.

A run that summary.json says was interrupted (fiomig run exit 130) stays
so: the rewritten summary.json keeps "interrupted": true and the verdict is
inconclusive.

A timeline whose last line was cut off (a killed run) is evaluated up to
the last complete line, with a warning that report.md repeats. A record
that stops before the end of the settle period (an interrupted or killed
run) leaves the checks judged on the record's end inconclusive —
leaked-controllers, path-completeness, paths-per-subsystem and
controller-churn's net controllers (a controller past --max-reconnects
still fails it) — and migration-outcomes counts a migration still running
at the record's end as neither completed nor timed out; report.md says the
record is short; a record without migrations is inconclusive too.

A --workload=fio run (as plan.json records it) also gets the fio checks
(fio-pause-agreement, fio-data-integrity, fio-io-errors) from <run-dir>/fio/;
evidence that is gone (fio/, fio/workload.json or one volume's directory)
leaves them inconclusive for what it covered.

Exit codes: 0 pass, 1 a check failed, 2 bad usage or input (missing or
malformed plan.json / timeline.jsonl: a threshold out of range, no topology
for a run with migrations, a line going back in time, a sample of a host
not in the topology, a timeline whose format version is not plan.json's
(a version-2 plan's timeline must begin with its format line), an unwritable run directory — said in one line;
--out DIR then writes the report elsewhere), 3 inconclusive (a fault
left no evidence, or the record is too thin or too short to judge).

Flags:`

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quiet := fs.Bool("quiet", false, "print only the overall verdict line")
	crit := fs.Float64("pause-crit", 0, "re-judge with this bound on the longest pause window per migration and host, in `seconds` (CUTOVER_PAUSE_CRIT_S; default: the run's, from plan.json)")
	freezes := fs.Int("freezes-allowed", 0, "re-judge with this many pause windows allowed per migration (CUTOVER_FREEZES_ALLOWED; default: the run's, from plan.json)")
	swimlanes := fs.String("swimlanes", "", "draw this many swimlanes, the worst cutovers first: a `number` or all (at most 100; default 10)")
	outDir := fs.String("out", "", "write summary.json and the reports into this `directory` (created if missing) instead of <run-dir>: for a read-only run directory")
	pos, code, ok := parseSubcommand("report", reportHelp, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "fiomig report: want exactly one run directory, got %d argument(s) (see fiomig report --help)\n", len(pos))
		return exitUsage
	}
	dir := pos[0]
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["pause-crit"] && !(*crit > 0 && !math.IsInf(*crit, 0)) {
		fmt.Fprintf(stderr, "fiomig report: --pause-crit must be > 0 seconds, got %v (see fiomig report --help)\n", *crit)
		return exitUsage
	}
	if set["freezes-allowed"] && *freezes < 0 {
		fmt.Fprintf(stderr, "fiomig report: --freezes-allowed must be >= 0, got %d (see fiomig report --help)\n", *freezes)
		return exitUsage
	}
	lanes := 0 // reports.DefaultSwimlanes
	switch v := *swimlanes; v {
	case "":
	case "all":
		lanes = -1
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "fiomig report: --swimlanes must be a number >= 1 or all, got %q (see fiomig report --help)\n", v)
			return exitUsage
		}
		lanes = n
	}
	dest := dir
	if *outDir != "" {
		dest = *outDir
		if err := os.MkdirAll(dest, 0o755); err != nil {
			fmt.Fprintf(stderr, "fiomig report: --out: %v\n", err)
			return exitUsage
		}
	}

	plan, err := record.ReadPlan(filepath.Join(dir, record.PlanFile))
	if err != nil {
		fmt.Fprintf(stderr, "fiomig report: %v\n", err)
		return exitUsage
	}
	var rejudged *record.Rejudged
	if set["pause-crit"] || set["freezes-allowed"] {
		rejudged = &record.Rejudged{PauseCritS: plan.Params.PauseCritS, FreezesAllowed: plan.Params.FreezesAllowed,
			RunPauseCritS: plan.Params.PauseCritS, RunFreezesAllowed: plan.Params.FreezesAllowed}
		if set["pause-crit"] {
			plan.Params.PauseCritS, rejudged.PauseCritS = *crit, *crit
		}
		if set["freezes-allowed"] {
			plan.Params.FreezesAllowed, rejudged.FreezesAllowed = *freezes, *freezes
		}
		rejudged.Command = fmt.Sprintf("fiomig report %s --pause-crit %s --freezes-allowed %d", dir, record.FormatT(plan.Params.PauseCritS), plan.Params.FreezesAllowed)
	}
	if err := writable(dest); err != nil {
		hint := "; --out DIR writes the report elsewhere"
		if *outDir != "" {
			hint = ""
		}
		fmt.Fprintf(stderr, "fiomig report: cannot write the report into %s: %v%s\n", dest, err, hint)
		return exitUsage
	}
	// The timeline is streamed into the checks (checks.Judge): memory
	// stays bounded by hosts and controllers whatever the run's length.
	isFio := scenario.IsFioRun(plan)
	judge := checks.NewJudge(plan)
	var lines []record.Line // every line, for fio's checks only (wall-clock runs are short)
	report := scenario.NewReportLines(plan)
	n, err := scanTimeline(filepath.Join(dir, record.TimelineFile), plan, func(l record.Line) error {
		if isFio {
			lines = append(lines, l)
		}
		report.Add(l)
		return judge.Add(l)
	})
	truncated := errors.Is(err, record.ErrTruncated)
	switch {
	case truncated:
		fmt.Fprintf(stderr, "fiomig report: warning: %v; evaluating the %d complete line(s) before it\n", err, n)
	case err != nil:
		fmt.Fprintf(stderr, "fiomig report: %v\n", err)
		return exitUsage
	}

	judged, err := judge.Summary(plan)
	if err != nil {
		fmt.Fprintf(stderr, "fiomig report: %v\n", err)
		return exitUsage
	}
	sum := reports.WithStats(judged)
	if isFio { // plan.json says --workload=fio: fio's checks join, inconclusive if fio/ is gone
		if sum, err = scenario.FioEvaluate(dir, plan, lines, sum); err != nil {
			fmt.Fprintf(stderr, "fiomig report: %v\n", err)
			return exitUsage
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
		fmt.Fprintf(stderr, "fiomig report: warning: %s\n", sum.Coverage.Note)
	}
	sum.Rejudged = rejudged
	in := reports.Input{Plan: plan, Summary: sum, Timeline: report.Lines(), Swimlanes: lanes}
	if report.Dropped {
		fmt.Fprintf(stderr, "fiomig report: over %d host states: no swimlanes drawn (the checks saw every one)\n", scenario.ReportStatesMax)
	}
	if isFio {
		in.FioSeconds = scenario.FioSeconds(dir)
	}
	if err := reports.WriteRun(dest, in); err != nil {
		fmt.Fprintf(stderr, "fiomig report: %v\n", err)
		return exitUsage
	}

	if !*quiet {
		for _, c := range sum.Checks {
			fmt.Fprintf(stdout, "%-22s %-12s %s\n", c.Name, c.Verdict, c.Detail)
		}
		if st := sum.Stats; st.Pauses > 0 {
			fmt.Fprintf(stdout, "longest pause per (migration, host), %d pair(s): p50 %g s, p95 %g s, max %g s\n",
				st.Pauses, st.P50PauseS, st.P95PauseS, st.MaxPauseS)
		}
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dest, reports.ReportFile))
	}
	fmt.Fprintf(stdout, "verdict: %s (seed %d)\n", sum.Verdict, sum.Seed)
	return reportExitCode(sum.Verdict)
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

// reportExitCode maps an overall verdict to fiomig's exit code.
func reportExitCode(v string) int {
	switch v {
	case record.Pass:
		return exitPass
	case record.Fail:
		return exitCheckFailed
	default:
		return exitInconclusive
	}
}

// scanTimeline streams path (either format version) with record.ScanTimeline
// (malformed lines and t going backwards are errors naming file:line),
// checks every line against the plan with checks.LineValidator (a sample or
// heartbeat of a host not in the plan's topology is an error naming
// file:line) and passes every host's per-tick state (record.Expander) to fn.
// It returns how many lines it read; on a truncated last line, the lines
// before it were passed and the error wraps record.ErrTruncated.
func scanTimeline(path string, plan record.Plan, fn func(record.Line) error) (int, error) {
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
