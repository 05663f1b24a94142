package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// sweepDirOf returns the one sweep directory under out.
func sweepDirOf(t *testing.T, out string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(out, "sweep-*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("want one sweep directory under %s, got %v (%v)", out, dirs, err)
	}
	return dirs[0]
}

func readSweep(t *testing.T, dir string) record.Sweep {
	t.Helper()
	sw, err := record.ReadSweep(filepath.Join(dir, record.SweepFile))
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

// commandArgs turns a recorded "fiomig run --a=b ..." into dispatch's args.
func commandArgs(t *testing.T, cmd string) []string {
	t.Helper()
	f := strings.Fields(cmd)
	if len(f) < 2 || f[0] != "fiomig" || f[1] != "run" {
		t.Fatalf("command %q: want fiomig run ...", cmd)
	}
	return f[1:]
}

// TestSweepSeedIsItsSingleRun: a seed run inside a parallel sweep, with
// the default fault schedule, leaves the same plan.json, timeline.jsonl and
// summary.json, byte for byte, and exits the same, as the single
// `fiomig run --seed=N` with the same flags.
func TestSweepSeedIsItsSingleRun(t *testing.T) {
	flags := []string{"--migrations", "3", "--settle", "35"}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := dispatch(append([]string{"sweep", "--seeds", "2,3,7", "--jobs", "3", "--timelines", "all", "--out", out}, flags...), &stdout, &stderr)
	if code != exitPass && code != exitCheckFailed && code != exitInconclusive {
		t.Fatalf("sweep exit %d, want a verdict\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	dir := sweepDirOf(t, out)
	sw := readSweep(t, dir)
	if got := len(sw.Seeds); got != 3 {
		t.Fatalf("sweep.json has %d seeds, want 3", got)
	}
	for _, s := range sw.Seeds[1:] {
		seed := strconv.FormatInt(s.Seed, 10)
		single := t.TempDir()
		code := dispatch(append([]string{"run", "--seed", seed, "--out", single}, flags...), &bytes.Buffer{}, &bytes.Buffer{})
		if code != s.ExitCode {
			t.Errorf("seed %s: single run exits %d, the sweep's %d", seed, code, s.ExitCode)
		}
		for _, f := range []string{record.PlanFile, record.TimelineFile, record.SummaryFile} {
			a, err := os.ReadFile(filepath.Join(dir, s.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(runDirOf(t, single), f))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("seed %s: %s from the sweep differs from the single run's", seed, f)
			}
		}
	}
	// Progress on stderr: every seed, done/total, failing so far, ETA.
	for _, want := range []string{"3/3 done", " failing, ", "ETA"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr progress lacks %q:\n%s", want, stderr.String())
		}
	}
	// The seeds keep the order listed, whatever order they finished in.
	var order []int64
	for _, s := range sw.Seeds {
		order = append(order, s.Seed)
	}
	if diff := cmp.Diff([]int64{2, 3, 7}, order); diff != "" {
		t.Errorf("seed order (-want +got):\n%s", diff)
	}
}

// TestSweepFailingSeedsExitOneWithRerunCommands: a cutover of 7 s (±25 %)
// puts every migration over the 5 s bound; the sweep exits 1, counts every
// migration over the bound, keeps the first failing seed's timeline
// (--max-timelines 1), and each
// seed's recorded command reruns it to the same summary.
func TestSweepFailingSeedsExitOneWithRerunCommands(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"sweep", "--seeds", "4-5", "--out", out, "--migrations", "2", "--settle", "35", "--cutover-pause", "7", "--faults", "none", "--max-timelines", "1"}, &stdout, &stderr)
	if code != exitCheckFailed {
		t.Fatalf("sweep exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitCheckFailed, stdout.String(), stderr.String())
	}
	dir := sweepDirOf(t, out)
	sw := readSweep(t, dir)
	if sw.Counts.Fail != 2 || len(sw.Seeds) != 2 {
		t.Fatalf("counts %+v over %d seeds, want 2 failing", sw.Counts, len(sw.Seeds))
	}
	ob := sw.OverBound
	if ob.Migrations != 4 || ob.Over != 4 || ob.Fraction != 1 || ob.High95 != 1 || !(ob.Low95 > 0.4 && ob.Low95 < 0.6) {
		t.Errorf("over_bound %+v: want 4 of 4 over, fraction 1, Wilson interval [0.51, 1]", ob)
	}
	if !(sw.Pauses.P50S > 5 && sw.Pauses.MaxS <= 8.75+0.1) {
		t.Errorf("pauses %+v: want p50 over 5 s and max within 7 s + 25 %% (+ one sample)", sw.Pauses)
	}
	md, err := os.ReadFile(filepath.Join(dir, record.SweepReportFile))
	if err != nil {
		t.Fatal(err)
	}
	// The ECDF of pause windows pooled over the seeds, linked from sweep.md.
	for _, f := range []string{reports.ECDFPlotFile, reports.ECDFSVGFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("sweep ECDF %s: %v", f, err)
		}
	}
	if !bytes.Contains(md, []byte("("+reports.ECDFPlotFile+")")) || !bytes.Contains(md, []byte("over 2 seeds")) {
		t.Errorf("sweep.md does not link the ECDF over both seeds:\n%s", md)
	}
	for i, s := range sw.Seeds {
		// --max-timelines 1: the first failing seed in --seeds order keeps
		// its timeline, the second does not.
		keep := i == 0
		if !slices.Contains(s.FailedChecks, "pause-bound") || s.ExitCode != exitCheckFailed || s.TimelineKept != keep {
			t.Errorf("seed %d: failed checks %v, exit %d, timeline kept %v; want pause-bound, 1, %v", s.Seed, s.FailedChecks, s.ExitCode, s.TimelineKept, keep)
		}
		if _, err := os.Stat(filepath.Join(dir, s.Dir, record.TimelineFile)); (err == nil) != keep {
			t.Errorf("seed %d: timeline on disk: %v, want kept %v", s.Seed, err, keep)
		}
		if !bytes.Contains(md, []byte("`"+s.Command+"`")) || !strings.Contains(stdout.String(), s.Command) {
			t.Errorf("seed %d: rerun command %q not in sweep.md and on stdout", s.Seed, s.Command)
		}
		rerun := t.TempDir()
		args := append(commandArgs(t, s.Command), "--out", rerun)
		if code := dispatch(args, &bytes.Buffer{}, &bytes.Buffer{}); code != exitCheckFailed {
			t.Errorf("seed %d: rerun %v exits %d, want %d", s.Seed, args, code, exitCheckFailed)
			continue
		}
		a, _ := os.ReadFile(filepath.Join(dir, s.Dir, record.SummaryFile))
		b, _ := os.ReadFile(filepath.Join(runDirOf(t, rerun), record.SummaryFile))
		if !bytes.Equal(a, b) {
			t.Errorf("seed %d: rerun's summary.json differs from the sweep's", s.Seed)
		}
	}
}

// TestSweepInconclusiveExitsThreeAndDropsNoFailingTimeline: a settle
// shorter than the attribution margin leaves served-after-cutover
// unjudged, so every seed is inconclusive: exit 3; with --timelines none no
// timeline is kept, the rest of each run directory is.
func TestSweepInconclusiveExitsThree(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"sweep", "--seeds", "1", "--out", out, "--migrations", "1", "--settle", "10", "--timelines", "none", "--faults", "none", "--release-sources"}, &stdout, &stderr)
	if code != exitInconclusive {
		t.Fatalf("sweep exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInconclusive, stdout.String(), stderr.String())
	}
	dir := sweepDirOf(t, out)
	sw := readSweep(t, dir)
	s := sw.Seeds[0]
	if s.Verdict != record.Inconclusive || len(s.InconclusiveChecks) == 0 || s.TimelineKept {
		t.Errorf("seed %+v: want inconclusive with its checks named and no timeline kept", s)
	}
	if _, err := os.Stat(filepath.Join(dir, s.Dir, record.TimelineFile)); !os.IsNotExist(err) {
		t.Errorf("--timelines none: timeline still there (%v)", err)
	}
	for _, f := range []string{record.PlanFile, record.SummaryFile, "report.md"} {
		if _, err := os.Stat(filepath.Join(dir, s.Dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
}

// TestSweepSummaryIsDeterministic: the same sweep twice (2 jobs, so the
// seeds may finish in either order) writes the same sweep.json and
// sweep.md bytes: no wall-clock figure, seeds in --seeds order.
func TestSweepSummaryIsDeterministic(t *testing.T) {
	var dirs []string
	for range 2 {
		out := t.TempDir()
		if code := dispatch([]string{"sweep", "--seeds", "5,1", "--jobs", "2", "--out", out, "--migrations", "1", "--settle", "35"}, &bytes.Buffer{}, &bytes.Buffer{}); code == exitUsage {
			t.Fatalf("sweep exit %d", code)
		}
		dirs = append(dirs, sweepDirOf(t, out))
	}
	for _, f := range []string{record.SweepFile, record.SweepReportFile} {
		a, err := os.ReadFile(filepath.Join(dirs[0], f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dirs[1], f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two identical sweeps", f)
		}
	}
}

func TestSweepUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"sweep"},
		{"sweep", "--seeds", ""},
		{"sweep", "--seeds", "1-3", "--seed", "4"},
		{"sweep", "--seeds", "5-1"},
		{"sweep", "--seeds", "1,x"},
		{"sweep", "--seeds", "1,2,2"},
		{"sweep", "--seeds", "--3"}, // -3 is a seed (any int64, as --seed); --3 is no number
		{"sweep", "--seeds", "1-1000000"},
		{"sweep", "--seeds", "1", "--jobs", "0"},
		{"sweep", "--seeds", "1", "--timelines", "some"},
		{"sweep", "--seeds", "1", "--max-timelines", "-1"},
		{"sweep", "--seeds", "1", "--workload", "fio"},
		{"sweep", "--seeds", "1", "--migrations", "-1"},
		{"sweep", "--seeds", "1", "stray"},
		{"sweep", "--seeds", "1", "--self-check", "2"},
		{"sweep", "--seeds", "1", "--until-covered=-1"},
		{"sweep", "--seeds", "1", "--until-covered=0"}, // not "off": the message says >= 1
		{"sweep", "--seeds", "1", "--until-covered=some"},
		{"sweep", "--seeds", "1", "--faults", "none", "--until-covered"},
		{"sweep", "--seeds", "1", "--on", "elsewhere"},
		{"sweep", "--attach", "fiomig-1-abcd"},
		{"sweep", "--seeds", "1", "--on", "kube", "--timelines", "all"},
		{"sweep", "--seeds", "1", "--on", "kube", "--parallelism", "0"},
		{"sweep", "--seeds", "1", "--on", "kube", "--backend", "kube", "--kubeconfig", "x", "--storage-class", "y"},
	} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(append(args, "--out", t.TempDir()), &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		if stderr.Len() == 0 || strings.Count(stderr.String(), "\n") > 1 {
			t.Errorf("%v: want one line on stderr, got %q", args, stderr.String())
		}
	}
}

// TestSweepStopsWhenRunRefusesTheFlags: a fault file that does not exist
// passes the sweep's own checks but makes fiomig run refuse every seed;
// the sweep stops after the first refusals instead of running all 20,
// exits 2 and names the file.
func TestSweepStopsWhenRunRefusesTheFlags(t *testing.T) {
	out := t.TempDir()
	missing := filepath.Join(out, "no-such-faults.yaml")
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"sweep", "--seeds", "1-20", "--jobs", "2", "--out", out, "--migrations", "1", "--fault-file", missing}, &stdout, &stderr)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitUsage, stderr.String())
	}
	if !strings.Contains(stderr.String(), "no-such-faults.yaml") || !strings.Contains(stderr.String(), "were not run") {
		t.Errorf("stderr does not name the fault file and the seeds not run:\n%s", stderr.String())
	}
	sw := readSweep(t, sweepDirOf(t, out))
	if len(sw.Seeds) >= 20 || !sw.Interrupted || sw.Counts.Error != len(sw.Seeds) {
		t.Errorf("sweep.json: %d seeds ran (%+v), interrupted %v; want fewer than 20, all errors, interrupted", len(sw.Seeds), sw.Counts, sw.Interrupted)
	}
}

func TestSweepHelpTeaches(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"sweep", "--help"}, &stdout, &stderr); code != exitPass {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"--seeds", "--timelines", "--jobs", "sweep.json", "Wilson", "Exit codes", "--pause-crit"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("sweep --help does not mention %q", want)
		}
	}
}

// BenchmarkSweep times `fiomig sweep` over 4 seeds of the default run (23
// migrations each, default fault schedule) on every core, without the
// determinism self-check (which reruns 5 % of the seeds). s/seed
// extrapolates the wall time of --seeds 1-100 as 100 × s/seed on this
// machine at its current load; cpu-s/seed (the process's user + system
// time) does not depend on what else the machine runs: on an idle machine
// the wall time is about cpu-s/seed × seeds / cores.
func BenchmarkSweep(b *testing.B) {
	const seeds = 4
	cpu := func() float64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	cpu0 := cpu()
	for b.Loop() {
		out := b.TempDir()
		// Any verdict will do (the default fault schedule may fail a
		// seed); usage errors and interruptions will not.
		switch code := dispatch([]string{"sweep", "--seeds", "1-4", "--self-check", "0", "--out", out}, io.Discard, io.Discard); code {
		case exitPass, exitCheckFailed, exitInconclusive:
		default:
			b.Fatalf("sweep exit %d", code)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/seeds, "s/seed")
	b.ReportMetric((cpu()-cpu0)/float64(b.N)/seeds, "cpu-s/seed")
}

// TestShardNeedsItsIndex: a farm pod's --shard with a $JOB_COMPLETION_INDEX
// that is not a number is bad usage (it ran shard 0 instead: staticcheck
// SA4006 found the parse error dropped).
func TestShardNeedsItsIndex(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "x")
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"sweep", "--seeds", "1-2", "--shard", "2", "--out", t.TempDir()}, &stdout, &stderr); code != exitUsage || stdout.Len() > 0 ||
		!strings.Contains(stderr.String(), "$JOB_COMPLETION_INDEX") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing run, the variable named", code, stdout.String(), stderr.String())
	}
}

// TestSweepSeedRangeHintsSeeds: sweep --seed 1-3 (sweep passes run's
// --seed through) is a parse error that points at --seeds.
func TestSweepSeedRangeHintsSeeds(t *testing.T) {
	code, _, stderr := runCLI("sweep", "--seed", "1-3")
	if code != exitUsage || !strings.Contains(stderr, `invalid value "1-3" for flag -seed`) || !strings.Contains(stderr, "did you mean --seeds 1-3?") {
		t.Errorf("exit %d, stderr %q; want %d with a hint toward --seeds 1-3", code, stderr, exitUsage)
	}
	if code, _, stderr := runCLI("run", "--seed", "1-3"); code != exitUsage || strings.Contains(stderr, "did you mean") {
		t.Errorf("run --seed 1-3: exit %d, %q: run has no --seeds to hint at", code, stderr)
	}
}
