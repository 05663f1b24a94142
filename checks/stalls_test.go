package checks

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

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

// stallOpts vary a stallRun: unlanded drops the partition's landed line
// (the record holds no evidence of it); cutoverAt > 0 makes the cutover
// pause the host first, at that time: vol1 then has a second namespace,
// NSID 2, served only by nvme1 (src2, optimized), whose legs go
// inaccessible at cutoverAt — the host is paused for NSID 2 from the
// first sample at or after it, before or within the partition's stall of
// nvme0 (NSID 1). slowPeer adds host-b, a second consumer of vol1 never
// partitioned (nvme0 at src1 optimized, nvme1 at src2 non-optimized, nvme2
// at tgt1): the cutover makes its paths inaccessible at 20.5 s like
// host-a's, and its target optimized only at 26.5 s — a 6 s cutover pause
// of its own. secondPause makes host-a's target path inaccessible from 30
// to 31 s, in m1's span after the partition's stall: a second pause.
type stallOpts struct {
	unlanded    bool
	cutoverAt   float64
	slowPeer    bool
	secondPause bool
}

// stallRun: host-a consumes vol1 over src1 (optimized, node 10.0.0.1) and
// src2 (non-optimized); m1 migrates it to tgt1 (Pending 10 s, Running 20
// s). At 19.95 s host-a is partitioned from node-1: nvme0 at src1 hears
// nothing more, so it keeps showing optimized while the cutover makes src2
// and tgt1 inaccessible (20.5 s) and tgt1 optimized (22.5 s; Completed 23
// s). Its keep-alive times out at 26 s (then it is connecting): every
// sample shows vol1 served, but the kernel's I/O sat on nvme0 from 19.95 to
// 26 s. Sampled every 0.5 s to 100 s.
func stallRun(kind stallKind, opts stallOpts) (record.Plan, []record.Line) {
	hosts := []string{"host-a"}
	if opts.slowPeer {
		hosts = append(hosts, "host-b")
	}
	w := newWorld(0.5, hosts...)
	w.plan.Params.Migrations = 1
	w.plan.Topology.Nodes = []record.Node{{Name: "node-1", IP: "10.0.0.1"}, {Name: "node-2", IP: "10.0.0.2"}, {Name: "node-3", IP: "10.0.0.3"}}
	nsids := []int{1}
	if opts.cutoverAt > 0 {
		nsids = []int{1, 2}
	}
	w.volume("vol1", vol1, nsids, hosts...)
	w.endpoints(vol1, src1, src2)
	for _, h := range hosts {
		w.ctrl(h, "nvme0", vol1, src1, "live", legs("optimized", 1)...)
		w.ctrl(h, "nvme1", vol1, src2, "live", legs("non-optimized", 1)...)
	}
	if opts.cutoverAt > 0 {
		w.ctrl("host-a", "nvme1", vol1, src2, "live", record.Leg{NSID: 1, ANA: "non-optimized"}, record.Leg{NSID: 2, ANA: "optimized"})
	}
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
	for _, h := range hosts {
		w.ctrl(h, "nvme2", vol1, tgt1, "live", legs("inaccessible", nsids...)...)
	}
	if opts.cutoverAt > 0 {
		w.until(opts.cutoverAt)
		w.ana("host-a", "nvme1", "inaccessible")
	}
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
	if opts.slowPeer {
		for _, c := range []string{"nvme0", "nvme1"} {
			w.ana("host-b", c, "inaccessible")
		}
	}
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
		if !opts.unlanded {
			w.fault("network-partition", "landed", "host-a/node-1", map[string]string{"controllers_no_longer_live": "1"})
		}
		w.lines = append(w.lines, record.Line{T: w.now, Kind: record.KindKernel, Host: "host-a", Controller: "nvme0", Message: keepAliveMsg})
		if kind == stallExact {
			stall(record.StallEnd, &start)
		}
		w.ctrl("host-a", "nvme0", vol1, src1, "connecting", legs("optimized", 1)...)
		w.drop("host-a", "nvme1")
	}
	if opts.slowPeer {
		w.until(26.5)
		w.ana("host-b", "nvme2", "optimized")
		w.drop("host-b", "nvme0")
		w.drop("host-b", "nvme1")
	}
	if opts.secondPause {
		w.until(30)
		w.ana("host-a", "nvme2", "inaccessible")
		w.until(31)
		w.ana("host-a", "nvme2", "optimized")
	}
	w.until(39.95)
	w.fault("network-partition", "recover", "host-a/node-1", nil)
	w.drop("host-a", "nvme0")
	w.until(100)
	return w.plan, w.lines
}

// TestSilentStallCounts (issue 28, and the rule that a window a fault's
// stall began is the fault's): a silent stall is paused time. The
// partition at 19.95 s begins the only pause host-a sees (nvme0 shows
// optimized throughout), inside m1's span: with the partition landed that
// window is the partition's — a fault window naming the stall — whether
// the stall is known from the simulator's stall lines ([19.95, 26] s) or
// estimated from a real host's keep-alive line (from 26 − 1.5 × 5 s, and
// at least 5 s long: [18.5, 26] s, said to be an estimate). The
// host-observed cutover (26 s: nvme0 leaves live) ends that window, so the
// cutover's own pause is masked by the partition's and bounded only by
// the window's 6.05 s (7.5 s): over the 5 s bound, pause-bound is
// inconclusive, naming both (TestMaskedCutover judges them with other
// bounds). With no landed line the record holds no evidence of the
// partition, so nothing is charged to it and the window is m1's as before:
// over the bound (exact), inconclusive between its 5 s and 7.5 s lengths
// (estimated, bound 5), over either way (bound 4). A stall the heal ends at
// 23.3 s has no landed fault either: m1's, within the bound. When the
// cutover paused the host first (19.5 s) the window is m1's and the
// partition's stall in it is named (a fault that lengthened a cutover
// pause: over the bound); with an estimated stall that may have begun
// before that sample (18.5-21 s) it may be either's: inconclusive; one
// that surely began after the cutover's pause (18 s) is m1's, over the
// bound. The Judge equals the reference on every one.
func TestSilentStallCounts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     stallKind
		opts     stallOpts
		crit     float64
		verdict  string
		window   [2]float64 // m1's window on host-a; zero: none
		minS     *float64
		fault    [2]float64 // the fault window; zero: none
		estimate bool
		detail   string
	}{
		{"exact", stallExact, stallOpts{}, 5, record.Inconclusive, [2]float64{}, nil, [2]float64{19.95, 26}, false,
			"m1 on host-a: cutover at 26 s inside the fault window [19.95, 26] s of network-partition on host-a/node-1 from 19.95 s, its own pause <= 6.05 s"},
		{"estimated", stallEstimate, stallOpts{}, 5, record.Inconclusive, [2]float64{}, nil, [2]float64{18.5, 26}, true,
			"m1 on host-a: cutover at 26 s inside the fault window [18.5, 26] s of network-partition on host-a/node-1 from 19.95 s, its own pause <= 7.5 s"},
		{"healed", stallHealed, stallOpts{}, 5, record.Pass, [2]float64{19.95, 23.5}, nil, [2]float64{}, false, "longest pause 3.55 s"},
		{"exact, unlanded", stallExact, stallOpts{unlanded: true}, 5, record.Fail, [2]float64{19.95, 26}, nil, [2]float64{}, false, "1 of 1 migration/host pair(s) over"},
		{"estimated, unlanded", stallEstimate, stallOpts{unlanded: true}, 5, record.Inconclusive, [2]float64{18.5, 26}, ptrF(5), [2]float64{}, true, "m1 on host-a between 5 s and 7.5 s"},
		{"estimated, unlanded, bound 4", stallEstimate, stallOpts{unlanded: true}, 4, record.Fail, [2]float64{18.5, 26}, ptrF(5), [2]float64{}, true, "1 of 1 migration/host pair(s) over"},
		{"exact, cutover first", stallExact, stallOpts{cutoverAt: 19.5}, 5, record.Fail, [2]float64{19.5, 26}, nil, [2]float64{}, false, "1 of 1 migration/host pair(s) over"},
		{"estimated, cutover within the estimate", stallEstimate, stallOpts{cutoverAt: 19.5}, 5, record.Inconclusive, [2]float64{18.5, 26}, ptrF(6.5), [2]float64{}, true, "a window a fault's estimated stall may have begun"},
		{"estimated, cutover before the estimate", stallEstimate, stallOpts{cutoverAt: 18}, 5, record.Fail, [2]float64{18, 26}, nil, [2]float64{}, true, "1 of 1 migration/host pair(s) over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for format, s := range judgedStallRun(t, tc.kind, tc.opts, tc.crit) {
				pb := findCheck(s, CheckPauseBound)
				if pb.Verdict != tc.verdict || !strings.Contains(pb.Detail, tc.detail) {
					t.Errorf("%s: pause-bound %s %q, want %s with %q", format, pb.Verdict, pb.Detail, tc.verdict, tc.detail)
				}
				if fr := findCheck(s, CheckFreezes); tc.verdict == record.Pass && fr.Verdict != record.Pass {
					t.Errorf("%s: freezes %s %q, want pass", format, fr.Verdict, fr.Detail)
				}
				if u := findCheck(s, CheckUnattributedPauses); u.Verdict != record.Pass {
					t.Errorf("%s: unattributed-pauses %s %q, want pass", format, u.Verdict, u.Detail)
				}
				hp := s.Migrations[0].Hosts["host-a"]
				var want [][2]float64
				if tc.window != [2]float64{} {
					want = [][2]float64{tc.window}
				}
				if !cmp.Equal(hp.Windows, want, cmpopts.EquateEmpty()) || !cmp.Equal(hp.LongestPauseMinS, tc.minS) {
					t.Errorf("%s: windows %v (shortest %v), want %v (shortest %v)", format, hp.Windows, hp.LongestPauseMinS, want, tc.minS)
				}
				if len(s.Stalls) != 1 || s.Stalls[0].Host != "host-a" || s.Stalls[0].Controller != "nvme0" || s.Stalls[0].Estimate != tc.estimate {
					t.Fatalf("%s: stalls %+v, want host-a nvme0's, estimate %v", format, s.Stalls, tc.estimate)
				}
				landed := tc.kind != stallHealed && !tc.opts.unlanded
				if got := s.Stalls[0].Cause; (got == "network-partition on host-a/node-1 from 19.95 s") != landed {
					t.Errorf("%s: stall cause %q, want the partition's: %v", format, got, landed)
				}
				if tc.fault == [2]float64{} {
					if len(s.FaultWindows) != 0 || len(hp.FaultWindows) != 0 {
						t.Errorf("%s: fault windows %+v (m1's %v), want none", format, s.FaultWindows, hp.FaultWindows)
					}
					if len(hp.Stalls) != 1 || hp.Stalls[0] != s.Stalls[0] {
						t.Errorf("%s: stalls in m1's window %+v, want %+v", format, hp.Stalls, s.Stalls[0])
					}
				} else {
					st := s.Stalls[0]
					cause := "network-partition on host-a/node-1 from 19.95 s: silent stall of nvme0 at 10.0.0.1:4420 from 19.95 s"
					if tc.estimate {
						cause = "network-partition on host-a/node-1 from 19.95 s: silent stall of nvme0 at 10.0.0.1:4420, estimated from its keep-alive timeout at 26 s to have begun between 18.5 s and 21 s"
					}
					fw := []record.HostWindow{{Host: "host-a", NQN: vol1, Window: tc.fault, Cause: cause, Stall: &st, Migration: "m1"}}
					if d := cmp.Diff(fw, s.FaultWindows); d != "" {
						t.Errorf("%s: fault windows (-want +got):\n%s", format, d)
					}
					if !cmp.Equal(hp.FaultWindows, [][2]float64{tc.fault}) || len(hp.Stalls) != 0 {
						t.Errorf("%s: m1's fault windows %v and stalls %v, want %v and none", format, hp.FaultWindows, hp.Stalls, tc.fault)
					}
				}
			}
		})
	}
	plan, tl := stallRun(stallOutside, stallOpts{})
	for format, lines := range bothFormats(t, tl) {
		s := Evaluate(plan, lines)
		if d := cmp.Diff(refEvaluate(plan, lines), s); d != "" {
			t.Errorf("outside, %s: the Judge (+) differs from the reference (-):\n%s", format, d)
		}
		st := record.Stall{Host: "host-a", Controller: "nvme0", NQN: vol1, StartS: 60, EndS: 66, Address: src1,
			Cause: "network-partition on host-a/node-1 from 60 s"}
		want := []record.HostWindow{{Host: "host-a", NQN: vol1, Window: [2]float64{60, 66},
			Cause: "network-partition on host-a/node-1 from 60 s: silent stall of nvme0 at 10.0.0.1:4420 from 60 s", Stall: &st}}
		if d := cmp.Diff(want, s.FaultWindows); d != "" || len(s.Unattributed) != 0 {
			t.Errorf("outside, %s: fault windows (-want +got):\n%s\nunattributed %v", format, d, s.Unattributed)
		}
	}
}

// TestMaskedCutover: a pair whose host-observed cutover lies inside a
// fault window of its host is masked — the cutover's own pause hid in the
// fault's and could not be measured; the window's length bounds it. In
// stallRun host-a's cutover (26 s) ends the partition's fault window
// ([19.95, 26] s from the stall lines, [18.5, 26] s estimated from the
// keep-alive line), and m1 has no window of host-a's. Within the bound
// (7 s; 8 s for the estimate) pause-bound passes and says the bound; over
// it (5 s; 7 s) it is inconclusive, naming migration, host, window and
// fault; a pair over the bound elsewhere (host-b's own 6 s cutover pause,
// slowPeer) still fails it. freezes counts the fault window as host-a's
// one freeze: with a second pause of host-a in m1's span (secondPause)
// that is two, over the allowance of 1. A stall that no landed fault
// made (unlanded, healed) makes no fault window and masks nothing.
// summary.json marks the pair (masked_by); the Judge equals the reference
// on both timeline formats.
func TestMaskedCutover(t *testing.T) {
	exact := &record.Masked{Window: [2]float64{19.95, 26}, Fault: "network-partition on host-a/node-1 from 19.95 s", BoundS: 6.05}
	estimated := &record.Masked{Window: [2]float64{18.5, 26}, Fault: "network-partition on host-a/node-1 from 19.95 s", BoundS: 7.5}
	const (
		exactText     = "m1 on host-a: cutover at 26 s inside the fault window [19.95, 26] s of network-partition on host-a/node-1 from 19.95 s, its own pause <= 6.05 s"
		estimatedText = "m1 on host-a: cutover at 26 s inside the fault window [18.5, 26] s of network-partition on host-a/node-1 from 19.95 s, its own pause <= 7.5 s"
		within        = "1 cutover(s) inside a fault window: "
	)
	for _, tc := range []struct {
		name       string
		kind       stallKind
		opts       stallOpts
		crit       float64
		verdict    string // pause-bound's
		detail     []string
		masked     *record.Masked // host-a's
		freezes    string
		freezesSay string
		hostFrz    int // host-a's freezes
	}{
		{"exact, within the bound", stallExact, stallOpts{}, 7, record.Pass,
			[]string{"longest pause 0 s (m1 on host-a) <= 7 s over 1 migration/host pairs", within + exactText}, exact, record.Pass, "at most 1 freeze(s)", 1},
		{"estimated, within the bound", stallEstimate, stallOpts{}, 8, record.Pass,
			[]string{"longest pause 0 s (m1 on host-a) <= 8 s", within + estimatedText}, estimated, record.Pass, "at most 1 freeze(s)", 1},
		{"exact, over the bound", stallExact, stallOpts{}, 5, record.Inconclusive,
			[]string{"1 migration/host pair(s) whose cutover lies inside a fault window longer than CUTOVER_PAUSE_CRIT_S = 5 s: the cutover's own pause, masked by the fault's, could not be measured: " + exactText},
			exact, record.Pass, "at most 1 freeze(s)", 1},
		{"estimated, over the bound", stallEstimate, stallOpts{}, 7, record.Inconclusive,
			[]string{"longer than CUTOVER_PAUSE_CRIT_S = 7 s", estimatedText}, estimated, record.Pass, "at most 1 freeze(s)", 1},
		{"over the bound, another pair fails", stallExact, stallOpts{slowPeer: true}, 5, record.Fail,
			[]string{"1 of 2 migration/host pair(s) over CUTOVER_PAUSE_CRIT_S = 5 s; longest 6 s (m1 on host-b)"}, exact, record.Pass, "at most 1 freeze(s)", 1},
		{"estimated, over the bound, another pair fails", stallEstimate, stallOpts{slowPeer: true}, 5, record.Fail,
			[]string{"1 of 2 migration/host pair(s) over CUTOVER_PAUSE_CRIT_S = 5 s; longest 6 s (m1 on host-b)"}, estimated, record.Pass, "at most 1 freeze(s)", 1},
		{"a second pause: two freezes", stallExact, stallOpts{secondPause: true}, 7, record.Pass,
			[]string{"longest pause 1 s (m1 on host-a) <= 7 s", within + exactText}, exact,
			record.Fail, "most 2 freezes (m1 on host-a [30, 31] s and the fault window [19.95, 26] s holding its cutover)", 2},
		{"unlanded: no fault window", stallExact, stallOpts{unlanded: true}, 7, record.Pass,
			[]string{"longest pause 6.05 s (m1 on host-a) <= 7 s over 1 migration/host pairs"}, nil, record.Pass, "at most 1 freeze(s)", 1},
		{"healed: no fault window", stallHealed, stallOpts{}, 5, record.Pass,
			[]string{"longest pause 3.55 s (m1 on host-a) <= 5 s over 1 migration/host pairs"}, nil, record.Pass, "at most 1 freeze(s)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for format, s := range judgedStallRun(t, tc.kind, tc.opts, tc.crit) {
				pb := findCheck(s, CheckPauseBound)
				if pb.Verdict != tc.verdict {
					t.Errorf("%s: pause-bound %s %q, want %s", format, pb.Verdict, pb.Detail, tc.verdict)
				}
				for _, w := range tc.detail {
					if !strings.Contains(pb.Detail, w) {
						t.Errorf("%s: pause-bound detail %q lacks %q", format, pb.Detail, w)
					}
				}
				if tc.masked == nil && strings.Contains(pb.Detail, "fault window") {
					t.Errorf("%s: pause-bound detail %q names a fault window, want none", format, pb.Detail)
				}
				if fr := findCheck(s, CheckFreezes); fr.Verdict != tc.freezes || !strings.Contains(fr.Detail, tc.freezesSay) {
					t.Errorf("%s: freezes %s %q, want %s with %q", format, fr.Verdict, fr.Detail, tc.freezes, tc.freezesSay)
				}
				hp := s.Migrations[0].Hosts["host-a"]
				if d := cmp.Diff(tc.masked, hp.MaskedBy); d != "" {
					t.Errorf("%s: host-a's masked_by (-want +got):\n%s", format, d)
				}
				cut := 26.0
				if tc.kind == stallHealed {
					cut = 23.5 // the heal brings the ANA change to nvme0 at 23.3 s
				}
				if hp.CutoverS == nil || *hp.CutoverS != cut {
					t.Errorf("%s: host-a's cutover %v, want %v s", format, hp.CutoverS, cut)
				}
				if hp.Freezes != tc.hostFrz || s.Migrations[0].Freezes != tc.hostFrz {
					t.Errorf("%s: host-a's freezes %d (m1's %d), want %d", format, hp.Freezes, s.Migrations[0].Freezes, tc.hostFrz)
				}
				if b, ok := s.Migrations[0].Hosts["host-b"]; ok && (b.MaskedBy != nil || !cmp.Equal(b.Windows, [][2]float64{{20.5, 26.5}})) {
					t.Errorf("%s: host-b's windows %v, masked_by %+v: want its own [20.5, 26.5] s, not masked", format, b.Windows, b.MaskedBy)
				}
			}
		})
	}
}

// judgedStallRun is stallRun(kind, opts) judged with bound crit in both
// timeline formats (bothFormats), by format; the Judge must equal the
// reference on each.
func judgedStallRun(t *testing.T, kind stallKind, opts stallOpts, crit float64) map[string]record.Summary {
	t.Helper()
	plan, tl := stallRun(kind, opts)
	plan.Params.PauseCritS = crit
	out := map[string]record.Summary{}
	for format, lines := range bothFormats(t, tl) {
		out[format] = Evaluate(plan, lines)
		if d := cmp.Diff(refEvaluate(plan, lines), out[format]); d != "" {
			t.Errorf("%s: the Judge (+) differs from the reference (-):\n%s", format, d)
		}
	}
	return out
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
