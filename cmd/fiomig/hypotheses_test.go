package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// TestReproduceHypothesesRanksTheGenerator: the synthetic incident's
// symptoms were made by one declared combination (H2, node restart ·
// partial) on seeds 11-15; over seeds 1-5 --hypotheses ranks H2 first,
// says it is the one combination that reproduces every modelled symptom
// and that this is no evidence it happened, and exits 0. Every run keeps
// plan.json and summary.json but no timeline, and its rerun command
// (--hypothesis H2 --seed 3) gives the same summary.json byte for byte.
func TestReproduceHypothesesRanksTheGenerator(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("reproduce", "testdata/incidents/synthetic-one-combination.yaml", "--hypotheses", "--seeds", "1-5", "--out", out)
	if code != exitPass {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	for _, w := range []string{"A synthetic incident whose symptoms one declared combination made",
		"**1 of the 4 combinations reproduces every modelled symptom:** H2 (node restart · partial).",
		"| 1 | H2 | node restart | partial |", "is not evidence that it happened", "## What would confirm each alternative on a lab",
		"| reconnect reset | partial | assumption | kernel version: a RHEL 9 5.14.0-* kernel on the hosts |"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "hypotheses-synthetic-one-combination-*"))
	if len(dirs) != 1 {
		t.Fatalf("hypotheses directories %v, want one", dirs)
	}
	runs, _ := filepath.Glob(filepath.Join(dirs[0], "H*", "seed-*", "fio-mig-*"))
	if len(runs) != 4*5*2 {
		t.Fatalf("%d run directories, want 4 combinations × 5 seeds × 2 operators", len(runs))
	}
	timelines, _ := filepath.Glob(filepath.Join(dirs[0], "H*", "seed-*", "fio-mig-*", record.TimelineFile))
	if len(timelines) != 0 {
		t.Errorf("timelines kept: %v", timelines)
	}
	h2, _ := filepath.Glob(filepath.Join(dirs[0], "H2", "seed-3", "fio-mig-*"))
	var prefixRun string
	for _, d := range h2 {
		plan, err := record.ReadPlan(filepath.Join(d, record.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		if plan.Params.Model.Operator == record.OperatorPrefix {
			prefixRun = d
			want := "fiomig reproduce testdata/incidents/synthetic-one-combination.yaml --operator=prefix --seed=3 --hypothesis=H2"
			if plan.Command != want || plan.Params.Model.ReconnectReset != record.ReconnectResetPartial {
				t.Errorf("H2 seed 3 plan: command %q, reconnect reset %q; want %q, partial", plan.Command, plan.Params.Model.ReconnectReset, want)
			}
		}
	}
	rerun := t.TempDir()
	if code, so, se := runCLI("reproduce", "testdata/incidents/synthetic-one-combination.yaml", "--operator=prefix", "--seed=3",
		"--hypothesis=H2", "--out", rerun); code != exitPass && code != exitCheckFailed {
		t.Fatalf("rerun: exit %d\n%s\n%s", code, so, se)
	}
	type judged struct {
		Params  record.Params
		Faults  []record.FaultSpec
		Verdict string
		Checks  []record.CheckResult
	}
	var runs2 [2]judged
	for i, d := range []string{prefixRun, runDirOf(t, rerun)} {
		plan, err := record.ReadPlan(filepath.Join(d, record.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		var sum record.Summary
		b, err := os.ReadFile(filepath.Join(d, record.SummaryFile))
		if err == nil {
			err = json.Unmarshal(b, &sum)
		}
		if err != nil {
			t.Fatal(err)
		}
		runs2[i] = judged{plan.Params, plan.Faults, sum.Verdict, sum.Checks}
	}
	if d := cmp.Diff(runs2[0], runs2[1]); d != "" {
		t.Errorf("the rerun command runs another world or judges otherwise (-hypotheses +rerun):\n%s", d)
	}
}

// TestReproduceHypothesesNone: when no declared combination produces the
// symptoms the output says so, names the closest, and exits 1.
func TestReproduceHypothesesNone(t *testing.T) {
	code, stdout, stderr := runCLI("reproduce", "testdata/incidents/synthetic-no-combination.yaml", "--hypotheses", "--seeds", "1-2", "--out", t.TempDir())
	if code != exitCheckFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "**None of the 4 combinations reproduces every modelled symptom.** The closest is ") {
		t.Errorf("output does not say that none does:\n%s", stdout)
	}
	if strings.Contains(stdout, " ✓ |") && strings.Contains(stdout, "4 of 4") {
		t.Errorf("a combination marked as reproducing everything:\n%s", stdout)
	}
}

// TestReproduceHypothesesUsage: --hypotheses needs --seeds, an incident
// with hypotheses and symptoms, the operator the incident ran, and no
// model flag setting a switch a hypothesis sets; --hypothesis names a
// declared combination; --on kube runs --hypotheses only, with at least
// one pod; a pod's --shard takes a farm's settings.
func TestReproduceHypothesesUsage(t *testing.T) {
	syn := "testdata/incidents/synthetic-one-combination.yaml"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{syn, "--hypotheses"}, "--hypotheses runs every combination over --seeds"},
		{[]string{"testdata/incidents/small-healthy.yaml", "--hypotheses", "--seeds", "1-2"}, "declares no hypotheses"},
		{[]string{syn, "--hypotheses", "--seeds", "1-2", "--operator", "fixed"}, "the incident ran the prefix operator"},
		{[]string{syn, "--hypotheses", "--seeds", "1-2", "--reconnect-reset", "partial"}, "--reconnect-reset=partial: a hypothesis of"},
		{[]string{syn, "--hypothesis", "H9"}, `--hypothesis "H9": want H1 to H4`},
		{[]string{syn, "--seeds", "1-2", "--on", "kube"}, "--on kube runs --hypotheses"},
		{[]string{syn, "--hypotheses", "--seeds", "1-2", "--on", "k8s"}, `--on must be kube or empty, got "k8s"`},
		{[]string{"--attach", "fiomig-1-abcd"}, "--attach needs --on kube"},
		{[]string{syn, "--hypotheses", "--seeds", "1-2", "--on", "kube", "--parallelism", "0"}, "--parallelism must be >= 1"},
		{[]string{"--shard", "{}"}, "not the settings of a farm of fiomig reproduce"},
	} {
		code, stdout, stderr := runCLI(append([]string{"reproduce"}, append(tc.args, "--out", t.TempDir())...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q\n%s", tc.args, code, stderr, tc.want, stdout)
		}
	}
}
