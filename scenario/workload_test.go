package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/fio"
	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/workload"
)

// These tests run real fio processes through FUSE volumes against the
// simulator on the wall clock: they skip with a printed reason when fio,
// /dev/fuse or root is missing, and fail under FIOMIG_REQUIRE_TOOLS=1.
// Margins are small to keep them quick, but every measurement is real:
// fio's own per-I/O log against the ANA samples of the same run.

func requireRealFio(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: real fio through FUSE runs in wall time (-short)")
	}
	tooltest.Require(t, workload.Available())
}

// fioParams: few volumes, short gaps, settle and attribution margin (the
// settle period covers the margin, so served-after-cutover is judged).
func fioParams(migrations, volumes int, cutover float64) record.Params {
	p := DefaultParams()
	p.Migrations, p.Model.Volumes, p.Model.CutoverPauseS, p.GapS = migrations, volumes, cutover, 1
	p.SettleS, p.AttributionMarginS = 2.5, 2
	p.Model.ReleaseSources = true // a clean system, as defaultRun
	return p
}

func runFio(t *testing.T, ctx context.Context, p record.Params, fo FioOptions) (Result, string) {
	t.Helper()
	out := t.TempDir()
	mnt := filepath.Join(t.TempDir(), "mnt")
	fo.MountDir = mnt
	res, err := RunFio(ctx, 1, Config{
		Plan:   record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: 1, Command: "go test", Params: p},
		OutDir: out, StartUnix: 1700000000,
	}, fo)
	if err != nil {
		t.Fatalf("RunFio: %v", err)
	}
	if m, err := workload.Mounted(mnt); err != nil || m {
		t.Errorf("after the run: Mounted(%s) = %v, %v; want nothing left mounted (%s)", mnt, m, err, workload.MountInfoFile)
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".fio-staging-") {
			t.Errorf("staging directory %s left in the output directory", e.Name())
		}
	}
	return res, mnt
}

func checkOf(sum record.Summary, name string) record.CheckResult {
	for _, c := range sum.Checks {
		if c.Name == name {
			return c
		}
	}
	return record.CheckResult{Name: name, Verdict: "missing"}
}

// fioNoiseTolerance returns the tolerance a real-fio run's comparisons
// get: checks.FioToleranceS plus fio's noise floor measured in the same
// run (its longest stall that no pause window explains,
// checks.FioNoiseFloor), since one such stall of the machine may abut a
// cutover and move an edge of fio's gap there. It fails the test, naming
// the machine's load, when that tolerance reaches resolveS (the shortest
// pause the test must tell apart): fio then shows a stall no pause
// explains that could pass for a cutover, and a pass would mean nothing.
func fioNoiseTolerance(t *testing.T, plan record.Plan, sum record.Summary, resolveS float64) float64 {
	t.Helper()
	fs := sum.Fio
	tol := checks.FioToleranceS(plan) + fs.NoiseFloorS
	load := "unknown"
	if l, ok := workload.LoadAverage(); ok {
		load = fmt.Sprintf("%.2f on %d CPUs now", l, runtime.NumCPU())
	}
	if fs.Load != nil {
		load = fmt.Sprintf("%.2f on %d CPUs at the end of the run, %s", fs.Load.Avg1, fs.Load.CPUs, load)
	}
	where := "no stall clear of every pause window"
	if fs.NoiseGap != nil {
		where = fmt.Sprintf("%s at [%.3f, %.3f] s", fs.NoiseGap.Volume, fs.NoiseGap.StartS, fs.NoiseGap.EndS)
	}
	t.Logf("fio's noise floor %.3f s (%s); load average %s; tolerance %.3f s + %.3f s = %.3f s", fs.NoiseFloorS, where, load, checks.FioToleranceS(plan), fs.NoiseFloorS, tol)
	if tol >= resolveS {
		t.Fatalf("fio's noise floor %.3f s (%s) at load average %s: tolerance + floor %.3f s >= %.3f s, the pause this test must resolve; this machine is too loaded for fio to tell the cutover from its own stalls",
			fs.NoiseFloorS, where, load, tol, resolveS)
	}
	return tol
}

// fioPauseWindowsSeen checks that every ANA pause window of a migration of
// each volume shows in fio as an overlapping gap at least as long as the
// window less tol, and logs fio's gaps of 0.2 s or more. A stall that no
// pause window explains needs no check of its own: the longest is fio's
// noise floor, which fioNoiseTolerance bounds.
func fioPauseWindowsSeen(t *testing.T, sum record.Summary, tol float64) {
	t.Helper()
	overlaps := func(g record.FioGap, w [2]float64) bool { return g.StartS < w[1] && g.EndS > w[0] }
	for _, v := range sum.Fio.Volumes {
		var windows [][2]float64
		for _, m := range sum.Migrations {
			if m.NQN == v.NQN {
				windows = append(windows, m.Hosts[v.Host].Windows...)
			}
		}
		for _, w := range windows {
			seen := false
			for _, g := range v.Gaps {
				seen = seen || (overlaps(g, w) && g.LengthS >= w[1]-w[0]-tol)
			}
			if !seen {
				t.Errorf("%s on %s: ANA pause window [%.3f, %.3f] s has no fio gap overlapping it of at least %.3f s: %+v", v.Volume, v.Host, w[0], w[1], w[1]-w[0]-tol, v.Gaps)
			}
		}
		for _, g := range v.Gaps {
			if g.LengthS >= 0.2 {
				explained := false
				for _, w := range windows {
					explained = explained || overlaps(g, w)
				}
				t.Logf("%s: fio gap %.3f s at [%.3f, %.3f] s (open %v, overlaps a pause window %v)", v.Volume, g.LengthS, g.StartS, g.EndS, g.Open, explained)
			}
		}
	}
}

// Acceptance: a real-fio run of 2 migrations in which fio's logged I/O gap
// and the ANA pause agree within max(2 × sample interval, 0.25 s) plus
// fio's noise floor in the same run (its longest stall that no pause
// window explains), and every ANA pause window shows in fio's log. On a
// loaded machine the product's agreement check may be inconclusive (a
// difference within the noise floor), never failed; a floor too long to
// resolve the cutover fails the test, naming the load.
func TestRealFioTwoMigrationsAgreeWithANA(t *testing.T) {
	requireRealFio(t)
	start := time.Now()
	p := fioParams(2, 2, 2.0)
	res, _ := runFio(t, context.Background(), p, FioOptions{})
	t.Logf("run took %.1f s", time.Since(start).Seconds())
	sum := res.Summary
	if sum.Fio == nil {
		t.Fatal("summary has no fio section")
	}
	for _, c := range sum.Checks {
		t.Logf("%-22s %-12s %s", c.Name, c.Verdict, c.Detail)
	}
	if len(sum.Fio.Comparisons) != 2 {
		t.Fatalf("%d comparisons, want one per migration: %+v", len(sum.Fio.Comparisons), sum.Fio.Comparisons)
	}
	// Not vacuous: the cutover (2 s ± 25 %) is in both measurements.
	shortest := math.Inf(1)
	for _, c := range sum.Fio.Comparisons {
		t.Logf("%s %s on %s: ANA pause %.3f s, fio gap %.3f s (%+.3f s)", c.Migration, c.Volume, c.Host, c.PauseS, c.FioGapS, c.DiffS)
		if c.PauseS < 1.4 || c.FioGapS < 1.4 {
			t.Errorf("%s: ANA pause %.3f s, fio gap %.3f s; want both to show the ~2 s cutover", c.Migration, c.PauseS, c.FioGapS)
		}
		shortest = math.Min(shortest, c.PauseS)
	}
	tol := fioNoiseTolerance(t, res.Plan, sum, shortest)
	noisy := false
	for _, c := range sum.Fio.Comparisons {
		if d := math.Abs(c.FioGapS - c.PauseS); d > tol+1e-9 {
			t.Errorf("%s: fio gap %.3f s and ANA pause %.3f s differ by %.3f s > %.3f s (tolerance + fio's noise floor)", c.Migration, c.FioGapS, c.PauseS, d, tol)
		} else if !c.Agree {
			noisy = true
		}
	}
	fioPauseWindowsSeen(t, sum, tol)
	for _, name := range []string{checks.CheckPauseBound, checks.CheckFioPauseAgreement, checks.CheckFioDataIntegrity, checks.CheckFioIOErrors} {
		c := checkOf(sum, name)
		if c.Verdict == record.Pass || (name == checks.CheckFioPauseAgreement && noisy && c.Verdict == record.Inconclusive) {
			continue
		}
		t.Errorf("%s: %s (%s)", name, c.Verdict, c.Detail)
	}
	if agreement := checkOf(sum, checks.CheckFioPauseAgreement).Verdict; sum.Verdict != agreement {
		t.Errorf("verdict %s, fio-pause-agreement %s: want the run's verdict to be the agreement check's (every other check passes)", sum.Verdict, agreement)
	}
	// fio's files are in the run directory, and the record re-evaluates to
	// the same summary.
	for _, v := range []string{"vol-001", "vol-002"} {
		for _, f := range []string{workload.JobFileName, workload.OutputFileName, workload.StderrFileName, fio.LatLogName(workload.LogPrefix, 1)} {
			if _, err := os.Stat(filepath.Join(res.Dir, record.FioDir, v, f)); err != nil {
				t.Errorf("run directory: %v", err)
			}
		}
	}
	plan, err := record.ReadPlan(filepath.Join(res.Dir, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := record.ReadTimeline(filepath.Join(res.Dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	again, err := FioEvaluate(res.Dir, plan, lines, checks.Evaluate(plan, lines))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := reports.WithStats(again), res.Summary; a.Verdict != b.Verdict || len(a.Checks) != len(b.Checks) || a.Fio.Comparisons[1].FioGapS != b.Fio.Comparisons[1].FioGapS || a.Fio.NoiseFloorS != b.Fio.NoiseFloorS {
		t.Errorf("re-evaluation differs: %+v vs %+v", a.Checks, b.Checks)
	}
	md, err := os.ReadFile(filepath.Join(res.Dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## fio beside the ANA samples — "+checkOf(sum, checks.CheckFioPauseAgreement).Verdict) {
		t.Errorf("report.md lacks the fio section")
	}
	var io int
	for _, l := range lines {
		if l.Kind == record.KindIO && l.Pod == "fio-vol-001" && l.Completed != nil && *l.Completed > 0 {
			io++
		}
	}
	if io < 10 {
		t.Errorf("%d io lines with completions for fio-vol-001; want one per second of the run", io)
	}
}

// Acceptance: a 7 s cutover shows in fio's own log as a gap beyond the
// pause bound, the pause check fails, and the report shows both; a block
// corrupted underneath fio is reported as a data integrity failure with
// its offset.
func TestRealFioLongCutoverAndCorruptedBlock(t *testing.T) {
	requireRealFio(t)
	res, _ := runFio(t, context.Background(), fioParams(1, 1, 7.0), FioOptions{CorruptWrite: 20})
	sum := res.Summary
	for _, c := range sum.Checks {
		t.Logf("%-22s %-12s %s", c.Name, c.Verdict, c.Detail)
	}
	if sum.Fio == nil || len(sum.Fio.Comparisons) != 1 {
		t.Fatalf("fio summary %+v: want one comparison", sum.Fio)
	}
	c := sum.Fio.Comparisons[0]
	t.Logf("ANA pause %.3f s, fio gap %.3f s at %+v", c.PauseS, c.FioGapS, c.FioGap)
	tol := fioNoiseTolerance(t, res.Plan, sum, res.Plan.Params.PauseCritS)
	if d := math.Abs(c.DiffS); c.PauseS <= 5 || c.FioGapS <= 5 || d > tol+1e-9 {
		t.Errorf("7 s ±25%% cutover: ANA pause %.3f s, fio gap %.3f s, off by %.3f s; want both over the 5 s bound and agreeing within %.3f s (tolerance + fio's noise floor)", c.PauseS, c.FioGapS, d, tol)
	}
	fioPauseWindowsSeen(t, sum, tol)
	if pb := checkOf(sum, checks.CheckPauseBound); pb.Verdict != record.Fail {
		t.Errorf("pause-bound %s (%s), want fail", pb.Verdict, pb.Detail)
	}
	if sum.Verdict != record.Fail {
		t.Errorf("verdict %s, want fail", sum.Verdict)
	}
	// The corrupted block: fio/workload.json says where it was put, fio's
	// verify must report exactly that offset as a data integrity failure.
	var wl record.FioWorkload
	if b, err := os.ReadFile(filepath.Join(res.Dir, record.FioDir, record.FioWorkloadFile)); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &wl); err != nil {
		t.Fatal(err)
	}
	if len(wl.Corruptions) != 1 {
		t.Fatalf("corruptions %+v, want 1", wl.Corruptions)
	}
	off := wl.Corruptions[0].Offset
	di := checkOf(sum, checks.CheckFioDataIntegrity)
	if di.Verdict != record.Fail || !strings.Contains(di.Detail, "data integrity failure") || !strings.Contains(di.Detail, "offset "+strconv.FormatInt(off, 10)) {
		t.Errorf("fio-data-integrity %s (%s); want a data integrity failure at offset %d", di.Verdict, di.Detail, off)
	}
	if e := checkOf(sum, checks.CheckFioIOErrors); e.Verdict != record.Pass {
		t.Errorf("fio-io-errors %s (%s): a verify failure must not count as an I/O error", e.Verdict, e.Detail)
	}
	md, err := os.ReadFile(filepath.Join(res.Dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| " + c.Migration + " | vol-001 | " + c.Host + " | **",
		"md5 verify failed at offset " + strconv.FormatInt(off, 10),
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// Acceptance: a run interrupted in the middle of a cutover (Ctrl-C cancels
// the scenario context) stops fio, leaves nothing mounted, and its run
// directory keeps the timeline and fio's complete output.
func TestRealFioInterruptedMidCutover(t *testing.T) {
	requireRealFio(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// With seed 1 the first migration's 7 s cutover starts about 13 s in
	// (the schedule is the seed's); cancel 2 s into it.
	timer := time.AfterFunc(15*time.Second, cancel)
	defer timer.Stop()
	res, _ := runFio(t, ctx, fioParams(1, 1, 7.0), FioOptions{StopGrace: 500 * time.Millisecond})
	if !res.Interrupted {
		t.Fatalf("run not interrupted: %+v", res.Summary.Checks)
	}
	lines, err := record.ReadTimeline(filepath.Join(res.Dir, record.TimelineFile))
	if err != nil || len(lines) == 0 {
		t.Fatalf("timeline after interruption: %d lines, %v", len(lines), err)
	}
	var wl record.FioWorkload
	if b, err := os.ReadFile(filepath.Join(res.Dir, record.FioDir, record.FioWorkloadFile)); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &wl); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop: drained %v, killed %v; volume %+v", wl.Drained, wl.Killed, wl.Volumes)
	if len(wl.Killed) > 0 || !workload.CleanExit(wl.Volumes[0].ExitCode) {
		t.Errorf("fio killed %v / exit %d: want it stopped in order", wl.Killed, wl.Volumes[0].ExitCode)
	}
	vr := workload.ReadResult("vol-001", workload.FilesIn(filepath.Join(res.Dir, record.FioDir, "vol-001")), fio.GapOptions{MinGapMs: 1000})
	if len(vr.Problems) > 0 {
		t.Errorf("fio's output after the interruption: %v", vr.Problems)
	}
	if vr.Analysis.Gaps.Completions == 0 {
		t.Error("fio's log is empty")
	}
}
