package reports

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
)

// SeedsMarkdown is the top-level reproduce.md of fiomig reproduce
// --seeds: the incident's summary and its observed symptoms beside the
// model's values over the seeds (model names the model run); per seed and
// operator, the validation failures by cause, the leaks by kind,
// controllers against expected, rejections/min, pods killed, whether the
// bands hold and the seed's total paired difference; then the comparison
// over the seeds (cmps, one per compare expectation of bands,
// JudgeCompare) and the failures by cause summed over the seeds.
func SeedsMarkdown(inc incidents.Incident, model, command string, seeds []analysis.SeedRuns, bands []analysis.BandResult, cmps []analysis.SeedsComparison) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s over %d seeds\n\n`%s`\n\n%s\n", inc.Name, len(seeds), command, inc.Summary)
	var runs []analysis.Run
	for _, s := range seeds {
		runs = append(runs, s.Runs...)
	}
	b.Write(SymptomsMarkdown(analysis.Symptoms(inc, runs), model, true))
	b.WriteString("\n## Each seed\n\n")
	b.WriteString("Validation failures by cause (docs/sources.md §9.4): **loss** = sbcli subsystem-loss window " +
		"(includes a connecting leak failing at its own target address while its node lacks the subsystem); " +
		"**fix-removed leak** = live zero/partial-leg, parked at tgt.ter, or another leak a failed validation left; " +
		"**fault** = an injected fault was active on the endpoint's node/port; **other** = every other cause (see each " +
		"run's reproduce.md). Leaks after the settle: connecting / live no namespace / other (parked).\n\n")
	head := []string{"seed", "operator", "validation failed", "loss", "fix-removed leak", "fault", "other",
		"leaked (conn / no-ns / other)", "controllers / expected", "rejections/min", "pods killed", "bands hold", "D total (fixed − prefix)"}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat("---|", len(head)) + "\n")
	total := map[string]map[string]int{}
	for _, s := range seeds {
		d := "—"
		if p := analysis.PairOf(s.Runs); p != nil {
			d = fmt.Sprintf("%+d", p.Fixed.Total-p.Prefix.Total)
		}
		for i, r := range s.Runs {
			f := r.Figures
			if total[f.Operator] == nil {
				total[f.Operator] = map[string]int{}
			}
			for c, n := range f.FailureCauses {
				total[f.Operator][c] += n
			}
			other := f.ValidationFailed - f.FailedSubsystemLoss - f.FailedFixRemovedLeak - f.FailedInjectedFault
			hold := "yes"
			if !r.Shape.OK {
				hold = "**NO**"
			}
			c := ""
			if i == 0 {
				c = d
			}
			fmt.Fprintf(&b, "| %d | %s | %d of %d | %d | %d | %d | %d | %d (%d / %d / %d) | %d / %d | %.0f | %d | %s | %s |\n",
				s.Seed, f.Operator, f.ValidationFailed, f.Migrations, f.FailedSubsystemLoss, f.FailedFixRemovedLeak,
				f.FailedInjectedFault, other, f.Leaked, f.LeakedConnecting, f.LeakedLiveNoNamespace,
				f.Leaked-f.LeakedConnecting-f.LeakedLiveNoNamespace, f.Controllers, f.Expected, f.RejectionsPerMin,
				f.PodsKilled, hold, c)
		}
	}
	for i, c := range cmps {
		if c.Seeds > 0 { // both operators ran on some seed
			b.Write(SeedsComparisonMarkdown(c, bands[i].Expectation))
		}
	}
	b.WriteString("\n## Validation failures by cause, summed over the seeds\n\n| cause |")
	ops := slices.Sorted(maps.Keys(total))
	slices.Reverse(ops) // prefix, fixed
	for _, op := range ops {
		b.WriteString(" " + op + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(ops)) + "\n")
	all := map[string]int{}
	for _, op := range ops {
		for c, n := range total[op] {
			all[c] += n
		}
	}
	for _, c := range analysis.SortedCauses(all) {
		fmt.Fprintf(&b, "| %s |", c)
		for _, op := range ops {
			fmt.Fprintf(&b, " %d |", total[op][c])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n%s\n\nEach seed's runs are in seed-N/ (plan.json, timeline.jsonl, summary.json, report.md, reproduce.md).\n", BandsExitMeaning)
	return []byte(b.String())
}

// WriteIncidentTable prints the figures of several runs side by side.
func WriteIncidentTable(w io.Writer, figs []analysis.IncidentFigures, shapes []analysis.Shape) {
	cols := make([]string, len(figs))
	for i, f := range figs {
		cols[i] = f.Operator
	}
	rows := [][]string{append([]string{""}, cols...)}
	add := func(name string, val func(analysis.IncidentFigures) string) {
		r := []string{name}
		for _, f := range figs {
			r = append(r, val(f))
		}
		rows = append(rows, r)
	}
	add("migrations failed on path validation", func(f analysis.IncidentFigures) string {
		return fmt.Sprintf("%d of %d", f.ValidationFailed, f.Migrations)
	})
	add("  sbcli subsystem-loss window", func(f analysis.IncidentFigures) string { return strconv.Itoa(f.FailedSubsystemLoss) })
	add("  leak kinds the fix removes", func(f analysis.IncidentFigures) string { return strconv.Itoa(f.FailedFixRemovedLeak) })
	add("  injected fault", func(f analysis.IncidentFigures) string { return strconv.Itoa(f.FailedInjectedFault) })
	add("  other (see causes)", func(f analysis.IncidentFigures) string {
		return strconv.Itoa(f.ValidationFailed - f.FailedSubsystemLoss - f.FailedFixRemovedLeak - f.FailedInjectedFault)
	})
	add("controllers at the end / expected", func(f analysis.IncidentFigures) string {
		return fmt.Sprintf("%d / %d", f.Controllers, f.Expected)
	})
	add("  healthy + leaked; endpoints missing", func(f analysis.IncidentFigures) string {
		return fmt.Sprintf("%d + %d; %d", f.Healthy, f.Controllers-f.Healthy, len(f.MissingEndpoints))
	})
	add("  per host", func(f analysis.IncidentFigures) string {
		var parts []string
		for _, h := range slices.Sorted(maps.Keys(f.ControllersPerHost)) {
			parts = append(parts, fmt.Sprintf("%s %d/%d", h, f.ControllersPerHost[h], f.ExpectedPerHost[h]))
		}
		return strings.Join(parts, ", ")
	})
	add("leaked controllers", func(f analysis.IncidentFigures) string {
		return fmt.Sprintf("%d (%s)", f.Leaked, analysis.LeakedKindsText(f))
	})
	add("CONNECT rejections/min at the end", func(f analysis.IncidentFigures) string { return fmt.Sprintf("%.0f", f.RejectionsPerMin) })
	add("pods killed", func(f analysis.IncidentFigures) string { return strconv.Itoa(f.PodsKilled) })
	add("longest pause", func(f analysis.IncidentFigures) string { return fmt.Sprintf("%.1f s", f.LongestPauseS) })
	add("every expectation holds", func(f analysis.IncidentFigures) string {
		for i := range figs {
			if figs[i].Operator == f.Operator && i < len(shapes) {
				if shapes[i].OK {
					return "yes"
				}
				return "NO"
			}
		}
		return "?"
	})
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(w, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(w, "  %-*s", width[i], c)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "(controllers: of the run's subsystems in each host's last sample, every state but deleting/dead — what the "+
		"leak check inspects; expected: one per published ip:port endpoint of each volume the host consumes; healthy: not named by "+
		"the leak check; endpoints missing: published endpoints with no controller, path-completeness)\n")
}

// IncidentMarkdown renders one run's reproduce report: the figures, the
// expected shape, and the table of validation failures naming the
// controller that failed each migration and the migration that leaked it.
func IncidentMarkdown(f analysis.IncidentFigures, s analysis.Shape, all []analysis.IncidentFigures, shapes []analysis.Shape) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Reproduction of %s — operator %s, seed %d\n\n", orDefault(f.Incident, incidents.Default), f.Operator, f.Seed)
	fmt.Fprintf(&b, "Kernel reconnect counter reset: %s.\n\n", orDefault(f.ReconnectReset, "full"))
	if s.OK {
		fmt.Fprintf(&b, "**Every expectation of the incident file holds: yes.**\n\n")
	} else {
		fmt.Fprintf(&b, "**Every expectation of the incident file holds: NO.**\n\n")
		for _, m := range s.Missing {
			fmt.Fprintf(&b, "- %s\n", m)
		}
		b.WriteString("\n")
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "Note: %s\n\n", n)
	}
	if f.FaultsCheck.Verdict == record.Inconclusive {
		fmt.Fprintf(&b, "**Faults: inconclusive** — %s. A fault that left no evidence proves nothing about its effect: "+
			"this run's shape cannot be trusted either way.\n\n", f.FaultsCheck.Detail)
	} else if f.FaultsCheck.Verdict != "" {
		fmt.Fprintf(&b, "Faults: %s — %s.\n\n", f.FaultsCheck.Verdict, f.FaultsCheck.Detail)
	}
	b.WriteString("## Side by side\n\n```\n")
	if len(all) == 0 {
		all, shapes = []analysis.IncidentFigures{f}, []analysis.Shape{s}
	}
	WriteIncidentTable(&b, all, shapes)
	b.WriteString("```\n\n## Migrations that failed path validation\n\n")
	if len(f.Failures) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| migration | at | host | controller | endpoint | state | origin | signal | cause | detail |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, v := range f.Failures {
			origin := orDefault(v.Origin, "—")
			if v.LeakCaused {
				origin = "**" + origin + "**"
			}
			cause := v.Cause
			if v.CancelledBy != "" {
				cause += " (after " + v.CancelledBy + "'s cancel)"
			}
			fmt.Fprintf(&b, "| %s | %.1f s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v.Migration, v.AtS, orDefault(v.Host, "—"),
				orDefault(v.Controller, "—"), orDefault(v.Endpoint, "—"), orDefault(v.State, "—"), origin, v.Signal, cause,
				strings.ReplaceAll(v.Detail, "|", "\\|"))
		}
		b.WriteString("\n\"origin\" is the migration whose validation created that controller (bold: an earlier migration, i.e. a leak); " +
			"\"csi\" is a volume path of the CSI driver. \"signal\" is how the validation failed, \"cause\" why " +
			"(docs/sources.md §9.4).\n")
		b.WriteString("\nBy cause:\n\n")
		for _, c := range analysis.SortedCauses(f.FailureCauses) {
			fmt.Fprintf(&b, "- %d %s\n", f.FailureCauses[c], c)
		}
	}
	if len(f.PodsKilledList) > 0 {
		fmt.Fprintf(&b, "\nPods killed: %s.\n", strings.Join(f.PodsKilledList, ", "))
	}
	return []byte(b.String())
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// SeedsComparisonMarkdown is the --seeds reproduce.md section on the
// comparison: per cause the mean D, the interval and the row's verdict,
// then the verdict and the method.
func SeedsComparisonMarkdown(c analysis.SeedsComparison, e incidents.Expectation) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Fixed against prefix over %d seeds (%s)\n\n**%s** (want %s) — %s.\n\n", c.Seeds, analysis.CompareFixedLEPrefix, c.Verdict, e.Verdict, c.Detail)
	if c.Verdict == analysis.NotJudged {
		return []byte(b.String())
	}
	b.WriteString("| cause | role | D per seed (fixed − prefix) | mean D | SD | 95 % interval | verdict |\n|---|---|---|---|---|---|---|\n")
	for _, r := range c.Rows {
		ds := make([]string, len(r.D))
		for i, d := range r.D {
			ds[i] = fmt.Sprintf("%+d", d)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %+.2f | %.2f | [%+.2f, %+.2f] | %s |\n", r.Class, roleText[r.Role], strings.Join(ds, " "), r.Mean, r.SD, r.Lo, r.Hi, r.Verdict)
	}
	src := ""
	if e.Margin != nil {
		src = fmt.Sprintf(" [%s: %s]", e.Margin.Source, e.Margin.Note)
	}
	fmt.Fprintf(&b, "\nMethod: %s. Equivalence margin δ = %g failures per run%s. A cause the fix has no sourced way to change "+
		"(\"held\") fails the comparison when its interval excludes 0 and passes when it lies within [−δ, +δ]; the total fails "+
		"when its interval lies wholly above 0 and passes when its upper bound is ≤ δ; the leak kinds the fix removes are where "+
		"the difference may be, and a loss-window failure counts with them when the cancel that opened its window was of a migration that "+
		"failed on one of them (directly or through a chain of loss windows: the fix removes that failure, so that migration is not "+
		"cancelled before continue and its cancel never deletes the volume's subsystem on the source's tertiary, docs/sources.md §4.4 — inference); one fault kind, and those "+
		"downstream loss windows, are described, not judged. Any unexplained failure in any run fails the comparison; "+
		"an interval too wide for either is inconclusive.\n", analysis.IntervalMethodPaired, c.Margin, src)
	return []byte(b.String())
}

var roleText = map[string]string{analysis.RoleHeld: "held (±δ)", analysis.RoleTotal: "total (≤ δ)", analysis.RoleFree: "the fix's", analysis.RoleDescribed: "described"}

// PairMarkdown is reproduce.md's section on one seed's two runs:
// described, not judged.
func PairMarkdown(d analysis.PairDescription, incident string) []byte {
	var b strings.Builder
	p := d.Pair
	fmt.Fprintf(&b, "\n## Fixed against prefix (seed %d): described, not judged\n\n"+
		"The claim (%s, docs/sources.md §9.4) is judged over seeds: run `fiomig reproduce %s --operator both --seeds 1-10`. "+
		"The two runs of one seed are chaotic (targets come from the world's one random stream, sources from earlier outcomes; "+
		"faults land and the lvol monitor repairs at other moments), so no single migration's difference is credited to the fix.\n\n",
		p.Seed, analysis.CompareFixedLEPrefix, orDefault(incident, incidents.Default))
	b.WriteString("| cause | prefix | fixed | D (fixed − prefix) |\n|---|---|---|---|\n")
	classes := []string{analysis.ClassTotal, analysis.ClassLoss, analysis.ClassFault}
	kinds := map[string]bool{}
	for k := range p.Prefix.FaultKinds {
		kinds[k] = true
	}
	for k := range p.Fixed.FaultKinds {
		kinds[k] = true
	}
	classes = append(append(classes, slices.Sorted(maps.Keys(kinds))...), analysis.ClassRemovable)
	if p.Prefix.LossDownstream > 0 || p.Fixed.LossDownstream > 0 {
		classes = append(classes, analysis.ClassLossDownstream)
	}
	classes = append(classes, analysis.ClassOther)
	for _, k := range classes {
		fmt.Fprintf(&b, "| %s | %d | %d | %+d |\n", k, p.Prefix.Class(k), p.Fixed.Class(k), p.Fixed.Class(k)-p.Prefix.Class(k))
	}
	if p.Prefix.Removable == 0 && p.Fixed.Removable == 0 {
		fmt.Fprintf(&b, "\n%s on this seed: no validation failed on a leak kind the fix removes in either run.\n", capital(analysis.NotExercisedDetail))
	}
	if d.PlansDivergeAt != "" {
		fmt.Fprintf(&b, "\nThe runs' migration plans (volume, source, target) diverge at %s.\n", d.PlansDivergeAt)
	}
	if len(d.Differences) == 0 {
		b.WriteString("\nNo migration's outcome differs.\n")
		return []byte(b.String())
	}
	b.WriteString("\n| migration | failed in | prefix cause | fixed cause |\n|---|---|---|---|\n")
	for _, x := range d.Differences {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", x.Migration, x.FailedIn, orDefault(x.PrefixCause, "—"), orDefault(x.FixedCause, "—"))
	}
	return []byte(b.String())
}

// BandsMarkdown is reproduce.md's table of the incident's expectations:
// each band, its source, the incident's own figure and what the run gave.
func BandsMarkdown(bands []analysis.BandResult) []byte {
	var b bytes.Buffer
	b.WriteString("\n## Expectations (incident file)\n\n| expectation | operator | band | source | got | holds |\n|---|---|---|---|---|---|\n")
	for _, r := range bands {
		e := r.Expectation
		holds := "yes"
		switch {
		case !r.Judged:
			holds, r.Got = "—", "—"
		case !r.OK:
			holds = "**NO**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", analysis.BandName(e), orDefault(e.Operator, "any"), e.Range(), e.Source,
			r.Got, holds)
	}
	b.WriteString("\nNotes on the sources of each band:\n\n")
	for _, r := range bands {
		if n := r.Expectation.Note; n != "" && r.Judged {
			fmt.Fprintf(&b, "- %s (%s): %s\n", analysis.BandName(r.Expectation), r.Expectation.Source, n)
		}
	}
	return b.Bytes()
}

// ReproduceFile is the reproduce report in each run directory.
const ReproduceFile = "reproduce.md"

// WriteReproduce writes reproduce.md into dir: run's figures, shape,
// expectations and validation failures; all, when given, are every
// operator's runs of the same seed, shown side by side (and, with both
// operators, described as a pair); then the incident's symptoms beside
// this seed's run of the operator the incident ran (model names the model
// run).
func WriteReproduce(dir, model string, run analysis.Run, all []analysis.Run) error {
	var figs []analysis.IncidentFigures
	var shapes []analysis.Shape
	for _, x := range all {
		figs = append(figs, x.Figures)
		shapes = append(shapes, x.Shape)
	}
	b := IncidentMarkdown(run.Figures, run.Shape, figs, shapes)
	b = append(b, BandsMarkdown(run.Bands)...)
	if d := analysis.DescribePair(all); d != nil {
		b = append(b, PairMarkdown(*d, run.Figures.Incident)...)
	}
	if len(all) == 0 {
		all = []analysis.Run{run}
	}
	b = append(b, SymptomsMarkdown(analysis.SymptomsOf(all), model, true)...)
	b = fmt.Appendf(b, "\nThis is one seed. The table over seeds 1-10, by cause, for both operators: "+
		"`fiomig reproduce %s --operator both --seeds 1-10`.\n", orDefault(run.Figures.Incident, incidents.Default))
	if err := os.WriteFile(filepath.Join(dir, ReproduceFile), b, 0o644); err != nil {
		return fmt.Errorf("write reproduce report: %w", err)
	}
	return nil
}

// ReproduceText prints one seed's reproduction for a person: the
// operators' figures side by side, each run's validation failures,
// expectations and notes, where its reproduce.md is (dirs, one per run),
// the description of the two operators' runs when both ran (described,
// not judged: the comparison is judged over seeds), the incident's
// symptoms beside this seed's run of the operator the incident ran (model
// names the model run), and what the exit code means.
func ReproduceText(w io.Writer, incident, model string, runs []analysis.Run, dirs []string) {
	var figs []analysis.IncidentFigures
	var shapes []analysis.Shape
	for _, r := range runs {
		figs = append(figs, r.Figures)
		shapes = append(shapes, r.Shape)
	}
	fmt.Fprintf(w, "\n== %s, seed %d, side by side\n", incident, runs[0].Figures.Seed)
	WriteIncidentTable(w, figs, shapes)
	for i, r := range runs {
		runInconclusive := r.Figures.FaultsCheck.Verdict == record.Inconclusive
		f := r.Figures
		fmt.Fprintf(w, "\n== %s: validation failures (%d)\n", f.Operator, len(f.Failures))
		for _, v := range f.Failures {
			by := v.Origin
			switch {
			case v.LeakCaused:
				by = "leaked by " + v.Origin
			case v.Origin == v.Migration:
				by = "created by this migration"
			case v.Origin == "":
				by = "no controller blamed"
			}
			by = v.Cause + "; " + by
			ctrl := "-"
			if v.Controller != "" {
				ctrl = fmt.Sprintf("%s %s (%s, %s)", v.Host, v.Controller, v.Endpoint, v.State)
			} else if v.Host != "" {
				ctrl = v.Host
			}
			fmt.Fprintf(w, "  %s at %7.1f s  %-48s %-60s %s\n", v.Migration, v.AtS, ctrl, clipTo(by, 60), clipTo(v.Detail, 70))
		}
		fmt.Fprintf(w, "  expectations (incident file):\n")
		for _, b := range r.Bands {
			if !b.Judged {
				continue
			}
			mark := "ok "
			if !b.OK {
				mark = "NO "
			}
			name := b.Expectation.Figure
			if name == "" {
				name = "check " + b.Expectation.Check
			}
			fmt.Fprintf(w, "    %s %-26s got %-20s want %-14s [%s]\n", mark, name, b.Got, b.Expectation.Range(), b.Expectation.Source)
		}
		if r.Shape.OK {
			fmt.Fprintf(w, "  every expectation holds: yes\n")
		} else {
			fmt.Fprintf(w, "  every expectation holds: NO\n")
			for _, m := range r.Shape.Missing {
				fmt.Fprintf(w, "    - %s\n", m)
			}
		}
		for _, n := range r.Shape.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		if runInconclusive {
			fmt.Fprintf(w, "  faults: inconclusive: %s\n", r.Figures.FaultsCheck.Detail)
		}
		fmt.Fprintf(w, "  report: %s/%s\n", dirs[i], ReproduceFile)
	}
	if d := analysis.DescribePair(runs); d != nil {
		p := d.Pair
		fmt.Fprintf(w, "\n== fixed against prefix, seed %d: described, not judged (the claim %s is judged over seeds: add --seeds 1-10)\n",
			p.Seed, analysis.CompareFixedLEPrefix)
		fmt.Fprintf(w, "  validation failures      prefix %2d  fixed %2d  D %+d\n", p.Prefix.Total, p.Fixed.Total, p.Fixed.Total-p.Prefix.Total)
		for _, k := range []struct {
			name string
			p, f int
		}{{"loss window", p.Prefix.Loss, p.Fixed.Loss}, {"injected fault", p.Prefix.Fault, p.Fixed.Fault},
			{"leak kinds the fix removes", p.Prefix.Removable, p.Fixed.Removable}, {"every other cause", p.Prefix.Other, p.Fixed.Other}} {
			fmt.Fprintf(w, "    %-26s prefix %2d  fixed %2d  D %+d\n", k.name, k.p, k.f, k.f-k.p)
		}
		if p.Prefix.LossDownstream > 0 || p.Fixed.LossDownstream > 0 {
			fmt.Fprintf(w, "      of which loss window downstream of a removable leak failure: prefix %d  fixed %d\n", p.Prefix.LossDownstream, p.Fixed.LossDownstream)
		}
		if d.PlansDivergeAt != "" {
			fmt.Fprintf(w, "  the runs' migration plans diverge at %s\n", d.PlansDivergeAt)
		}
		for _, x := range d.Differences {
			fmt.Fprintf(w, "  %s failed in %-6s prefix: %-40s fixed: %s\n", x.Migration, x.FailedIn, clipTo(orDefault(x.PrefixCause, "none"), 40), orDefault(x.FixedCause, "none"))
		}
		if p.Prefix.Removable == 0 && p.Fixed.Removable == 0 {
			fmt.Fprintf(w, "  %s on this seed: no validation failed on a leak kind the fix removes in either run\n", analysis.NotExercisedDetail)
		}
	}
	w.Write(SymptomsMarkdown(analysis.SymptomsOf(runs), model, false))
	fmt.Fprintf(w, "\n%s\n", BandsExitMeaning)
}

func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// CatalogueText lists an incident catalogue, two lines per incident: its
// name and one-line summary (incidents.Incident.Headline), then its shape,
// migrations, operators, expectations, hypothesis combinations and file. A
// file whose world does not hold is an error naming it.
func CatalogueText(w io.Writer, all []incidents.Incident) error {
	width := 0
	for _, inc := range all {
		width = max(width, len(inc.Name))
	}
	for _, inc := range all {
		t, err := inc.World(inc.OperatorList()[0])
		if err != nil {
			return fmt.Errorf("%s: %w", inc.File, err)
		}
		fmt.Fprintf(w, "%-*s  %s\n%-*s  %d hosts, %d volumes x %d ns, %d migrations, operators %s, %d expectations, %d hypothesis combinations  (%s)\n",
			width, inc.Name, inc.Headline(), width, "", t.Hosts, t.Volumes, max(1, t.NamespacesPerVolume), inc.Pacing.Migrations,
			inc.Operators.Value, len(inc.Expected), len(inc.Combinations()), inc.File)
	}
	return nil
}
