package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/incidents"
)

// SeedRuns are one seed's runs of an incident (one per operator).
type SeedRuns struct {
	Seed int64
	Runs []ReproduceResult
}

// OK: every judged expectation of every run holds.
func (s SeedRuns) OK() bool {
	for _, r := range s.Runs {
		if !r.Shape.OK {
			return false
		}
	}
	return true
}

// Pairs are the SeedPair of every seed where both operators ran.
func Pairs(seeds []SeedRuns) []SeedPair {
	var out []SeedPair
	for _, s := range seeds {
		if p := PairOf(s.Runs); p != nil {
			out = append(out, *p)
		}
	}
	return out
}

// incidentRow is the incident's own figures (research/incident.md §0-§1,
// the OP 5aa711cc PR message), shown above the seeds.
var incidentRow = []string{"incident", "(run)", "16 of 23", "—", "—", "—", "—",
	"18 connecting or live zero-ns", "32 / ~18", "~146", "8 of 10", "—", "—"}

// SeedsMarkdown is the top-level reproduce.md of fiomig reproduce
// --seeds: per seed and operator, the validation failures by cause, the
// leaks by kind, controllers against expected, rejections/min, pods killed,
// whether the bands hold and the seed's total paired difference, under the
// incident's own figures; then the comparison over the seeds (cmps, one
// per compare expectation of bands, JudgeCompare), the failures by cause
// summed over the seeds and the 2.5 h figures with the switches they need.
func SeedsMarkdown(inc incidents.Incident, command string, seeds []SeedRuns, bands []BandResult, cmps []SeedsComparison) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s over %d seeds\n\n`%s`\n\n", inc.Name, len(seeds), command)
	b.WriteString("Validation failures by cause (research/incident.md §6.2): **loss** = sbcli subsystem-loss window " +
		"(includes a connecting leak failing at its own target address while its node lacks the subsystem); " +
		"**fix-removed leak** = live zero/partial-leg, parked at tgt.ter, or another leak a failed validation left; " +
		"**fault** = an injected fault was active on the endpoint's node/port; **other** = every other cause (see each " +
		"run's reproduce.md). Leaks after the settle: connecting / live no namespace / other (parked).\n\n")
	head := []string{"seed", "operator", "validation failed", "loss", "fix-removed leak", "fault", "other",
		"leaked (conn / no-ns / other)", "controllers / expected", "rejections/min", "pods killed", "bands hold", "D total (fixed − prefix)"}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|" + strings.Repeat("---|", len(head)) + "\n")
	b.WriteString("| " + strings.Join(incidentRow, " | ") + " |\n")
	total := map[string]map[string]int{}
	for _, s := range seeds {
		d := "—"
		if p := PairOf(s.Runs); p != nil {
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
	for _, c := range sortedCauses(all) {
		fmt.Fprintf(&b, "| %s |", c)
		for _, op := range ops {
			fmt.Fprintf(&b, " %d |", total[op][c])
		}
		b.WriteString("\n")
	}
	var figs []IncidentFigures
	for _, s := range seeds {
		for _, r := range s.Runs {
			figs = append(figs, r.Figures)
		}
	}
	b.Write(SwitchesMarkdown(figs))
	b.WriteString("\nEach seed's runs are in seed-N/ (plan.json, timeline.jsonl, summary.json, report.md, reproduce.md).\n")
	return []byte(b.String())
}

// SwitchesMarkdown is reproduce.md's table of the incident's 2.5 h figures
// (research/incident.md §6.2): the figure, what a faithful model with the
// upstream kernel expects, the switches a reproduction needs to reach it,
// and what the runs of figs gave (min–max over them).
func SwitchesMarkdown(figs []IncidentFigures) []byte {
	rng := func(val func(IncidentFigures) float64) string {
		if len(figs) == 0 {
			return "—"
		}
		lo, hi := val(figs[0]), val(figs[0])
		for _, f := range figs[1:] {
			lo, hi = min(lo, val(f)), max(hi, val(f))
		}
		if lo == hi {
			return fmt.Sprintf("%.0f", lo)
		}
		return fmt.Sprintf("%.0f–%.0f", lo, hi)
	}
	rows := [][]string{
		{"18 lvol controllers connecting or live with zero namespaces", "0 connecting (the upstream kernel removes a leak after " +
			"ctrl_loss_tmo 3600 / reconnect_delay 2 = 1800 attempts, ~1 h); 0 live zero-namespace (no sourced persistent " +
			"path in this topology, §2)", "`--reconnect-reset=partial` plus a zero/partial-leg switch: `--listener-race`, " +
			"`--swap-readd-fail`, or `--nsid-divergence`",
			rng(func(f IncidentFigures) float64 { return float64(f.LeakedConnecting + f.LeakedLiveNoNamespace) })},
		{"~146 rejected CONNECTs/min", "0 (nothing left connecting)", "`--reconnect-reset=partial`: 30/min per connecting " +
			"leak at a listening port, so ~146/min ≈ 5 controllers",
			rng(func(f IncidentFigures) float64 { return f.RejectionsPerMin })},
		{"32 controllers where ~18 expected", "18 + parked live leaks (prefix: ≈ 3 × distinct cancelled (subsystem, " +
			"target) pairs, ≤ 36) − tertiary paths lost to the sbcli cancel", "none for the parked leaks; the connecting " +
			"ones as above", rng(func(f IncidentFigures) float64 { return float64(f.Controllers) })},
		{"16 of 23 validations failed", "no sourced count: it depends on the first failure's cause (an assumed fault) " +
			"and the lvol monitor's repair lag (~1-3 failures per cancel window, §6.2 estimate)", "none sourced; \"≥ half\" " +
			"needs a persistent zero-leg switch", rng(func(f IncidentFigures) float64 { return float64(f.ValidationFailed) })},
		{"8 of 10 fio pods killed (6 s and 8 s pauses)", "no sourced cause in the model: not asserted", "—",
			rng(func(f IncidentFigures) float64 { return float64(f.PodsKilled) })},
	}
	var b strings.Builder
	b.WriteString("\n## The 2.5 h figures and the switches they need\n\n| incident figure | faithful expectation (upstream kernel) | switches needed | these runs |\n|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return []byte(b.String())
}
