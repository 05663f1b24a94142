package checks

import "github.com/fiomig/fiomig/record"

// Evaluate computes every check from the plan and the timeline alone and
// returns the summary: seed, overall verdict, the check results in the order
// of the Check* constants, one MigrationSummary per migration (in order of
// its first phase line), the unattributed pause windows, the leaked
// controllers, the missing endpoints and the record's coverage of the
// settle period (Coverage.TruncatedLine is the reader's to set). Stats are left zero: package
// reports computes them. Slices are never nil, so summary.json shows [].
//
// Evaluate reads only the lines JudgesLine accepts; a caller may hand it
// just those. It indexes the whole record in memory: it is the reference
// the streaming Judge (what fiomig run and fiomig report use) is tested
// against, and the convenient call for small records in tests.
func Evaluate(plan record.Plan, timeline []record.Line) record.Summary {
	r := newIndex(plan, timeline)
	pr := r.pauses()
	leaks, leakRes := r.leakedControllers()
	missing, complRes := r.pathCompleteness()
	results := []record.CheckResult{
		pauseBound(plan, r, pr),
		freezes(plan, r, pr),
		leakRes,
		complRes,
		r.splitBrain(),
		r.servedAfterCutover(),
		unattributedPauses(r, pr),
		r.faultsLanded(),
	}
	seed := SeedChecks(plan, timeline)
	notJudgedShort(seed, plan, timeline, r.coverage)
	results = append(results, seed...)
	holes := r.sampleHoles()
	r.blind(results, holes)
	outcomes, matrix := r.faultOutcomes()
	cov := r.coverage
	migs := pr.migrations
	if migs == nil {
		migs = []record.MigrationSummary{}
	}
	return record.Summary{
		Seed:              plan.Seed,
		Verdict:           Overall(results),
		Checks:            results,
		Migrations:        migs,
		Unattributed:      pr.unattributed,
		LeakedControllers: leaks,
		MissingEndpoints:  missing,
		Coverage:          &cov,
		SampleHoles:       holes,
		Faults:            outcomes,
		FaultMatrix:       matrix,
	}
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

// Judges reports whether Evaluate reads timeline lines of kind: samples,
// phases, endpoints, faults and heartbeats. The other kinds (io, kernel, target) are
// for people and for the fio comparison, which reads them from disk.
func Judges(kind string) bool {
	switch kind {
	case record.KindSample, record.KindPhase, record.KindEndpoints, record.KindFault, record.KindHeartbeat:
		return true
	}
	return false
}
