package scenario

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// TestFailureCauses: one synthetic record per cause of research/incident.md
// §6.2, each failure classified from the record alone.
func TestFailureCauses(t *testing.T) {
	const nqn = "nqn.a"
	plan := record.Plan{Params: record.Params{Extra: map[string]string{"operator": "prefix"}},
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

// TestReproduceNoFaultNoCascade: with the incident's faults dropped
// (--faults none), the sourced model starts no cascade: no validation
// fails for either operator over the whole incident (incident.md §6.1
// expects nothing sourced to start one), plan.json says the faults were
// dropped, and the two runs are described with no difference.
func TestReproduceNoFaultNoCascade(t *testing.T) {
	inc := mustIncident(IncidentID)
	var runs []ReproduceResult
	for _, op := range []string{"prefix", "fixed"} {
		r, err := Reproduce(context.Background(), ReproduceOptions{Incident: inc, Seed: 1, Operator: op, NoFaults: true,
			Command: "test", OutDir: t.TempDir(), StartUnix: 1787159565})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Plan.Faults) != 0 || r.Plan.Params.Extra["fault_schedule"] == "incident" {
			t.Errorf("%s: plan faults %v, fault_schedule %q: want none, said so", op, r.Plan.Faults, r.Plan.Params.Extra["fault_schedule"])
		}
		if r.Figures.ValidationFailed != 0 || r.Figures.Leaked != 0 {
			t.Errorf("%s with no fault: %d validation failures (%v), %d leaks; want none", op, r.Figures.ValidationFailed,
				r.Figures.FailureCauses, r.Figures.Leaked)
		}
		runs = append(runs, r)
	}
	if d := DescribePair(runs); d == nil || len(d.Differences) != 0 || d.Pair.Fixed.Total != d.Pair.Prefix.Total {
		t.Errorf("description with no fault: %+v, want no difference", d)
	}
}
