package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// migrationWorld: host-a consumes vol1, which migrates from src1 to tgt1
// between 5 s and 15 s with a pause window of pauseS seconds from 10 s;
// host-b consumes nothing; the record runs to 60 s (settle 40 s).
func migrationWorld(interval, pauseS float64) *world {
	w := newWorld(interval, "host-a", "host-b")
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.endpoints(vol1, src1)
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.until(5)
	w.phase("m1", vol1, record.PhasePending, []string{src1}, []string{tgt1})
	w.until(10)
	w.ana("host-a", "nvme0", "inaccessible")
	w.ctrl("host-a", "nvme1", vol1, tgt1, "live", legs("inaccessible", 1)...)
	w.until(10 + pauseS)
	w.ana("host-a", "nvme1", "optimized")
	w.drop("host-a", "nvme0")
	w.until(max(15, 10+pauseS+1))
	w.endpoints(vol1, tgt1)
	w.phase("m1", vol1, record.PhaseCompleted, nil, nil)
	w.plan.Params.Migrations = 1
	w.until(w.now + 45)
	return w
}

// TestSampleResolution: pause windows are judged only when the sample
// interval is at most a tenth of the bound; a coarser interval leaves
// pause-bound and freezes inconclusive, naming interval and bound, unless a
// window is over the bound by more than the interval.
func TestSampleResolution(t *testing.T) {
	for _, tc := range []struct {
		name             string
		interval, pauseS float64
		bound, freezes   string
		detail           string
	}{
		{"fine", 0.5, 2, record.Pass, record.Pass, ""},
		{"coarse", 1, 2, record.Inconclusive, record.Inconclusive, "sample interval 1 s is coarser than 0.1 × the pause bound 5 s"},
		{"coarse, over within the error", 1, 6, record.Inconclusive, record.Inconclusive, "within 1 s of the bound"},
		{"coarse, over beyond the error", 1, 7, record.Fail, record.Inconclusive, "over CUTOVER_PAUSE_CRIT_S = 5 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := migrationWorld(tc.interval, tc.pauseS)
			s := Evaluate(w.plan, w.lines)
			b, f := checkOf(s, CheckPauseBound), checkOf(s, CheckFreezes)
			if b.Verdict != tc.bound || f.Verdict != tc.freezes || !strings.Contains(b.Detail, tc.detail) {
				t.Errorf("pause-bound %s (%s), freezes %s (%s); want %s with %q, %s", b.Verdict, b.Detail, f.Verdict, f.Detail, tc.bound, tc.detail, tc.freezes)
			}
			if len(s.SampleHoles) != 0 {
				t.Errorf("holes %+v in an evenly sampled record", s.SampleHoles)
			}
		})
	}
}

// TestSampleHoles: a 30 s gap in host-a's samples during the migration
// leaves every check over host-a and that time inconclusive, naming host
// and range; heartbeats in the gap are observations and close it; a host
// with no sample at all is named too.
func TestSampleHoles(t *testing.T) {
	cut := func(lines []record.Line, host string, from, to float64) []record.Line {
		var out []record.Line
		for _, l := range lines {
			if l.Kind == record.KindSample && l.Host == host && l.T > from && l.T < to {
				continue
			}
			out = append(out, l)
		}
		return out
	}
	w := migrationWorld(0.5, 2)
	if s := Evaluate(w.plan, w.lines); s.Verdict != record.Pass {
		t.Fatalf("the whole record: verdict %s, want pass: %+v", s.Verdict, s.Checks)
	}

	holed := cut(w.lines, "host-a", 2, 32)
	s := Evaluate(w.plan, holed)
	want := record.SampleHole{Host: "host-a", From: 2, To: 32, IntervalS: 0.5}
	if len(s.SampleHoles) != 1 || s.SampleHoles[0] != want {
		t.Fatalf("holes %+v, want [%+v]", s.SampleHoles, want)
	}
	for _, name := range []string{CheckPauseBound, CheckFreezes, CheckSplitBrain, CheckServedAfterCutover, CheckUnattributedPauses} {
		c := checkOf(s, name)
		if c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, "host host-a unobserved from 2 s to 32 s") {
			t.Errorf("%s: %s (%s); want inconclusive naming host-a and 2 s to 32 s", name, c.Verdict, c.Detail)
		}
	}
	if s.Verdict != record.Inconclusive {
		t.Errorf("verdict %s, want inconclusive", s.Verdict)
	}

	// A host that is no consumer does not blind the migration checks; but
	// it is a hole of its own in summary.json.
	s = Evaluate(w.plan, cut(w.lines, "host-b", 2, 32))
	if c := checkOf(s, CheckPauseBound); c.Verdict != record.Pass || len(s.SampleHoles) != 1 {
		t.Errorf("hole on host-b: pause-bound %s, holes %+v; want pass and one hole", c.Verdict, s.SampleHoles)
	}

	// Heartbeats ("sampled, unchanged") every interval fill a hole in the
	// settle period, where host-a's state does not change.
	settleHole := cut(w.lines, "host-a", 25, 55)
	if s := Evaluate(w.plan, settleHole); len(s.SampleHoles) != 1 || s.Verdict != record.Inconclusive {
		t.Errorf("settle gap without heartbeats: holes %+v, verdict %s; want one hole, inconclusive", s.SampleHoles, s.Verdict)
	}
	hb := append([]record.Line(nil), settleHole...)
	for k := 51; k < 110; k++ {
		hb = append(hb, record.Line{T: float64(k) / 2, Kind: record.KindHeartbeat, Host: "host-a"})
	}
	if s := Evaluate(w.plan, hb); len(s.SampleHoles) != 0 || s.Verdict != record.Pass {
		t.Errorf("with heartbeats in the gap: holes %+v, verdict %s (%+v); want none and pass", s.SampleHoles, s.Verdict, s.Checks)
	}

	// No sample of host-a at all.
	s = Evaluate(w.plan, cut(w.lines, "host-a", -1, 1e9))
	if c := checkOf(s, CheckPauseBound); c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, "host host-a has no sample") {
		t.Errorf("no sample of host-a: pause-bound %s (%s)", c.Verdict, c.Detail)
	}
}

// TestRequestedKindThatNeverLandedIsInconclusive: a kind asked for (in the
// schedule, or by --faults) with no landed fault makes faults-landed
// inconclusive naming the kind; the summary lists every fault and counts
// them per kind and stage.
func TestRequestedKindThatNeverLandedIsInconclusive(t *testing.T) {
	w := migrationWorld(0.1, 2)
	w.plan.Faults = []record.FaultSpec{
		{Fault: "target-restart", Target: "storage-1", Phase: record.StageInFreeze, ForS: 3},
		{Fault: "node-crash", Target: "storage-2", AtS: 50, ForS: 10},
	}
	w.plan.Params.Faults = "target-restart,node-crash,ana-flap"
	w.lines = append(w.lines,
		record.Line{T: 10, Kind: record.KindFault, Fault: "target-restart", Action: "inject", Target: "storage-1",
			Migration: "m1", Phase: record.StageInFreeze, Evidence: map[string]string{"ports_down": "3"}},
		record.Line{T: 13, Kind: record.KindFault, Fault: "target-restart", Action: "recover", Target: "storage-1"},
		record.Line{T: 50, Kind: record.KindFault, Fault: "node-crash", Action: "inject", Target: "storage-2", Phase: record.StageIdle},
		record.Line{T: 60, Kind: record.KindFault, Fault: "node-crash", Action: "recover", Target: "storage-2", Reason: "no effect observed"},
	)
	s := Evaluate(w.plan, w.lines)
	c := checkOf(s, CheckFaultsLanded)
	for _, want := range []string{"node-crash on storage-2 injected at 50 s left no evidence", "requested fault kind node-crash never landed", "requested fault kind ana-flap never landed"} {
		if c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, want) {
			t.Errorf("faults-landed %s (%s); want inconclusive naming %q", c.Verdict, c.Detail, want)
		}
	}
	if strings.Contains(c.Detail, "kind target-restart") {
		t.Errorf("faults-landed names target-restart, which landed: %s", c.Detail)
	}
	if len(s.Faults) != 2 || s.Faults[0].Status != record.FaultLanded || s.Faults[1].Status != record.FaultNoEvidence ||
		*s.Faults[0].RecoveredS != 13 || s.Faults[0].Phase != record.StageInFreeze {
		t.Errorf("faults %+v", s.Faults)
	}
	m := s.FaultMatrix
	freeze, idle := slices.Index(m.Stages, record.StageInFreeze), slices.Index(m.Stages, record.StageIdle)
	if len(m.Kinds) != 2 || m.Kinds[0].Cells[freeze] != (record.FaultCell{Injected: 1, Landed: 1}) || m.Kinds[1].Cells[idle] != (record.FaultCell{Injected: 1}) {
		t.Errorf("matrix %+v", m)
	}
}
