package checks

import (
	"slices"
	"sort"

	"github.com/fiomig/fiomig/record"
)

// Evaluate computes every check from the plan and the timeline's per-tick
// states (record.Expand of either format version; lines are sorted by time,
// stably, first) and returns the summary: a fold of the lines over a Judge,
// for callers that hold a whole record (tests, exports). It is
// Judge.Summary: seed, overall verdict, the check results in the order of
// the Check* constants, one MigrationSummary per migration (in order of its
// first phase line), the unattributed pause windows, the leaked
// controllers, the missing endpoints and the record's coverage of the
// settle period (Coverage.TruncatedLine is the reader's to set). Stats are
// left zero: package reports computes them. Slices are never nil, so
// summary.json shows [].
func Evaluate(plan record.Plan, timeline []record.Line) record.Summary {
	lines := slices.Clone(timeline)
	sort.SliceStable(lines, func(a, b int) bool { return lines[a].T < lines[b].T })
	j := NewJudge(plan)
	for _, l := range lines {
		j.Add(l) // in time order: Add cannot fail
	}
	s, _ := j.Summary(plan) // Summary fails only after a failed Add
	return s
}

// Overall combines check verdicts: fail if any check failed, else
// inconclusive if any is inconclusive, else pass (a warn is a pass). An
// unknown verdict string counts as inconclusive.
func Overall(results []record.CheckResult) string {
	v := record.Pass
	for _, c := range results {
		switch c.Verdict {
		case record.Fail:
			return record.Fail
		case record.Pass, record.Warn:
		default:
			v = record.Inconclusive
		}
	}
	return v
}

// Interrupted marks sum as the summary of a run stopped by a signal
// (SIGINT, SIGTERM) and sets its verdict: fail when a check failed on what
// was recorded — a violation seen is a failure, whatever was not seen
// afterwards (issue 27) — and otherwise inconclusive, never pass: the run
// did not reach its end.
func Interrupted(sum record.Summary) record.Summary {
	sum.Interrupted = true
	sum.Verdict = record.Inconclusive
	if Overall(sum.Checks) == record.Fail {
		sum.Verdict = record.Fail
	}
	return sum
}

// Judges reports whether the Judge reads timeline lines of kind: samples,
// phases, endpoints, faults, heartbeats, stalls and kernel lines (of
// those, only keep-alive timeouts: stalls.go). The other kinds (io,
// target) are for people and for the fio comparison, which reads them
// from disk.
func Judges(kind string) bool {
	switch kind {
	case record.KindSample, record.KindPhase, record.KindEndpoints, record.KindFault, record.KindHeartbeat,
		record.KindStall, record.KindKernel:
		return true
	}
	return false
}
