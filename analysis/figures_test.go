package analysis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
)

func TestComputeIncidentFigures(t *testing.T) {
	nqnA, nqnB := "nqn.a", "nqn.b"
	plan := record.Plan{Seed: 9, Params: record.Params{Model: record.Model{Operator: "prefix", ReconnectReset: "partial"}},
		Topology: record.Topology{
			Hosts:   []record.HostInfo{{Name: "h1"}, {Name: "h2"}},
			Volumes: []record.VolumeInfo{{Name: "a", NQN: nqnA, Consumers: []string{"h1"}}, {Name: "b", NQN: nqnB, Consumers: []string{"h2"}}}}}
	ph := func(tm float64, mig, nqn, phase string) record.Line {
		return record.Line{T: tm, Kind: record.KindPhase, Migration: mig, NQN: nqn, Phase: phase}
	}
	kern := func(tm float64, host, ctrl, msg string) record.Line {
		return record.Line{T: tm, Kind: record.KindKernel, Host: host, Controller: ctrl, Message: msg}
	}
	tgt := func(tm float64, node string, n int64) record.Line {
		return record.Line{T: tm, Kind: record.KindTarget, Node: node, RejectedConnects: record.Int64(n)}
	}
	lines := []record.Line{
		{T: 0, Kind: record.KindEndpoints, NQN: nqnA, Endpoints: []string{"10.0.0.1:4426", "10.0.0.2:4426"}},
		{T: 0, Kind: record.KindEndpoints, NQN: nqnB, Endpoints: []string{"10.0.0.1:4428"}},
		kern(0, "h1", "nvme0", `new ctrl: NQN "nqn.a", addr 10.0.0.1:4426, hostnqn: x`),
		ph(10, "mig-0001", nqnA, record.PhasePending),
		ph(10.5, "mig-0001", nqnA, record.PhaseValidating),
		kern(12, "h1", "nvme3", `new ctrl: NQN "nqn.a", addr 10.0.0.3:4430, hostnqn: x`),
		{T: 12.5, Kind: record.KindFault, Fault: "target-restart", Action: "inject", Target: "storage-3", Evidence: map[string]string{"ports_down": "3"}},
		// First failure: a refused connect, no controller blamed.
		{T: 14, Kind: record.KindPhase, Migration: "mig-0001", NQN: nqnA, Phase: record.PhaseFailed,
			Reason: "NVMe path validation failed on h1: connect 10.0.0.3:4430: refused"},
		ph(30, "mig-0002", nqnA, record.PhasePending),
		// Second failure: details name the controller and its origin.
		{T: 35, Kind: record.KindPhase, Migration: "mig-0002", NQN: nqnA, Phase: record.PhaseFailed,
			Reason:  "NVMe path validation failed on h1: stale-endpoint nvme3",
			Details: map[string]string{"host": "h1", "controller": "nvme3", "endpoint": "10.0.0.3:4430", "state": "connecting", "origin": "mig-0001", "detail": "stale-endpoint nvme3"}},
		ph(40, "mig-0003", nqnA, record.PhasePending),
		// Third failure: no details; the origin comes from the kernel's
		// "new ctrl" line of nvme3 on h1 (at 12 s, inside mig-0001).
		{T: 45, Kind: record.KindPhase, Migration: "mig-0003", NQN: nqnA, Phase: record.PhaseFailed,
			Reason: "NVMe path validation failed on h1: target path 10.0.0.3:4430 on nvme3 is connecting"},
		// nvme3 (a leak of mig-0001) comes back live: a healed leak.
		kern(50, "h1", "nvme3", "Successfully reconnected (3 attempt)"),
		// A CSI controller reconnecting is no healed leak.
		kern(50, "h1", "nvme0", "Successfully reconnected (1 attempt)"),
		ph(50, "mig-0004", nqnB, record.PhasePending),
		ph(60, "mig-0004", nqnB, record.PhaseCompleted),
		{T: 70, Kind: record.KindIO, Pod: "fio-a", PodState: "killed", Reason: "no I/O"},
		{T: 71, Kind: record.KindIO, Pod: "fio-b", PodState: "running"},
		kern(80, "h2", "nvme7", "Removing controller (1)..."),
		tgt(100, "storage-1", 10), tgt(100, "storage-2", 0),
		tgt(1000, "storage-1", 400), tgt(1000, "storage-2", 100),
		{T: 1200, Kind: record.KindSample, Host: "h1", Controllers: []record.Controller{
			{Name: "nvme0", NQN: nqnA, Address: "10.0.0.1:4426", State: "live", Legs: []record.Leg{{NSID: 1, ANA: "optimized"}}},
			{Name: "nvme3", NQN: nqnA, Address: "10.0.0.3:4430", State: "connecting", Legs: []record.Leg{}},
			{Name: "nvme4", NQN: nqnA, Address: "10.0.0.3:4426", State: "live", Legs: []record.Leg{}},
			{Name: "nvme5", NQN: "nqn.foreign", Address: "10.9.9.9:4420", State: "live"},
		}, Subsystems: []record.Subsystem{{NQN: nqnA, NSIDs: []int{1}}}},
		{T: 1200, Kind: record.KindSample, Host: "h2", Controllers: []record.Controller{
			{Name: "nvme1", NQN: nqnB, Address: "10.0.0.1:4428", State: "live", Legs: []record.Leg{{NSID: 1, ANA: "optimized"}}},
		}, Subsystems: []record.Subsystem{{NQN: nqnB, NSIDs: []int{1}}}},
	}
	sum := record.Summary{
		LeakedControllers: []record.Leak{
			{Host: "h1", Controller: "nvme3", State: "connecting", Kind: "stale-endpoint"},
			{Host: "h1", Controller: "nvme4", State: "live", Kind: "no-namespace"},
		},
		Stats:        record.Stats{MaxPauseS: 2.4},
		Unattributed: []record.HostWindow{{Host: "h2", NQN: nqnB, Window: [2]float64{500, 506.5}}},
	}
	got := ComputeIncidentFigures(plan, lines, sum)
	want := IncidentFigures{
		Operator: "prefix", Seed: 9, ReconnectReset: "partial", Migrations: 4, Volumes: 2,
		Outcomes:         map[string]int{record.PhaseFailed: 3, record.PhaseCompleted: 1},
		ValidationFailed: 3, LeakCaused: 2,
		Failures: []ValidationFailure{
			// No node of the plan has the endpoint's ip, so the fault on
			// storage-3 is not matched to it: unexplained.
			{Migration: "mig-0001", NQN: nqnA, AtS: 14, Host: "h1", Signal: "refused", Cause: "unexplained (refused)", Detail: "NVMe path validation failed on h1: connect 10.0.0.3:4430: refused"},
			{Migration: "mig-0002", NQN: nqnA, AtS: 35, Host: "h1", Controller: "nvme3", Endpoint: "10.0.0.3:4430", State: "connecting",
				Origin: "mig-0001", OriginSource: "record", LeakCaused: true, Signal: "leak", Cause: CauseConnectingLeak, Detail: "stale-endpoint nvme3"},
			{Migration: "mig-0003", NQN: nqnA, AtS: 45, Host: "h1", Controller: "nvme3", Origin: "mig-0001", OriginSource: "timeline",
				LeakCaused: true, Signal: "leak", Cause: CauseConnectingLeak, Detail: "NVMe path validation failed on h1: target path 10.0.0.3:4430 on nvme3 is connecting"},
		},
		ControllersPerHost: map[string]int{"h1": 3, "h2": 1}, ExpectedPerHost: map[string]int{"h1": 2, "h2": 1},
		Controllers: 4, Expected: 3,
		Leaked: 2, LeakedByState: map[string]int{"connecting": 1, "live": 1}, LeakedConnecting: 1, LeakedLiveNoNamespace: 1, LeakedConnectingOrNoNamespace: 2,
		LeaksRemovedByKernel: 1, LeaksHealed: 1,
		// Every kind once, summing to Leaked; nvme3 was born inside the
		// failed mig-0001, nvme4 has no "new ctrl" line (a volume path).
		LeakedKinds: map[string]int{"connecting": 1, "live no namespace": 1},
		LeakOrigins: map[string]int{"validation of a failed migration": 1, "volume path (csi)": 1},
		// h1 nvme0/nvme3/nvme4 + h2 nvme1 (the foreign nvme5 not counted), 2 leaked.
		Healthy: 2, MissingEndpoints: []record.MissingEndpoint{},
		FailureCauses:        map[string]int{CauseConnectingLeak: 2, "unexplained (refused)": 1},
		FailedFixRemovedLeak: 2, FailedUnexplained: 1,
		Plans: map[string]string{"mig-0001": "nqn.a  -> ", "mig-0002": "nqn.a  -> ", "mig-0003": "nqn.a  -> ", "mig-0004": "nqn.b  -> "},
		// (400+100) - (10+0) rejections over the last 600 s (600..1200): the
		// counters at 600 s are those reported at 100 s.
		RejectionsPerMin: 49, RejectionWindowS: 600,
		PodsKilled: 1, PodsKilledList: []string{"fio-a"},
		// Its io line names no volume: nothing to account its outage to.
		PodKills:      []PodKill{{Pod: "fio-a", AtS: 70, Cause: CauseUnexplained}},
		LongestPauseS: 6.5, FaultsInjected: 1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("figures (-want +got):\n%s", d)
	}
}

func TestIncidentLinesKeepsWhatTheFiguresNeed(t *testing.T) {
	path := filepath.Join(t.TempDir(), record.TimelineFile)
	tw, err := record.CreateTimeline(path)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 3<<20) // a line longer than the reader's buffer
	all := []record.Line{
		{T: 0, Kind: record.KindEndpoints, NQN: "nqn.a", Endpoints: []string{"10.0.0.1:4426"}},
		{T: 1, Kind: record.KindSample, Host: "h1", Controllers: []record.Controller{{Name: "nvme0", NQN: "nqn.a", State: "live"}}},
		{T: 1, Kind: record.KindKernel, Host: "h1", Controller: "nvme0", Message: `new ctrl: NQN "nqn.a", addr 10.0.0.1:4426`},
		{T: 2, Kind: record.KindKernel, Host: "h1", Controller: "nvme0", Message: "Reconnecting in 2 seconds..."},
		{T: 2, Kind: record.KindIO, Pod: "fio-a", PodState: "running", Completed: record.Int64(5)},
		{T: 3, Kind: record.KindIO, Pod: "fio-a", PodState: "killed", Reason: long},
		{T: 4, Kind: record.KindSample, Host: "h1", Controllers: []record.Controller{{Name: "nvme0", NQN: "nqn.a", State: "connecting"}}},
		{T: 5, Kind: record.KindKernel, Host: "h1", Controller: "nvme0", Message: "Failed reconnect attempt 1/1800"},
		{T: 5, Kind: record.KindKernel, Host: "h1", Controller: "nvme0", Message: `Connect Invalid Data Parameter, subsysnqn "nqn.a"`},
		// A failed validation keeps each host's sample before it.
		{T: 6, Kind: record.KindPhase, Migration: "mig-0001", NQN: "nqn.a", Phase: record.PhaseFailed, Reason: "x"},
		{T: 7, Kind: record.KindSample, Host: "h1", Controllers: []record.Controller{{Name: "nvme0", NQN: "nqn.a", State: "live"}}},
	}
	for _, l := range all {
		if err := tw.Append(l); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	got, err := IncidentLines(path)
	if err != nil {
		t.Fatal(err)
	}
	// The last line (a sample) comes twice: as h1's last sample and as the last line.
	want := []record.Line{all[0], all[2], all[5], all[8], all[6], all[9], all[10], all[10]}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("IncidentLines (-want +got):\n%s", d)
	}
	// The same lines kept as a run appends them.
	var k IncidentKeeper
	for _, l := range all {
		k.Add(l)
	}
	if d := cmp.Diff(want, k.Lines()); d != "" {
		t.Errorf("IncidentKeeper (-want +got):\n%s", d)
	}
	if err := os.WriteFile(path, []byte(`{"t":0,"kind":"phase",`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := IncidentLines(path); err == nil || !strings.Contains(err.Error(), path+":1") {
		t.Errorf("malformed line: error %v, want it to name %s:1", err, path)
	}
}

// TestCancelLossesFromTheRecord: a volume path at a source endpoint of a
// migration cancelled before continue (Failed, never Running) that is left
// connecting is a "leaked" cancel loss; one the kernel removed, leaving the
// endpoint without a controller, a "missing" one; a later validation of the
// same volume rejected on that node names the cancel. A migration that ran
// (entered Running) before it failed is no such cancel.
func TestCancelLossesFromTheRecord(t *testing.T) {
	plan := record.Plan{Params: record.Params{Model: record.Model{Operator: "fixed"}},
		Topology: record.Topology{Hosts: []record.HostInfo{{Name: "h1"}},
			Volumes: []record.VolumeInfo{{Name: "a", NQN: "nqn.a", Consumers: []string{"h1"}}, {Name: "b", NQN: "nqn.b", Consumers: []string{"h1"}}}}}
	pend := func(tm float64, mig, nqn string, src ...string) record.Line {
		return record.Line{T: tm, Kind: record.KindPhase, Migration: mig, NQN: nqn, Phase: record.PhasePending, SourceEndpoints: src}
	}
	ph := func(tm float64, mig, nqn, phase string) record.Line {
		return record.Line{T: tm, Kind: record.KindPhase, Migration: mig, NQN: nqn, Phase: phase}
	}
	kern := func(tm float64, ctrl, msg string) record.Line {
		return record.Line{T: tm, Kind: record.KindKernel, Host: "h1", Controller: ctrl, Message: msg}
	}
	lines := []record.Line{
		{T: 0, Kind: record.KindEndpoints, NQN: "nqn.a", Endpoints: []string{"10.0.0.1:4426", "10.0.0.3:4426"}},
		{T: 0, Kind: record.KindEndpoints, NQN: "nqn.b", Endpoints: []string{"10.0.0.1:4428", "10.0.0.3:4428"}},
		kern(0, "nvme2", `new ctrl: NQN "nqn.a", addr 10.0.0.3:4426, hostnqn: x`),
		kern(0, "nvme5", `new ctrl: NQN "nqn.b", addr 10.0.0.3:4428, hostnqn: x`),
		pend(10, "mig-0001", "nqn.a", "10.0.0.1:4426", "10.0.0.3:4426"),
		ph(20, "mig-0001", "nqn.a", record.PhaseFailed),
		pend(25, "mig-0002", "nqn.b", "10.0.0.1:4428", "10.0.0.3:4428"),
		ph(30, "mig-0002", "nqn.b", record.PhaseFailed),
		pend(35, "mig-0003", "nqn.a", "10.0.0.1:4426", "10.0.0.3:4426"),
		{T: 40, Kind: record.KindPhase, Migration: "mig-0003", NQN: "nqn.a", Phase: record.PhaseFailed,
			Reason:  "NVMe path validation failed on h1: connect 10.0.0.3:4430: rejected",
			Details: map[string]string{"host": "h1", "endpoint": "10.0.0.3:4430", "detail": "connect 10.0.0.3:4430: rejected: x"}},
		// A migration of b that ran before failing: no cancel before continue.
		pend(50, "mig-0004", "nqn.b", "10.0.0.1:4428", "10.0.0.3:4428"),
		ph(55, "mig-0004", "nqn.b", record.PhaseRunning),
		ph(60, "mig-0004", "nqn.b", record.PhaseFailed),
		kern(100, "nvme5", "Removing controller (1)..."),
		{T: 200, Kind: record.KindSample, Host: "h1", Controllers: []record.Controller{
			{Name: "nvme0", NQN: "nqn.a", Address: "10.0.0.1:4426", State: "live"},
			{Name: "nvme1", NQN: "nqn.b", Address: "10.0.0.1:4428", State: "live"},
			{Name: "nvme2", NQN: "nqn.a", Address: "10.0.0.3:4426", State: "connecting"},
			{Name: "nvme9", NQN: "nqn.a", Address: "10.0.0.2:4426", State: "deleting"},
		}},
	}
	sum := record.Summary{
		LeakedControllers: []record.Leak{{Host: "h1", Controller: "nvme2", NQN: "nqn.a", Address: "10.0.0.3:4426", State: "connecting", Kind: "not-live"}},
		MissingEndpoints:  []record.MissingEndpoint{{Host: "h1", NQN: "nqn.b", Endpoint: "10.0.0.3:4428"}},
		Checks: []record.CheckResult{{Name: "leaked-controllers", Verdict: record.Fail}, {Name: "path-completeness", Verdict: record.Fail},
			{Name: "faults-landed", Verdict: record.Pass}},
	}
	f := ComputeIncidentFigures(plan, lines, sum)
	want := []CancelLoss{
		{What: "leaked", Host: "h1", Controller: "nvme2", NQN: "nqn.a", Endpoint: "10.0.0.3:4426", Migration: "mig-0001", AtS: 20},
		{What: "missing", Host: "h1", Controller: "nvme5", NQN: "nqn.b", Endpoint: "10.0.0.3:4428", Migration: "mig-0002", AtS: 30},
	}
	if d := cmp.Diff(want, f.CancelLosses); d != "" {
		t.Errorf("cancel losses (-want +got):\n%s", d)
	}
	if len(f.Failures) != 1 || f.Failures[0].Signal != "rejected" || f.Failures[0].Cause != "unexplained (rejected)" {
		t.Errorf("failures %+v; want mig-0003 rejected, unexplained (the target did not say the subsystem was missing)", f.Failures)
	}
	// The deleting nvme9 is not counted (the leak check does not judge it).
	if f.Controllers != 3 || f.Expected != 4 || f.Healthy != 2 || len(f.MissingEndpoints) != 1 {
		t.Errorf("controllers %d / expected %d, healthy %d, missing %d; want 3 / 4, 2, 1", f.Controllers, f.Expected, f.Healthy, len(f.MissingEndpoints))
	}
	notes := strings.Join(IncidentNotes(f, incidents.Notes{}), "\n")
	for _, w := range []string{"cancel of mig-0001", "cancel of mig-0002", "_cleanup_created"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
}

// TestFaultsOutlasted: a fault that landed during a validation which then
// passed is named; one whose migration failed validation, or that landed
// outside every validation, is not.
func TestFaultsOutlasted(t *testing.T) {
	ph := func(at float64, id, phase string) record.Line {
		return record.Line{T: at, Kind: record.KindPhase, Migration: id, NQN: "nqn.a", Phase: phase}
	}
	fault := func(at float64, kind, target string) record.Line {
		return record.Line{T: at, Kind: record.KindFault, Fault: kind, Action: "inject", Target: target,
			Evidence: map[string]string{"x": "1"}}
	}
	lines := []record.Line{
		ph(0, "mig-0001", record.PhasePending), ph(1, "mig-0001", record.PhaseValidating),
		fault(2, "dropped-connects", "storage-1"), ph(9, "mig-0001", record.PhaseRunning),
		ph(20, "mig-0001", record.PhaseCompleted),
		fault(25, "target-restart", "storage-2"), // between migrations
		ph(30, "mig-0002", record.PhasePending), ph(31, "mig-0002", record.PhaseValidating),
		fault(32, "target-restart", "storage-3"), ph(40, "mig-0002", record.PhaseFailed),
	}
	var landed []record.Line
	for _, l := range lines {
		if l.Kind == record.KindFault {
			landed = append(landed, l)
		}
	}
	got := faultsOutlasted(lines, landed, []ValidationFailure{{Migration: "mig-0002"}})
	if d := cmp.Diff([]string{"dropped-connects storage-1 during mig-0001"}, got); d != "" {
		t.Errorf("faults outlasted (-want +got):\n%s", d)
	}
}
