package scenario

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

func runSim(t *testing.T, seed int64, p record.Params) Result {
	t.Helper()
	c, err := SimCluster(seed, p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := Run(context.Background(), c, Config{
		Plan:   record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: seed, Params: p},
		OutDir: t.TempDir(), StartUnix: 1787159565,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// small is a short main job on a clean system: release_sources (fiomig's
// extra, see defaultRun) releases the source paths after each cutover.
func small() record.Params {
	p := DefaultParams()
	p.Migrations, p.SettleS = 6, 35
	p.Model.ReleaseSources = true
	return p
}

// TestSameSeedSameRecord: on virtual time the same seed gives byte-identical
// timeline.jsonl and summary.json; another seed gives pause values that
// differ by at least one sample interval somewhere.
func TestSameSeedSameRecord(t *testing.T) {
	p := small()
	a, b, other := runSim(t, 42, p), runSim(t, 42, p), runSim(t, 43, p)
	for _, f := range differingFiles(t, a.Dir, b.Dir, record.TimelineFile, record.SummaryFile, record.PlanFile) {
		t.Errorf("seed 42 twice: %s differs", f)
	}
	maxDiff := 0.0
	for i, m := range a.Summary.Migrations {
		if i >= len(other.Summary.Migrations) {
			break
		}
		longest := func(s record.MigrationSummary) float64 {
			l := 0.0
			for _, h := range s.Hosts {
				l = max(l, h.LongestPauseS)
			}
			return l
		}
		maxDiff = max(maxDiff, math.Abs(longest(m)-longest(other.Summary.Migrations[i])))
	}
	if maxDiff < p.SampleIntervalS {
		t.Errorf("seeds 42 and 43: longest pauses differ by at most %.3f s, want >= one sample interval (%.3f s)", maxDiff, p.SampleIntervalS)
	}
}

func TestDefaultRunPassesAndLongCutoverFails(t *testing.T) {
	p := small()
	res := runSim(t, 1, p)
	if res.Summary.Verdict != record.Pass {
		t.Fatalf("default scenario verdict %s: %+v", res.Summary.Verdict, res.Summary.Checks)
	}
	if got := len(res.Summary.Migrations); got != p.Migrations {
		t.Errorf("summary has %d migrations, want %d", got, p.Migrations)
	}
	if res.Summary.Stats.Pauses == 0 || res.Summary.Stats.PercentileMethod == "" {
		t.Errorf("summary stats missing: %+v", res.Summary.Stats)
	}
	for _, f := range []string{record.PlanFile, record.TimelineFile, record.SummaryFile, "report.md", "plots/pause.png"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}

	p.Model.CutoverPauseS = 7
	res = runSim(t, 1, p)
	var pause record.CheckResult
	for _, c := range res.Summary.Checks {
		if c.Name == "pause-bound" {
			pause = c
		}
	}
	if pause.Verdict != record.Fail || res.Summary.Verdict != record.Fail {
		t.Errorf("7 s cutover: pause-bound %q, verdict %q; want both fail", pause.Verdict, res.Summary.Verdict)
	}
}

func TestInterruptedRunKeepsTimeline(t *testing.T) {
	p := small()
	c, err := SimCluster(1, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, c, Config{Plan: record.Plan{Seed: 1, Params: p}, OutDir: t.TempDir(), StartUnix: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted {
		t.Fatal("a cancelled context did not mark the run interrupted")
	}
	lines, err := record.ReadTimeline(filepath.Join(res.Dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		t.Error("interrupted run left an empty timeline; the first sample should be there")
	}
}

// TestJudgedFromTheRecordAlone: the summary Run computed from the lines it
// wrote equals the one computed from plan.json and timeline.jsonl on disk.
func TestJudgedFromTheRecordAlone(t *testing.T) {
	res := runSim(t, 3, small())
	plan, err := record.ReadPlan(filepath.Join(res.Dir, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := record.ReadTimeline(filepath.Join(res.Dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	fromDisk := reports.WithStats(checks.Evaluate(plan, lines))
	if d := cmp.Diff(res.Summary, fromDisk); d != "" {
		t.Errorf("summary from the record on disk differs from Run's (-run +disk):\n%s", d)
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

// TestProgressSaysWhyAMigrationFailed (issue 27 item 1): the progress line
// of a migration that ended Failed or Aborted gives the reason its phase
// line recorded, as summary.json's migration reason does; a Completed one
// gives none. The second migration's validation Job is killed.
func TestProgressSaysWhyAMigrationFailed(t *testing.T) {
	p := small()
	c, err := SimCluster(1, p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kill := []record.FaultSpec{{Fault: faults.KindAbortedValidation, Phase: record.StageInValidation, Migration: "#2", Target: "#2",
		Params: map[string]string{"after_s": "0.3", "mode": faults.ModeKillJob}}}
	var progress strings.Builder
	res, err := Run(context.Background(), c, Config{Plan: record.Plan{Seed: 1, Params: p, Faults: kill}, OutDir: t.TempDir(), StartUnix: 1, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, m := range res.Summary.Migrations {
		if m.Outcome != record.PhaseFailed && m.Outcome != record.PhaseAborted {
			continue
		}
		ended++
		if m.Reason == "" {
			t.Errorf("%s ended %s with no reason in summary.json", m.ID, m.Outcome)
		}
		if want := fmt.Sprintf(" %s volume ", m.ID); !strings.Contains(progress.String(), want) ||
			!strings.Contains(progress.String(), fmt.Sprintf(" s: %s\n", m.Reason)) {
			t.Errorf("no progress line for %s ending with its reason %q:\n%s", m.ID, m.Reason, progress.String())
		}
	}
	if ended == 0 {
		t.Fatalf("seed 1 failed no migration; pick a seed that does:\n%s", progress.String())
	}
	for _, l := range strings.Split(progress.String(), "\n") {
		if strings.Contains(l, ": Completed after ") && !strings.HasSuffix(l, " s") {
			t.Errorf("a Completed migration's progress line gives a reason: %q", l)
		}
	}
}
