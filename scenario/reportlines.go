package scenario

import (
	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// ReportStatesMax bounds the per-tick host states (expanded sample lines,
// 464 bytes each plus what they share) kept in memory for the report's
// swimlanes and churn counts: ~100 MB. The default run keeps ~17,000; a run
// past the bound (100 hosts × 1,000 migrations holds ~43 million) is
// judged in full by the streaming checks, but its report draws no swimlane
// or pause anatomy (report.md and report.html say so) and summary.json has
// no churn (reports.Input.Timeline nil) — until the
// reports read the timeline per migration, streaming.
const ReportStatesMax = 200_000

// ReportLines keeps the lines reports.WriteRun reads (those
// checks.JudgesLine accepts, samples as per-tick states) while they stay
// under ReportStatesMax samples, and drops them all past it.
type ReportLines struct {
	keep    func(record.Line) bool
	lines   []record.Line
	samples int
	// Dropped is set once the bound was passed.
	Dropped bool
}

// NewReportLines keeps the lines of a run of plan.
func NewReportLines(plan record.Plan) *ReportLines {
	return &ReportLines{keep: checks.JudgesLine(plan)}
}

// Add keeps l if the bound allows.
func (k *ReportLines) Add(l record.Line) {
	if k.Dropped || !k.keep(l) {
		return
	}
	if l.Kind == record.KindSample {
		k.samples++
		if k.samples > ReportStatesMax {
			k.Dropped, k.lines = true, nil
			return
		}
	}
	k.lines = append(k.lines, l)
}

// Lines are the kept lines, nil when the bound was passed.
func (k *ReportLines) Lines() []record.Line { return k.lines }
