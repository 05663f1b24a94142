package checks

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// stallKind selects what a stallRun's record says of its silent stall.
type stallKind int

const (
	stallExact    stallKind = iota // stall lines (the simulator's) and the keep-alive line
	stallEstimate                  // the keep-alive line only (a real host's evidence)
	stallHealed                    // stall lines; the path heals at 23.3 s, before the keep-alive expires
	stallOutside                   // stall lines, no migration: a partition at 60 s
)

const keepAliveMsg = "I/O tag 0 (0000) type 4 opcode 0x18 (Keep Alive) QID 0 timeout"

// stallRun: host-a consumes vol1 over src1 (optimized, node 10.0.0.1) and
// src2 (non-optimized); m1 migrates it to tgt1 (Pending 10 s, Running 20
// s). At 19.95 s host-a is partitioned from node-1: nvme0 at src1 hears
// nothing more, so it keeps showing optimized while the cutover makes src2
// and tgt1 inaccessible (20.5 s) and tgt1 optimized (22.5 s; Completed 23
// s). Its keep-alive times out at 26 s (then it is connecting): every
// sample shows vol1 served, but the kernel's I/O sat on nvme0 from 19.95 to
// 26 s. Sampled every 0.5 s to 100 s.
func stallRun(kind stallKind) (record.Plan, []record.Line) {
	w := newWorld(0.5, "host-a")
	w.plan.Params.Migrations = 1
	w.plan.Topology.Nodes = []record.Node{{Name: "node-1", IP: "10.0.0.1"}, {Name: "node-2", IP: "10.0.0.2"}, {Name: "node-3", IP: "10.0.0.3"}}
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.endpoints(vol1, src1, src2)
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.ctrl("host-a", "nvme1", vol1, src2, "live", legs("non-optimized", 1)...)
	stall := func(action string, start *float64, nsids ...int) {
		w.lines = append(w.lines, record.Line{T: w.now, Kind: record.KindStall, Host: "host-a", Controller: "nvme0", NQN: vol1,
			Address: src1, Action: action, StartS: start, NSIDs: nsids})
	}
	if kind == stallOutside {
		w.plan.Params.Migrations = 0
		w.plan.Faults = []record.FaultSpec{{Fault: "network-partition", Target: "host-a/node-1", AtS: 60, ForS: 20}}
		w.until(60)
		w.fault("network-partition", "inject", "host-a/node-1", nil)
		w.fault("network-partition", "landed", "host-a/node-1", map[string]string{"controllers_no_longer_live": "1"})
		stall(record.StallStart, nil, 1)
		w.until(66)
		w.lines = append(w.lines, record.Line{T: w.now, Kind: record.KindKernel, Host: "host-a", Controller: "nvme0", Message: keepAliveMsg})
		start := 60.0
		stall(record.StallEnd, &start)
		w.ctrl("host-a", "nvme0", vol1, src1, "connecting", legs("optimized", 1)...)
		w.until(80)
		w.fault("network-partition", "recover", "host-a/node-1", nil)
		w.until(100)
		return w.plan, w.lines
	}
	w.plan.Faults = []record.FaultSpec{{Fault: "network-partition", Target: "host-a/node-1", Migration: "#1", Phase: record.StageBeforeCutover, ForS: 20}}
	w.until(10)
	w.phase("m1", vol1, record.PhasePending, []string{src1, src2}, []string{tgt1})
	w.phase("m1", vol1, record.PhaseValidating, nil, nil)
	w.ctrl("host-a", "nvme2", vol1, tgt1, "live", legs("inaccessible", 1)...)
	w.until(19.95)
	w.lines = append(w.lines, record.Line{T: w.now, Kind: record.KindFault, Fault: "network-partition", Action: "inject", Target: "host-a/node-1",
		Migration: "m1", Phase: record.StageBeforeCutover})
	if kind != stallEstimate {
		stall(record.StallStart, nil, 1)
	}
	w.until(20)
	w.phase("m1", vol1, record.PhaseRunning, nil, nil)
	w.until(20.5)
	w.ana("host-a", "nvme1", "inaccessible")
	w.until(22.5)
	w.ana("host-a", "nvme2", "optimized")
	w.endpoints(vol1, tgt1)
	w.until(23)
	w.phase("m1", vol1, record.PhaseCompleted, nil, nil)
	start := 19.95
	if kind == stallHealed {
		w.until(23.3)
		stall(record.StallEnd, &start)
		w.ana("host-a", "nvme0", "inaccessible")
		w.drop("host-a", "nvme1")
	} else {
		w.until(26)
		w.fault("network-partition", "landed", "host-a/node-1", map[string]string{"controllers_no_longer_live": "1"})
		w.lines = append(w.lines, record.Line{T: w.now, Kind: record.KindKernel, Host: "host-a", Controller: "nvme0", Message: keepAliveMsg})
		if kind == stallExact {
			stall(record.StallEnd, &start)
		}
		w.ctrl("host-a", "nvme0", vol1, src1, "connecting", legs("optimized", 1)...)
		w.drop("host-a", "nvme1")
	}
	w.until(39.95)
	w.fault("network-partition", "recover", "host-a/node-1", nil)
	w.drop("host-a", "nvme0")
	w.until(100)
	return w.plan, w.lines
}

// TestSilentStallCounts (issue 28): a silent stall is paused time. With the
// simulator's stall lines the window runs from the stall's start to the
// first sample showing the host served after it (the keep-alive timeout at
// 26 s), over the bound; a real host's keep-alive line alone gives the
// same stall estimated back by the kernel's detection window — from 26 −
// 1.5 × 5 s, and at least 5 s long: the bound of 5 s falls between the
// two (inconclusive), a bound of 4 s is exceeded either way (fail); a
// stall the heal ends at 23.3 s is within the bound; one outside every
// migration is a fault window of the partition. The Judge equals the
// reference on every one.
func TestSilentStallCounts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     stallKind
		crit     float64
		verdict  string
		window   [2]float64
		minS     *float64
		estimate bool
		detail   string
	}{
		{"exact", stallExact, 5, record.Fail, [2]float64{19.95, 26}, nil, false, "1 of 1 migration/host pair(s) over"},
		{"estimated", stallEstimate, 5, record.Inconclusive, [2]float64{18.5, 26}, ptrF(5), true, "m1 on host-a between 5 s and 7.5 s"},
		{"estimated, bound 4", stallEstimate, 4, record.Fail, [2]float64{18.5, 26}, ptrF(5), true, "1 of 1 migration/host pair(s) over"},
		{"healed", stallHealed, 5, record.Pass, [2]float64{19.95, 23.5}, nil, false, "longest pause 3.55 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, tl := stallRun(tc.kind)
			plan.Params.PauseCritS = tc.crit
			for format, lines := range bothFormats(t, tl) {
				s := Evaluate(plan, lines)
				if d := cmp.Diff(refEvaluate(plan, lines), s); d != "" {
					t.Errorf("%s: the Judge (+) differs from the reference (-):\n%s", format, d)
				}
				pb := findCheck(s, CheckPauseBound)
				if pb.Verdict != tc.verdict || !strings.Contains(pb.Detail, tc.detail) {
					t.Errorf("%s: pause-bound %s %q, want %s with %q", format, pb.Verdict, pb.Detail, tc.verdict, tc.detail)
				}
				hp := s.Migrations[0].Hosts["host-a"]
				if len(hp.Windows) != 1 || hp.Windows[0] != tc.window || !cmp.Equal(hp.LongestPauseMinS, tc.minS) {
					t.Errorf("%s: windows %v (shortest %v), want %v (shortest %v)", format, hp.Windows, hp.LongestPauseMinS, tc.window, tc.minS)
				}
				if len(s.Stalls) != 1 || s.Stalls[0].Host != "host-a" || s.Stalls[0].Controller != "nvme0" || s.Stalls[0].Estimate != tc.estimate {
					t.Errorf("%s: stalls %+v, want host-a nvme0's, estimate %v", format, s.Stalls, tc.estimate)
				}
			}
		})
	}
	plan, tl := stallRun(stallOutside)
	for format, lines := range bothFormats(t, tl) {
		s := Evaluate(plan, lines)
		if d := cmp.Diff(refEvaluate(plan, lines), s); d != "" {
			t.Errorf("outside, %s: the Judge (+) differs from the reference (-):\n%s", format, d)
		}
		want := []record.HostWindow{{Host: "host-a", NQN: vol1, Window: [2]float64{60, 66}, Cause: "network-partition on host-a/node-1 from 60 s"}}
		if d := cmp.Diff(want, s.FaultWindows); d != "" || len(s.Unattributed) != 0 {
			t.Errorf("outside, %s: fault windows (-want +got):\n%s\nunattributed %v", format, d, s.Unattributed)
		}
	}
}

func ptrF(v float64) *float64 { return &v }

func findCheck(s record.Summary, name string) record.CheckResult {
	for _, c := range s.Checks {
		if c.Name == name {
			return c
		}
	}
	return record.CheckResult{}
}
