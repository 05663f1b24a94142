package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// syntheticSet is a sweep of seeds 1..n of m migrations each on one host,
// pauses 1.5-2.5 s plus shift, every check pass unless failSeed names a
// seed whose pause-bound fails (pauses spread over 1,000 levels); leaks per run and churn as given (nil
// churn: not recorded).
func syntheticSet(n, m int, shift float64, failSeed int64, leaks int, churn *record.Churn) RunSet {
	s := RunSet{Dir: "sweep", Sweep: n > 1}
	for seed := int64(1); seed <= int64(n); seed++ {
		sum := record.Summary{Seed: seed, Verdict: record.Pass, Churn: churn,
			Checks: []record.CheckResult{{Name: "pause-bound", Verdict: record.Pass}, {Name: "freezes", Verdict: record.Pass}}}
		if seed == failSeed {
			sum.Verdict, sum.Checks[0].Verdict = record.Fail, record.Fail
		}
		for i := 0; i < m; i++ {
			p := 1.5 + float64((int(seed)*7919+i*104729)%1000)/1000 + shift
			sum.Migrations = append(sum.Migrations, record.MigrationSummary{ID: fmt.Sprint(i), Outcome: record.PhaseCompleted,
				Hosts: map[string]record.HostPauses{"h": {LongestPauseS: p}}})
		}
		for i := 0; i < leaks; i++ {
			sum.LeakedControllers = append(sum.LeakedControllers, record.Leak{Host: "h"})
		}
		s.Runs = append(s.Runs, StoredRun{Dir: fmt.Sprint("seed-", seed), Summary: sum, Plan: record.Plan{Command: fmt.Sprint("fiomig run --seed ", seed)}})
	}
	return s
}

// TestCompareIdenticalIsNoChange: equal sets give no change, no regression
// and point differences of 0 whose intervals contain 0.
func TestCompareIdenticalIsNoChange(t *testing.T) {
	a := syntheticSet(5, 20, 0, 0, 0, &record.Churn{Created: 3})
	c := Compare(a, a, DefaultCompareOptions)
	if c.Changed || len(c.Regressions) > 0 {
		t.Fatalf("identical sets: changed %v, regressions %v", c.Changed, c.Regressions)
	}
	for _, q := range c.Quantiles {
		if q.Diff != 0 || q.DiffLow > 0 || q.DiffHigh < 0 {
			t.Errorf("%s: diff %v, interval [%v, %v], want 0 within it", q.Name, q.Diff, q.DiffLow, q.DiffHigh)
		}
	}
	if md := string(CompareMarkdown(c, "rerun")); !strings.HasPrefix(md, "# fiomig compare — no change") {
		t.Errorf("markdown:\n%s", md)
	}
}

// TestCompareCheckSharesNotCounts: a check is changed when a verdict's
// share of the runs differs, not its count — 10 passing runs against one
// passing run (compare --history's last 10 against tonight) is unchanged;
// against one failing run it is changed and regressed.
func TestCompareCheckSharesNotCounts(t *testing.T) {
	base := syntheticSet(10, 5, 0, 0, 0, nil)
	for _, c := range []struct {
		failSeed         int64
		changed, regress bool
	}{{0, false, false}, {1, true, true}} {
		cmp := Compare(base, syntheticSet(1, 5, 0, c.failSeed, 0, nil), DefaultCompareOptions)
		for _, ch := range cmp.Checks {
			want := c.changed && ch.Name == "pause-bound"
			if ch.Changed != want || ch.Regressed != (c.regress && ch.Name == "pause-bound") {
				t.Errorf("new run failing seed %d: %s changed %v regressed %v (base %v, new %v), want changed %v", c.failSeed, ch.Name, ch.Changed, ch.Regressed, ch.Base, ch.New, want)
			}
		}
	}
}

// TestCompareDeterministicBootstrap: the same inputs and seed give the same
// intervals; another seed gives other intervals (the resampling is real).
func TestCompareDeterministicBootstrap(t *testing.T) {
	a, b := syntheticSet(5, 20, 0, 0, 0, nil), syntheticSet(5, 20, 0.3, 0, 0, nil)
	x, y := Compare(a, b, DefaultCompareOptions), Compare(a, b, DefaultCompareOptions)
	if d := cmp.Diff(x.Quantiles, y.Quantiles); d != "" {
		t.Errorf("two comparisons of the same inputs differ:\n%s", d)
	}
	opts := DefaultCompareOptions
	opts.Seed = 2
	if z := Compare(a, b, opts); cmp.Equal(x.Quantiles, z.Quantiles) {
		t.Error("another bootstrap seed gave the same intervals")
	}
	// A uniform +0.3 s shift: p50 difference 0.3 s inside its interval;
	// under the 0.5 s threshold, no pause regression.
	if q := x.Quantiles[0]; q.Diff != 0.3 || q.DiffLow > 0.3 || q.DiffHigh < 0.3 {
		t.Errorf("p50: diff %v [%v, %v], want 0.3 inside", q.Diff, q.DiffLow, q.DiffHigh)
	}
	if len(x.Regressions) > 0 {
		t.Errorf("a 0.3 s shift under a 0.5 s threshold regressed: %v", x.Regressions)
	}
	opts = DefaultCompareOptions
	opts.PauseThresholdS = 0.1
	if r := Compare(a, b, opts).Regressions; len(r) != 1 || !strings.HasPrefix(r[0], "pause p95") {
		t.Errorf("a 0.3 s shift over a 0.1 s threshold: regressions %v, want the p95 one", r)
	}
}

// TestCompareSweepRegressions: a seed that fails pause-bound, more leaks
// per run than the threshold, and churn growth past --churn-threshold are
// each a named regression; the changed seed is listed with its command;
// churn a side did not record is said so and never gated.
func TestCompareSweepRegressions(t *testing.T) {
	base := syntheticSet(3, 10, 0, 0, 0, &record.Churn{Created: 4})
	nw := syntheticSet(3, 10, 0, 2, 2, &record.Churn{Created: 9})
	opts := DefaultCompareOptions
	opts.LeakThreshold, opts.ChurnThreshold = 1, 2
	c := Compare(base, nw, opts)
	want := []string{
		"check pause-bound: fails in 1 of 3 runs, was 0 of 3 runs",
		"leaked controllers per run 0 → 2, more than 1 (--leak-threshold)",
		"controllers created per run 4 → 9, more than 2 (--churn-threshold)",
	}
	if d := cmp.Diff(want, c.Regressions); d != "" {
		t.Errorf("regressions (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"seed 2: pass → fail (fiomig run --seed 2)"}, c.SeedChanges); d != "" {
		t.Errorf("seed changes (-want +got):\n%s", d)
	}
	c = Compare(syntheticSet(3, 10, 0, 0, 0, nil), nw, opts)
	md := string(CompareMarkdown(c, "rerun"))
	if !strings.Contains(md, "| controllers created | not recorded | 9 | — | --churn-threshold |") {
		t.Errorf("churn not recorded on one side:\n%s", md)
	}
	for _, r := range c.Regressions {
		if strings.Contains(r, "churn") {
			t.Errorf("churn gated without a base figure: %s", r)
		}
	}
}

// TestCompareSingleRunsBoundsAndLostEvidence (issue 27 item 4): two single
// runs name their verdicts ("pass → fail"); a side re-judged by other
// bounds says so, on the regression and in the markdown; a check the new
// side could not judge (inconclusive or absent) where the base judged it
// makes the comparison inconclusive, never "no regression"; a regression
// still wins over that.
func TestCompareSingleRunsBoundsAndLostEvidence(t *testing.T) {
	base := syntheticSet(1, 5, 0, 0, 0, nil)
	base.Runs[0].Plan.Params.PauseCritS, base.Runs[0].Plan.Params.FreezesAllowed = 5, 1
	strict := syntheticSet(1, 5, 0, 1, 0, nil)
	strict.Runs[0].Plan.Params = base.Runs[0].Plan.Params
	strict.Runs[0].Summary.Rejudged = &record.Rejudged{PauseCritS: 1, FreezesAllowed: 1, RunPauseCritS: 5, RunFreezesAllowed: 1, Command: "fiomig report r --pause-crit 1 --freezes-allowed 1"}
	c := Compare(base, strict, DefaultCompareOptions)
	want := []string{"check pause-bound: pass → fail (the sides were judged by different bounds: see Bounds differ)"}
	if d := cmp.Diff(want, c.Regressions); d != "" {
		t.Errorf("regressions (-want +got):\n%s", d)
	}
	if c.Verdict() != record.Fail {
		t.Errorf("verdict %s, want fail", c.Verdict())
	}
	md := string(CompareMarkdown(c, "rerun"))
	if w := "- **Bounds differ**: base judged by --pause-crit 5 s --freezes-allowed 1, new by --pause-crit 1 s --freezes-allowed 1 (re-judged: fiomig report r --pause-crit 1 --freezes-allowed 1)"; !strings.Contains(md, w) {
		t.Errorf("markdown lacks %q:\n%s", w, md)
	}
	if c := Compare(base, base, DefaultCompareOptions); c.BoundsDiffer != "" {
		t.Errorf("a run against itself: bounds differ %q", c.BoundsDiffer)
	}

	lost := syntheticSet(1, 0, 0, 0, 0, nil)
	lost.Runs[0].Summary.Verdict = record.Inconclusive
	lost.Runs[0].Summary.Checks = []record.CheckResult{{Name: "pause-bound", Verdict: record.Inconclusive}} // freezes absent
	c = Compare(base, lost, DefaultCompareOptions)
	want = []string{"check pause-bound: inconclusive, was pass", "check freezes: not judged, was pass"}
	if d := cmp.Diff(want, c.Inconclusive); d != "" || len(c.Regressions) > 0 || c.Verdict() != record.Inconclusive {
		t.Errorf("good run vs lost record: inconclusive (-want +got):\n%s\nregressions %v, verdict %s", d, c.Regressions, c.Verdict())
	}
	if md := string(CompareMarkdown(c, "rerun")); !strings.HasPrefix(md, "# fiomig compare — INCONCLUSIVE") {
		t.Errorf("markdown:\n%s", md)
	}
	// Sweeps: fractions of runs; a regression wins over lost evidence.
	sweep := syntheticSet(4, 5, 0, 0, 0, nil)
	worse := syntheticSet(4, 5, 0, 2, 0, nil)
	worse.Runs[3].Summary.Checks[1].Verdict = record.Inconclusive
	c = Compare(sweep, worse, DefaultCompareOptions)
	if d := cmp.Diff([]string{"check freezes: not judged (inconclusive or absent) in 1 of 4 runs, was 0 of 4 runs"}, c.Inconclusive); d != "" || c.Verdict() != record.Fail {
		t.Errorf("sweep: inconclusive (-want +got):\n%s\nverdict %s, want fail", d, c.Verdict())
	}
}

// TestCompareNamesDifferentExperiments: two sides that ran different
// experiments — 23 migrations on the default schedule against 5 from a
// fault file, or another incident — are named in the comparison, not
// compared silently; the same settings are not.
func TestCompareNamesDifferentExperiments(t *testing.T) {
	with := func(migrations int, faults, incident string) RunSet {
		s := syntheticSet(1, 5, 0, 0, 0, nil)
		s.Runs[0].Plan.Params.Migrations, s.Runs[0].Plan.Params.Faults, s.Runs[0].Plan.Params.Incident = migrations, faults, incident
		return s
	}
	base := with(23, record.FaultsDefault, "")
	c := Compare(base, with(5, "file:f.yaml", ""), DefaultCompareOptions)
	want := "base ran 23 migrations, faults default; new ran 5 migrations, faults file:f.yaml"
	if c.RunsDiffer != want {
		t.Errorf("runs differ %q, want %q", c.RunsDiffer, want)
	}
	if md := string(CompareMarkdown(c, "rerun")); !strings.Contains(md, "- **Runs differ**: "+want+"; the verdicts compare different experiments\n") {
		t.Errorf("markdown does not say the runs differ:\n%s", md)
	}
	if c := Compare(base, with(23, record.FaultsDefault, "fio-mig-1787159565"), DefaultCompareOptions); !strings.Contains(c.RunsDiffer, "new ran 23 migrations of incident fio-mig-1787159565") {
		t.Errorf("another incident: runs differ %q", c.RunsDiffer)
	}
	if c := Compare(base, with(23, "", ""), DefaultCompareOptions); c.RunsDiffer != "" {
		t.Errorf("the same experiment (faults \"\" is default): runs differ %q", c.RunsDiffer)
	}
}

// TestCompareInterruptedSweep (newcomer pass): a sweep interrupted after
// 11 of its 40 seeds, failing the same seeds as the 20-seed base, was a
// REGRESSION ("fails in 1 of 11 runs, was 1 of 20") although no seed both
// ran changed. With an interrupted side the failing fraction is compared
// over the seeds both ran: the same failures there is inconclusive (the
// interrupted sweep named), one more failing shared seed is a regression;
// a sweep.json's "interrupted" and "seeds_listed" reach the RunSet.
func TestCompareInterruptedSweep(t *testing.T) {
	base := syntheticSet(20, 3, 0, 5, 0, nil)
	short := syntheticSet(11, 3, 0, 5, 0, nil)
	short.Interrupted, short.Listed = true, 40
	c := Compare(base, short, DefaultCompareOptions)
	if len(c.Regressions) != 0 || c.Verdict() != record.Inconclusive {
		t.Errorf("same failures on the shared seeds: regressions %q, verdict %s; want none, inconclusive", c.Regressions, c.Verdict())
	}
	md := string(CompareMarkdown(c, ""))
	for _, want := range []string{"# fiomig compare — INCONCLUSIVE", "- **Interrupted**: the new sweep was interrupted after 11 of its 40 seeds",
		"check pause-bound: fails in 1 of 11 runs, was 1 of 20 runs, but the new sweep was interrupted after 11 of its 40 seeds: on the 11 seed(s) both sides ran it fails in 1, was 1"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	worse := syntheticSet(11, 3, 0, 5, 0, nil)
	worse.Interrupted, worse.Listed = true, 40
	worse.Runs[2].Summary.Verdict, worse.Runs[2].Summary.Checks[0].Verdict = record.Fail, record.Fail // seed 3 fails too
	c = Compare(base, worse, DefaultCompareOptions)
	want := "check pause-bound: fails in 2 of 11 runs of the seeds both sides ran, was 1 of 11 runs (the new sweep was interrupted after 11 of its 40 seeds)"
	if c.Verdict() != record.Fail || len(c.Regressions) != 1 || c.Regressions[0] != want {
		t.Errorf("a shared seed newly failing: verdict %s, regressions %q; want fail, [%q]", c.Verdict(), c.Regressions, want)
	}
	// An uninterrupted sweep of other seeds is compared as before.
	if c := Compare(base, syntheticSet(11, 3, 0, 5, 0, nil), DefaultCompareOptions); c.Verdict() != record.Fail {
		t.Errorf("uninterrupted 11-seed sweep: verdict %s, want fail (the fraction rule)", c.Verdict())
	}

	dir := t.TempDir()
	writeSweepDir(t, dir, `{"seeds": [{"seed": 1, "dir": "seed-1"}], "seeds_listed": 40, "interrupted": true}`)
	set, err := LoadRunSet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !set.Interrupted || set.Listed != 40 {
		t.Errorf("LoadRunSet: Interrupted %v, Listed %d; want true, 40", set.Interrupted, set.Listed)
	}
}

// writeSweepDir writes sweepJSON as dir/sweep.json and a passing run of
// seed 1 (plan.json, summary.json) as dir/seed-1.
func writeSweepDir(t *testing.T, dir, sweepJSON string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, record.SweepFile), []byte(sweepJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "seed-1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	plan := record.Plan{Tool: "fiomig", Scenario: "migrations", Backend: "sim", Seed: 1,
		Params: record.Params{Migrations: 0, SampleIntervalS: 0.5, PauseCritS: 5, FreezesAllowed: 1, SettleS: 30, AttributionMarginS: 30, Seed: record.DefaultSeedThresholds()}}
	if err := record.WriteJSON(filepath.Join(run, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
	if err := record.WriteJSON(filepath.Join(run, record.SummaryFile), record.Summary{Seed: 1, Verdict: record.Pass}); err != nil {
		t.Fatal(err)
	}
}
