package ci

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// StepSummaryBudget bounds what StepSummary writes, in bytes: GitHub
// Actions refuses a step summary over 1 MiB (and shows at most 1 MiB of
// all steps' summaries), so fiomig keeps its part to a sixteenth of that,
// whatever the run's size.
const StepSummaryBudget = 64 << 10

// Caps of the step summary's lists.
const (
	summaryMaxRows   = 10
	summaryCellChars = 300
)

// StepSummary renders the markdown fiomig appends to $GITHUB_STEP_SUMMARY
// for the runs of dir (one run, or a sweep's seeds): the verdict, the
// figures, each check with its detail clipped, the first
// (migration, host) pairs over the bound (reports.OverBound) or, for a
// sweep, the first failing seeds with their rerun commands, and the rerun
// command. Lists stop after summaryMaxRows rows saying how many more
// there are, cells after summaryCellChars characters, and the whole stays
// under StepSummaryBudget bytes (1,000 failing migrations included).
// report.md is the whole story; the summary points at it.
func StepSummary(name string, sweep bool, runs []reports.StoredRun) []byte {
	var b bytes.Buffer
	verdict := ""
	for _, r := range runs {
		verdict = worst(verdict, r.Summary.Verdict)
	}
	kind := "run"
	if sweep {
		kind = "sweep"
	}
	fmt.Fprintf(&b, "### fiomig %s `%s` — %s\n\n", kind, name, strings.ToUpper(verdict))
	if len(runs) == 0 {
		b.WriteString("No run to report.\n")
		return b.Bytes()
	}
	first := runs[0]
	if sweep {
		n := map[string]int{}
		for _, r := range runs {
			n[r.Summary.Verdict]++
		}
		fmt.Fprintf(&b, "%d seed(s): %d pass, %d fail, %d inconclusive; CUTOVER_PAUSE_CRIT_S = %s s.\n\n", len(runs), n[record.Pass], n[record.Fail], n[record.Inconclusive], record.FormatT(first.Plan.Params.PauseCritS))
	} else {
		fmt.Fprintf(&b, "Seed %d, %d migration(s) on %d host(s), backend %s; CUTOVER_PAUSE_CRIT_S = %s s.\n\n", first.Summary.Seed, len(first.Summary.Migrations), len(first.Plan.Topology.Hosts), first.Plan.Backend, record.FormatT(first.Plan.Params.PauseCritS))
	}
	b.WriteString("| Figure | Value |\n|---|---|\n")
	for _, f := range Figures(runs) {
		v := "—"
		if f.Known {
			v = record.FormatT(f.Value)
			if f.Unit == "seconds" {
				v += " s"
			}
		}
		fmt.Fprintf(&b, "| %s | %s |\n", f.Name, v)
	}
	if !sweep {
		b.WriteString("\n| Check | Verdict | Detail |\n|---|---|---|\n")
		for _, c := range first.Summary.Checks {
			v := c.Verdict
			if v == record.Fail || v == record.Inconclusive {
				v = "**" + v + "**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, v, cell(c.Detail))
		}
		if over := reports.OverBound(first.Plan, first.Summary); len(over) > 0 {
			fmt.Fprintf(&b, "\n**Over the pause bound** (%d):\n\n", len(over))
			for i, o := range over {
				if i == summaryMaxRows {
					fmt.Fprintf(&b, "- … and %d more (report.md lists every one)\n", len(over)-summaryMaxRows)
					break
				}
				b.WriteString("- " + clipText(o) + "\n")
			}
		}
		fmt.Fprintf(&b, "\nRerun: `%s`\n", clipText(first.Plan.Command))
	} else {
		var bad []reports.StoredRun
		for _, r := range runs {
			if r.Summary.Verdict != record.Pass {
				bad = append(bad, r)
			}
		}
		if len(bad) > 0 {
			fmt.Fprintf(&b, "\n**Seeds that did not pass** (%d):\n\n", len(bad))
			for i, r := range bad {
				if i == summaryMaxRows {
					fmt.Fprintf(&b, "- … and %d more (sweep.md lists every one)\n", len(bad)-summaryMaxRows)
					break
				}
				var failed []string
				for _, c := range r.Summary.Checks {
					if c.Verdict == record.Fail || c.Verdict == record.Inconclusive {
						failed = append(failed, c.Name+" "+c.Verdict)
					}
				}
				fmt.Fprintf(&b, "- seed %d: %s — `%s`\n", r.Summary.Seed, clipText(strings.Join(failed, ", ")), clipText(r.Plan.Command))
			}
		}
	}
	if b.Len() > StepSummaryBudget { // unreachable with the caps above; kept as the guarantee
		out := b.Bytes()[:StepSummaryBudget-200]
		return append(out, "\n\n… cut to stay within the step summary budget; report.md has the whole.\n"...)
	}
	return b.Bytes()
}

// clipText shortens s to summaryCellChars characters, saying so.
func clipText(s string) string {
	r := []rune(s)
	if len(r) <= summaryCellChars {
		return s
	}
	return string(r[:summaryCellChars]) + " … (cut)"
}

// cell is s clipped and made safe for a table cell.
func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(clipText(s))
}
