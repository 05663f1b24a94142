package reports

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/montanaflynn/stats"

	"github.com/fiomig/fiomig/record"
)

// IntervalMethod names how SweepOverBound's 95 % interval is computed.
const IntervalMethod = "Wilson score interval, two-sided 95 %, z = Φ⁻¹(0.975) (montanaflynn/stats v0.14.0 NormPpf)"

// SweepMigrations turns a seed's summary into its migrations for sweep.json:
// each migration's longest pause is the longest any consumer host saw
// (summary.json's per-host longest_pause_s), and it is over the bound when
// that is > critS, as in the pause-bound check. Every migration of the
// summary is listed, terminal or not: the pause-bound check judges them
// all — but one that never cut over is marked NoCutover (the figures leave
// it out) and is never over the bound, and one with a host whose cutover
// lies inside a fault window (HostPauses.MaskedBy) is marked Masked.
func SweepMigrations(sum record.Summary, critS float64) []record.SweepMigration {
	out := make([]record.SweepMigration, 0, len(sum.Migrations))
	for _, m := range sum.Migrations {
		longest, masked := 0.0, false
		for _, hp := range m.Hosts {
			longest = max(longest, hp.LongestPauseS)
			masked = masked || hp.MaskedBy != nil
		}
		out = append(out, record.SweepMigration{ID: m.ID, Outcome: m.Outcome, LongestPauseS: longest,
			OverBound: longest > critS && !m.NoCutover, NoCutover: m.NoCutover, Masked: masked && !m.NoCutover})
	}
	return out
}

// SweepFigures computes, over every migration of every seed that cut over
// (NoCutover counts the others: they have no cutover pause), the
// distribution of the longest pause per migration (p50, p90, p99 and max by
// PercentileMethod, seconds rounded to the microsecond) and the fraction of
// those migrations over the bound with its Wilson score 95 % interval
// (IntervalMethod). A Masked migration (a host's cutover inside a fault
// window: its longest pause not known) is left out of the distribution,
// and of the fraction unless OverBound; Masked counts those left out.
// critS is reported as the bound; each migration's OverBound was judged
// against its own seed's bound. With no migration every figure is 0.
func SweepFigures(seeds []record.SweepSeed, critS float64) (record.SweepPauses, record.SweepOverBound) {
	var data stats.Float64Data
	over, none, judged := 0, 0, 0
	p := record.SweepPauses{PercentileMethod: PercentileMethod}
	ob := record.SweepOverBound{PauseCritS: critS, IntervalMethod: IntervalMethod}
	for _, s := range seeds {
		for _, m := range s.Migrations {
			if m.NoCutover {
				none++
				continue
			}
			if m.Masked {
				p.Masked++
			} else {
				data = append(data, m.LongestPauseS)
			}
			if m.Masked && !m.OverBound {
				ob.Masked++
				continue
			}
			judged++
			if m.OverBound {
				over++
			}
		}
	}
	p.Migrations, p.NoCutover = len(data), none
	ob.Migrations, ob.NoCutover, ob.Over = judged, none, over
	if judged > 0 {
		lo, hi := Wilson(over, judged, stats.NormPpf(0.975, 0, 1))
		ob.Fraction = roundP(float64(over) / float64(judged))
		ob.Low95, ob.High95 = roundP(lo), roundP(hi)
	}
	if len(data) == 0 {
		return p, ob
	}
	// Errors are impossible: data is non-empty, percents are in (0, 100].
	p50, _ := stats.Percentile(data, 50)
	p90, _ := stats.Percentile(data, 90)
	p99, _ := stats.Percentile(data, 99)
	mx, _ := stats.Max(data)
	p.P50S, p.P90S, p.P99S, p.MaxS = record.RoundT(p50), record.RoundT(p90), record.RoundT(p99), record.RoundT(mx)
	return p, ob
}

// NoCutoverNote is " (N did not: ended Failed or Aborted before Running)"
// for the migrations a figure leaves out for having no cutover, "" for
// none.
func NoCutoverNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d did not: ended Failed or Aborted before Running)", n)
}

// MaskedNote is " (N more left out: a host's cutover inside a fault
// window, its pause not measured)" for the migrations or pairs a figure
// leaves out as masked (record.HostPauses.MaskedBy), "" for none.
func MaskedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d more left out: a host's cutover inside a fault window, its pause not measured)", n)
}

// roundP rounds a proportion to 6 decimals, so that sweep.json's bytes do
// not depend on the last bits of a float computation.
func roundP(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// Wilson is the Wilson score interval for k successes in n trials at normal
// quantile z (1.96 for 95 %): centre (p̂ + z²/2n)/(1 + z²/n), half-width
// z·√(p̂(1−p̂)/n + z²/4n²)/(1 + z²/n), clamped to [0, 1] (E. B. Wilson,
// "Probable inference, the law of succession, and statistical inference",
// JASA 22, 1927). Unlike the normal (Wald) interval it stays inside [0, 1]
// and does not collapse to a point when k is 0 or n: 0 of 2300 gives
// [0, 0.0017]. n must be > 0; for n ≤ 0 it returns 0, 0.
func Wilson(k, n int, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 0
	}
	nf := float64(n)
	ph := float64(k) / nf
	z2 := z * z
	den := 1 + z2/nf
	centre := (ph + z2/(2*nf)) / den
	half := z * math.Sqrt(ph*(1-ph)/nf+z2/(4*nf*nf)) / den
	return max(0, centre-half), min(1, centre+half)
}

// SweepMarkdown renders sweep.md: verdicts per seed, the pause
// distribution, the over-bound fraction, and every failing and inconclusive
// seed with the command that reruns it. A pure function of s.
func SweepMarkdown(s record.Sweep) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# fiomig sweep: seeds %s\n\n", s.SeedsArg)
	fmt.Fprintf(&b, "Command: `%s`\n\n", s.Command)
	if len(s.RunArgs) > 0 {
		fmt.Fprintf(&b, "Every seed ran `fiomig run --seed=N %s`.\n\n", strings.Join(s.RunArgs, " "))
	} else {
		fmt.Fprintf(&b, "Every seed ran `fiomig run --seed=N` with the default flags.\n\n")
	}
	c := s.Counts
	fmt.Fprintf(&b, "## Verdicts\n\n%d of %d listed seeds ran: %d pass, %d fail, %d inconclusive, %d error.\n",
		len(s.Seeds), s.SeedsListed, c.Pass, c.Fail, c.Inconclusive, c.Error)
	if s.Interrupted {
		fmt.Fprintf(&b, "\nThe sweep was interrupted: %d listed seed(s) did not run, and the figures below cover only the seeds that did.\n", s.SeedsListed-len(s.Seeds))
	}

	p := s.Pauses
	fmt.Fprintf(&b, "\n## Longest pause per migration\n\n")
	fmt.Fprintf(&b, "Over %d migrations of %d seeds that cut over%s%s; a migration's longest pause is the longest pause window any of its consumer hosts saw.\n\n", p.Migrations, len(s.Seeds), NoCutoverNote(p.NoCutover), MaskedNote(p.Masked))
	fmt.Fprintf(&b, "| p50 | p90 | p99 | max |\n|---|---|---|---|\n| %s s | %s s | %s s | %s s |\n\n",
		fmtF(p.P50S), fmtF(p.P90S), fmtF(p.P99S), fmtF(p.MaxS))
	fmt.Fprintf(&b, "Percentile method: %s.\n", p.PercentileMethod)

	o := s.OverBound
	fmt.Fprintf(&b, "\n## Over the pause bound\n\n")
	fmt.Fprintf(&b, "%d of %d migrations that cut over%s%s are over CUTOVER_PAUSE_CRIT_S = %s s: fraction %.6f, 95 %% interval [%.6f, %.6f].\n\n",
		o.Over, o.Migrations, NoCutoverNote(o.NoCutover), MaskedNote(o.Masked), fmtF(o.PauseCritS), o.Fraction, o.Low95, o.High95)
	fmt.Fprintf(&b, "Interval method: %s.\n", o.IntervalMethod)
	sweepChecksMarkdown(&b, s)

	listSeeds := func(title, verdict string, checks func(record.SweepSeed) []string) {
		var rows []record.SweepSeed
		for _, sd := range s.Seeds {
			if sd.Verdict == verdict {
				rows = append(rows, sd)
			}
		}
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		if verdict == record.Fail {
			fmt.Fprintf(&b, "`fiomig shrink seed-N` (from this directory) cuts a failing seed's schedule down to the faults and migrations that still fail the check.\n\n")
		}
		for _, sd := range rows {
			what := strings.Join(checks(sd), ", ")
			if sd.Error != "" {
				what = sd.Error
			}
			fmt.Fprintf(&b, "- seed %d (%s), %s: `%s`\n", sd.Seed, what, dirNote(sd), sd.Command)
		}
	}
	listSeeds("Failing seeds (check, run directory, command that reruns it)", record.Fail, func(sd record.SweepSeed) []string { return sd.FailedChecks })
	listSeeds("Inconclusive seeds", record.Inconclusive, func(sd record.SweepSeed) []string { return sd.InconclusiveChecks })
	listSeeds("Seeds without a verdict", "error", func(record.SweepSeed) []string { return nil })

	fmt.Fprintf(&b, "\n## Every seed\n\n| seed | verdict | migrations | over bound | longest pause | run directory |\n|---|---|---|---|---|---|\n")
	for _, sd := range s.Seeds {
		longest, over := 0.0, 0
		for _, m := range sd.Migrations {
			longest = max(longest, m.LongestPauseS)
			if m.OverBound {
				over++
			}
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %d | %s s | %s |\n", sd.Seed, sd.Verdict, len(sd.Migrations), over, fmtF(longest), dirNote(sd))
	}
	return b.Bytes()
}

// sweepChecksMarkdown renders the determinism self-check and the
// coverage of --until-covered, when the sweep has them.
func sweepChecksMarkdown(b *bytes.Buffer, s record.Sweep) {
	if d := s.Determinism; d != nil {
		fmt.Fprintf(b, "\n## Determinism self-check\n\n%d seed(s) (one every %s of the seed list, share %s) ran a second time and their summary.json was compared (SHA-256): ",
			len(d.Seeds), fmtF(1/d.Share), fmtF(d.Share))
		if len(d.Mismatches) == 0 {
			b.WriteString("every one gave the same summary.\n")
		} else {
			fmt.Fprintf(b, "**%d did not** — the sweep fails:\n\n", len(d.Mismatches))
			for _, m := range d.Mismatches {
				fmt.Fprintf(b, "- seed %d: `%s` then `%s`\n", m.Seed, m.First, m.Second)
			}
		}
	}
	c := s.Coverage
	if c == nil {
		return
	}
	fmt.Fprintf(b, "\n## Fault coverage (--until-covered %d)\n\n", c.K)
	if c.Covered {
		fmt.Fprintf(b, "Every cell landed at least %d times within the %d seed(s) that ran, the shortest prefix of the seed list that does; the other listed seeds were not run.\n\n", c.K, len(s.Seeds))
	} else {
		fmt.Fprintf(b, "Not covered: after every seed that ran, some cell had landed fewer than %d times.\n\n", c.K)
	}
	b.WriteString("| kind | stage | landed |\n|---|---|---|\n")
	for _, x := range c.Cells {
		n := strconv.Itoa(x.Landed)
		if x.Landed < c.K {
			n = "**" + n + "**"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", x.Kind, x.Stage, n)
	}
	if len(c.NeverLanded) > 0 {
		fmt.Fprintf(b, "\nNever landed: %s.\n", strings.Join(c.NeverLanded, ", "))
	}
}

func dirNote(sd record.SweepSeed) string {
	switch {
	case sd.Dir == "":
		return "no run directory"
	case sd.TimelineKept:
		return sd.Dir
	}
	return sd.Dir + " (timeline dropped)"
}

// fmtF formats seconds without trailing zeros.
func fmtF(x float64) string { return record.FormatT(x) }

// WriteSweep writes sweep.json and sweep.md into dir, and, when at least
// one seed's summary.json (dir/<seed dir>/summary.json) can be read, the
// ECDF of pause windows pooled over the seeds (ECDFPlotFile, ECDFSVGFile
// under dir; ECDFPlot), linked from sweep.md. A seed whose summary cannot
// be read is left out of the plot and named in sweep.md.
func WriteSweep(dir string, s record.Sweep) error {
	if err := record.WriteJSON(filepath.Join(dir, record.SweepFile), s); err != nil {
		return err
	}
	var sums []record.Summary
	var unread []string
	for _, sd := range s.Seeds {
		if sd.Dir == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, sd.Dir, record.SummaryFile))
		if err == nil {
			var sum record.Summary
			if sum, err = decodeSummary(b); err == nil {
				sums = append(sums, sum)
				continue
			}
		}
		unread = append(unread, fmt.Sprintf("seed %d (%v)", sd.Seed, err))
	}
	md := SweepMarkdown(s)
	if len(sums) > 0 {
		crit := s.OverBound.PauseCritS
		title := fmt.Sprintf("pause windows over %d seed(s)", len(sums))
		for _, f := range []struct{ name, format string }{{ECDFPlotFile, "png"}, {ECDFSVGFile, "svg"}} {
			b, err := ECDFBytes(title, sums, crit, f.format)
			if err != nil {
				return fmt.Errorf("sweep ECDF: %w", err)
			}
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f.name)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f.name), b, 0o644); err != nil {
				return fmt.Errorf("write %s: %w", f.name, err)
			}
		}
		md = append(md, fmt.Sprintf("\n## Pause windows, all seeds\n\n![ECDF of pause windows over %d seeds](%s)\n", len(sums), ECDFPlotFile)...)
		if len(unread) > 0 {
			md = append(md, fmt.Sprintf("\nLeft out of the plot (no readable summary.json): %s.\n", strings.Join(unread, "; "))...)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, record.SweepReportFile), md, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", record.SweepReportFile, err)
	}
	return nil
}
