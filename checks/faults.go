package checks

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// FaultsLanded is the check "faults-landed": every fault line with action
// "inject" carries evidence that the fault landed — itself, or, for a fault
// whose effect comes later (dropped CONNECTs), a "landed" line of the same
// fault and target after it and before its recover line (inject, landed and
// recover lines of one fault and target pair up in order, as overlapping
// faults write them) — and every fault of the
// plan's schedule (plan.Faults, matched by fault and target) has an inject
// line. A fault without evidence cannot support a pass — the run proved
// nothing about it — so the check is inconclusive then, never pass; it
// never fails. Every fault kind the run asked for (requestedKinds) must have
// landed at least once, else the check is inconclusive naming the kind.
//
// FaultsLanded is that check alone out of Evaluate of plan and timeline.
func FaultsLanded(plan record.Plan, timeline []record.Line) record.CheckResult {
	for _, c := range Evaluate(plan, timeline).Checks {
		if c.Name == CheckFaultsLanded {
			return c
		}
	}
	return record.CheckResult{Name: CheckFaultsLanded, Verdict: record.Inconclusive, Detail: "not made"}
}

func (r *runIndex) faultsLanded() record.CheckResult {
	var problems []string
	outcomes, _ := r.faultOutcomes()
	injected := map[string]int{}
	n := 0
	for _, o := range outcomes {
		n++
		injected[o.Kind+"\x00"+o.Target]++
		switch o.Status {
		case record.FaultNotInjected:
			problems = append(problems, fmt.Sprintf("%s on %s was never injected (%s)", o.Kind, o.Target, o.Reason))
		case record.FaultNoEvidence:
			problems = append(problems, fmt.Sprintf("%s on %s injected at %s left no evidence", o.Kind, o.Target, fmtS(o.InjectedS)))
		}
	}
	planned := map[string]int{}
	for _, f := range r.plan.Faults {
		planned[f.Fault+"\x00"+f.Target]++
	}
	for _, k := range slices.Sorted(maps.Keys(planned)) {
		if injected[k] < planned[k] {
			f, t, _ := strings.Cut(k, "\x00")
			problems = append(problems, fmt.Sprintf("%s on %s planned %d time(s), injected %d", f, t, planned[k], injected[k]))
		}
	}
	for _, k := range r.requestedKinds() {
		landed := false
		for _, o := range outcomes {
			landed = landed || (o.Kind == k && o.Status == record.FaultLanded)
		}
		if !landed {
			problems = append(problems, "requested fault kind "+k+" never landed")
		}
	}
	if len(problems) > 0 {
		return record.CheckResult{Name: CheckFaultsLanded, Verdict: record.Inconclusive, Detail: strings.Join(problems, "; ")}
	}
	if n == 0 {
		return record.CheckResult{Name: CheckFaultsLanded, Verdict: record.Pass, Detail: "no fault injected"}
	}
	return record.CheckResult{Name: CheckFaultsLanded, Verdict: record.Pass,
		Detail: fmt.Sprintf("all %d injected fault(s) left evidence", n)}
}

// faultOutcomes pairs each inject line with its landed and recover lines
// (the first unclaimed ones of the same fault and target after it) and
// counts the faults per kind and stage at injection. A fault line whose
// reason says it was never injected is "not-injected".
func (r *runIndex) faultOutcomes() ([]record.FaultOutcome, record.FaultMatrix) {
	if r.outcomes == nil {
		r.outcomes, r.matrix = r.countFaults()
	}
	return r.outcomes, r.matrix
}

// countFaults is faultOutcomes uncached.
func (r *runIndex) countFaults() ([]record.FaultOutcome, record.FaultMatrix) {
	out := []record.FaultOutcome{}
	claimed := make([]bool, len(r.faults))
	// claim takes the first unclaimed line of action for l's fault and
	// target after index from, at or before until.
	claim := func(from int, l record.Line, action string, until float64) (record.Line, bool) {
		for j := from + 1; j < len(r.faults); j++ {
			x := r.faults[j]
			if claimed[j] || x.Fault != l.Fault || x.Target != l.Target || x.Action != action || x.T > until {
				continue
			}
			claimed[j] = true
			return x, true
		}
		return record.Line{}, false
	}
	for i, l := range r.faults {
		if l.Action != "inject" {
			continue
		}
		o := record.FaultOutcome{Kind: l.Fault, Target: l.Target, Migration: l.Migration, Phase: l.Phase,
			InjectedS: l.T, Evidence: l.Evidence, Reason: l.Reason}
		if strings.HasPrefix(l.Reason, "not injected") {
			o.Status = record.FaultNotInjected
			out = append(out, o)
			continue
		}
		// Its recover line first (the first unclaimed one after it); a
		// landed line counts only up to that recover, so a later fault of
		// the same kind and target keeps its own.
		until := math.Inf(1)
		if rc, ok := claim(i, l, "recover", until); ok {
			t := rc.T
			o.RecoveredS, until = &t, t
			if o.Reason == "" {
				o.Reason = rc.Reason
			}
		}
		if len(l.Evidence) > 0 {
			o.Status = record.FaultLanded
			t := l.T
			o.LandedS = &t
		} else if ld, ok := claim(i, l, "landed", until); ok && len(ld.Evidence) > 0 {
			o.Status = record.FaultLanded
			t := ld.T
			o.LandedS, o.Evidence = &t, ld.Evidence
		} else {
			o.Status = record.FaultNoEvidence
		}
		out = append(out, o)
	}
	// The matrix: kinds in order of first appearance (the plan's schedule
	// first), stages in record.Stages order, then idle and other.
	var kinds []string
	for _, f := range r.plan.Faults {
		if !slices.Contains(kinds, f.Fault) {
			kinds = append(kinds, f.Fault)
		}
	}
	for _, o := range out {
		if !slices.Contains(kinds, o.Kind) {
			kinds = append(kinds, o.Kind)
		}
	}
	stages := slices.Clone(record.Stages)
	col := func(p string) string {
		switch {
		case slices.Contains(record.Stages, p), p == record.StageIdle:
			return p
		}
		return "other"
	}
	for _, extra := range []string{record.StageIdle, "other"} {
		for _, o := range out {
			if o.Status != record.FaultNotInjected && col(o.Phase) == extra {
				stages = append(stages, extra)
				break
			}
		}
	}
	m := record.FaultMatrix{Stages: stages, Kinds: []record.FaultMatrixRow{}}
	for _, k := range kinds {
		row := record.FaultMatrixRow{Kind: k, Cells: make([]record.FaultCell, len(stages))}
		for _, o := range out {
			if o.Kind != k || o.Status == record.FaultNotInjected {
				continue
			}
			c := slices.Index(stages, col(o.Phase))
			row.Cells[c].Injected++
			if o.Status == record.FaultLanded {
				row.Cells[c].Landed++
			}
		}
		m.Kinds = append(m.Kinds, row)
	}
	return out, m
}

// requestedKinds are the fault kinds the run asked for: every kind of its
// schedule, and those named by fiomig run --faults KIND,... (plan params
// extra "faults").
func (r *runIndex) requestedKinds() []string {
	var kinds []string
	for _, f := range r.plan.Faults {
		if !slices.Contains(kinds, f.Fault) {
			kinds = append(kinds, f.Fault)
		}
	}
	if v := r.plan.Params.Faults; v != "" && v != record.FaultsDefault && v != record.FaultsNone && !strings.HasPrefix(v, record.FaultsFilePrefix) {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" && !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	return kinds
}
