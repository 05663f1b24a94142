package checks

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

const vol2 = "nqn.2023-02.io.simplyblock:vol2"

// noCutoverRun is seed 11's case in small (issue 27 item 2): host-a
// consumes vol1 over one path at node-1 (src1) and vol2 over node-2. m1
// migrates vol1 and fails at validation at 20 s (never Running); m2
// migrates vol2 from 22 s (Running at 26 s, every path inaccessible 28–30
// s, Completed 30.5 s). At 31 s a target-restart of faultNode (in m2's
// span, as a fault tied to m2's freeze) takes host-a's vol1 controller to
// connecting until 37 s: a 6 s pause of vol1 inside m1's attribution
// margin (20 + 30 s). Sampled every 0.5 s, settled to 100 s.
func noCutoverRun(faultNode string) (record.Plan, []record.Line) {
	w := newWorld(0.5, "host-a")
	w.plan.Params.Migrations = 2
	w.plan.Topology.Nodes = []record.Node{{Name: "node-1", IP: "10.0.0.1"}, {Name: "node-2", IP: "10.0.0.2"}, {Name: "node-3", IP: "10.0.0.3"}}
	w.plan.Faults = []record.FaultSpec{{Fault: "target-restart", Target: faultNode, Migration: "#2", Phase: record.StageAfterCutover, ForS: 6}}
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.volume("vol2", vol2, []int{1}, "host-a")
	w.endpoints(vol1, src1)
	w.endpoints(vol2, src2)
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.ctrl("host-a", "nvme1", vol2, src2, "live", legs("optimized", 1)...)
	w.until(10)
	w.phase("m1", vol1, record.PhasePending, []string{src1}, []string{tgt1})
	w.phase("m1", vol1, record.PhaseValidating, nil, nil)
	w.until(20)
	w.lines = append(w.lines, record.Line{T: 20, Kind: record.KindPhase, Migration: "m1", NQN: vol1, Phase: record.PhaseFailed,
		Reason: "NVMe path validation failed on host-a: missing target path 10.0.0.3:4426"})
	w.until(22)
	w.phase("m2", vol2, record.PhasePending, []string{src2}, []string{tgt2})
	w.phase("m2", vol2, record.PhaseValidating, nil, nil)
	w.ctrl("host-a", "nvme2", vol2, tgt2, "live", legs("inaccessible", 1)...)
	w.until(26)
	w.phase("m2", vol2, record.PhaseRunning, nil, nil)
	w.until(28)
	w.ana("host-a", "nvme1", "inaccessible")
	w.until(30)
	w.ana("host-a", "nvme2", "optimized")
	w.drop("host-a", "nvme1")
	w.endpoints(vol2, tgt2)
	w.until(30.5)
	w.phase("m2", vol2, record.PhaseCompleted, nil, nil)
	w.until(31)
	w.lines = append(w.lines, record.Line{T: 31, Kind: record.KindFault, Fault: "target-restart", Action: "inject", Target: faultNode,
		Migration: "m2", Phase: record.StageAfterCutover, Evidence: map[string]string{"connected_controllers": "1"}})
	w.ctrl("host-a", "nvme0", vol1, src1, "connecting", legs("optimized", 1)...)
	w.until(37)
	w.lines = append(w.lines, record.Line{T: 37, Kind: record.KindFault, Fault: "target-restart", Action: "recover", Target: faultNode})
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.until(100)
	return w.plan, w.lines
}

// TestCutoverPauseNeedsACutover (issue 27 item 2): a migration that ended
// Failed before Running never started its cutover, so no pause is charged
// to it: the 6 s pause of vol1 goes to the fault that caused it (a
// target-restart of the node serving host-a's only vol1 path, in effect
// when the pause began), and pause-bound judges m2 alone; with the fault
// on a node vol1 does not use, nothing explains the pause and it is
// unattributed.
func TestCutoverPauseNeedsACutover(t *testing.T) {
	for format, lines := range bothFormats(t, func() []record.Line { _, tl := noCutoverRun("node-1"); return tl }()) {
		plan, _ := noCutoverRun("node-1")
		s := Evaluate(plan, lines)
		if d := cmp.Diff(refEvaluate(plan, lines), s); d != "" {
			t.Errorf("%s: the Judge (+) differs from the reference (-):\n%s", format, d)
		}
		for name, want := range map[string]string{CheckPauseBound: record.Pass, CheckFreezes: record.Pass, CheckUnattributedPauses: record.Pass} {
			if c := checkOf(s, name); c.Verdict != want {
				t.Errorf("%s: %s = %s (%s), want %s", format, name, c.Verdict, c.Detail, want)
			}
		}
		m1 := s.Migrations[0]
		if m1.ID != "m1" || !m1.NoCutover || len(m1.Hosts["host-a"].Windows) != 0 || m1.Freezes != 0 {
			t.Errorf("%s: m1 = %+v, want no cutover and no window", format, m1)
		}
		if want := "NVMe path validation failed on host-a: missing target path 10.0.0.3:4426"; m1.Reason != want {
			t.Errorf("%s: m1 reason %q, want the Failed line's %q (issue 27 item 1)", format, m1.Reason, want)
		}
		want := []record.HostWindow{{Host: "host-a", NQN: vol1, Window: [2]float64{31, 37}, Cause: "target-restart on node-1 from 31 s"}}
		if d := cmp.Diff(want, s.FaultWindows); d != "" {
			t.Errorf("%s: fault windows (-want +got):\n%s", format, d)
		}
		if d := checkOf(s, CheckUnattributedPauses).Detail; !strings.Contains(d, "1 under a fault that explains it: host-a "+vol1+" [31, 37] s (target-restart on node-1 from 31 s)") {
			t.Errorf("%s: unattributed-pauses detail %q does not name the window under the fault", format, d)
		}
		if d := checkOf(s, CheckPauseBound).Detail; !strings.Contains(d, "(m2 on host-a)") || !strings.Contains(d, "1 migration(s) ended before Running: no cutover") {
			t.Errorf("%s: pause-bound detail %q", format, d)
		}
	}

	// The fault on node-3, which serves nothing of vol1: unexplained.
	plan, tl := noCutoverRun("node-3")
	s := Evaluate(plan, tl)
	if c := checkOf(s, CheckUnattributedPauses); c.Verdict != record.Fail || !strings.Contains(c.Detail, "host-a "+vol1+" [31, 37] s") {
		t.Errorf("fault on node-3: unattributed-pauses = %s (%s), want fail naming the window", c.Verdict, c.Detail)
	}
	if c := checkOf(s, CheckPauseBound); c.Verdict != record.Pass {
		t.Errorf("fault on node-3: pause-bound = %s (%s), want pass: m1 had no cutover", c.Verdict, c.Detail)
	}
	if d := cmp.Diff(refEvaluate(plan, tl), s); d != "" {
		t.Errorf("fault on node-3: the Judge (+) differs from the reference (-):\n%s", d)
	}
}
