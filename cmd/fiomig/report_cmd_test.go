package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
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
		Params: record.Params{Migrations: 1, Volumes: 1, Hosts: 1, ConsumersPerVolume: 1, SampleIntervalS: 0.5,
			PauseCritS: 5, FreezesAllowed: 1, SettleS: 30, AttributionMarginS: 30},
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
	if want := "m1 (" + reportNQN + ") on host-a: longest pause 7 s > 5 s"; !strings.Contains(string(md), want) {
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
	if code, _, errs := runCLI("report"); code != exitUsage || !strings.Contains(errs, "Usage: fiomig report") {
		t.Errorf("no argument: exit %d, stderr %q", code, errs)
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

	dir := writeRunDir(t, 2, true)
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
