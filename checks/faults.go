package checks

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// FaultsLanded is the check "faults-landed": every fault line with action
// "inject" carries evidence that the fault landed — itself, or, for a fault
// whose effect comes later (dropped CONNECTs), the first "landed" line of
// the same fault and target after it, before its next injection — and every fault of the
// plan's schedule (plan.Faults, matched by fault and target) has an inject
// line. A fault without evidence cannot support a pass — the run proved
// nothing about it — so the check is inconclusive then, never pass; it
// never fails.
func FaultsLanded(plan record.Plan, timeline []record.Line) record.CheckResult {
	return newIndex(plan, timeline).faultsLanded()
}

func (r *runIndex) faultsLanded() record.CheckResult {
	var problems []string
	injected := map[string]int{}
	n := 0
	for i, l := range r.faults {
		if l.Action != "inject" {
			continue
		}
		n++
		injected[l.Fault+"\x00"+l.Target]++
		if len(l.Evidence) == 0 && !landedLater(l, r.faults[i+1:]) {
			problems = append(problems, fmt.Sprintf("%s on %s injected at %s left no evidence", l.Fault, l.Target, fmtS(l.T)))
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
	if len(problems) > 0 {
		return record.CheckResult{Name: CheckFaultsLanded, Verdict: record.Inconclusive, Detail: strings.Join(problems, "; ")}
	}
	if n == 0 {
		return record.CheckResult{Name: CheckFaultsLanded, Verdict: record.Pass, Detail: "no fault injected"}
	}
	return record.CheckResult{Name: CheckFaultsLanded, Verdict: record.Pass,
		Detail: fmt.Sprintf("all %d injected fault(s) left evidence", n)}
}

// landedLater reports whether a "landed" line with evidence of inj's fault
// and target follows it, before that fault's next inject line.
func landedLater(inj record.Line, rest []record.Line) bool {
	for _, l := range rest {
		if l.Fault != inj.Fault || l.Target != inj.Target {
			continue
		}
		switch l.Action {
		case "inject":
			return false
		case "landed":
			if len(l.Evidence) > 0 {
				return true
			}
		}
	}
	return false
}
