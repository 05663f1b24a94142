package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

const reportNQN = "nqn.2023-02.io.simplyblock:vol1"

// writeRunDir writes a run directory holding one migration of one volume
// (NSID 1, consumer host-a, sampled every 0.5 s) from 10.0.0.1:4420 to
// 10.0.0.2:4420 whose cutover leaves the host without an accessible path
// for pause seconds, starting at 20 s; Completed right after; settled to 60 s.
func writeRunDir(t *testing.T, pause float64, faultEvidence bool) string {
	t.Helper()
	dir := t.TempDir()
	plan := record.Plan{
		Tool: "fiomig", Scenario: "migrations", Backend: "sim", Seed: 11, Command: "fiomig run --seed 11",
		Params: record.Params{Migrations: 1, SampleIntervalS: 0.5, PauseCritS: 5, FreezesAllowed: 1, SettleS: 30, AttributionMarginS: 30, Seed: record.DefaultSeedThresholds(),
			Model: record.Model{Volumes: 1, Hosts: 1, ConsumersPerVolume: 1}},
		Topology: record.Topology{
			Hosts:   []record.HostInfo{{Name: "host-a", HostNQN: "nqn.host-a"}},
			Volumes: []record.VolumeInfo{{Name: "vol1", NQN: reportNQN, NSIDs: []int{1}, Consumers: []string{"host-a"}}},
		},
	}
	if err := record.WriteJSON(filepath.Join(dir, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
	tw, err := record.CreateTimeline(filepath.Join(dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	add := func(l record.Line) {
		if err := tw.Append(l); err != nil {
			t.Fatal(err)
		}
	}
	ctrl := func(name, addr, ana string) record.Controller {
		return record.Controller{Name: name, NQN: reportNQN, Address: addr, State: "live", Transport: "tcp",
			Legs: []record.Leg{{NSID: 1, ANA: ana}}}
	}
	phase := func(t float64, p string) {
		l := record.Line{T: t, Kind: record.KindPhase, Migration: "m1", NQN: reportNQN, Phase: p}
		if p == record.PhasePending {
			l.SourceEndpoints, l.TargetEndpoints = []string{"10.0.0.1:4420"}, []string{"10.0.0.2:4420"}
		}
		add(l)
	}
	add(record.Line{T: 0, Kind: record.KindEndpoints, NQN: reportNQN, Endpoints: []string{"10.0.0.1:4420"}})
	for step := 0; step < 120; step++ {
		at := float64(step) * 0.5
		switch at {
		case 10:
			phase(at, record.PhasePending)
		case 20:
			phase(at, record.PhaseRunning)
		case 20 + pause:
			add(record.Line{T: at, Kind: record.KindEndpoints, NQN: reportNQN, Endpoints: []string{"10.0.0.2:4420"}})
			phase(at, record.PhaseCompleted)
		case 30:
			var ev map[string]string
			if faultEvidence {
				ev = map[string]string{"rejected_connects": "2"}
			}
			add(record.Line{T: at, Kind: record.KindFault, Fault: "drop-connect", Action: "inject", Target: "node-2", Evidence: ev})
		}
		var cs []record.Controller
		switch {
		case at < 10:
			cs = []record.Controller{ctrl("nvme0", "10.0.0.1:4420", "optimized")}
		case at < 20:
			cs = []record.Controller{ctrl("nvme0", "10.0.0.1:4420", "optimized"), ctrl("nvme1", "10.0.0.2:4420", "inaccessible")}
		case at < 20+pause:
			cs = []record.Controller{ctrl("nvme0", "10.0.0.1:4420", "inaccessible"), ctrl("nvme1", "10.0.0.2:4420", "inaccessible")}
		default:
			cs = []record.Controller{ctrl("nvme1", "10.0.0.2:4420", "optimized")}
		}
		add(record.Line{T: at, Kind: record.KindSample, Host: "host-a", Controllers: cs,
			Subsystems: []record.Subsystem{{NQN: reportNQN, NSIDs: []int{1}}}})
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestReportPass(t *testing.T) {
	dir := writeRunDir(t, 2, true)
	code, out, errs := runCLI("report", dir)
	if code != exitPass {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{"verdict: pass (seed 11)", "pause-bound", "report: " + filepath.Join(dir, "report.md")} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{record.SummaryFile, "report.md", "plots/pause.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	first, _ := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if code, _, _ := runCLI("report", "--quiet", dir); code != exitPass {
		t.Fatalf("second run exit %d", code)
	}
	second, _ := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if !bytes.Equal(first, second) {
		t.Errorf("summary.json differs between two reports of the same record")
	}
}

func TestReportFailNamesHostOverBound(t *testing.T) {
	dir := writeRunDir(t, 7, true)
	code, out, _ := runCLI("report", dir)
	if code != exitCheckFailed {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Tables and the over-bound list name the subsystem by the part of its
	// NQN after the last ':'; the Volumes section gives the full NQN once.
	if want := "m1 (vol1) on host-a: longest pause 7 s > 5 s"; !strings.Contains(string(md), want) {
		t.Errorf("report.md lacks %q:\n%s", want, md)
	}
	if want := "| vol1 | vol1 | `" + reportNQN + "` |"; !strings.Contains(string(md), want) {
		t.Errorf("report.md lacks %q:\n%s", want, md)
	}
}

func TestReportInconclusive(t *testing.T) {
	dir := writeRunDir(t, 2, false)
	if code, out, _ := runCLI("report", dir); code != exitInconclusive || !strings.Contains(out, "verdict: inconclusive") {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
}

func TestReportBadInput(t *testing.T) {
	if code, _, errs := runCLI("report"); code != exitUsage || !strings.Contains(errs, "want exactly one run directory, got 0") ||
		strings.Count(errs, "\n") != 1 {
		t.Errorf("no argument: exit %d, stderr %q; want one line", code, errs)
	}
	// Flags after the run directory, as everywhere else in fiomig.
	dir := writeRunDir(t, 2, true)
	if code, out, errs := runCLI("report", dir, "--quiet"); code != exitPass || strings.Count(out, "\n") != 1 {
		t.Errorf("report DIR --quiet: exit %d, stdout %q, stderr %q; want one verdict line", code, out, errs)
	}
	if code, _, errs := runCLI("report", "--bogus", "x"); code != exitUsage || !strings.Contains(errs, "bogus") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errs)
	}
	if code, out, _ := runCLI("report", "--help"); code != exitPass || !strings.Contains(out, "Exit codes") {
		t.Errorf("--help: exit %d, stdout %q", code, out)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if code, _, errs := runCLI("report", missing); code != exitUsage || !strings.Contains(errs, "plan") {
		t.Errorf("missing dir: exit %d, stderr %q", code, errs)
	}

	dir = writeRunDir(t, 2, true)
	tl := filepath.Join(dir, record.TimelineFile)
	b, _ := os.ReadFile(tl)
	lines := strings.SplitAfter(string(b), "\n")
	lines[3] = "{not json\n"
	if err := os.WriteFile(tl, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI("report", dir)
	if code != exitUsage || !strings.Contains(errs, tl+":4:") {
		t.Errorf("malformed line 4: exit %d, stderr %q", code, errs)
	}
}

// TestReportMissingFormatLine: a run's timeline (format version 2, as
// plan.json says) without its first line, the format line, is refused in
// one line naming timeline.jsonl:1 and plan.json's timeline_format (exit
// 2), where it used to be judged without a word; the whole record is
// judged as before.
func TestReportMissingFormatLine(t *testing.T) {
	out := t.TempDir()
	if code, stdout, stderr := runCLI("run", "--out", out, "--migrations", "1", "--settle", "5", "--faults", "none"); code == exitUsage {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := runDirOf(t, out)
	if code, stdout, stderr := runCLI("report", dir); code == exitUsage {
		t.Fatalf("whole record: exit %d\n%s\n%s", code, stdout, stderr)
	}
	tl := filepath.Join(dir, record.TimelineFile)
	b, err := os.ReadFile(tl)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	if !strings.Contains(first, `"kind":"format","version":2`) {
		t.Fatalf("line 1 of a default run is not the version-2 format line: %s", first)
	}
	if err := os.WriteFile(tl, []byte(rest), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("report", dir)
	want := tl + ":1: first line is of kind \"endpoints\", but plan.json params.timeline_format says version 2"
	if code != exitUsage || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("format line removed: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", code, stdout, stderr, want)
	}
}

// TestReportTruncatedTimeline: a run killed mid-line is still evaluated up
// to its last complete line, with a warning.
func TestReportTruncatedTimeline(t *testing.T) {
	dir := writeRunDir(t, 2, true)
	tl := filepath.Join(dir, record.TimelineFile)
	f, err := os.OpenFile(tl, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"t":60,"kind":"sam`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, out, errs := runCLI("report", dir)
	if code != exitPass || !strings.Contains(errs, "warning") {
		t.Errorf("truncated: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// cutTimeline keeps the lines of dir's timeline with t <= at (a run killed
// at that instant).
func cutTimeline(t *testing.T, dir string, at float64) {
	t.Helper()
	path := filepath.Join(dir, record.TimelineFile)
	lines, err := record.ReadTimeline(path)
	if err != nil {
		t.Fatal(err)
	}
	tw, err := record.CreateTimeline(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.T <= at {
			if err := tw.Append(l); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// appendPartialLine appends the first bytes of a sample line at t without
// its newline: what a run killed in the middle of a write leaves.
func appendPartialLine(t *testing.T, dir string, at float64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, record.TimelineFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, `{"t":%s,"kind":"sam`, record.FormatT(at)); err != nil {
		t.Fatal(err)
	}
}

// lastCompleted returns the time of the last Completed phase line of dir.
func lastCompleted(t *testing.T, dir string) float64 {
	t.Helper()
	lines, err := record.ReadTimeline(filepath.Join(dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	last := -1.0
	for _, l := range lines {
		if l.Kind == record.KindPhase && l.Phase == record.PhaseCompleted {
			last = l.T
		}
	}
	if last < 0 {
		t.Fatal("no Completed phase line")
	}
	return last
}

// TestReportShortRecordIsInconclusive: a simulated run of 2 migrations
// settled 60 s passes; the same record cut in the middle of the settle
// period (an interrupted run), 0.1 s after the last Completed or 0.5 s
// after the first cutover began (kill -9 mid-migration, a last line cut
// off) is inconclusive (exit 3), with the checks judged on the record's
// end — leaked-controllers, path-completeness, controller-churn's net
// controllers, paths-per-subsystem — not judged, and report.md says the
// record is short.
func TestReportShortRecordIsInconclusive(t *testing.T) {
	out := t.TempDir()
	if code, stdout, stderr := runCLI("run", "--out", out, "--migrations", "2", "--settle", "60", "--faults", "none", "--release-sources"); code != exitPass {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := runDirOf(t, out)
	if code, stdout, _ := runCLI("report", dir); code != exitPass {
		t.Fatalf("whole record: exit %d, want 0\n%s", code, stdout)
	}
	done := lastCompleted(t, dir)
	lines, err := record.ReadTimeline(filepath.Join(dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	running := -1.0 // the first cutover: killed mid-migration 0.5 s after it
	for _, l := range lines {
		if l.Kind == record.KindPhase && l.Phase == record.PhaseRunning {
			running = l.T
			break
		}
	}
	if running < 0 || running+0.5 >= done {
		t.Fatalf("no Running phase before the last Completed at %v s (first Running at %v s)", done, running)
	}
	// A killed run leaves no summary.json (an interrupted one says so in
	// it); a finished run's is not rewritten from a shorter record
	// (TestReportKeepsAFinishedRunsSummary).
	if err := os.Remove(filepath.Join(dir, record.SummaryFile)); err != nil {
		t.Fatal(err)
	}
	cuts := []float64{done + 30, done + 0.1, running + 0.5}
	for i, cut := range cuts {
		cutTimeline(t, dir, cut)
		if i == len(cuts)-1 { // the cut before reads whole lines only
			// kill -9 mid-write: a last line cut off too.
			appendPartialLine(t, dir, cut)
		}
		code, stdout, stderr := runCLI("report", dir)
		if code != exitInconclusive {
			t.Errorf("cut at %v s: exit %d, want 3\n%s", cut, code, stdout)
		}
		for _, want := range []string{"leaked-controllers     inconclusive not judged: the record is short",
			"path-completeness      inconclusive not judged: the record is short",
			// judged on the record's end too: not judged on a short one
			"controller-churn       inconclusive net controllers not judged: the record is short",
			"paths-per-subsystem    inconclusive not judged: the record is short"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("cut at %v s: stdout lacks %q:\n%s", cut, want, stdout)
			}
		}
		if strings.Contains(stdout, "no leaked controller") {
			t.Errorf("cut at %v s: a short record reports no leaked controller:\n%s", cut, stdout)
		}
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), "- Record: **SHORT** — the record is short") {
			t.Errorf("cut at %v s: report.md does not say the record is short:\n%s", cut, md)
		}
		if !strings.Contains(stderr, "warning: the record is short") {
			t.Errorf("cut at %v s: stderr %q lacks the warning", cut, stderr)
		}
	}
}

// TestRunZeroMigrationsIsInconclusive: a run with no migration is a record
// too thin to judge: exit 3 from run and from report.
func TestRunZeroMigrationsIsInconclusive(t *testing.T) {
	out := t.TempDir()
	code, stdout, _ := runCLI("run", "--out", out, "--migrations", "0", "--settle", "5")
	if code != exitInconclusive || !strings.Contains(stdout, "no migration in the record") {
		t.Fatalf("run --migrations 0: exit %d, want 3 naming no migration\n%s", code, stdout)
	}
	if code, stdout, _ := runCLI("report", runDirOf(t, out)); code != exitInconclusive {
		t.Errorf("report: exit %d, want 3\n%s", code, stdout)
	}
}

// TestRunAttributionMarginZero: with --attribution-margin=0 served after
// cutover is judged at the first sample after Completed, which the control
// plane reports between two samples.
func TestRunAttributionMarginZero(t *testing.T) {
	out := t.TempDir()
	code, stdout, _ := runCLI("run", "--out", out, "--migrations", "2", "--settle", "10", "--attribution-margin=0", "--faults=none", "--release-sources")
	if code != exitPass || !strings.Contains(stdout, "served-after-cutover   pass") {
		t.Fatalf("exit %d, want 0 with served-after-cutover pass\n%s", code, stdout)
	}
}

// editPlan rewrites dir's plan.json with one string replacement.
func editPlan(t *testing.T, dir, old, new string) {
	t.Helper()
	path := filepath.Join(dir, record.PlanFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), old, new, 1)
	if s == string(b) {
		t.Fatalf("plan.json has no %q", old)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// nullTopology sets plan.json's topology to null.
func nullTopology(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, record.PlanFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["topology"] = nil
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReportRejectsBadThresholds: thresholds and topology the checks would
// judge wrongly with are bad input (exit 2) naming the field.
func TestReportRejectsBadThresholds(t *testing.T) {
	for _, tc := range []struct{ name, old, new, want string }{
		{"pause_crit_s null", `"pause_crit_s": 5`, `"pause_crit_s": null`, "params.pause_crit_s"},
		{"pause_crit_s missing", `"pause_crit_s": 5,`, ``, "params.pause_crit_s"},
		{"pause_crit_s 0", `"pause_crit_s": 5`, `"pause_crit_s": 0`, "params.pause_crit_s"},
		{"pause_crit_s -1", `"pause_crit_s": 5`, `"pause_crit_s": -1`, "params.pause_crit_s"},
		{"freezes_allowed -1", `"freezes_allowed": 1`, `"freezes_allowed": -1`, "params.freezes_allowed"},
		{"settle_s -1", `"settle_s": 30`, `"settle_s": -1`, "params.settle_s"},
		{"attribution_margin_s -1", `"attribution_margin_s": 30`, `"attribution_margin_s": -1`, "params.attribution_margin_s"},
		{"topology null", "", "", "topology.hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeRunDir(t, 2, true)
			if tc.old == "" {
				nullTopology(t, dir)
			} else {
				editPlan(t, dir, tc.old, tc.new)
			}
			code, _, errs := runCLI("report", dir)
			if code != exitUsage || !strings.Contains(errs, tc.want) || !strings.Contains(errs, record.PlanFile) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s in plan.json", code, errs, tc.want)
			}
		})
	}
}

// insertLine puts line before the n-th line (1-based) of dir's timeline
// and returns the timeline's path.
func insertLine(t *testing.T, dir string, n int, line string) string {
	t.Helper()
	path := filepath.Join(dir, record.TimelineFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines = append(lines[:n-1], append([]string{line + "\n"}, lines[n-1:]...)...)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lineAt returns the 1-based number of the first timeline line of dir at
// or after t.
func lineAt(t *testing.T, dir string, at float64) int {
	t.Helper()
	lines, err := record.ReadTimeline(filepath.Join(dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		if l.T >= at {
			return i + 1
		}
	}
	t.Fatalf("no line at or after %v s", at)
	return 0
}

// TestReportRejectsOutOfOrderAndForeignSamples: a sample with t=1 among
// lines at 32 s (it would make a freeze) and a sample of a host the plan
// does not know are bad input, named by file:line.
func TestReportRejectsOutOfOrderAndForeignSamples(t *testing.T) {
	dir := writeRunDir(t, 2, true)
	n := lineAt(t, dir, 32.5)
	tl := insertLine(t, dir, n, `{"t":1,"kind":"sample","host":"host-a","controllers":[]}`)
	code, _, errs := runCLI("report", dir)
	if want := fmt.Sprintf("%s:%d: t went backwards: 1 after 32", tl, n); code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("out-of-order sample: exit %d, stderr %q; want 2 and %q", code, errs, want)
	}

	dir = writeRunDir(t, 2, true)
	n = lineAt(t, dir, 32.5)
	tl = insertLine(t, dir, n, `{"t":32.5,"kind":"sample","host":"host-z","controllers":[]}`)
	code, _, errs = runCLI("report", dir)
	if want := fmt.Sprintf("%s:%d: sample of host \"host-z\", which is not in plan.json topology.hosts", tl, n); code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("foreign host: exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
}

// TestReportTruncatedLineInReport: a last line cut off mid-write is said in
// report.md, not only on stderr.
func TestReportTruncatedLineInReport(t *testing.T) {
	dir := writeRunDir(t, 2, true)
	f, err := os.OpenFile(filepath.Join(dir, record.TimelineFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"t":60,"kind":"sam`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	runCLI("report", dir)
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "- Timeline: **TRUNCATED** — the last line of timeline.jsonl was cut off") {
		t.Errorf("report.md does not say the timeline is truncated:\n%s", md)
	}
}

// markFioRun makes dir's plan.json say --workload=fio, as RunFio writes it.
func markFioRun(t *testing.T, dir string) {
	t.Helper()
	plan, err := record.ReadPlan(filepath.Join(dir, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	plan.Params.Workload, plan.Params.FioRateIOPS = "fio", 100
	if err := record.WriteJSON(filepath.Join(dir, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
}

// A --workload=fio run whose fio/ is gone (or whose fio/vol1 is) is not a
// pass with the fio checks dropped: plan.json says fio ran, so the three
// fio checks stay, inconclusive, naming what is missing; exit 3.
func TestReportFioRunWithoutFioEvidence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layout func(t *testing.T, dir string)
		detail string
	}{
		{"fio/ deleted", func(*testing.T, string) {}, "fio/ missing: the fio evidence of this --workload=fio run is gone"},
		{"fio/vol1 deleted", func(t *testing.T, dir string) {
			wl := record.FioWorkload{EpochMs: 1, RateIOPS: 100, Volumes: []record.FioWorkloadVolume{
				{Volume: "vol1", NQN: reportNQN, NSID: 1, Host: "host-a", Dir: "fio/vol1", ExitCode: 128}}}
			if err := os.MkdirAll(filepath.Join(dir, record.FioDir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := record.WriteJSON(filepath.Join(dir, record.FioDir, record.FioWorkloadFile), wl); err != nil {
				t.Fatal(err)
			}
		}, "vol1: fio logged no completion (fio/vol1 missing: this volume's fio evidence is gone)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeRunDir(t, 2, true)
			markFioRun(t, dir)
			tc.layout(t, dir)
			code, out, errs := runCLI("report", dir)
			if code != exitInconclusive {
				t.Errorf("exit %d, want %d (inconclusive)\nstdout:\n%s\nstderr:\n%s", code, exitInconclusive, out, errs)
			}
			var sum record.Summary
			if b, err := os.ReadFile(filepath.Join(dir, record.SummaryFile)); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, c := range sum.Checks {
				if strings.HasPrefix(c.Name, "fio-") {
					n++
					if c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, tc.detail) {
						t.Errorf("%s = %s %q; want inconclusive containing %q", c.Name, c.Verdict, c.Detail, tc.detail)
					}
				}
			}
			if n != 3 || sum.Verdict != record.Inconclusive {
				t.Errorf("%d fio checks, verdict %s; want 3, inconclusive", n, sum.Verdict)
			}
		})
	}
}

// TestReportSwimlanesFlag: --swimlanes takes a number >= 1 or all; anything
// else is bad usage naming the flag.
func TestReportSwimlanesFlag(t *testing.T) {
	dir := writeRunDir(t, 2, true)
	for _, v := range []string{"0", "-3", "some"} {
		code, _, errs := runCLI("report", dir, "--swimlanes", v)
		if code != exitUsage || !strings.Contains(errs, "--swimlanes must be a number >= 1 or all") {
			t.Errorf("--swimlanes %s: exit %d, stderr %q; want 2 naming the flag", v, code, errs)
		}
	}
	for _, v := range []string{"all", "1"} {
		code, out, errs := runCLI("report", dir, "--swimlanes", v)
		if code != exitPass {
			t.Errorf("--swimlanes %s: exit %d\n%s%s", v, code, out, errs)
		}
		if _, err := os.Stat(filepath.Join(dir, reports.SwimlaneFile("m1", "png"))); err != nil {
			t.Errorf("--swimlanes %s: %v", v, err)
		}
	}
}

// TestReportOfASweepDirectorySaysSo: fiomig report given a sweep
// directory says it is one and what to give instead, not only that
// plan.json is missing.
func TestReportOfASweepDirectorySaysSo(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, record.SweepFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("report", dir)
	want := dir + " is a sweep directory (" + record.SweepFile + "): report takes one of its seed-N run directories"
	if code != exitUsage || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("exit %d, stderr %q; want %d, one line with %q", code, stderr, exitUsage, want)
	}
}

// TestReportKeepsAFinishedRunsSummary: a finished run's timeline damaged
// afterwards — cut mid-line two thirds in, or emptied — is not re-judged
// in place: exit 2 naming summary.json and --out, and summary.json keeps
// its bytes (before, it was rewritten inconclusive and the run's verdict
// was lost). With --out the damaged record is judged elsewhere (exit 3,
// short) and the run directory is still untouched; a run whose summary
// says it was interrupted is judged in place as before.
func TestReportKeepsAFinishedRunsSummary(t *testing.T) {
	parent := t.TempDir()
	run := runInto(t, parent, "run", exitPass, "--migrations", "2", "--settle", "35", "--faults", "none")
	tl := filepath.Join(run, record.TimelineFile)
	good, err := os.ReadFile(tl)
	if err != nil {
		t.Fatal(err)
	}
	sumPath := filepath.Join(run, record.SummaryFile)
	sum, err := os.ReadFile(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, damaged := range map[string][]byte{"cut mid-line": good[:len(good)*2/3], "emptied": nil} {
		if err := os.WriteFile(tl, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("report", run, "--quiet")
		if code != exitUsage || !strings.Contains(stderr, sumPath+" says the run finished (verdict pass)") || !strings.Contains(stderr, "--out DIR") {
			t.Errorf("%s: report in place: exit %d, stderr %q; want 2 naming summary.json and --out", name, code, stderr)
		}
		if now, _ := os.ReadFile(sumPath); !bytes.Equal(now, sum) {
			t.Errorf("%s: summary.json rewritten from the damaged timeline", name)
		}
		elsewhere := filepath.Join(parent, "rejudged-"+strings.ReplaceAll(name, " ", "-"))
		if code, _, stderr := runCLI("report", run, "--out", elsewhere, "--quiet"); code != exitInconclusive {
			t.Errorf("%s: report --out: exit %d, want 3 (a short record): %s", name, code, stderr)
		}
		if now, _ := os.ReadFile(sumPath); !bytes.Equal(now, sum) {
			t.Errorf("%s: report --out touched the run's summary.json", name)
		}
	}
	// An interrupted run's summary says so: its short record is judged in place.
	interrupted := strings.Replace(string(sum), `"verdict": "pass"`, `"interrupted": true, "verdict": "pass"`, 1)
	if interrupted == string(sum) {
		t.Fatalf("summary.json has no \"verdict\": \"pass\" to mark interrupted:\n%s", sum)
	}
	writeFile(t, run, record.SummaryFile, interrupted)
	if err := os.WriteFile(tl, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("report", run, "--quiet"); code != exitInconclusive {
		t.Errorf("interrupted run, short record: report in place exit %d, want 3: %s", code, stderr)
	}
}

// TestReportOfASweepSeedWithoutTimeline: a passing seed of a sweep keeps
// no timeline (--timelines failing); report of its directory says so and
// gives the command that reruns it, not only "no such file" (newcomer
// pass).
func TestReportOfASweepSeedWithoutTimeline(t *testing.T) {
	out := t.TempDir()
	if code, stdout, stderr := runCLI("sweep", "--seeds", "2", "--migrations", "2", "--settle", "35", "--faults", "none", "--self-check", "0", "--out", out); code != exitPass {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, stdout, stderr)
	}
	seeds, _ := filepath.Glob(filepath.Join(out, "sweep-*", "seed-2"))
	if len(seeds) != 1 {
		t.Fatalf("no seed-2 directory under %s", out)
	}
	code, _, stderr := runCLI("report", seeds[0])
	want := "the sweep kept no timeline for this seed (fiomig sweep --timelines); its plan reruns it byte for byte: fiomig run --faults=none --migrations=2 --seed=2 --settle=35"
	if code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("report of a sweep seed without timeline: exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
}
