package checks

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// What the samples can see (issue 10; README "What the samples can see").
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
