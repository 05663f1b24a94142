package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
)

// CompareFixedLEPrefix is the cross-operator expectation of
// research/incident.md §6.2: fixed's validation failures are at most
// prefix's, and every migration whose outcome differs differs because the
// fix removed a leak (FixRemovedCauses).
const CompareFixedLEPrefix = "fixed-le-prefix-confined"

// Classes of a Difference.
const (
	// DiffRemovedByFix: failed in prefix only, on a leak kind the fix removes.
	DiffRemovedByFix = "removed by the fix"
	// DiffFaultTiming: failed in one run only, on an injected fault. The
	// seeded faults fire a fixed time into a migration's phase; the two
	// runs reach that phase at different times and in different host
	// states (the fixed operator's release Jobs take time, its CSI
	// restores paths prefix's does not), so the same fault lands on one
	// run's validation and not on the other's. Not the fix's doing, and
	// not attributable to it either way.
	DiffFaultTiming = "fault timing"
	// DiffDownstream: failed in one run only, in the subsystem-loss window
	// of a cancel that only that run had (a migration that is itself a
	// difference); named "downstream of mig-N".
	DiffDownstream = "downstream"
	// DiffRepairTiming: failed in one run only, in the subsystem-loss
	// window of a cancel both runs had: the lvol monitor repairs on its
	// own 300 s sweep while the two runs reach the next validation at
	// different times, so one run's validation came before the repair and
	// the other's after it.
	DiffRepairTiming = "repair timing"
	// DiffCauseOnly: failed in both runs, on different causes (not judged).
	DiffCauseOnly = "cause differs"
	// DiffUnexplained: anything else — the fix changed an outcome it has
	// no sourced way to change.
	DiffUnexplained = "unexplained"
	// DiffDiverged: at or after the first migration whose plan (volume,
	// source, target) differs between the runs: the simulated world draws
	// each target from the stream its durations come from (sim
	// StartMigration), and a volume's source is where its last completed
	// migration took it, so once the operators' differing work consumed
	// other draws, or an outcome differed, the two runs migrate different
	// things and no per-migration difference is attributable.
	DiffDiverged = "after the plans diverged"
)

// Difference is one migration whose validation outcome or cause differs
// between the prefix and the fixed run of one seed.
type Difference struct {
	Migration string `json:"migration"`
	// FailedIn is "prefix", "fixed" or "both".
	FailedIn    string `json:"failed_in"`
	PrefixCause string `json:"prefix_cause,omitempty"`
	FixedCause  string `json:"fixed_cause,omitempty"`
	// Class is one of the Diff* classes; Of names the migration a
	// downstream difference follows from.
	Class string `json:"class"`
	Of    string `json:"of,omitempty"`
}

// Comparison is the judgement of CompareFixedLEPrefix on one seed.
type Comparison struct {
	Seed         int64 `json:"seed"`
	PrefixFailed int   `json:"prefix_failed"`
	FixedFailed  int   `json:"fixed_failed"`
	// FixedLE: fixed's validation failures ≤ prefix's.
	FixedLE bool `json:"fixed_le"`
	// PlansDivergeAt is the first migration whose plan differs between
	// the runs ("" when every plan agrees).
	PlansDivergeAt string       `json:"plans_diverge_at,omitempty"`
	Differences    []Difference `json:"differences"`
	// Verdict: pass (FixedLE and every outcome difference removed by the
	// fix); fail (an unexplained difference, or fixed > prefix with no
	// chaotic difference to blame); inconclusive (otherwise: the runs
	// diverged through fault timing, so neither "fixed ≤ prefix" nor its
	// confinement can be put down to the fix).
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
}

// CompareOperators judges CompareFixedLEPrefix on the prefix and fixed
// figures of one seed. Differences are classified in migration order, so
// that a downstream one can name the difference it follows from.
func CompareOperators(prefix, fixed IncidentFigures) Comparison {
	c := Comparison{Seed: prefix.Seed, PrefixFailed: prefix.ValidationFailed, FixedFailed: fixed.ValidationFailed,
		FixedLE: fixed.ValidationFailed <= prefix.ValidationFailed, Differences: []Difference{}}
	byMig := func(f IncidentFigures) map[string]ValidationFailure {
		m := map[string]ValidationFailure{}
		for _, v := range f.Failures {
			m[v.Migration] = v
		}
		return m
	}
	pf, ff := byMig(prefix), byMig(fixed)
	var migs []string
	for m := range pf {
		migs = append(migs, m)
	}
	for m := range ff {
		if _, ok := pf[m]; !ok {
			migs = append(migs, m)
		}
	}
	slices.Sort(migs)
	var planned []string
	for m := range prefix.Plans {
		planned = append(planned, m)
	}
	slices.Sort(planned)
	for _, m := range planned {
		if prefix.Plans[m] != fixed.Plans[m] {
			c.PlansDivergeAt = m
			break
		}
	}
	oneSided := map[string]string{} // migration -> the run it failed in only
	counts := map[string]int{}
	for _, m := range migs {
		p, inP := pf[m]
		x, inF := ff[m]
		d := Difference{Migration: m, PrefixCause: p.Cause, FixedCause: x.Cause}
		var v ValidationFailure
		switch {
		case inP && inF:
			if p.Cause == x.Cause {
				continue
			}
			d.FailedIn, d.Class = "both", DiffCauseOnly
		case inP:
			d.FailedIn, v = "prefix", p
		default:
			d.FailedIn, v = "fixed", x
		}
		if d.FailedIn != "both" {
			oneSided[m] = d.FailedIn
			switch {
			case c.PlansDivergeAt != "" && m >= c.PlansDivergeAt:
				d.Class = DiffDiverged
			case d.FailedIn == "prefix" && slices.Contains(FixRemovedCauses, v.Cause):
				d.Class = DiffRemovedByFix
			case CauseClass(v.Cause) == CauseFault:
				d.Class = DiffFaultTiming
			case v.Cause == CauseSubsystemLoss && oneSided[v.CancelledBy] == d.FailedIn:
				d.Class, d.Of = DiffDownstream, v.CancelledBy
			case v.Cause == CauseSubsystemLoss && pf[v.CancelledBy].Migration != "" && ff[v.CancelledBy].Migration != "":
				d.Class, d.Of = DiffRepairTiming, v.CancelledBy
			default:
				d.Class = DiffUnexplained
			}
		}
		counts[d.Class]++
		c.Differences = append(c.Differences, d)
	}
	chaotic := counts[DiffFaultTiming] + counts[DiffDownstream] + counts[DiffRepairTiming] + counts[DiffDiverged]
	switch {
	case counts[DiffUnexplained] > 0:
		c.Verdict = record.Fail
	case !c.FixedLE && chaotic == 0:
		c.Verdict = record.Fail
	case chaotic > 0:
		c.Verdict = record.Inconclusive
	default:
		c.Verdict = record.Pass
	}
	var parts []string
	for _, k := range []string{DiffRemovedByFix, DiffFaultTiming, DiffDownstream, DiffRepairTiming, DiffDiverged, DiffUnexplained, DiffCauseOnly} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	rel := "≤"
	if !c.FixedLE {
		rel = ">"
	}
	c.Detail = fmt.Sprintf("fixed %d %s prefix %d", c.FixedFailed, rel, c.PrefixFailed)
	if len(parts) > 0 {
		c.Detail += "; differing migrations: " + strings.Join(parts, ", ")
	} else {
		c.Detail += "; no migration's outcome differs"
	}
	if c.PlansDivergeAt != "" {
		c.Detail += "; the runs' migration plans diverge at " + c.PlansDivergeAt
	}
	if c.Verdict == record.Inconclusive {
		c.Detail += " (the runs diverged — a fault landed in one run only, or the plans differ — so the differences are not attributable to the fix)"
	}
	return c
}

// compareRuns is CompareOperators over the prefix and fixed runs among
// runs (one seed), nil unless both ran.
func compareRuns(runs []ReproduceResult) *Comparison {
	var prefix, fixed *IncidentFigures
	for i := range runs {
		switch runs[i].Figures.Operator {
		case "prefix":
			prefix = &runs[i].Figures
		case "fixed":
			fixed = &runs[i].Figures
		}
	}
	if prefix == nil || fixed == nil {
		return nil
	}
	c := CompareOperators(*prefix, *fixed)
	return &c
}

// JudgeCompare judges inc's compare expectations on the runs of one seed
// (one ReproduceResult per operator): judged only when both prefix and
// fixed ran. OK is the comparison's verdict being the expectation's.
func JudgeCompare(inc incidents.Incident, runs []ReproduceResult) ([]BandResult, *Comparison) {
	var out []BandResult
	cmp := compareRuns(runs)
	for _, e := range inc.Expected {
		if e.Compare == "" {
			continue
		}
		r := BandResult{Expectation: e, Got: "not judged: needs both operators"}
		if cmp != nil {
			r.Judged, r.Got = true, cmp.Verdict+": "+cmp.Detail
			r.OK = cmp.Verdict == e.Verdict
		}
		out = append(out, r)
	}
	return out, cmp
}

// ComparisonMarkdown is reproduce.md's section on the comparison.
func ComparisonMarkdown(c Comparison) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Fixed against prefix (seed %d)\n\n**%s** — %s.\n\n", c.Seed, c.Verdict, c.Detail)
	if len(c.Differences) == 0 {
		return []byte(b.String())
	}
	b.WriteString("| migration | failed in | prefix cause | fixed cause | class |\n|---|---|---|---|---|\n")
	for _, d := range c.Differences {
		class := d.Class
		if d.Of != "" {
			class += " of " + d.Of
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", d.Migration, d.FailedIn, orDefault(d.PrefixCause, "—"), orDefault(d.FixedCause, "—"), class)
	}
	b.WriteString("\nClasses: \"removed by the fix\" — failed in prefix only on a leak kind the fix removes; \"fault timing\" — " +
		"failed in one run only on an injected fault (the seeded fault fires a fixed time into a phase the two runs reach at " +
		"different times and host states); \"downstream of mig-N\" — failed in one run only in the subsystem-loss window of " +
		"a cancel only that run had; \"repair timing of mig-N\" — failed in one run only in the window of a cancel both runs " +
		"had (the lvol monitor repairs on its own 300 s sweep, the runs reach the next validation at different times); " +
		"\"after the plans diverged\" — at or after the first migration whose volume, source or target differs between the " +
		"runs (targets come from the random stream the operators' work also draws from, sources from earlier outcomes); " +
		"\"unexplained\" — anything else (fails the comparison); \"cause differs\" — failed in both (not judged).\n")
	return []byte(b.String())
}
