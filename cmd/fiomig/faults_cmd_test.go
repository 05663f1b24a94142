package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// TestRunFaultFileErrorsNameFileAndField: a fault file with an unknown
// field or kind, a target the topology does not have, or a migration the
// run does not have, is bad input (exit 2) naming the file, the entry and
// the field; --faults and --fault-file together are refused.
func TestRunFaultFileErrorsNameFileAndField(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ text, want string }{
		{"faults:\n- {kind: target-restart, target: storage-1, when: 5, duration: 2, migrtion: '#1'}\n", `fault 1: unknown field "migrtion"`},
		{"faults:\n- {kind: target-restart, target: storage-1, when: 5, duration: 2}\n- {kind: disk-fire, target: storage-1, when: 9}\n", `fault 2: field "kind": unknown fault kind "disk-fire"`},
		{"faults:\n- {kind: target-restart, target: storage-9, when: 5, duration: 2}\n", `fault 1: field "target": no node "storage-9" in the run's topology (nodes: storage-1, storage-2, storage-3)`},
		{"faults:\n- {kind: ana-flap, target: storage-1, when: 5, duration: 2}\n- {kind: network-partition, target: worker-9/storage-1, when: 5, duration: 2}\n", `fault 2: field "target": no host "worker-9"`},
		{"faults:\n- {kind: reset-controller, target: worker-7, when: 5, params: {node: storage-1}}\n", `fault 1: field "target": no host "worker-7"`},
		// A migration the run does not have (issue 27 item 3): the fault
		// would never fire.
		{"faults:\n- {kind: ana-flap, target: storage-1, when: in-freeze, migration: '#99', duration: 2}\n", `fault 1: field "migration": "#99" names migration 99, but the run has 1 (--migrations)`},
		{"faults:\n- {kind: node-crash, target: storage-1, when: in-freeze, migration: '#1', duration: 2}\n- {kind: aborted-validation, target: '#2'}\n", `fault 2: field "target": "#2" names migration 2, but the run has 1 (--migrations)`},
		// and by its id, as the simulator names migrations (mig-0001 on).
		{"faults:\n- {kind: ana-flap, target: storage-1, when: in-freeze, migration: mig-0099, duration: 2}\n", `fault 1: field "migration": "mig-0099" names migration 99, but the run has 1 (--migrations)`},
		{"faults:\n- {kind: aborted-validation, target: mig-0002}\n", `fault 1: field "target": "mig-0002" names migration 2, but the run has 1 (--migrations)`},
	} {
		path := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("run", "--out", filepath.Join(dir, "out"), "--migrations", "1", "--fault-file", path)
		if code != exitUsage || !strings.Contains(stderr, path) || !strings.Contains(stderr, tc.want) {
			t.Errorf("exit %d, stderr %q; want %d naming %s and %q", code, stderr, exitUsage, path, tc.want)
		}
	}
	code, _, stderr := runCLI("run", "--out", filepath.Join(dir, "out"), "--faults", "none", "--fault-file", filepath.Join(dir, "f.yaml"))
	if code != exitUsage || !strings.Contains(stderr, "not both") {
		t.Errorf("--faults with --fault-file: exit %d, stderr %q", code, stderr)
	}
}

// TestRunCoarseSampleIntervalIsInconclusive: --sample-interval 20 cannot
// judge a 5 s bound: exit 3, naming interval and bound.
func TestRunCoarseSampleIntervalIsInconclusive(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("run", "--out", out, "--faults", "none", "--migrations", "3", "--sample-interval", "20", "--settle", "60", "--release-sources")
	if code != exitInconclusive {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitInconclusive, stdout, stderr)
	}
	for _, want := range []string{"pause-bound            inconclusive sample interval 20 s", "the pause bound 5 s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestRunOverlappingTargetRestarts: two target restarts of one node whose
// windows overlap, from a fault file, through the simulator: the node
// stays down until the last recover; the timeline, plan.json and
// report.md agree on both faults; both landed.
func TestRunOverlappingTargetRestarts(t *testing.T) {
	dir := t.TempDir()
	ff := filepath.Join(dir, "overlap.yaml")
	if err := os.WriteFile(ff, []byte(`faults:
- {kind: target-restart, target: storage-2, when: 20, duration: 10}
- {kind: target-restart, target: storage-2, when: 25, duration: 15}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI("run", "--out", out, "--fault-file", ff, "--migrations", "2", "--settle", "60")
	if code == exitUsage {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	run := runDirOf(t, out)
	lines, err := record.ReadTimeline(filepath.Join(run, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	var fl []record.Line
	restarted := 0.0
	for _, l := range lines {
		if l.Kind == record.KindFault {
			fl = append(fl, l)
		}
		if l.Kind == record.KindKernel && strings.HasPrefix(l.Message, "Successfully reconnected") && restarted == 0 && l.T > 20 {
			restarted = l.T
		}
	}
	if len(fl) != 4 {
		t.Fatalf("fault lines %+v, want 4", fl)
	}
	if fl[0].T != 20 || fl[1].T != 25 || fl[1].Evidence["overlaps"] == "" || fl[2].T != 30 || fl[2].Evidence["effect_held_by"] == "" || fl[3].T != 40 || fl[3].Evidence["reconnecting_controllers"] == "" {
		t.Errorf("fault lines %+v; want inject 20, joined inject 25, held recover 30, real recover 40", fl)
	}
	if restarted < 40 {
		t.Errorf("first reconnect after the restart at %v s; want none before the last recover at 40 s", restarted)
	}
	plan, err := record.ReadPlan(filepath.Join(run, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range plan.Faults {
		if !strings.Contains(f.Params["overlap"], "began at 20 s and ended at 40 s") {
			t.Errorf("plan.json fault %d params %v: want the shared effect 20-40 s", i+1, f.Params)
		}
	}
	var sum record.Summary
	b, _ := os.ReadFile(filepath.Join(run, record.SummaryFile))
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Faults) != 2 || sum.Faults[0].Status != record.FaultLanded || sum.Faults[1].Status != record.FaultLanded {
		t.Errorf("summary faults %+v; want both landed", sum.Faults)
	}
	// plan.json's command reruns the run: a --fault-file run must not
	// also name --faults (the two are refused together).
	args := strings.Fields(strings.TrimPrefix(plan.Command, "fiomig "))
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--faults=") }) {
		t.Errorf("plan.json command names --faults beside --fault-file: %s", plan.Command)
	}
	rerunOut := filepath.Join(dir, "rerun")
	if code2, so, se := runCLI(append(args, "--out", rerunOut)...); code2 != code {
		t.Errorf("rerunning plan.json's command exits %d, the run exited %d\n%s\n%s", code2, code, so, se)
	} else if b2, _ := os.ReadFile(filepath.Join(runDirOf(t, rerunOut), record.SummaryFile)); !bytes.Equal(b, b2) {
		t.Errorf("rerunning plan.json's command gives another summary.json")
	}
	md, _ := os.ReadFile(filepath.Join(run, "report.md"))
	if !strings.Contains(string(md), "| 2 | target-restart | storage-2 |") || !strings.Contains(string(md), "overlaps=target-restart on storage-2 in effect since 20 s") {
		t.Errorf("report.md does not list both restarts with the overlap:\n%s", md)
	}
}

// TestReportJudgesAHoleInOneHostsSamples: a stored run whose timeline lost
// 30 s of one host's samples and heartbeats is re-judged by fiomig report as inconclusive
// (exit 3), naming the host and the range.
func TestReportJudgesAHoleInOneHostsSamples(t *testing.T) {
	out := t.TempDir()
	if code, stdout, stderr := runCLI("run", "--out", out, "--faults", "none", "--migrations", "3", "--settle", "60", "--release-sources"); code != exitPass {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	run := runDirOf(t, out)
	path := filepath.Join(run, record.TimelineFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, ln := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var l record.Line
		if err := json.Unmarshal([]byte(ln), &l); err != nil {
			t.Fatal(err)
		}
		if l.T > 10 && l.T < 40 {
			if l.Kind == record.KindSample && l.Host == "worker-2" {
				continue
			}
			if l.Kind == record.KindHeartbeat && slices.Contains(l.Hosts, "worker-2") {
				// Format version 2: worker-2 sampled unchanged; the hole drops it.
				l.Hosts = slices.DeleteFunc(l.Hosts, func(h string) bool { return h == "worker-2" })
				if len(l.Hosts) == 0 {
					continue
				}
				nb, _ := json.Marshal(l)
				ln = string(nb)
			}
		}
		kept = append(kept, ln)
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("report", run)
	if code != exitInconclusive {
		t.Fatalf("report: exit %d, want %d\n%s\n%s", code, exitInconclusive, stdout, stderr)
	}
	if !strings.Contains(stdout, "host worker-2 unobserved from 10 s to 40 s") {
		t.Errorf("report does not name the host and the range:\n%s", stdout)
	}
}
