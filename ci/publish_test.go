package ci_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/ci"
	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// junitDoc is what the tests read back from a JUnit file.
type junitDoc struct {
	Suites []struct {
		Cases []struct {
			Name       string `xml:"name,attr"`
			ClassName  string `xml:"classname,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Failure *struct{} `xml:"failure"`
			Skipped *struct{} `xml:"skipped"`
			Out     string    `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d junitDoc
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(d.Suites) != 1 {
		t.Fatalf("%s: %d suites", path, len(d.Suites))
	}
	return d
}

// simRun runs the simulator: 6 migrations, default faults, seed.
func simRun(t *testing.T, seed int64, pause float64) string {
	t.Helper()
	s := harness.DefaultSpec()
	s.Seed, s.Out = seed, t.TempDir()
	s.Params.Migrations = 6
	s.Params.Model.ReleaseSources = true
	if pause > 0 {
		s.Params.Model.CutoverPauseS = pause
	}
	res, err := harness.Run(context.Background(), s, harness.Options{StartUnix: 1700000000 + seed})
	if err != nil {
		t.Fatal(err)
	}
	return res.Dir
}

// TestPublishRun: the Prow layout of two runs of different seeds — the
// second with a 7 s cutover, so it fails — has testcases of identical
// names, numeric pause properties, a verdict property on every case, a
// failing case per migration over the bound with its swimlane attached,
// started.json and finished.json with metadata, OpenMetrics that parse,
// and a step summary appended after what was there.
func TestPublishRun(t *testing.T) {
	var names [2][]string
	noCutover := 0
	for i, c := range []struct {
		seed  int64
		pause float64
	}{{1, 0}, {2, 7}} {
		dir := simRun(t, c.seed, c.pause)
		art := t.TempDir()
		summaryFile := filepath.Join(t.TempDir(), "step-summary.md")
		if err := os.WriteFile(summaryFile, []byte("earlier step\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"ARTIFACTS": art, "GITHUB_STEP_SUMMARY": summaryFile, "GITHUB_SHA": "abc123", "GITHUB_REF_NAME": "main"}
		o := ci.OptionsFromEnv(func(k string) string { return env[k] }, "")
		o.Now = func() time.Time { return time.Unix(1700009999, 0) }
		written, err := ci.Publish(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"started.json", "finished.json", "metrics.txt", "artifacts/junit_fiomig_01.xml",
			"artifacts/" + filepath.Base(dir) + "/report.html", "artifacts/" + filepath.Base(dir) + "/summary.json"} {
			if !slices.Contains(written, filepath.Join(art, f)) {
				t.Errorf("seed %d: %s not written (wrote %v)", c.seed, f, written)
			}
		}
		sum, err := reports.LoadRunSet(dir)
		if err != nil {
			t.Fatal(err)
		}
		verdict := sum.Runs[0].Summary.Verdict
		d := readJUnit(t, filepath.Join(art, "artifacts", "junit_fiomig_01.xml"))
		over := 0
		for _, tc := range d.Suites[0].Cases {
			names[i] = append(names[i], tc.ClassName+"/"+tc.Name)
			if len(tc.Properties) == 0 || tc.Properties[0].Name != "verdict" {
				t.Errorf("seed %d: %s has no verdict property first: %+v", c.seed, tc.Name, tc.Properties)
				continue
			}
			v := tc.Properties[0].Value
			if (v == record.Fail) != (tc.Failure != nil) || (v == record.Inconclusive) != (tc.Skipped != nil) {
				t.Errorf("seed %d: %s verdict %s, failure %v, skipped %v", c.seed, tc.Name, v, tc.Failure != nil, tc.Skipped != nil)
			}
			for _, p := range tc.Properties[1:] {
				if strings.HasSuffix(p.Name, "_seconds") || strings.HasSuffix(p.Name, "_fraction") {
					if _, err := strconv.ParseFloat(p.Value, 64); err != nil {
						t.Errorf("seed %d: %s property %s = %q is not a number", c.seed, tc.Name, p.Name, p.Value)
					}
				}
			}
			if tc.Name == checks.CheckPauseBound {
				var got []string
				for _, p := range tc.Properties {
					got = append(got, p.Name)
				}
				for _, want := range []string{"pause_p50_seconds", "pause_p95_seconds", "pause_max_seconds", "over_bound_fraction"} {
					if !slices.Contains(got, want) {
						t.Errorf("seed %d: pause-bound lacks property %s (has %v)", c.seed, want, got)
					}
				}
			}
			if tc.ClassName == ci.ClassMigrations {
				// A migration that never cut over has no pause: no
				// longest_pause_seconds (a 0 would chart as a short pause).
				var hasPause bool
				for _, p := range tc.Properties {
					hasPause = hasPause || p.Name == "longest_pause_seconds"
				}
				if hasPause == (v == reports.VerdictNoCutover) {
					t.Errorf("seed %d: %s (verdict %s) longest_pause_seconds given: %v", c.seed, tc.Name, v, hasPause)
				}
				if v == reports.VerdictNoCutover {
					noCutover++
				}
			}
			if tc.ClassName == ci.ClassMigrations && v == record.Fail {
				over++
				if !strings.Contains(tc.Out, "[[ATTACHMENT|") || !strings.Contains(tc.Out, "swimlane-") {
					t.Errorf("seed %d: failing %s attaches no swimlane: %q", c.seed, tc.Name, tc.Out)
				}
			}
		}
		if c.pause == 7 && over == 0 {
			t.Errorf("seed %d with a 7 s cutover: no migration testcase fails", c.seed)
		}

		var fin struct {
			Timestamp int64             `json:"timestamp"`
			Passed    bool              `json:"passed"`
			Result    string            `json:"result"`
			Metadata  map[string]string `json:"metadata"`
		}
		b, _ := os.ReadFile(filepath.Join(art, "finished.json"))
		if err := json.Unmarshal(b, &fin); err != nil {
			t.Fatal(err)
		}
		if fin.Timestamp != 1700009999 || fin.Passed != (verdict == record.Pass) || fin.Metadata["verdict"] != verdict || fin.Metadata["commit"] != "abc123" || fin.Metadata["branch"] != "main" {
			t.Errorf("seed %d: finished.json %+v", c.seed, fin)
		}
		if _, err := strconv.ParseFloat(fin.Metadata["pause_p95_seconds"], 64); err != nil {
			t.Errorf("seed %d: finished.json pause_p95_seconds %q", c.seed, fin.Metadata["pause_p95_seconds"])
		}
		b, _ = os.ReadFile(filepath.Join(art, "started.json"))
		if !bytes.Contains(b, []byte(fmt.Sprintf(`"timestamp": %d`, 1700000000+c.seed))) {
			t.Errorf("seed %d: started.json %s", c.seed, b)
		}

		checkMetrics(t, filepath.Join(art, "metrics.txt"), sum.Runs)
		step, _ := os.ReadFile(summaryFile)
		if !strings.HasPrefix(string(step), "earlier step\n### fiomig run `"+filepath.Base(dir)+"` — "+strings.ToUpper(verdict)) {
			t.Errorf("seed %d: step summary:\n%s", c.seed, step)
		}
	}
	if !slices.Equal(names[0], names[1]) {
		t.Errorf("testcase names differ between seeds 1 and 2:\n%v\n%v", names[0], names[1])
	}
	if noCutover == 0 {
		t.Error("no migration without a cutover on seeds 1 and 2: the property's omission went untested")
	}
}

// checkMetrics parses path with prometheus/common's text parser (it reads
// OpenMetrics' families, skipping # UNIT and # EOF as comments), checks
// the file ends with OpenMetrics' "# EOF", every family carries HELP and
// TYPE, and the values are ci.Figures'.
func checkMetrics(t *testing.T, path string, runs []reports.StoredRun) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), "\n# EOF\n") {
		t.Errorf("%s does not end with # EOF", path)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	for _, f := range ci.Figures(runs) {
		fam, ok := fams["fiomig_"+f.Name]
		if ok != f.Known {
			t.Errorf("fiomig_%s present %v, known %v", f.Name, ok, f.Known)
			continue
		}
		if !ok {
			continue
		}
		if fam.GetHelp() == "" || fam.GetType().String() != "GAUGE" || len(fam.Metric) != 1 || fam.Metric[0].GetGauge().GetValue() != f.Value {
			t.Errorf("fiomig_%s: %v, want gauge %v", f.Name, fam, f.Value)
		}
		if f.Unit == "seconds" && !bytes.Contains(b, []byte("# UNIT fiomig_"+f.Name+" seconds\n")) {
			t.Errorf("fiomig_%s has no UNIT line", f.Name)
		}
	}
	failed := fams["fiomig_check_failed_runs"]
	if failed == nil || len(failed.Metric) != len(runs[0].Summary.Checks) {
		t.Errorf("fiomig_check_failed_runs: %v", failed)
	}
}

// bigSummary is a run of n migrations, every one over the bound on two
// hosts with long windows lists, every check failing with a long detail.
func bigSummary(n int) reports.StoredRun {
	plan := record.Plan{Backend: "sim", Seed: 3, Command: "fiomig run --seed=3 " + strings.Repeat("--flag=x ", 200),
		Params:   record.Params{PauseCritS: 5, FreezesAllowed: 1, Migrations: n},
		Topology: record.Topology{Hosts: []record.HostInfo{{Name: "worker-1"}, {Name: "worker-2"}}}}
	sum := record.Summary{Seed: 3, Verdict: record.Fail}
	for _, c := range []string{checks.CheckPauseBound, checks.CheckFreezes, checks.CheckLeakedControllers, checks.CheckPathCompleteness} {
		sum.Checks = append(sum.Checks, record.CheckResult{Name: c, Verdict: record.Fail, Detail: strings.Repeat("a long detail | with pipes ", 500)})
	}
	for i := range n {
		id := fmt.Sprintf("mig-%04d", i+1)
		var ws [][2]float64
		for k := range 20 {
			ws = append(ws, [2]float64{float64(10 * k), float64(10*k + 7)})
		}
		hp := record.HostPauses{LongestPauseS: 7, Freezes: 20, Windows: ws}
		sum.Migrations = append(sum.Migrations, record.MigrationSummary{ID: id, NQN: "nqn.2023-02.io.simplyblock:" + strings.Repeat("x", 80) + id, Outcome: "Completed",
			Freezes: 20, Hosts: map[string]record.HostPauses{"worker-1": hp, "worker-2": hp}})
		sum.LeakedControllers = append(sum.LeakedControllers, record.Leak{Host: "worker-1", Controller: "nvme" + strconv.Itoa(i)})
	}
	return reports.StoredRun{Dir: "big", Plan: plan, Summary: sum}
}

// TestStepSummaryStaysSmall: a run with 1,000 failing migrations (2,000
// pairs over the bound, 1,000 freeze failures, 1,000 leaks) and a sweep
// of 1,000 failing seeds give step summaries under the budget (64 KiB,
// a sixteenth of GitHub's 1 MiB limit) that still name the count.
func TestStepSummaryStaysSmall(t *testing.T) {
	run := bigSummary(1000)
	md := ci.StepSummary("fio-mig-1", false, []reports.StoredRun{run})
	if len(md) > ci.StepSummaryBudget || len(md) >= 1<<20 {
		t.Errorf("run step summary %d bytes, budget %d", len(md), ci.StepSummaryBudget)
	}
	if !bytes.Contains(md, []byte("**Over the pause bound** (3000)")) || !bytes.Contains(md, []byte("… and 2990 more")) {
		t.Errorf("run step summary does not count what it leaves out:\n%s", md[:min(len(md), 3000)])
	}
	var seeds []reports.StoredRun
	for i := range 1000 {
		r := bigSummary(3)
		r.Summary.Seed = int64(i)
		seeds = append(seeds, r)
	}
	md = ci.StepSummary("sweep-1", true, seeds)
	if len(md) > ci.StepSummaryBudget {
		t.Errorf("sweep step summary %d bytes, budget %d", len(md), ci.StepSummaryBudget)
	}
	if !bytes.Contains(md, []byte("… and 990 more")) {
		t.Errorf("sweep step summary does not count what it leaves out")
	}
	t.Logf("step summary of 1,000 failing migrations: %d bytes; of 1,000 failing seeds: %d bytes", len(ci.StepSummary("fio-mig-1", false, []reports.StoredRun{run})), len(md))
	// JUnit and metrics of the big run stay well-formed.
	if _, err := ci.RunJUnit("fiomig", run, nil); err != nil {
		t.Error(err)
	}
}

// TestPublishSweep: a sweep's JUnit has one testcase per check over every
// seed and one per seed and check, with identical names for the same seeds.
func TestPublishSweep(t *testing.T) {
	s := harness.DefaultSpec()
	s.Out = t.TempDir()
	s.Params.Migrations = 3
	s.Params.Model.ReleaseSources = true
	res, err := harness.Sweep(context.Background(), s, harness.SweepOptions{Seeds: []int64{1, 2, 3}, SeedsArg: "1-3", Jobs: 2, Timelines: harness.KeepNone, StartUnix: 1700000000})
	if err != nil {
		t.Fatal(err)
	}
	art := t.TempDir()
	if _, err := ci.Publish(res.Dir, ci.Options{Dir: art}); err != nil {
		t.Fatal(err)
	}
	d := readJUnit(t, filepath.Join(art, "artifacts", "junit_fiomig_01.xml"))
	var perCheck, perSeed int
	for _, tc := range d.Suites[0].Cases {
		switch tc.ClassName {
		case ci.ClassChecks:
			perCheck++
		case ci.ClassSeeds:
			perSeed++
			if !strings.HasPrefix(tc.Name, "seed-") {
				t.Errorf("seed case %q", tc.Name)
			}
		}
	}
	if perCheck == 0 || perSeed != 3*perCheck {
		t.Errorf("%d check cases, %d seed cases; want 3 per check", perCheck, perSeed)
	}
	if _, err := os.Stat(filepath.Join(art, "artifacts", filepath.Base(res.Dir), record.SweepReportFile)); err != nil {
		t.Errorf("sweep.md not copied: %v", err)
	}
	set, _ := reports.LoadRunSet(res.Dir)
	checkMetrics(t, filepath.Join(art, "metrics.txt"), set.Runs)
}
