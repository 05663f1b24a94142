package analysis

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// TestFailureCauses: one synthetic record per cause of docs/sources.md
// §9.4, each failure classified from the record alone.
func TestFailureCauses(t *testing.T) {
	const nqn = "nqn.a"
	plan := record.Plan{Params: record.Params{Model: record.Model{Operator: "prefix"}},
		Topology: record.Topology{Nodes: []record.Node{{Name: "storage-1", IP: "10.0.0.1"}, {Name: "storage-2", IP: "10.0.0.2"},
			{Name: "storage-3", IP: "10.0.0.3"}}, Hosts: []record.HostInfo{{Name: "h1"}},
			Volumes: []record.VolumeInfo{{Name: "a", NQN: nqn, NSIDs: []int{1, 2}, Consumers: []string{"h1"}}}}}
	src := []string{"10.0.0.1:4426", "10.0.0.2:4426", "10.0.0.3:4426"}
	pend := func(tm float64, mig string) record.Line {
		return record.Line{T: tm, Kind: record.KindPhase, Migration: mig, NQN: nqn, Phase: record.PhasePending, SourceEndpoints: src,
			TargetEndpoints: []string{"10.0.0.1:4430", "10.0.0.2:4430", "10.0.0.3:4430"}}
	}
	fail := func(tm float64, mig string, d map[string]string) record.Line {
		return record.Line{T: tm, Kind: record.KindPhase, Migration: mig, NQN: nqn, Phase: record.PhaseFailed,
			Reason: "NVMe path validation failed on h1: " + d["detail"], Details: d}
	}
	kern := func(tm float64, ctrl, msg string) record.Line {
		return record.Line{T: tm, Kind: record.KindKernel, Host: "h1", Controller: ctrl, Message: msg}
	}
	sample := func(tm float64, c ...record.Controller) record.Line {
		return record.Line{T: tm, Kind: record.KindSample, Host: "h1", Controllers: c,
			Subsystems: []record.Subsystem{{NQN: nqn, NSIDs: []int{1, 2}}}}
	}
	ctrl := func(name, addr, state string, legs ...record.Leg) record.Controller {
		return record.Controller{Name: name, NQN: nqn, Address: addr, State: state, Legs: legs}
	}
	inacc := func(ns int) record.Leg { return record.Leg{NSID: ns, ANA: "inaccessible"} }
	lines := []record.Line{
		// mig-0001: dropped CONNECTs on storage-1 fail its validation:
		// injected fault. Its cancel (before continue) deletes the
		// subsystem on the source's tertiary, storage-3.
		pend(0, "mig-0001"),
		{T: 1, Kind: record.KindFault, Fault: "dropped-connects", Action: "inject", Target: "storage-1", Evidence: map[string]string{"n": "1"}},
		kern(2, "nvme5", `new ctrl: NQN "nqn.a", addr 10.0.0.3:4430, hostnqn: x`),
		kern(2, "nvme6", `new ctrl: NQN "nqn.a", addr 10.0.0.2:4430, hostnqn: x`),
		kern(2, "nvme7", `new ctrl: NQN "nqn.a", addr 10.0.0.1:4430, hostnqn: x`),
		fail(180, "mig-0001", map[string]string{"host": "h1", "endpoint": "10.0.0.1:4430", "detail": "connect 10.0.0.1:4430: no-answer: x"}),
		{T: 200, Kind: record.KindFault, Fault: "dropped-connects", Action: "recover", Target: "storage-1"},
		// mig-0002, long after the fault: its own target path is mig-0001's
		// leak, connecting, its reconnects answered "Could not find
		// subsystem": the sbcli subsystem-loss window, the leak its symptom.
		pend(300, "mig-0002"),
		kern(302, "nvme5", `Connect Invalid Data Parameter, subsysnqn "nqn.a"`),
		fail(303, "mig-0002", map[string]string{"host": "h1", "controller": "nvme5", "endpoint": "10.0.0.3:4430", "state": "connecting",
			"origin": "mig-0001", "detail": "target path 10.0.0.3:4430 on nvme5 is connecting"}),
		// mig-0003: the fixed operator's view of the same window: its
		// connect rejected, the target naming the missing subsystem.
		pend(310, "mig-0003"),
		fail(315, "mig-0003", map[string]string{"host": "h1", "endpoint": "10.0.0.3:4430",
			"detail": "connect 10.0.0.3:4430: rejected: Connect Invalid Data Parameter (target: Could not find subsystem 'nqn.a')"}),
		// mig-0004: mig-0001's leak nvme6 live with a leg to namespace 1
		// only: a partial-leg leak.
		pend(320, "mig-0004"),
		sample(324, ctrl("nvme6", "10.0.0.2:4430", "live", inacc(1)), ctrl("nvme7", "10.0.0.1:4430", "live", inacc(1), inacc(2))),
		fail(325, "mig-0004", map[string]string{"host": "h1", "controller": "nvme6", "endpoint": "10.0.0.2:4430", "state": "live",
			"origin": "mig-0001", "detail": "controller-not-contributing (controller) nqn.a [nvme6]"}),
		// mig-0005: mig-0001's leak nvme7, live, every leg inaccessible:
		// parked at tgt.ter.
		pend(330, "mig-0005"),
		fail(335, "mig-0005", map[string]string{"host": "h1", "controller": "nvme7", "endpoint": "10.0.0.1:4430", "state": "live",
			"origin": "mig-0001", "detail": "stale-endpoint (controller) nqn.a [nvme7]"}),
		// mig-0006: refused at storage-2 with no fault and no missing
		// subsystem: unexplained.
		pend(340, "mig-0006"),
		fail(345, "mig-0006", map[string]string{"host": "h1", "endpoint": "10.0.0.2:4430", "detail": "connect 10.0.0.2:4430: refused"}),
		// mig-0007: the fixed operator's verify finds no controller (its
		// connect did not take effect): the host was answered "Could not
		// find subsystem" for the NQN and storage-3 counted such an answer.
		{T: 350, Kind: record.KindTarget, Node: "storage-3", RejectedConnects: record.Int64(10), NotAllowedConnects: record.Int64(4)},
		pend(351, "mig-0007"),
		kern(352, "nvme9", `Connect Invalid Data Parameter, subsysnqn "nqn.a"`),
		{T: 360, Kind: record.KindTarget, Node: "storage-3", RejectedConnects: record.Int64(11), NotAllowedConnects: record.Int64(4)},
		fail(358, "mig-0007", map[string]string{"host": "h1", "endpoint": "10.0.0.3:4430",
			"detail": "missing target path 10.0.0.3:4430: no controller — the connect did not take effect"}),
		// mig-0008: the same with storage-2's counter only "not allowed":
		// no evidence its subsystem was missing, unexplained.
		{T: 370, Kind: record.KindTarget, Node: "storage-2", RejectedConnects: record.Int64(10), NotAllowedConnects: record.Int64(10)},
		pend(371, "mig-0008"),
		kern(372, "nvme9", `Connect Invalid Data Parameter, subsysnqn "nqn.a"`),
		{T: 380, Kind: record.KindTarget, Node: "storage-2", RejectedConnects: record.Int64(11), NotAllowedConnects: record.Int64(11)},
		fail(378, "mig-0008", map[string]string{"host": "h1", "endpoint": "10.0.0.2:4430",
			"detail": "missing target path 10.0.0.2:4430: no controller — the connect did not take effect"}),
	}
	f := ComputeIncidentFigures(plan, lines, record.Summary{})
	got := map[string]string{}
	for _, v := range f.Failures {
		got[v.Migration] = v.Cause
		// The latest cancel before continue of the volume is named.
		if wantBy := map[string]string{"mig-0002": "mig-0001", "mig-0003": "mig-0002", "mig-0007": "mig-0006"}[v.Migration]; wantBy != v.CancelledBy {
			t.Errorf("%s: cancelled by %q, want %q", v.Migration, v.CancelledBy, wantBy)
		}
	}
	want := map[string]string{
		"mig-0001": "injected fault (dropped-connects)",
		"mig-0002": CauseSubsystemLoss,
		"mig-0003": CauseSubsystemLoss,
		"mig-0004": CauseZeroLegLeak,
		"mig-0005": CauseParkedLeak,
		"mig-0006": "unexplained (refused)",
		"mig-0007": CauseSubsystemLoss,
		"mig-0008": "unexplained (other)",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("causes (-want +got):\n%s", d)
	}
	if f.FailedSubsystemLoss != 3 || f.FailedFixRemovedLeak != 2 || f.FailedInjectedFault != 1 || f.FailedUnexplained != 2 {
		t.Errorf("by class: loss %d, fix-removed %d, fault %d, unexplained %d; want 3, 2, 1, 2",
			f.FailedSubsystemLoss, f.FailedFixRemovedLeak, f.FailedInjectedFault, f.FailedUnexplained)
	}
	// A failure 62 s after the fault's recovery is past the grace: the
	// same refusal at storage-1 is then no injected fault.
	late := append(lines[:6:6], lines[6],
		pend(270, "mig-0009"),
		fail(263+FaultGraceS, "mig-0009", map[string]string{"host": "h1", "endpoint": "10.0.0.1:4430", "detail": "connect 10.0.0.1:4430: refused"}))
	for _, v := range ComputeIncidentFigures(plan, late, record.Summary{}).Failures {
		if v.Migration == "mig-0009" && v.Cause != "unexplained (refused)" {
			t.Errorf("refusal after the fault's grace: cause %q, want unexplained (refused)", v.Cause)
		}
	}
}

// TestFailureCauseRestartListener: a node restart spanning a migration's
// CreateMigration leaves its target listener missing until the cutover, so
// a validation failing at that target address long after the restart's
// grace is put down to the restart — shown by SPDK's "does not allow host
// ... to connect at this address" in the failure, or by the node's count of
// such answers rising since it came back — and only then.
func TestFailureCauseRestartListener(t *testing.T) {
	const nqn = "nqn.a"
	plan := record.Plan{Params: record.Params{Model: record.Model{Operator: "fixed"}},
		Topology: record.Topology{Nodes: []record.Node{{Name: "storage-1", IP: "10.0.0.1"}, {Name: "storage-2", IP: "10.0.0.2"},
			{Name: "storage-3", IP: "10.0.0.3"}}, Hosts: []record.HostInfo{{Name: "h1"}},
			Volumes: []record.VolumeInfo{{Name: "a", NQN: nqn, NSIDs: []int{1}, Consumers: []string{"h1"}}}}}
	src := []string{"10.0.0.1:4426", "10.0.0.2:4426", "10.0.0.3:4426"}
	dst := []string{"10.0.0.1:4430", "10.0.0.2:4430", "10.0.0.3:4430"}
	start := func(tm float64, mig string) []record.Line {
		return []record.Line{
			{T: tm, Kind: record.KindPhase, Migration: mig, NQN: nqn, Phase: record.PhasePending, SourceEndpoints: src, TargetEndpoints: dst},
			{T: tm + 0.5, Kind: record.KindPhase, Migration: mig, NQN: nqn, Phase: record.PhaseValidating},
		}
	}
	fail := func(tm float64, mig, ep, detail string) record.Line {
		return record.Line{T: tm, Kind: record.KindPhase, Migration: mig, NQN: nqn, Phase: record.PhaseFailed,
			Reason: "NVMe path validation failed on h1: " + detail, Details: map[string]string{"host": "h1", "endpoint": ep, "detail": detail}}
	}
	restart := func(from, to float64, node string) []record.Line {
		return []record.Line{
			{T: from, Kind: record.KindFault, Fault: "target-restart", Action: "inject", Target: node, Evidence: map[string]string{"subsystems_lost": "2"}},
			{T: to, Kind: record.KindFault, Fault: "target-restart", Action: "recover", Target: node},
		}
	}
	notAllowed := func(tm float64, node string, n int64) record.Line {
		return record.Line{T: tm, Kind: record.KindTarget, Node: node, RejectedConnects: record.Int64(n), NotAllowedConnects: record.Int64(n)}
	}
	rejected := func(ep string) string {
		return "connect " + ep + ": rejected: Connect for subsystem nqn.a is not allowed, hostnqn: x " +
			"(target: Subsystem 'nqn.a' does not allow host 'x' to connect at this address.)"
	}
	missing := func(ep string) string {
		return "missing target path " + ep + ": no controller — the connect did not take effect"
	}
	var lines []record.Line
	add := func(ls ...record.Line) { lines = append(lines, ls...) }
	// storage-1 is down at mig-0001's create; the prefix view: the
	// connect rejected at its target address 100 s after the recovery.
	add(restart(10, 100, "storage-1")...)
	add(start(50, "mig-0001")...)
	add(fail(200, "mig-0001", "10.0.0.1:4430", rejected("10.0.0.1:4430")))
	// A migration created after that restart ended: the same answer is
	// not the restart's.
	add(start(210, "mig-0002")...)
	add(fail(220, "mig-0002", "10.0.0.1:4430", rejected("10.0.0.1:4430")))
	// storage-2 goes down after mig-0003's create; the fixed view: no
	// controller, and storage-2 counted "not allowed" answers since it is
	// back.
	add(start(300, "mig-0003")...)
	add(restart(305, 310, "storage-2")...)
	add(notAllowed(320, "storage-2", 5), notAllowed(400, "storage-2", 9))
	add(fail(399, "mig-0003", "10.0.0.2:4430", missing("10.0.0.2:4430")))
	// The same with no "not allowed" answer counted since the node came
	// back (only while it was down).
	add(start(500, "mig-0004")...)
	add(restart(505, 510, "storage-2")...)
	add(notAllowed(508, "storage-2", 12), notAllowed(600, "storage-2", 12))
	add(fail(599, "mig-0004", "10.0.0.2:4430", missing("10.0.0.2:4430")))
	// A source address of the restarted node is no migration listener.
	add(start(700, "mig-0005")...)
	add(restart(705, 710, "storage-3")...)
	add(fail(800, "mig-0005", "10.0.0.3:4426", rejected("10.0.0.3:4426")))
	// A target address on a node that did not restart.
	add(start(900, "mig-0006")...)
	add(restart(905, 910, "storage-2")...)
	add(fail(1000, "mig-0006", "10.0.0.1:4430", rejected("10.0.0.1:4430")))

	f := ComputeIncidentFigures(plan, lines, record.Summary{})
	got := map[string]string{}
	for _, v := range f.Failures {
		got[v.Migration] = v.Cause
	}
	lost := CauseFault + " (target-restart" + RestartListenerQualifier + ")"
	want := map[string]string{
		"mig-0001": lost,
		"mig-0002": "unexplained (rejected)",
		"mig-0003": lost,
		"mig-0004": "unexplained (other)",
		"mig-0005": "unexplained (rejected)",
		"mig-0006": "unexplained (rejected)",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("causes (-want +got):\n%s", d)
	}
	if f.FailedInjectedFault != 2 || f.FailedUnexplained != 4 {
		t.Errorf("by class: fault %d, unexplained %d; want 2, 4", f.FailedInjectedFault, f.FailedUnexplained)
	}
	if n := causesNote(f); !strings.Contains(n, "restores only right before the cutover") {
		t.Errorf("the causes note does not explain the restart's lost listener: %s", n)
	}
}

// TestPodKillCause: a pod killed while every published path of its volume
// was down is an outage named path by path (an injected fault on the node,
// or the subsystem missing there); one killed with a path up during its
// volume's cutover is that cutover's; anything else is unexplained.
func TestPodKillCause(t *testing.T) {
	const nqn = "nqn.a"
	plan := record.Plan{Params: record.Params{Model: record.Model{Operator: "prefix"}},
		Topology: record.Topology{Nodes: []record.Node{{Name: "storage-1", IP: "10.0.0.1"}, {Name: "storage-2", IP: "10.0.0.2"},
			{Name: "storage-3", IP: "10.0.0.3"}}, Hosts: []record.HostInfo{{Name: "h1"}},
			Volumes: []record.VolumeInfo{{Name: "a", NQN: nqn, NSIDs: []int{1}, Consumers: []string{"h1"}}}}}
	src := []string{"10.0.0.1:4426", "10.0.0.2:4426", "10.0.0.3:4426"}
	dst := []string{"10.0.0.1:4430", "10.0.0.2:4430", "10.0.0.3:4430"}
	phase := func(tm float64, mig, ph string) record.Line {
		l := record.Line{T: tm, Kind: record.KindPhase, Migration: mig, NQN: nqn, Phase: ph}
		if ph == record.PhasePending {
			l.SourceEndpoints, l.TargetEndpoints = src, dst
		}
		return l
	}
	kill := func(tm float64, pod string) record.Line {
		return record.Line{T: tm, Kind: record.KindIO, Host: "h1", NQN: nqn, Pod: pod, PodState: "killed"}
	}
	subsysGone := func(tm float64) record.Line {
		return record.Line{T: tm, Kind: record.KindKernel, Host: "h1", Controller: "nvme3", Message: `Connect Invalid Data Parameter, subsysnqn "nqn.a"`}
	}
	lines := []record.Line{
		{T: 0, Kind: record.KindEndpoints, NQN: nqn, Endpoints: src},
		{T: 0, Kind: record.KindKernel, Host: "h1", Controller: "nvme3", Message: `new ctrl: NQN "nqn.a", addr 10.0.0.3:4426, hostnqn: x`},
		phase(1, "mig-0001", record.PhasePending), phase(1.5, "mig-0001", record.PhaseValidating),
		phase(10, "mig-0001", record.PhaseFailed),
		{T: 20, Kind: record.KindFault, Fault: "target-restart", Action: "inject", Target: "storage-1", Evidence: map[string]string{"n": "1"}},
		{T: 50, Kind: record.KindFault, Fault: "target-restart", Action: "inject", Target: "storage-2", Evidence: map[string]string{"n": "1"}},
		subsysGone(52), subsysGone(54),
		// Every source path down: storage-1 and -2 restarting, storage-3
		// answering "Could not find subsystem".
		kill(55.1, "fio-a"),
		{T: 300, Kind: record.KindFault, Fault: "target-restart", Action: "recover", Target: "storage-1"},
		{T: 300, Kind: record.KindFault, Fault: "target-restart", Action: "recover", Target: "storage-2"},
		// Paths up, the volume in its cutover.
		phase(400, "mig-0002", record.PhasePending), phase(400.5, "mig-0002", record.PhaseValidating),
		phase(402, "mig-0002", record.PhaseRunning),
		kill(405, "fio-b"),
		phase(410, "mig-0002", record.PhaseCompleted),
		// Nothing to blame (storage-3's answer is long past).
		kill(600, "fio-c"),
	}
	f := ComputeIncidentFigures(plan, lines, record.Summary{})
	got := map[string]string{}
	for _, k := range f.PodKills {
		got[k.Pod] = k.Cause
	}
	want := map[string]string{
		"fio-a": "outage: every path down (storage-1 target-restart, storage-2 target-restart, storage-3 subsystem missing)",
		"fio-b": "cutover of mig-0002",
		"fio-c": CauseUnexplained,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("pod kill causes (-want +got):\n%s", d)
	}
	if n := podKillsNote(f.PodKills); !strings.Contains(n, "fio-a from 55.1 s — outage") || !strings.Contains(n, "not the incident's") {
		t.Errorf("pod kills note: %s", n)
	}
}
