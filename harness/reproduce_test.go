package harness

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// shortIncident is the incident scenario cut short (8 migrations, 20 min of
// settle) so that tests stay quick; the fault schedule (on the first five
// migrations) and every other parameter are the incident's.
func shortIncident() *record.Params {
	p, err := IncidentParams(mustIncident(incidents.Default), "prefix")
	if err != nil {
		panic(err)
	}
	p.Migrations, p.SettleS = 8, 1200
	return &p
}

// mustIncident loads a catalogued incident or panics (the catalogue is
// embedded: a bad file fails every test that reads it).
func mustIncident(name string) incidents.Incident {
	inc, err := analysis.LoadIncident(name)
	if err != nil {
		panic(err)
	}
	return inc
}

func reproduce(t *testing.T, seed int64, op string, p *record.Params) ReproduceResult {
	t.Helper()
	r := Reproduction{Incident: mustIncident(incidents.Default), Name: incidents.Default, Operators: []string{op}, Params: p,
		Out: t.TempDir(), StartUnix: 1787159565}
	rs, err := Reproduce(context.Background(), r, seed, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs[0]
}

// TestReproduceSameSeedSameRecord: the same seed gives a byte-identical run
// record (plan.json with the executed fault schedule, timeline.jsonl,
// summary.json, reproduce.md); another seed does not. The figures from the
// lines IncidentKeeper kept while the run wrote them equal those computed
// from the whole timeline read back from the file.
func TestReproduceSameSeedSameRecord(t *testing.T) {
	a, b := reproduce(t, 4, "prefix", shortIncident()), reproduce(t, 4, "prefix", shortIncident())
	files := []string{record.PlanFile, record.TimelineFile, record.SummaryFile, reports.ReproduceFile}
	for _, f := range differingFiles(t, a.Dir, b.Dir, files...) {
		t.Errorf("seed 4 twice: %s differs", f)
	}
	other := reproduce(t, 5, "prefix", shortIncident())
	x, _ := os.ReadFile(filepath.Join(a.Dir, record.TimelineFile))
	y, _ := os.ReadFile(filepath.Join(other.Dir, record.TimelineFile))
	if bytes.Equal(x, y) {
		t.Error("seeds 4 and 5 give the same timeline")
	}

	// plan.json holds the schedule as executed: every fault with its
	// trigger, and when it was injected and recovered.
	if len(a.Plan.Faults) != 2 {
		t.Fatalf("plan faults %+v, want the 2 of the incident schedule", a.Plan.Faults)
	}
	for _, f := range a.Plan.Faults {
		if f.Phase != record.PhaseValidating || f.Migration == "" || f.Params["injected_at_s"] == "" {
			t.Errorf("executed fault %+v lacks its trigger or injection time", f)
		}
	}
	lines, err := record.ReadTimeline(filepath.Join(a.Dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(analysis.ComputeIncidentFigures(a.Plan, lines, a.Summary), a.Figures); d != "" {
		t.Errorf("figures from the kept lines differ from figures from the whole timeline (-whole +kept):\n%s", d)
	}
}

// TestReproduceScheduleIsTheIncidents: the schedule comes from the seed
// alone, is the same for both operators, hits early validations, and each
// fault outlasts a validation Job's retry budget (3 attempts 2 s apart,
// each blocked up to the 60 s admin_timeout: 184 s), so it can fail the
// validation it hits.
func TestReproduceScheduleIsTheIncidents(t *testing.T) {
	nodes := []string{"storage-1", "storage-2", "storage-3"}
	s1, err := IncidentSchedule(mustIncident(incidents.Default), 7, nodes)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := IncidentSchedule(mustIncident(incidents.Default), 7, nodes)
	if d := cmp.Diff(s1, s2); d != "" {
		t.Errorf("seed 7 twice:\n%s", d)
	}
	for _, f := range s1 {
		if f.Fault != faults.KindTargetRestart && f.Fault != faults.KindDroppedConnects {
			t.Errorf("fault kind %s", f.Fault)
		}
		const retryBudgetS = 3*60 + 2*2
		if f.Migration > "mig-0005" || f.ForS <= retryBudgetS || f.ForS > 300 {
			t.Errorf("fault %+v: want an early validation (first five migrations), longer than %d s, at most 300 s", f, retryBudgetS)
		}
	}
}

// BenchmarkReproduceBothOperators is the whole reproduction, as `fiomig
// reproduce fio-mig-1787159565` runs it: the incident's full parameters,
// prefix then fixed, seed 1 (target: under 5 s wall for both).
func BenchmarkReproduceBothOperators(b *testing.B) {
	for i := 0; i < b.N; i++ {
		r := Reproduction{Incident: mustIncident(incidents.Default), Name: incidents.Default, Operators: []string{"prefix", "fixed"},
			Out: b.TempDir(), StartUnix: 1787159565}
		if _, err := Reproduce(context.Background(), r, 1, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReproduceNoFaultNoCascade: with the incident's faults dropped
// (--faults none), the sourced model starts no cascade: no validation
// fails for either operator over the whole incident (docs/sources.md §9.5
// expects nothing sourced to start one), plan.json says the faults were
// dropped, and the two runs are described with no difference.
func TestReproduceNoFaultNoCascade(t *testing.T) {
	inc := mustIncident(incidents.Default)
	var runs []analysis.Run
	rs, err := Reproduce(context.Background(), Reproduction{Incident: inc, Name: inc.Name, Operators: []string{"prefix", "fixed"},
		NoFaults: true, Out: t.TempDir(), StartUnix: 1787159565}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range []string{"prefix", "fixed"} {
		r := rs[i]
		if len(r.Plan.Faults) != 0 || r.Plan.Params.FaultSchedule == "incident" {
			t.Errorf("%s: plan faults %v, fault_schedule %q: want none, said so", op, r.Plan.Faults, r.Plan.Params.FaultSchedule)
		}
		if r.Figures.ValidationFailed != 0 || r.Figures.Leaked != 0 {
			t.Errorf("%s with no fault: %d validation failures (%v), %d leaks; want none", op, r.Figures.ValidationFailed,
				r.Figures.FailureCauses, r.Figures.Leaked)
		}
		runs = append(runs, r.Run)
	}
	if d := analysis.DescribePair(runs); d == nil || len(d.Differences) != 0 || d.Pair.Fixed.Total != d.Pair.Prefix.Total {
		t.Errorf("description with no fault: %+v, want no difference", d)
	}
}

// differingFiles returns those of files whose bytes differ between run
// directories a and b; a file missing from either fails the test.
func differingFiles(t *testing.T, a, b string, files ...string) []string {
	t.Helper()
	var diff []string
	for _, f := range files {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			diff = append(diff, f)
		}
	}
	return diff
}

// TestReproduceProgressNotInterleaved: both operators run at once, but
// their progress is not interleaved line by line: every prefix line comes
// before the first fixed line, each operator's lines in their order.
func TestReproduceProgressNotInterleaved(t *testing.T) {
	p := shortIncident()
	p.Migrations, p.SettleS = 4, 60
	r := Reproduction{Incident: mustIncident(incidents.Default), Name: incidents.Default, Operators: []string{"prefix", "fixed"},
		Params: p, Out: t.TempDir(), StartUnix: 1787159565}
	var out bytes.Buffer
	if _, err := Reproduce(context.Background(), r, 3, &out); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		tag, _, ok := strings.Cut(strings.TrimSpace(l), "|")
		if !ok {
			t.Fatalf("untagged progress line %q", l)
		}
		if tag = strings.TrimSpace(tag); len(tags) == 0 || tags[len(tags)-1] != tag {
			tags = append(tags, tag)
		}
	}
	if d := cmp.Diff([]string{"prefix", "fixed"}, tags); d != "" {
		t.Errorf("operators' progress in blocks (-want +got):\n%s\n%s", d, out.String())
	}
	if n := strings.Count(out.String(), "fixed  | ["); n != 4 {
		t.Errorf("%d fixed migration lines, want 4:\n%s", n, out.String())
	}
}

// TestSourcedFixWithoutReleaseFails: the main job without fiomig's extra
// release of the source paths (incidents/fixed-operator-source-paths.yaml:
// the fixed operator as sourced) fails target-log-pattern — every
// expectation of the incident holds, so the exit code is 0 — while
// fiomig run's defaults, which release them, pass it and the main job
// passes as a whole.
func TestSourcedFixWithoutReleaseFails(t *testing.T) {
	inc := mustIncident("fixed-operator-source-paths")
	rs, err := Reproduce(context.Background(), Reproduction{Incident: inc, Name: inc.Name, Operators: inc.OperatorList(),
		Out: t.TempDir(), StartUnix: 1}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if code := BandsExitCode(Runs(rs)); code != ExitPass {
		t.Errorf("exit %d, want 0 (every expectation holds): %+v", code, rs[0].Shape)
	}
	verdict := func(sum record.Summary, name string) string {
		for _, c := range sum.Checks {
			if c.Name == name {
				return c.Verdict
			}
		}
		return "absent"
	}
	if v := verdict(rs[0].Summary, "target-log-pattern"); v != record.Fail {
		t.Errorf("without the release: target-log-pattern %s, want fail", v)
	}
	s := DefaultSpec()
	s.Out = t.TempDir()
	res, err := Run(context.Background(), s, Options{SummaryOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := verdict(res.Summary, "target-log-pattern"); v != record.Pass || res.Summary.Verdict != record.Pass {
		t.Errorf("fiomig run's defaults: target-log-pattern %s, verdict %s; want both pass (%+v)", v, res.Summary.Verdict, res.Summary.Checks)
	}
}
