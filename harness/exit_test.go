package harness

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// TestReproduceExitCodes: a real failure outranks an inconclusive run of
// the other operator; inconclusive alone gives 3; all shapes shown, 0. One
// seed's two runs are described, never judged: whatever they differ in,
// the exit code is the bands'.
func TestReproduceExitCodes(t *testing.T) {
	failing := func(r analysis.Run, cause string) analysis.Run {
		r.Figures.Failures = []analysis.ValidationFailure{{Migration: "mig-0002", Cause: cause}}
		r.Figures.ValidationFailed = 1
		return r
	}
	run := func(op string, ok bool, faults string) analysis.Run {
		r := analysis.Run{Shape: analysis.Shape{OK: ok}}
		r.Figures.Operator = op
		r.Figures.FaultsCheck = record.CheckResult{Name: "faults-landed", Verdict: faults, Detail: "x"}
		if !ok {
			r.Shape.Missing = []string{"something"}
		}
		return r
	}
	for _, tc := range []struct {
		name string
		rs   []analysis.Run
		want int
	}{
		{"both shapes", []analysis.Run{run("prefix", true, record.Pass), run("fixed", true, record.Pass)}, ExitPass},
		{"prefix NO, fixed inconclusive", []analysis.Run{run("prefix", false, record.Pass), run("fixed", false, record.Inconclusive)}, ExitFail},
		{"prefix inconclusive NO, fixed yes", []analysis.Run{run("prefix", false, record.Inconclusive), run("fixed", true, record.Pass)}, ExitInconclusive},
		{"shape yes on a fault without evidence", []analysis.Run{run("prefix", true, record.Pass), run("fixed", true, record.Inconclusive)}, ExitInconclusive},
		// One seed's differences are described only.
		{"fixed fails a migration on a fault prefix's run did not meet", []analysis.Run{run("prefix", true, record.Pass),
			failing(run("fixed", true, record.Pass), "injected fault (target-restart)")}, ExitPass},
		{"fixed fails a migration unexplained, bands hold", []analysis.Run{run("prefix", true, record.Pass),
			failing(run("fixed", true, record.Pass), "unexplained (refused)")}, ExitPass},
		{"fixed fails a migration unexplained, a band fails", []analysis.Run{run("prefix", true, record.Pass),
			failing(run("fixed", false, record.Pass), "unexplained (refused)")}, ExitFail},
	} {
		var b bytes.Buffer
		reports.ReproduceText(&b, "x", "the model", tc.rs, []string{"a", "b"})
		if got := BandsExitCode(tc.rs); got != tc.want {
			t.Errorf("%s: exit %d, want %d\n%s", tc.name, got, tc.want, b.String())
		}
		if !strings.Contains(b.String(), "described, not judged") {
			t.Errorf("%s: both operators ran but the output does not say the pair is described, not judged:\n%s", tc.name, b.String())
		}
	}
}

// TestCompareExitCode: the comparison over seeds maps to the exit code —
// not judged or holding 0, inconclusive or not exercised 3, failed (or
// not exercised with intervals that alone fail) 1, the worst wins.
func TestCompareExitCode(t *testing.T) {
	b := func(judged, ok bool, got string) analysis.BandResult {
		return analysis.BandResult{Judged: judged, OK: ok, Got: got}
	}
	for _, tc := range []struct {
		name  string
		bands []analysis.BandResult
		want  int
	}{
		{"none", nil, ExitPass},
		{"not judged", []analysis.BandResult{b(false, false, "not judged")}, ExitPass},
		{"pass", []analysis.BandResult{b(true, true, record.Pass)}, ExitPass},
		{"inconclusive", []analysis.BandResult{b(true, false, record.Inconclusive)}, ExitInconclusive},
		{"fail", []analysis.BandResult{b(true, false, record.Fail)}, ExitFail},
		{"fail outranks inconclusive", []analysis.BandResult{b(true, false, record.Inconclusive), b(true, false, record.Fail)}, ExitFail},
		{"not exercised", []analysis.BandResult{b(true, false, analysis.NotExercised)}, ExitInconclusive},
		{"not exercised, the intervals alone failing (a measured finding)",
			[]analysis.BandResult{{Judged: true, Got: analysis.NotExercised, Refuted: true}}, ExitFail},
	} {
		if got := CompareExitCode(tc.bands); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
