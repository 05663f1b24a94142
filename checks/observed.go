package checks

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// What the samples can see (issue 10; docs/concepts.md "What the samples
// can see").
//
// Resolution. A host sampled every Δ seconds shows a pause window from its
// first paused sample to the first sample after it. The true window began
// in the Δ before its first paused sample and ended in the Δ before that
// first unpaused sample, so a measured length L' means a true length in
// (L' − Δ, L' + Δ), and a window shorter than Δ can fall between two
// samples unseen. A verdict against the bound B is therefore sound only
// when Δ is small against B: the pause checks (pause-bound, freezes)
// require Δ ≤ ResolutionFraction × B, i.e. an error of at most 10 % of the
// bound. With a coarser Δ they are inconclusive, naming Δ and B — except
// that a window measured longer than B + Δ is over the bound whatever the
// sampling, and still fails pause-bound.
//
// Holes. A host observed (a sample, or a heartbeat: "sampled, unchanged")
// at times t1 < t2 with t2 − t1 > record.HoleFactor × Δ (the settle
// interval in the settle period) was not seen in between: a pause, a split
// brain, a cutover could have come and gone. So could the stretch before a
// host's first observation (from the record's first observation of any
// host), after its last (up to the record's last sample), and the whole
// run of a host never observed. Every check over
// that host and a time range overlapping a hole is inconclusive, naming
// the host and the range; a failure seen elsewhere still fails.

// ResolutionFraction is the largest sample interval, as a fraction of the
// pause bound, at which pause windows are judged.
const ResolutionFraction = 0.1

// resolution returns why the sample interval is too coarse for the pause
// bound ("" when it is fine).
func (r *runIndex) resolution() string {
	p := r.plan.Params
	if p.SampleIntervalS <= 0 || p.PauseCritS <= 0 || p.SampleIntervalS <= ResolutionFraction*p.PauseCritS+1e-12 {
		return ""
	}
	return fmt.Sprintf("sample interval %s is coarser than %g × the pause bound %s = %s: a pause window measured from samples %s apart can be off by up to %s at each end, or missed, so the bound cannot be judged (sample every %s or less)",
		fmtS(p.SampleIntervalS), ResolutionFraction, fmtS(p.PauseCritS), fmtS(ResolutionFraction*p.PauseCritS),
		fmtS(p.SampleIntervalS), fmtS(p.SampleIntervalS), fmtS(ResolutionFraction*p.PauseCritS))
}

// settleStart is when the settle period begins (the last migration's end).
func (r *runIndex) settleStart() float64 {
	return r.coverage.SettleEndS - r.plan.Params.SettleS
}

// intervalAt is the sampling interval in force at t.
func (r *runIndex) intervalAt(t float64) float64 {
	if t > r.settleStart()+1e-9 {
		return math.Max(r.settleSampleInterval(), r.plan.Params.SampleIntervalS)
	}
	return r.plan.Params.SampleIntervalS
}

// holeOver returns a hole of host that overlaps [lo, hi] (for lo == hi,
// one that contains that instant): the host's state there was not seen.
func (r *runIndex) holeOver(host string, lo, hi float64) (record.SampleHole, bool) {
	for _, h := range r.holes {
		if h.Host == host && h.From < hi && h.To > lo {
			return h, true
		}
	}
	return record.SampleHole{}, false
}

// unseenAt says why host's state at instant t is not known from its
// observation at obs ("" when it is): a hole lies between them. The
// checks that read a host's state at an instant judge it only then
// (issue 24).
func (r *runIndex) unseenAt(what, host string, t, obs float64) string {
	h, ok := r.holeOver(host, math.Min(t, obs), math.Max(t, obs))
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s on %s: the state at %s is not known: its observations nearest are at %s and %s, more than %g × the %s sample interval apart",
		what, host, fmtS(t), fmtS(h.From), fmtS(h.To), record.HoleFactor, fmtS(h.IntervalS))
}

// seenLongest is the longest stretch of pause window w that no hole of
// host overlaps: how long the host was seen paused without a gap.
func (r *runIndex) seenLongest(host string, w [2]float64) float64 {
	var hs []record.SampleHole
	for _, h := range r.holes {
		if h.Host == host && h.From < w[1] && h.To > w[0] {
			hs = append(hs, h)
		}
	}
	slices.SortFunc(hs, func(a, b record.SampleHole) int { return cmp.Compare(a.From, b.From) })
	longest, from := 0.0, w[0]
	for _, h := range hs {
		longest = math.Max(longest, math.Min(h.From, w[1])-from)
		from = math.Max(from, h.To)
	}
	if from < w[1] {
		longest = math.Max(longest, w[1]-from)
	}
	return record.RoundT(longest)
}

// markUnseen sets LongestSeenPauseS on every (migration, host) pair with a
// pause window that a hole of the host overlaps: a window measured across a
// hole is not known to have been one pause, nor that long.
func (r *runIndex) markUnseen(migs []record.MigrationSummary) {
	for i := range migs {
		for h, hp := range migs[i].Hosts {
			crossed, seen := false, 0.0
			for _, w := range hp.Windows {
				s := r.seenLongest(h, w)
				crossed = crossed || s < record.RoundT(w[1]-w[0])
				seen = math.Max(seen, s)
			}
			if crossed {
				hp.LongestSeenPauseS = &seen
				migs[i].Hosts[h] = hp
			}
		}
	}
}

// JudgedPauseS is the pause of a (migration, host) pair that pause-bound
// judges: LongestSeenPauseS when a window spans a hole, else LongestPauseS.
func JudgedPauseS(hp record.HostPauses) float64 {
	if hp.LongestSeenPauseS != nil {
		return *hp.LongestSeenPauseS
	}
	return hp.LongestPauseS
}

// notJudgedStale makes the checks that read each host's state at the start
// or the end of the run inconclusive where that host was not observed
// then (issue 24): paths-per-subsystem needs each host's last sample at the
// end of the settle period (as the leak checks do: at most one settle
// sample interval before it), dirty-start each host's first sample within
// record.HoleFactor sample intervals of the record's first observation.
// What the other hosts showed is kept in the detail. results is changed in
// place; lines are the ones SeedChecks read.
func (r *runIndex) notJudgedStale(results []record.CheckResult, lines []record.Line) {
	first, last := firstLastSamples(lines)
	without := func(stale map[string]bool) []record.Line {
		return slices.DeleteFunc(slices.Clone(lines), func(l record.Line) bool { return l.Kind == record.KindSample && stale[l.Host] })
	}
	for i, c := range results {
		stale := map[string]bool{}
		var why []string
		var again func([]record.Line) record.CheckResult
		switch c.Name {
		case CheckPathsPerSubsystem:
			if r.coverage.Short || c.Verdict == record.Inconclusive {
				continue
			}
			for _, h := range slices.Sorted(maps.Keys(last)) {
				if t := last[h].T; t < r.requiredEnd {
					stale[h] = true
					why = append(why, fmt.Sprintf("the last sample of %s is at %s, before the end of the settle period at %s", h, fmtS(t), fmtS(r.coverage.SettleEndS)))
				}
			}
			again = func(ls []record.Line) record.CheckResult { return PathsPerSubsystem(r.plan, ls) }
		case CheckDirtyStart:
			iv := r.plan.Params.SampleIntervalS
			for _, h := range slices.Sorted(maps.Keys(first)) {
				if t := first[h].T; iv > 0 && t-r.obsStart > record.HoleFactor*iv+1e-9 {
					stale[h] = true
					why = append(why, fmt.Sprintf("%s first observed at %s, %s after the record's first observation at %s (over %g × the %s sample interval): its state at the start is not known",
						h, fmtS(t), fmtS(record.RoundT(t-r.obsStart)), fmtS(r.obsStart), record.HoleFactor, fmtS(iv)))
				}
			}
			again = func(ls []record.Line) record.CheckResult { return DirtyStart(r.plan, ls) }
		default:
			continue
		}
		if len(why) == 0 {
			continue
		}
		d := "not judged: " + strings.Join(why, "; ")
		if len(stale) < len(last) {
			o := again(without(stale))
			d += fmt.Sprintf("; the other hosts: %s (%s)", o.Verdict, o.Detail)
		}
		results[i] = record.CheckResult{Name: c.Name, Verdict: record.Inconclusive, Detail: d}
	}
}

func fmtHole(h record.SampleHole) string {
	if h.NoSample {
		return fmt.Sprintf("host %s has no sample (%s to %s unobserved)", h.Host, fmtS(h.From), fmtS(h.To))
	}
	return fmt.Sprintf("host %s unobserved from %s to %s (%s > %g × its %s interval)", h.Host, fmtS(h.From), fmtS(h.To),
		fmtS(record.RoundT(h.To-h.From)), record.HoleFactor, fmtS(h.IntervalS))
}

// blind makes every check over a host and time range that overlaps a hole
// inconclusive, naming the hole and what it hides; a check that failed on
// what was seen keeps its failure. Checks and their ranges: pause-bound,
// freezes, split-brain and served-after-cutover over each migration's
// consumer hosts from its first phase line to its terminal phase plus the
// attribution margin; unattributed-pauses over every consumer host and the
// whole run. (leaked-controllers and path-completeness judge each host's
// last sample and say so themselves when it is missing or early.)
func (r *runIndex) blind(results []record.CheckResult, holes []record.SampleHole) {
	if len(holes) == 0 {
		return
	}
	byHost := map[string][]record.SampleHole{}
	for _, h := range holes {
		byHost[h.Host] = append(byHost[h.Host], h)
	}
	margin := r.plan.Params.AttributionMarginS
	var migHidden []string
	for _, m := range r.migrations {
		to := math.Min(m.spanEnd(margin), r.settleEnd)
		for _, host := range r.consumers(m.nqn) {
			for _, h := range byHost[host] {
				if h.From < to && h.To > m.start {
					migHidden = append(migHidden, fmt.Sprintf("%s on %s [%s, %s]: %s", m.id, host, record.FormatT(m.start), record.FormatT(to)+" s", fmtHole(h)))
				}
			}
		}
	}
	consumer := map[string]bool{}
	for _, nqn := range r.nqns() {
		for _, h := range r.consumers(nqn) {
			consumer[h] = true
		}
	}
	var anyHidden []string
	for _, host := range slices.Sorted(maps.Keys(byHost)) {
		if consumer[host] {
			for _, h := range byHost[host] {
				anyHidden = append(anyHidden, fmtHole(h))
			}
		}
	}
	for i, c := range results {
		var hidden []string
		switch c.Name {
		case CheckPauseBound, CheckFreezes, CheckSplitBrain, CheckServedAfterCutover:
			hidden = migHidden
		case CheckUnattributedPauses:
			hidden = anyHidden
		}
		if len(hidden) == 0 || c.Verdict == record.Fail {
			continue
		}
		const most = 5
		d := "not judged where the samples have holes: " + strings.Join(hidden[:min(len(hidden), most)], "; ")
		if len(hidden) > most {
			d += fmt.Sprintf("; and %d more (summary.json sample_holes)", len(hidden)-most)
		}
		if c.Verdict == record.Inconclusive {
			d += "; also: " + c.Detail
		}
		results[i] = record.CheckResult{Name: c.Name, Verdict: record.Inconclusive, Detail: d}
	}
}
