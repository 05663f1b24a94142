package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/record"
)

func TestShrinkUsageErrorsExitTwo(t *testing.T) {
	// A passing run, and a directory that is not a run directory.
	out := t.TempDir()
	if code := dispatch([]string{"run", "--migrations", "1", "--settle", "35", "--faults", "none", "--release-sources", "--out", out}, &bytes.Buffer{}, &bytes.Buffer{}); code != exitPass {
		t.Fatalf("setup run: exit %d", code)
	}
	passing := runDirOf(t, out)
	// The same run, its plan.json claiming real fio (wall clock).
	fioRun := filepath.Join(t.TempDir(), "fio-run")
	if err := os.Mkdir(fioRun, 0o755); err != nil {
		t.Fatal(err)
	}
	plan, err := record.ReadPlan(filepath.Join(passing, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	plan.Params.Workload = record.WorkloadFio
	if err := record.WriteJSON(filepath.Join(fioRun, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(passing, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, fioRun, record.SummaryFile, string(sum))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"shrink"}, "name the failing run directory"},
		{[]string{"shrink", t.TempDir()}, "is not a run directory"},
		{[]string{"shrink", "shrink_cmd.go"}, "is not a run directory"},
		{[]string{"shrink", passing}, "did not fail (verdict pass)"},
		{[]string{"shrink", fioRun}, "ran real fio (--workload=fio)"},
		{[]string{"shrink", passing, "other"}, "unexpected argument"},
		{[]string{"shrink", "--bogus", passing}, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(tc.args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, exitUsage)
		}
		if !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: stderr %q, want one line containing %q", tc.args, stderr.String(), tc.want)
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(out, "shrink-*")); len(entries) != 0 {
		t.Errorf("bad usage left %v", entries)
	}
}

func TestShrinkHelpTeaches(t *testing.T) {
	var stdout bytes.Buffer
	if code := dispatch([]string{"shrink", "--help"}, &stdout, &bytes.Buffer{}); code != exitPass {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"RUNDIR", "--check", "faults.yaml", "command.txt", "--migrations", "Exit codes"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("shrink --help does not mention %q", want)
		}
	}
}

// writeFile writes text to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShrinkKeepsTheCheckFailingWithFewerFaults: a run made to fail by a
// fault (a storage node crashed for 20 s in a cutover), with three more
// faults beside it, shrinks to fewer faults and no more migrations; the
// minimal schedule's fault file, rerun with the command shrink wrote, fails
// the same check.
func TestShrinkKeepsTheCheckFailingWithFewerFaults(t *testing.T) {
	out := t.TempDir()
	file := writeFile(t, out, "faults.yaml", `faults:
- {kind: node-crash, target: storage-1, when: in-freeze, migration: "#2", duration: 20}
- {kind: target-restart, target: storage-2, when: in-freeze, migration: "#3", duration: 20}
- {kind: reset-controller, target: worker-1, when: before-cutover, migration: "#1", params: {node: storage-1}}
- {kind: ana-flap, target: storage-3, when: after-cutover, migration: "#4", duration: 3}
`)
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"run", "--migrations", "4", "--settle", "35", "--control-plane", "sbcli", "--release-sources", "--fault-file", file, "--out", out}, &stdout, &stderr); code != exitCheckFailed {
		t.Fatalf("setup run: exit %d, want %d (the faults should fail a check)\n%s\n%s", code, exitCheckFailed, stdout.String(), stderr.String())
	}
	runDir := runDirOf(t, out)
	plan, err := record.ReadPlan(filepath.Join(runDir, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}

	stdout.Reset()
	stderr.Reset()
	if code := dispatch([]string{"shrink", runDir, "--out", out}, &stdout, &stderr); code != exitPass {
		t.Fatalf("shrink exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitPass, stdout.String(), stderr.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "shrink-*"))
	if len(dirs) != 1 {
		t.Fatalf("want one shrink directory, got %v", dirs)
	}
	dir := dirs[0]
	var res harness.ShrinkResult
	b, err := os.ReadFile(filepath.Join(dir, harness.ShrinkRecord))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	minimal, err := faults.ParseFile(filepath.Join(dir, harness.ShrinkFaultFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(minimal) == 0 || len(minimal) >= len(plan.Faults) || res.Faults != len(minimal) || res.Migrations > plan.Params.Migrations {
		t.Errorf("minimal schedule: %d faults (shrink.json %d) of %d, %d migrations of %d; want fewer faults, at least one",
			len(minimal), res.Faults, len(plan.Faults), res.Migrations, plan.Params.Migrations)
	}
	if !strings.Contains(stderr.String(), "shrink: try 1:") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	checkFails := func(runDir string) bool {
		var sum record.Summary
		b, err := os.ReadFile(filepath.Join(runDir, record.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		for _, c := range sum.Checks {
			if c.Name == res.Check {
				return c.Verdict == record.Fail
			}
		}
		return false
	}
	if !checkFails(runDir) {
		t.Fatalf("shrink.json check %q does not fail in the original run", res.Check)
	}
	if !checkFails(filepath.Join(dir, harness.ShrinkRunDir)) {
		t.Errorf("the kept minimal run does not fail %s", res.Check)
	}
	cmd, err := os.ReadFile(filepath.Join(dir, harness.ShrinkCommand))
	if err != nil {
		t.Fatal(err)
	}
	rerun := t.TempDir()
	args := append(commandArgs(t, strings.TrimSpace(string(cmd))), "--out", rerun)
	if code := dispatch(args, &bytes.Buffer{}, &stderr); code != exitCheckFailed {
		t.Fatalf("rerun %v: exit %d, want %d\n%s", args, code, exitCheckFailed, stderr.String())
	}
	if !checkFails(runDirOf(t, rerun)) {
		t.Errorf("command.txt's rerun does not fail %s", res.Check)
	}
}

// TestShrinkRefusesARunThatDoesNotFailAgain: a passing run whose
// summary.json was doctored to claim a failure is rerun, passes, and
// shrink says it is not reproducible (exit 1) rather than shrinking it.
func TestShrinkRefusesARunThatDoesNotFailAgain(t *testing.T) {
	out := t.TempDir()
	if code := dispatch([]string{"run", "--migrations", "1", "--settle", "35", "--faults", "none", "--release-sources", "--out", out}, &bytes.Buffer{}, &bytes.Buffer{}); code != exitPass {
		t.Fatalf("setup run: exit %d", code)
	}
	runDir := runDirOf(t, out)
	p := filepath.Join(runDir, record.SummaryFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var sum record.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	sum.Verdict, sum.Checks[0].Verdict = record.Fail, record.Fail
	if err := record.WriteJSON(p, sum); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"shrink", runDir}, &stdout, &stderr); code != exitCheckFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitCheckFailed, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "not reproducible") {
		t.Errorf("stderr does not say not reproducible:\n%s", stderr.String())
	}
}

// TestShrinkMigrationOutcomesKeepsItsCause (newcomer pass): seed 5 of the
// main job fails migration-outcomes on sbcli's subsystem-loss window
// (docs/faults.md): more migrations fail than its schedule ends by
// design. Its shrink took 1 migration and 1 connect-rejected fault —
// "0 of 1 completed", a failure by construction that has lost the cause.
// The minimal run must still have more migrations not completed than its
// faults may end by design (faults.EndsByDesign), and say so.
func TestShrinkMigrationOutcomesKeepsItsCause(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"run", "--seed", "5", "--out", out}, &stdout, &stderr); code != exitCheckFailed {
		t.Fatalf("seed 5: exit %d, want 1 (migration-outcomes)\n%s", code, stdout.String())
	}
	runDir := runDirOf(t, out)
	if v := checkVerdict(t, runDir, checks.CheckMigrationOutcomes); v != record.Fail {
		t.Fatalf("seed 5: migration-outcomes %s, want fail", v)
	}
	stdout.Reset()
	stderr.Reset()
	if code := dispatch([]string{"shrink", runDir, "--check", checks.CheckMigrationOutcomes, "--out", out}, &stdout, &stderr); code != exitPass {
		t.Fatalf("shrink: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "shrink-*"))
	if len(dirs) != 1 {
		t.Fatalf("want one shrink directory, got %v", dirs)
	}
	minimal, err := faults.ParseFile(filepath.Join(dirs[0], harness.ShrinkFaultFile))
	if err != nil {
		t.Fatal(err)
	}
	sum := readSummary(t, filepath.Join(dirs[0], harness.ShrinkRunDir))
	completed := 0
	for _, m := range sum.Migrations {
		if m.Outcome == record.PhaseCompleted {
			completed++
		}
	}
	plan, err := record.ReadPlan(filepath.Join(dirs[0], harness.ShrinkRunDir, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	if notDone, ends := plan.Params.Migrations-completed, faults.EndsByDesign(minimal); notDone <= ends {
		t.Errorf("minimal run: %d of %d migrations not completed, its %d faults may end %d by design: it fails by construction\n%s",
			notDone, plan.Params.Migrations, len(minimal), ends, stdout.String())
	}
	if !strings.Contains(stderr.String(), "more than the") || !strings.Contains(stderr.String(), "fail only by design") {
		t.Errorf("stderr does not say what the shrink keeps and what it refused:\n%s", stderr.String())
	}
}
