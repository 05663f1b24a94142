package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

func TestReproduceUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"reproduce"}, exitUsage, "name the incident"},
		{[]string{"reproduce", "fio-mig-1"}, exitUsage, "unknown incident"},
		{[]string{"reproduce", incidents.Default, "extra"}, exitUsage, "unexpected argument"},
		{[]string{"reproduce", incidents.Default, "--list"}, exitUsage, "--list lists the whole catalogue and runs nothing"},
		{[]string{"reproduce", incidents.Default, "--operator", "nightly"}, exitUsage, "--operator"},
		{[]string{"reproduce", "--reconnect-reset", "sometimes", incidents.Default}, exitUsage, "--reconnect-reset"},
		{[]string{"reproduce", incidents.Default, "--kernel-dnr", "maybe"}, exitUsage, "--kernel-dnr"},
		{[]string{"reproduce", incidents.Default, "--seed", "x"}, exitUsage, "invalid value"},
		{[]string{"reproduce", "--help"}, exitPass, "Usage: fiomig reproduce NAME"},
		{[]string{"reproduce", "--list"}, exitPass, incidents.Default + " "},
		{[]string{"reproduce", "--list", "--catalog", "testdata/incidents"}, exitPass, "small-healthy "},
		{[]string{"reproduce", "testdata/bad-incident.yaml"}, exitUsage, `testdata/bad-incident.yaml: line 8: topology.volumez: not a model setting`},
		{[]string{"reproduce", incidents.Default, "--faults", "some"}, exitUsage, "--faults must be none"},
		{[]string{"reproduce", incidents.Default, "--seed", "3", "--seeds", "1-2"}, exitUsage, "--seed is one run's"},
		{[]string{"reproduce", incidents.Default, "--seeds", "2-1"}, exitUsage, "ends before it starts"},
		// A negative --seeds value reaches the one parser (not read as a flag).
		{[]string{"reproduce", incidents.Default, "--seeds", "-1--3"}, exitUsage, `range "-1--3" ends before it starts`},
	} {
		var stdout, stderr bytes.Buffer
		code := dispatch(tc.args, &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, code, tc.code, stderr.String())
		}
		if !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: output does not mention %q:\n%s%s", tc.args, tc.want, stdout.String(), stderr.String())
		}
	}
}

// TestReproduceOutIsAFile: --out naming a file is bad usage (exit 2)
// naming the flag and the path, before any work — nothing printed on
// stdout (not even the parameters) and nothing created beside the file —
// for one seed and for --seeds alike, as fiomig run does.
func TestReproduceOutIsAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "--out " + file + " is a file, want a directory"
	for _, args := range [][]string{
		{"reproduce", incidents.Default, "--out", file},
		{"reproduce", incidents.Default, "--operator", "both", "--seeds", "1-2", "--out", file},
		{"run", "--out", file},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != exitUsage || !strings.Contains(stderr, want) || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, %q, nothing on stdout", args, code, stdout, stderr, want)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 1 {
		t.Errorf("%s holds %d entries (%v), want only the file", dir, len(ents), err)
	}
}

// TestReproduceFixed runs the whole incident with the fixed operator (flags
// after and before the incident name): the side-by-side table on stdout, a
// normal run directory plus reproduce.md, and an exit code that follows the
// expectations printed — 0 only with "every expectation holds: yes"; with "NO" each missed
// criterion is listed and explained by at least one note, and the exit is
// 1, or 3 when the run's faults left no evidence.
func TestReproduceFixed(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"reproduce", "--seed", "2", incidents.Default, "--operator", "fixed", "--out", out}, &stdout, &stderr)
	s := stdout.String()
	for _, want := range []string{
		"migrations failed on path validation", "controllers at the end / expected", "healthy + leaked; endpoints missing",
		"leaked controllers", "CONNECT rejections/min at the end", "pods killed", "longest pause", "every expectation holds: ",
		"--operator=fixed --seed=2",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("stdout lacks %q:\n%s", want, s)
		}
	}
	inconclusive := strings.Contains(s, "faults: inconclusive")
	switch {
	case strings.Contains(s, "every expectation holds: yes"):
		if code != exitPass && !(inconclusive && code == exitInconclusive) {
			t.Errorf("shape yes: exit %d, want 0 (3 if a fault left no evidence)\n%s", code, s)
		}
		if !regexp.MustCompile(`leaked controllers\s+0 \(`).MatchString(s) {
			t.Errorf("fixed shows its shape with leaked controllers:\n%s", s)
		}
	case strings.Contains(s, "every expectation holds: NO"):
		want := exitCheckFailed
		if inconclusive {
			want = exitInconclusive
		}
		if code != want {
			t.Errorf("shape NO: exit %d, want %d\n%s", code, want, s)
		}
		if !strings.Contains(s, "    - ") {
			t.Errorf("shape NO without the missed criteria and their notes:\n%s", s)
		}
	default:
		t.Fatalf("exit %d, no shape printed\nstdout:\n%s\nstderr:\n%s", code, s, stderr.String())
	}
	dir := runDirOf(t, out)
	for _, f := range []string{record.PlanFile, record.TimelineFile, record.SummaryFile, "report.md", reports.ReproduceFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	plan, err := record.ReadPlan(filepath.Join(dir, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Faults) == 0 || plan.Params.Model.Operator != "fixed" || plan.Params.SettleS != 9000 ||
		plan.Params.SettleSampleIntervalS != 10 || plan.Params.Migrations != 23 {
		t.Errorf("plan.json: faults %+v, params %+v; want the incident's schedule and parameters", plan.Faults, plan.Params)
	}
}

// TestReproduceBothOneSeedExitsByTheBands: fiomig reproduce --operator
// both on one seed describes the two runs without judging them, and its
// exit code is the bands' alone: 0 when both runs show "every expectation
// holds: yes" and every fault left evidence, 1 when one shows NO with its
// faults' evidence, 3 when only a fault without evidence stands in the way.
func TestReproduceBothOneSeedExitsByTheBands(t *testing.T) {
	out := t.TempDir()
	code, s, stderr := runCLI("reproduce", incidents.Default, "--operator", "both", "--out", out)
	if n := strings.Count(s, "every expectation holds: "); n != 2 {
		t.Fatalf("exit %d, %d shapes printed, want 2\n%s\n%s", code, n, s, stderr)
	}
	// Each run's block, from "== OP: validation failures" to its report line.
	failed, inconclusive := false, false
	for _, op := range []string{"prefix", "fixed"} {
		i := strings.Index(s, "\n== "+op+": validation failures")
		if i < 0 {
			t.Fatalf("no %s block:\n%s", op, s)
		}
		block := s[i:]
		block = block[:strings.Index(block, "  report: ")]
		runInconclusive := strings.Contains(block, "faults: inconclusive")
		inconclusive = inconclusive || runInconclusive
		failed = failed || (strings.Contains(block, "every expectation holds: NO") && !runInconclusive)
	}
	want := exitPass
	switch {
	case failed:
		want = exitCheckFailed
	case inconclusive:
		want = exitInconclusive
	}
	if code != want {
		t.Errorf("exit %d, want %d from the bands alone\n%s", code, want, s)
	}
	if !strings.Contains(s, "described, not judged") || strings.Contains(s, "compare fixed-le-prefix-confined") {
		t.Errorf("one seed's comparison is not just described:\n%s", s)
	}
	// The incident is told first; its symptoms stand beside the prefix run
	// (the operator it ran), and the output says what exit 0 means.
	for _, w := range []string{incidents.Default + ": 16 of 23 migrations failed", "observed symptoms** (6 modelled, 1 not modelled), over seed 1 of the prefix operator",
		"| rejected CONNECTs a minute | 146 | sourced |", "exit 0 means those held, not that the incident's symptoms were reproduced"} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "fio-mig-*"))
	if len(dirs) != 2 {
		t.Fatalf("run directories %v, want 2", dirs)
	}
	for _, d := range dirs {
		md, err := os.ReadFile(filepath.Join(d, reports.ReproduceFile))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), "described, not judged") || !strings.Contains(string(md), "--operator both --seeds 1-10") {
			t.Errorf("%s/reproduce.md does not describe the pair as not judged", d)
		}
	}
}

// TestReproduceIncidentFromFile: an incident written only as a file (no
// Go names it) runs through fiomig reproduce, from a catalogue directory
// and by path, and its expectations are judged (exit 0: they hold).
func TestReproduceIncidentFromFile(t *testing.T) {
	for _, args := range [][]string{
		{"reproduce", "small-healthy", "--catalog", "testdata/incidents"},
		{"reproduce", "testdata/incidents/small-healthy.yaml"},
	} {
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := dispatch(append(args, "--out", out), &stdout, &stderr)
		s := stdout.String()
		if code != exitPass || !strings.Contains(s, "every expectation holds: yes") || !strings.Contains(s, "check freezes") {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, s, stderr.String())
		}
		plan, err := record.ReadPlan(filepath.Join(runDirOf(t, out), record.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		if plan.Params.Migrations != 3 || plan.Params.Model.Hosts != 2 || plan.Params.Incident != "small-healthy" {
			t.Errorf("%v: plan params %+v, want the file's", args, plan.Params)
		}
	}
}

// TestReproduceSeeds: --seeds runs every seed into its own directory and
// writes the seeds table (seed × operator, failures by cause) and, with
// both operators, the comparison over the seeds by cause; every run's plan
// names its seed and, with --faults none, says the faults were dropped.
// small-healthy's own band says no validation fails in either operator, so
// nothing the fix removes occurs: the comparison is not exercised (exit
// 3), never a vacuous pass, though its intervals are all [0, 0].
func TestReproduceSeeds(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"reproduce", "small-healthy", "--catalog", "testdata/incidents", "--seeds", "1-3",
		"--operator", "both", "--faults", "none", "--out", out}, &stdout, &stderr)
	if code != exitInconclusive {
		t.Fatalf("exit %d, want %d (not exercised)\n%s\n%s", code, exitInconclusive, stdout.String(), stderr.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "reproduce-small-healthy-*"))
	if len(dirs) != 1 {
		t.Fatalf("seeds directories %v, want one", dirs)
	}
	md, err := os.ReadFile(filepath.Join(dirs[0], reports.ReproduceFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"three migrations on a healthy 3-node cluster", "| 1 | fixed | 0 of 3 |", "| 3 | prefix | 0 of 3 |",
		"The incident file lists no observed symptoms.", "## Fixed against prefix over 3 seeds",
		"**not exercised** (want pass) — nothing the fix removes occurred", "| total | total (≤ δ) | +0 +0 +0 | +0.00 | 0.00 | [+0.00, +0.00] | pass |",
		"Method: paired t-interval", "exit 0 means"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("reproduce.md lacks %q:\n%s", w, md)
		}
	}
	for _, seed := range []int64{1, 2, 3} {
		runs, _ := filepath.Glob(filepath.Join(dirs[0], fmt.Sprintf("seed-%d", seed), "fio-mig-*"))
		ops := map[string]bool{}
		for _, run := range runs {
			plan, err := record.ReadPlan(filepath.Join(run, record.PlanFile))
			if err != nil {
				t.Fatal(err)
			}
			ops[plan.Params.Model.Operator] = true
			if plan.Seed != seed || !strings.HasPrefix(plan.Params.FaultSchedule, "none") || !strings.Contains(plan.Command, "--faults=none") {
				t.Errorf("seed %d: plan seed %d, fault_schedule %q, command %q", seed, plan.Seed, plan.Params.FaultSchedule, plan.Command)
			}
		}
		if len(runs) != 2 || !ops["prefix"] || !ops["fixed"] {
			t.Errorf("seed %d: runs %v of operators %v, want one prefix and one fixed", seed, runs, ops)
		}
	}
}

// TestReproduceRetriedCutoverIncident: fiomig reproduce fiomig-1787171993
// exits 0, and the freezes and data-integrity checks fail on exactly the
// four sourced migrations, each with its sourced freezes and lost blocks.
func TestReproduceRetriedCutoverIncident(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("reproduce", "fiomig-1787171993", "--out", out)
	if code != exitPass || !strings.Contains(stdout, "every expectation holds: yes") ||
		!strings.Contains(stdout, "reproduces 1 of the 1 observed symptoms") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(runDirOf(t, out), record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum record.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	four := []string{"mig-0020", "mig-0029", "mig-0038", "mig-0042"}
	for _, c := range sum.Checks {
		if (c.Name == "freezes" || c.Name == "data-integrity") && (c.Verdict != record.Fail || strings.Join(c.Failing, " ") != strings.Join(four, " ")) {
			t.Errorf("%s: %s on %v, want fail on exactly %v", c.Name, c.Verdict, c.Failing, four)
		}
	}
	freezes := map[string]int{}
	for _, m := range sum.Migrations {
		if m.Freezes > 1 {
			freezes[m.ID] = m.Freezes
		}
	}
	if d := cmp.Diff(map[string]int{"mig-0020": 2, "mig-0029": 4, "mig-0038": 5, "mig-0042": 5}, freezes); d != "" {
		t.Errorf("migrations with more than one freeze (-sourced +got):\n%s", d)
	}
	for _, c := range sum.Checks {
		if c.Name == "data-integrity" && !strings.Contains(c.Detail, "mig-0020 5 block(s), mig-0029 4 block(s), mig-0038 2 block(s), mig-0042 2 block(s)") {
			t.Errorf("data-integrity detail %q lacks the sourced blocks per migration", c.Detail)
		}
	}
}

// TestReproduceNotesAreTheIncidentsOwn: each incident prints only its own
// notes. fio-mig-1787159565's context (the 6 s and 8 s pauses that killed 8
// of 10 pods; connecting leaks 2.5 h later) is its file's, not printed
// under fixed-operator-source-paths (which has no pods: no pod note at
// all) nor fiomig-1787171993; fio-mig-1787159565 still prints it.
func TestReproduceNotesAreTheIncidentsOwn(t *testing.T) {
	for _, tc := range []struct {
		incident    string
		want, never []string
	}{
		{"fixed-operator-source-paths", []string{"note: the kernel removed"}, []string{"8 of 10 pods", "2.5 h later", "no fio pod died", "ctrl_loss_tmo 3600"}},
		{"fiomig-1787171993", []string{"note: no fio pod died: no pause exceeded the pods' tolerance\n"}, []string{"8 of 10 pods", "2.5 h later"}},
		{"fio-mig-1787159565", []string{"killed 8 of 10 pods have no sourced cause"}, nil},
	} {
		code, stdout, stderr := runCLI("reproduce", tc.incident, "--operator", "fixed", "--out", t.TempDir())
		if code == exitUsage {
			t.Fatalf("%s: exit %d: %s", tc.incident, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: no %q in:\n%s", tc.incident, w, stdout)
			}
		}
		for _, n := range tc.never {
			if strings.Contains(stdout, n) {
				t.Errorf("%s prints another incident's note %q", tc.incident, n)
			}
		}
	}
}

// TestReproduceBadFaultParamIsALoadError: an incident file's scheduled
// fault with a param its kind does not read (lost_blcks for lost_blocks)
// is an error at load, naming the file, the line and the entry, before
// any run directory is made — not a failed reproduction, nor an error at
// run start naming only "fault schedule entry 1".
func TestReproduceBadFaultParamIsALoadError(t *testing.T) {
	b, err := os.ReadFile("../../incidents/fiomig-1787171993.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "fiomig-1787171993.yaml")
	text := strings.Replace(string(b), `lost_blocks: "4"`, `lost_blcks: "4"`, 1)
	if text == string(b) {
		t.Fatal("test edit did not apply")
	}
	line := 1 + strings.Count(text[:strings.Index(text, "lost_blcks")], "\n")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, _, stderr := runCLI("reproduce", file, "--out", out)
	want := fmt.Sprintf("%s: line %d: faults.scheduled[1]: ", file, line)
	if code != exitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, `"lost_blcks"`) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q; want %d, one line with %q naming lost_blcks", code, stderr, exitUsage, want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a bad incident file left %s (%v)", out, err)
	}
}
