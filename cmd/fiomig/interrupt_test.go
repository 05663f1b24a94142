package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/workload"
)

// TestMain lets the tests run this test binary as fiomig itself
// (FIOMIG_TEST_AS_MAIN=1): signals and kill -9 need a process of its own.
func TestMain(m *testing.M) {
	if os.Getenv("FIOMIG_TEST_AS_MAIN") == "1" {
		os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
	}
	// Under a CI that sets them (Prow, GitHub Actions), the runs these
	// tests make must not write into the job's own artifacts and step
	// summary (docs/ci.md); TestRunArtifacts sets its own.
	os.Unsetenv("ARTIFACTS")
	os.Unsetenv("GITHUB_STEP_SUMMARY")
	os.Exit(m.Run())
}

// fiomigProcess starts this binary as "fiomig args..." with its output in
// files under dir.
func fiomigProcess(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FIOMIG_TEST_AS_MAIN=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, &out
}

// worstStop is the longest a --workload=fio run may legitimately take to
// stop after a signal: every stop deadline at the highest load factor, and
// a minute for the rest.
const worstStop = workload.MaxLoadFactor*(workload.DefaultStopGrace+workload.DefaultKillAfter+workload.ReapTimeout+workload.UnmountTimeout) + time.Minute

// exitCode waits for cmd, failing the test after timeout.
func exitCode(t *testing.T, cmd *exec.Cmd, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		// A goroutine dump (Go prints one on SIGQUIT) says where it hangs.
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		t.Fatalf("fiomig did not exit within %v of the signal", timeout)
	}
	return -1
}

// checkInterruptedRecord: the run directory holds plan.json, a timeline
// that reads back (lines >= minLines) and summary.json saying interrupted.
func checkInterruptedRecord(t *testing.T, dir string, minLines int) {
	t.Helper()
	if _, err := record.ReadPlan(filepath.Join(dir, record.PlanFile)); err != nil && minLines > 0 {
		t.Errorf("plan.json: %v", err)
	}
	lines, err := record.ReadTimeline(filepath.Join(dir, record.TimelineFile))
	if err != nil {
		t.Errorf("timeline: %v", err)
	}
	if len(lines) < minLines {
		t.Errorf("timeline has %d lines, want >= %d", len(lines), minLines)
	}
	sum := readSummary(t, dir)
	if !sum.Interrupted || sum.Verdict != record.Inconclusive {
		t.Errorf("summary.json: interrupted %v, verdict %s; want interrupted and inconclusive", sum.Interrupted, sum.Verdict)
	}
}

// SIGINT 0.5 s after the start, or once the run has begun when start-up
// takes longer on a loaded machine (the simulator workload, and real fio
// still starting up), SIGTERM mid-run (simulator) and SIGINT in the middle
// of a run (real fio doing I/O): each
// exits 130 with its run directory, a timeline and an interrupted summary,
// and nothing of the fio workload stays mounted or running.
func TestSIGINTExits130WithTheRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: runs fiomig processes in wall time (-short)")
	}
	t.Run("sim at 0.5 s", func(t *testing.T) {
		out := t.TempDir()
		cmd, log := fiomigProcess(t, out, "run", "--out", out, "--migrations", "23", "--sample-interval", "0.001")
		time.Sleep(500 * time.Millisecond)
		waitTimelineLines(t, out, 1, 60*time.Second) // started: see waitStarted
		cmd.Process.Signal(os.Interrupt)
		if code := exitCode(t, cmd, 60*time.Second); code != exitInterrupted {
			t.Fatalf("exit %d, want 130:\n%s", code, log)
		}
		checkInterruptedRecord(t, runDirOf(t, out), 1)
	})
	t.Run("sim SIGTERM mid-run", func(t *testing.T) {
		out := t.TempDir()
		cmd, log := fiomigProcess(t, out, "run", "--out", out, "--migrations", "23", "--sample-interval", "0.001")
		waitTimelineLines(t, out, 2000, 60*time.Second)
		cmd.Process.Signal(syscall.SIGTERM)
		if code := exitCode(t, cmd, 60*time.Second); code != exitInterrupted {
			t.Fatalf("exit %d, want 130:\n%s", code, log)
		}
		dir := runDirOf(t, out)
		checkInterruptedRecord(t, dir, 2000)
		// report rewrites the summary from the record: still interrupted.
		if code, _, stderr := runCLI("report", dir, "--quiet"); code != exitInconclusive {
			t.Errorf("report of the interrupted run: exit %d, want 3: %s", code, stderr)
		}
		checkInterruptedRecord(t, dir, 2000)
	})
	for _, tc := range []struct {
		name  string
		after time.Duration // SIGINT this long after start, or ...
		lines int           // ... once the timeline has this many lines
	}{
		{name: "fio at 0.5 s", after: 500 * time.Millisecond},
		{name: "fio mid-run", lines: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tooltest.Require(t, workload.Available())
			out := t.TempDir()
			cmd, log := fiomigProcess(t, out, "run", "--workload=fio", "--out", out, "--migrations", "3", "--volumes", "2")
			if tc.after > 0 {
				time.Sleep(tc.after)
				waitStarted(t, out, 60*time.Second)
			} else {
				waitTimelineLines(t, out, tc.lines, 120*time.Second)
			}
			cmd.Process.Signal(os.Interrupt)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("fiomig's output:\n%s", log)
				}
			})
			if code := exitCode(t, cmd, worstStop); code != exitInterrupted {
				t.Fatalf("exit %d, want 130", code)
			}
			dir := runDirOf(t, out)
			checkInterruptedRecord(t, dir, tc.lines)
			checkNothingLeft(t, dir)
		})
	}
}

// waitStarted waits until fiomig run has put something in out (fio's
// staging directory or the run directory), which it does only after
// installing its SIGINT/SIGTERM handler (interruptContext comes first in
// runCmd). A signal before that meets Go's default action and kills the
// process with no record: on this 2-core machine at load 22 the process
// took more than the 0.5 s the test sleeps to get there (exit -1), which
// is start-up, not what the test is about.
func waitStarted(t *testing.T, out string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if entries, _ := os.ReadDir(out); len(entries) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("fiomig run put nothing in %s within %v", out, timeout)
}

// waitTimelineLines waits until the run under out has written n timeline
// lines.
func waitTimelineLines(t *testing.T, out string, n int, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		dirs, _ := filepath.Glob(filepath.Join(out, "fio-mig-*", record.TimelineFile))
		if len(dirs) == 1 {
			if c := countLines(dirs[0]); c >= n {
				return filepath.Dir(dirs[0])
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no run under %s wrote %d timeline lines within %v", out, n, timeout)
	return ""
}

func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		n++
	}
	return n
}

// ledgerOf reads the owned.jsonl under dir (a run directory's fio/, or a
// staging directory).
func ledgerOf(t *testing.T, root string) []workload.OwnedEntry {
	t.Helper()
	var found []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == workload.OwnedFile {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("ledgers under %s: %v, want one", root, found)
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		t.Fatal(err)
	}
	es, err := workload.ReadOwned(bytes.NewReader(b), found[0])
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// checkNothingLeft: no mount of the run's ledger in /proc/mounts, no
// process carrying its marker and no recorded fio process in /proc, and
// no recorded temporary directory.
func checkNothingLeft(t *testing.T, root string) {
	t.Helper()
	es := ledgerOf(t, root)
	mounts, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		switch e.Kind {
		case workload.OwnedOwner:
			if pids, _ := workload.MarkedProcesses(e.Marker); len(pids) > 0 {
				t.Errorf("processes with %s=%s still running: %v", workload.MarkerEnv, e.Marker, pids)
			}
		case workload.OwnedMount:
			for _, line := range strings.Split(string(mounts), "\n") {
				if f := strings.Fields(line); len(f) > 2 && f[1] == e.Path {
					t.Errorf("still mounted (/proc/mounts): %s", line)
				}
			}
		case workload.OwnedFio:
			if workload.Alive(e.Pid, e.StartTicks) {
				t.Errorf("fio %d (volume %s) still running", e.Pid, e.Volume)
			}
		case workload.OwnedTmpDir:
			if _, err := os.Stat(e.Path); err == nil {
				t.Errorf("temporary directory %s left", e.Path)
			}
		}
	}
}

// After kill -9 of fiomig mid-run, "fiomig janitor" removes the FUSE mount,
// every fio process and the temporary directories the run's ledger
// recorded, and says so; a second janitor finds nothing.
func TestJanitorAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: runs fiomig processes in wall time (-short)")
	}
	tooltest.Require(t, workload.Available())
	out := t.TempDir()
	cmd, log := fiomigProcess(t, out, "run", "--workload=fio", "--out", out, "--migrations", "3", "--volumes", "2")
	waitTimelineLines(t, out, 100, 120*time.Second)
	es := ledgerOf(t, out)
	var marker string
	for _, e := range es {
		if e.Kind == workload.OwnedOwner {
			marker = e.Marker
		}
	}
	before, _ := workload.MarkedProcesses(marker)
	if len(before) < 2 {
		t.Fatalf("fio processes before the kill: %v, want fio and its jobs", before)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	t.Logf("fiomig killed; marked processes before: %v\n%s", before, log)

	code, stdout, stderr := runCLI("janitor", "--out", out)
	t.Logf("janitor (exit %d):\n%s%s", code, stdout, stderr)
	if code != exitPass {
		t.Errorf("janitor exit %d, want 0", code)
	}
	for _, want := range []string{"unmount ", "remove "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("janitor output names no %q action", want)
		}
	}
	checkNothingLeft(t, out)
	code, stdout, _ = runCLI("janitor", "--out", out)
	if code != exitPass || !strings.Contains(stdout, "0 leftovers removed") {
		t.Errorf("second janitor: exit %d\n%s; want nothing left", code, stdout)
	}
}

// The janitor's usage errors name the flag; --kubeconfig without the kube
// backend wired in says so.
func TestJanitorUsage(t *testing.T) {
	code, _, stderr := runCLI("janitor", "--out", filepath.Join(t.TempDir(), "nope"))
	if code != exitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("missing --out: exit %d, %q", code, stderr)
	}
	if KubeJanitor == nil {
		code, _, stderr = runCLI("janitor", "--out", t.TempDir(), "--kubeconfig", "kc")
		if code != exitUsage || !strings.Contains(stderr, "--kubeconfig") {
			t.Errorf("--kubeconfig without the kube janitor: exit %d, %q", code, stderr)
		}
	}
	code, stdout, _ := runCLI("janitor", "--out", t.TempDir(), "-o", "json")
	var rep workload.JanitorReport
	if code != exitPass || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Actions == nil {
		t.Errorf("janitor -o json on an empty directory: exit %d, %s", code, stdout)
	}
}
