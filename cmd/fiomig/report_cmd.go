package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/reports"
)

func init() {
	register(command{name: "report", summary: "re-evaluate a run directory's record and rewrite its reports", run: runReport})
}

func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quiet := fs.Bool("quiet", false, "print only the overall verdict line")
	crit := fs.Float64("pause-crit", 0, "re-judge with this bound on the longest pause window per migration and host, in `seconds` (CUTOVER_PAUSE_CRIT_S; default: the run's, from plan.json)")
	freezes := fs.Int("freezes-allowed", 0, "re-judge with this many pause windows allowed per migration (CUTOVER_FREEZES_ALLOWED; default: the run's, from plan.json)")
	swimlanes := fs.String("swimlanes", "", "draw this many swimlanes, the worst cutovers first: a `number` or all (at most 100; default 10)")
	var o harness.RejudgeOptions
	fs.StringVar(&o.Out, "out", "", "write summary.json and the reports into this `directory` (created if missing) instead of <run-dir>: for a read-only run directory")
	pos, code, ok := parseSubcommand("report", helpText("report"), fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "fiomig report: want exactly one run directory, got %d argument(s) (see fiomig report --help)\n", len(pos))
		return exitUsage
	}
	given := harness.Given(fs)
	if given["pause-crit"] {
		o.PauseCritS = crit
	}
	if given["freezes-allowed"] {
		o.FreezesAllowed = freezes
	}
	err := o.SetSwimlanes(*swimlanes)
	if err == nil {
		err = o.Validate()
	}
	if err != nil {
		fmt.Fprintf(stderr, "fiomig report: %v (see fiomig report --help)\n", err)
		return exitUsage
	}
	res, err := harness.Rejudge(pos[0], o)
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "fiomig report: warning: %s\n", w)
	}
	if err != nil {
		return fail(stderr, "report", err)
	}
	sum := res.Summary
	if !*quiet {
		for _, c := range sum.Checks {
			fmt.Fprintf(stdout, "%-22s %-12s %s\n", c.Name, c.Verdict, c.Detail)
		}
		if st := sum.Stats; st.Pauses > 0 {
			fmt.Fprintf(stdout, "longest pause per (migration, host), %d pair(s): p50 %g s, p95 %g s, max %g s\n",
				st.Pauses, st.P50PauseS, st.P95PauseS, st.MaxPauseS)
		}
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(res.Dir, reports.ReportFile))
	}
	fmt.Fprintf(stdout, "verdict: %s (seed %d)\n", sum.Verdict, sum.Seed)
	return harness.ExitCode(sum.Verdict)
}
