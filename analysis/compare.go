package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/montanaflynn/stats"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
)

// CompareFixedLEPrefix is the cross-operator expectation of
// docs/sources.md §9.4: fixed's validation failures are at most
// prefix's, and the difference is confined to the leak kinds the fix
// removes (FixRemovedCauses). It is judged over seeds (JudgeOverSeeds),
// never on one seed: the prefix and fixed runs of one seed are two chaotic
// runs (targets drawn from the world's one random stream, sources
// following earlier outcomes, faults landing at other moments, the lvol
// monitor repairing on its own 300 s sweep), so no single migration's
// difference can be credited to the fix.
const CompareFixedLEPrefix = "fixed-le-prefix-confined"

// IntervalMethodPaired names how JudgeOverSeeds puts an interval on a mean
// paired difference.
const IntervalMethodPaired = "paired t-interval, two-sided 95 %: mean D ± t(0.975, n−1) · s/√n over the n seeds, " +
	"D = fixed − prefix per seed, s the sample standard deviation (n−1; montanaflynn/stats v0.14.0 Mean, " +
	"StandardDeviationSample), t the Student's t quantile (gonum v0.17.0 stat/distuv StudentsT.Quantile)"

// Cause classes of the comparison (docs/sources.md §9.4). A failure's
// class follows from its Cause (reproduce_causes.go).
const (
	// ClassLoss: the sbcli subsystem-loss window (CauseSubsystemLoss).
	ClassLoss = CauseSubsystemLoss
	// ClassFault: an injected fault, every kind; ClassFault + " (kind)"
	// is one kind (described, not judged on its own).
	ClassFault = CauseFault
	// ClassRemovable: a leak kind the fix removes (FixRemovedCauses), and
	// a loss-window failure downstream of one (ClassLossDownstream).
	ClassRemovable = "leak kinds the fix removes"
	// ClassLossDownstream: the loss-window failures counted in
	// ClassRemovable (described, not judged on its own). A loss window
	// whose cancel was of a migration that failed on a leak kind the fix
	// removes — directly or through a chain of loss windows — is removed
	// with it: the fix removes that failure, so that migration is not
	// cancelled before continue and sbcli's cancel never deletes the
	// volume's subsystem on the source's tertiary (docs/sources.md §4.4;
	// inference).
	ClassLossDownstream = "loss window downstream of a removable leak failure"
	// ClassOther: every other cause — a completed migration's path leak
	// (neither operator releases it) or an unexplained failure.
	ClassOther = "every other cause"
	// ClassTotal: every validation failure.
	ClassTotal = "total"
)

// RunCauses are one run's validation failures by class. Other includes
// Unexplained (CauseUnexplained); FaultKinds split Fault by kind;
// Removable includes LossDownstream (loss-window failures downstream of
// a removable one), which Loss does not.
type RunCauses struct {
	Total          int            `json:"total"`
	Loss           int            `json:"loss"`
	Fault          int            `json:"fault"`
	Removable      int            `json:"removable"`
	LossDownstream int            `json:"loss_downstream,omitempty"`
	Other          int            `json:"other"`
	Unexplained    int            `json:"unexplained"`
	FaultKinds     map[string]int `json:"fault_kinds,omitempty"`
}

// CausesOf are f's validation failures by class. A loss-window failure
// counts as Removable (and LossDownstream) when its CancelledBy migration
// failed validation in f on a leak kind the fix removes, or on a loss
// window that itself does, transitively (removableUpstream).
func CausesOf(f IncidentFigures) RunCauses {
	c := RunCauses{FaultKinds: map[string]int{}}
	causeOf := map[string]ValidationFailure{}
	for _, v := range f.Failures {
		causeOf[v.Migration] = v
	}
	for _, v := range f.Failures {
		c.Total++
		switch {
		case v.Cause == CauseSubsystemLoss && removableUpstream(v, causeOf):
			c.Removable++
			c.LossDownstream++
		case v.Cause == CauseSubsystemLoss:
			c.Loss++
		case slices.Contains(FixRemovedCauses, v.Cause):
			c.Removable++
		case CauseClass(v.Cause) == CauseFault:
			c.Fault++
			c.FaultKinds[v.Cause]++
		default:
			c.Other++
			if CauseClass(v.Cause) == CauseUnexplained {
				c.Unexplained++
			}
		}
	}
	return c
}

// removableUpstream is whether the loss-window failure v's window was
// opened by the cancel of a migration that failed validation on a leak
// kind the fix removes: v.CancelledBy's failure in byMig is one, or is
// itself a loss window for which this holds (a chain of windows). A
// cancelling migration with no validation failure in byMig (cancelled
// for another reason), or a chain that loops, is not.
func removableUpstream(v ValidationFailure, byMig map[string]ValidationFailure) bool {
	seen := map[string]bool{v.Migration: true}
	for v.Cause == CauseSubsystemLoss && v.CancelledBy != "" && !seen[v.CancelledBy] {
		seen[v.CancelledBy] = true
		up, ok := byMig[v.CancelledBy]
		if !ok {
			return false
		}
		if slices.Contains(FixRemovedCauses, up.Cause) {
			return true
		}
		v = up
	}
	return false
}

// Class is the count of class k ("injected fault (kind)" for one kind).
func (c RunCauses) Class(k string) int {
	switch k {
	case ClassTotal:
		return c.Total
	case ClassLoss:
		return c.Loss
	case ClassFault:
		return c.Fault
	case ClassRemovable:
		return c.Removable
	case ClassLossDownstream:
		return c.LossDownstream
	case ClassOther:
		return c.Other
	}
	return c.FaultKinds[k]
}

// SeedPair are the prefix and fixed runs' failures by class on one seed.
type SeedPair struct {
	Seed   int64     `json:"seed"`
	Prefix RunCauses `json:"prefix"`
	Fixed  RunCauses `json:"fixed"`
}

// Roles of a row of the comparison.
const (
	// RoleHeld: a cause the fix has no sourced way to change (loss
	// window, injected fault, every other cause): its interval must lie
	// within [−δ, +δ]; excluding 0 fails.
	RoleHeld = "held"
	// RoleTotal: the total must not rise: upper bound ≤ δ; wholly above 0
	// fails.
	RoleTotal = "total"
	// RoleFree: the leak kinds the fix removes — where the difference may
	// be; described.
	RoleFree = "free"
	// RoleDescribed: one fault kind, described only (judging every kind
	// would multiply the chances of a false fail).
	RoleDescribed = "described"
)

// CauseInterval is one row of the comparison: the paired differences
// D = fixed − prefix of one class over the seeds, their mean, sample
// standard deviation and 95 % paired t-interval [Lo, Hi] (failures per
// run), and the row's verdict ("fail", "pass", "too wide" or "described").
type CauseInterval struct {
	Class   string  `json:"class"`
	Role    string  `json:"role"`
	D       []int   `json:"d"`
	Mean    float64 `json:"mean"`
	SD      float64 `json:"sd"`
	Lo      float64 `json:"lo"`
	Hi      float64 `json:"hi"`
	Verdict string  `json:"verdict"`
}

// SeedsComparison is the judgement of CompareFixedLEPrefix over seeds.
type SeedsComparison struct {
	Seeds  int     `json:"seeds"`
	Margin float64 `json:"margin"`
	// Rows: total, loss window, injected fault (then each kind), leak kinds
	// the fix removes (then, when any seed has one, the loss windows
	// downstream of a removable failure it includes), every other cause.
	Rows []CauseInterval `json:"rows"`
	// Verdict is pass, fail, inconclusive, or "not judged" (fewer than 2
	// seeds); Detail says why.
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
	// Intervals, set when Verdict is NotExercised, is what the intervals
	// alone say (pass, fail or inconclusive). A fail there is a measured
	// finding — fixed failed more in total, a cause the fix cannot change
	// moved, or a failure went unexplained — which needs nothing removable
	// to have occurred: it makes the exit code 1 (Refuted), while the
	// fix's benefit stays untested.
	Intervals string `json:"intervals,omitempty"`
	// SeedsNeeded, when inconclusive, is how many seeds a paired
	// t-interval would need at the observed means and SDs for every held
	// row to fit ±δ and the total to stay ≤ δ; 0 when no number would
	// (an observed mean already at or beyond δ).
	SeedsNeeded int `json:"seeds_needed,omitempty"`
}

// NotJudged is SeedsComparison.Verdict below 2 seeds.
const NotJudged = "not judged"

// NotExercised is SeedsComparison.Verdict when no validation failed on a
// cause the fix removes (ClassRemovable) in either operator on any seed:
// the comparison cannot tell whether the fix helps, whatever the
// intervals say (a pass would be vacuous, an inconclusive unsettled by
// any number of seeds). What the intervals alone say is kept in
// SeedsComparison.Intervals: a fail there (the total wholly above 0, a
// held cause whose interval excludes 0, an unexplained failure) is a
// measured refutation of "fixed ≤ prefix, confined to what the fix
// removes", reported beside "not exercised" and failing the exit code.
const NotExercised = "not exercised"

// NotExercisedDetail begins the Detail of a comparison NotExercised.
const NotExercisedDetail = "nothing the fix removes occurred"

// tQuantile is Student's t quantile p with nu degrees of freedom.
func tQuantile(p float64, nu int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(nu)}.Quantile(p)
}

// halfWidth is the 95 % paired t-interval's half width for n seeds at
// sample SD sd.
func halfWidth(sd float64, n int) float64 {
	return tQuantile(0.975, n-1) * sd / math.Sqrt(float64(n))
}

// JudgeOverSeeds judges CompareFixedLEPrefix on pairs (one per seed) with
// equivalence margin delta (failures per run, > 0): for each cause class
// the paired differences D = fixed − prefix, their mean and 95 % paired
// t-interval (IntervalMethodPaired). The verdict:
//   - fail: a failure with an unexplained cause in any run; or a held
//     cause's interval (loss window, injected fault, every other cause —
//     none of which the fix has a sourced way to change) excludes 0; or
//     the total's interval lies wholly above 0 (fixed significantly worse);
//   - pass: every held cause's interval lies within [−δ, +δ] and the
//     total's upper bound is ≤ δ;
//   - inconclusive otherwise (an interval too wide), with SeedsNeeded;
//   - NotExercised, instead of any of those, when no failure of a class
//     the fix removes occurred in either operator on any seed (a pass
//     would be vacuous: the fix had nothing to remove); Intervals keeps
//     what the intervals alone say, and the detail says it;
//   - NotJudged with fewer than 2 seeds.
//
// Pure: the same pairs and delta give the same result.
func JudgeOverSeeds(pairs []SeedPair, delta float64) SeedsComparison {
	n := len(pairs)
	c := SeedsComparison{Seeds: n, Margin: delta}
	if n < 2 {
		c.Verdict, c.Detail = NotJudged, fmt.Sprintf("%d seed(s): a paired interval needs at least 2", n)
		return c
	}
	kinds := map[string]bool{}
	unexplained := []string{}
	downstream, exercised := false, false
	for _, p := range pairs {
		downstream = downstream || p.Prefix.LossDownstream > 0 || p.Fixed.LossDownstream > 0
		exercised = exercised || p.Prefix.Removable > 0 || p.Fixed.Removable > 0
		for k := range p.Prefix.FaultKinds {
			kinds[k] = true
		}
		for k := range p.Fixed.FaultKinds {
			kinds[k] = true
		}
		if p.Prefix.Unexplained > 0 {
			unexplained = append(unexplained, fmt.Sprintf("seed %d prefix %d", p.Seed, p.Prefix.Unexplained))
		}
		if p.Fixed.Unexplained > 0 {
			unexplained = append(unexplained, fmt.Sprintf("seed %d fixed %d", p.Seed, p.Fixed.Unexplained))
		}
	}
	type row struct{ class, role string }
	rows := []row{{ClassTotal, RoleTotal}, {ClassLoss, RoleHeld}, {ClassFault, RoleHeld}}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		rows = append(rows, row{k, RoleDescribed})
	}
	rows = append(rows, row{ClassRemovable, RoleFree})
	if downstream {
		rows = append(rows, row{ClassLossDownstream, RoleDescribed})
	}
	rows = append(rows, row{ClassOther, RoleHeld})

	var fails, wide []string
	need, unreachable := 0, false
	for _, r := range rows {
		ci := CauseInterval{Class: r.class, Role: r.role}
		ds := make([]float64, n)
		for i, p := range pairs {
			d := p.Fixed.Class(r.class) - p.Prefix.Class(r.class)
			ci.D = append(ci.D, d)
			ds[i] = float64(d)
		}
		ci.Mean, _ = stats.Mean(ds)
		ci.SD, _ = stats.StandardDeviationSample(ds)
		h := halfWidth(ci.SD, n)
		ci.Lo, ci.Hi = ci.Mean-h, ci.Mean+h
		// reach is how far the interval must stay from 0 on the worse side.
		var reach float64
		switch r.role {
		case RoleHeld:
			reach = math.Abs(ci.Mean)
			switch {
			case ci.Lo > 0 || ci.Hi < 0:
				ci.Verdict = record.Fail
				fails = append(fails, fmt.Sprintf("%s: interval [%.2f, %.2f] excludes 0, a cause the fix has no sourced way to change", r.class, ci.Lo, ci.Hi))
			case ci.Lo >= -delta && ci.Hi <= delta:
				ci.Verdict = record.Pass
			default:
				ci.Verdict = "too wide"
			}
		case RoleTotal:
			reach = ci.Mean
			switch {
			case ci.Lo > 0:
				ci.Verdict = record.Fail
				fails = append(fails, fmt.Sprintf("total: interval [%.2f, %.2f] wholly above 0, fixed fails more", ci.Lo, ci.Hi))
			case ci.Hi <= delta:
				ci.Verdict = record.Pass
			default:
				ci.Verdict = "too wide"
			}
		default:
			ci.Verdict = "described"
		}
		if ci.Verdict == "too wide" {
			wide = append(wide, fmt.Sprintf("%s [%.2f, %.2f]", r.class, ci.Lo, ci.Hi))
			if m := seedsNeeded(reach, ci.SD, delta); m == 0 {
				unreachable = true
			} else {
				need = max(need, m)
			}
		}
		c.Rows = append(c.Rows, ci)
	}
	switch {
	case len(fails) > 0:
		c.Verdict, c.Detail = record.Fail, strings.Join(fails, "; ")
	case len(wide) == 0:
		c.Verdict = record.Pass
		c.Detail = fmt.Sprintf("over %d seeds every cause the fix cannot change stays within ±%g failures per run and the total does not rise above %g: the difference is confined to the leak kinds the fix removes", n, delta, delta)
	default:
		c.Verdict = record.Inconclusive
		c.Detail = fmt.Sprintf("over %d seeds the interval of %s is wider than ±%g", n, strings.Join(wide, ", "), delta)
		if unreachable {
			c.Detail += "; at an observed mean of δ or more no number of seeds reaches ±δ (more seeds would tell whether that difference is real)"
		} else {
			c.SeedsNeeded = need
			c.Detail += fmt.Sprintf("; at the observed means and SDs a paired t-interval would need about %d seeds", need)
		}
	}
	if len(unexplained) > 0 {
		c.Detail = fmt.Sprintf("unexplained validation failures (%s); the intervals alone: %s — %s", strings.Join(unexplained, ", "), c.Verdict, c.Detail)
		c.Verdict, c.SeedsNeeded = record.Fail, 0
	}
	if !exercised {
		nothing := fmt.Sprintf("%s: no validation failed on a leak kind the fix removes (nor on a loss window downstream of one) "+
			"in either operator on any of the %d seeds", NotExercisedDetail, n)
		c.Detail = fmt.Sprintf("%s, so the comparison cannot show what the fix does; the intervals alone: %s — %s", nothing, c.Verdict, c.Detail)
		if c.Verdict == record.Fail {
			c.Detail += " (a measured difference, whatever the fix had to remove)"
		}
		c.Intervals, c.Verdict, c.SeedsNeeded = c.Verdict, NotExercised, 0
	}
	return c
}

// seedsNeeded is the least n ≥ 2 with reach + t(0.975, n−1)·sd/√n ≤ delta,
// 0 when none (reach ≥ delta), capped at 100000.
func seedsNeeded(reach, sd, delta float64) int {
	if reach >= delta {
		return 0
	}
	for n := 2; n <= 100000; n++ {
		if reach+halfWidth(sd, n) <= delta {
			return n
		}
	}
	return 0
}

// PairOf is the SeedPair of one seed's runs, nil unless both prefix and
// fixed ran.
func PairOf(runs []Run) *SeedPair {
	prefix, fixed := pairFigures(runs)
	if prefix == nil || fixed == nil {
		return nil
	}
	return &SeedPair{Seed: prefix.Seed, Prefix: CausesOf(*prefix), Fixed: CausesOf(*fixed)}
}

func pairFigures(runs []Run) (prefix, fixed *IncidentFigures) {
	for i := range runs {
		switch runs[i].Figures.Operator {
		case "prefix":
			prefix = &runs[i].Figures
		case "fixed":
			fixed = &runs[i].Figures
		}
	}
	return prefix, fixed
}

// JudgeCompare judges inc's compare expectations over seeds (one SeedPair
// each; JudgeOverSeeds with the expectation's margin). Below 2 seeds an
// expectation is not judged. OK is the verdict being the expectation's.
func JudgeCompare(inc incidents.Incident, pairs []SeedPair) ([]BandResult, []SeedsComparison) {
	var out []BandResult
	var cmps []SeedsComparison
	for _, e := range inc.Expected {
		if e.Compare == "" {
			continue
		}
		delta := 0.0
		if e.Margin != nil {
			delta = e.Margin.Value
		}
		c := JudgeOverSeeds(pairs, delta)
		cmps = append(cmps, c)
		r := BandResult{Expectation: e, Got: "not judged: needs both operators on ≥ 2 seeds (--seeds)"}
		if c.Verdict != NotJudged {
			r.Judged, r.Got, r.OK = true, c.Verdict, c.Verdict == e.Verdict
			r.Refuted = c.Verdict == NotExercised && c.Intervals == record.Fail
		}
		out = append(out, r)
	}
	return out, cmps
}

// Difference is one migration whose validation outcome or cause differs
// between the prefix and the fixed run of one seed (described, not judged).
type Difference struct {
	Migration string `json:"migration"`
	// FailedIn is "prefix", "fixed" or "both" (on different causes).
	FailedIn    string `json:"failed_in"`
	PrefixCause string `json:"prefix_cause,omitempty"`
	FixedCause  string `json:"fixed_cause,omitempty"`
}

// PairDescription describes the prefix and fixed runs of one seed: their
// failures by class, the migrations that differ, and the first migration
// whose plan (volume, source, target) differs ("" when none).
type PairDescription struct {
	Pair           SeedPair
	Differences    []Difference
	PlansDivergeAt string
}

// DescribePair describes one seed's prefix and fixed runs (nil unless
// both ran).
func DescribePair(runs []Run) *PairDescription {
	prefix, fixed := pairFigures(runs)
	if prefix == nil || fixed == nil {
		return nil
	}
	d := &PairDescription{Pair: SeedPair{Seed: prefix.Seed, Prefix: CausesOf(*prefix), Fixed: CausesOf(*fixed)}}
	byMig := func(f *IncidentFigures) map[string]string {
		m := map[string]string{}
		for _, v := range f.Failures {
			m[v.Migration] = v.Cause
		}
		return m
	}
	pf, ff := byMig(prefix), byMig(fixed)
	migs := map[string]bool{}
	for m := range pf {
		migs[m] = true
	}
	for m := range ff {
		migs[m] = true
	}
	for _, m := range slices.Sorted(maps.Keys(migs)) {
		p, inP := pf[m]
		x, inF := ff[m]
		switch {
		case inP && inF && p == x:
			continue
		case inP && inF:
			d.Differences = append(d.Differences, Difference{m, "both", p, x})
		case inP:
			d.Differences = append(d.Differences, Difference{m, "prefix", p, ""})
		default:
			d.Differences = append(d.Differences, Difference{m, "fixed", "", x})
		}
	}
	for _, m := range slices.Sorted(maps.Keys(prefix.Plans)) {
		if prefix.Plans[m] != fixed.Plans[m] {
			d.PlansDivergeAt = m
			break
		}
	}
	return d
}
