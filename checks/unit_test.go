package checks

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

func sampleOf(t float64, ctrls ...record.Controller) record.Line {
	return record.Line{T: t, Kind: record.KindSample, Host: "h", Controllers: ctrls}
}

func c(name, addr, state string, l ...record.Leg) record.Controller {
	return record.Controller{Name: name, NQN: vol1, Address: addr, State: state, Legs: l}
}

func TestPaused(t *testing.T) {
	other := record.Controller{Name: "nvme9", NQN: "nqn.other", Address: src1, State: "live", Legs: legs("optimized", 1, 2)}
	cases := []struct {
		name   string
		sample record.Line
		nsids  []int
		want   bool
	}{
		{"optimized on live", sampleOf(0, c("nvme0", src1, "live", legs("optimized", 1, 2)...)), []int{1, 2}, false},
		{"non-optimized on live", sampleOf(0, c("nvme0", src1, "live", legs("non-optimized", 1, 2)...)), []int{1, 2}, false},
		{"all inaccessible", sampleOf(0, c("nvme0", src1, "live", legs("inaccessible", 1, 2)...)), []int{1, 2}, true},
		{"optimized but connecting", sampleOf(0, c("nvme0", src1, "connecting", legs("optimized", 1, 2)...)), []int{1, 2}, true},
		{"one namespace of two without a path", sampleOf(0,
			c("nvme0", src1, "live", record.Leg{NSID: 1, ANA: "optimized"}, record.Leg{NSID: 2, ANA: "inaccessible"})), []int{1, 2}, true},
		{"namespaces served by different controllers", sampleOf(0,
			c("nvme0", src1, "live", legs("optimized", 1)...), c("nvme1", src2, "live", legs("non-optimized", 2)...)), []int{1, 2}, false},
		{"plan namespace with no leg at all", sampleOf(0, c("nvme0", src1, "live", legs("optimized", 1)...)), []int{1, 2}, true},
		{"head in the sample without a leg", record.Line{Controllers: []record.Controller{c("nvme0", src1, "live", legs("optimized", 1)...)},
			Subsystems: []record.Subsystem{{NQN: vol1, NSIDs: []int{1, 3}}}}, []int{1}, true},
		{"another subsystem's paths do not count", sampleOf(0, other, c("nvme0", src1, "live", legs("change", 1, 2)...)), []int{1, 2}, true},
		{"no controller, namespaces known", sampleOf(0, other), []int{1}, true},
		{"no controller, nothing known", sampleOf(0), nil, true},
		{"nothing planned, live path", sampleOf(0, c("nvme0", src1, "live", legs("optimized", 4)...)), nil, false},
	}
	for _, tc := range cases {
		if got := Paused(tc.sample, vol1, tc.nsids); got != tc.want {
			t.Errorf("%s: Paused = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPauseWindows: the reference's windows (TestJudgeEqualsReference
// holds the Judge to them), with the IPs of the paths at their start.
func TestPauseWindows(t *testing.T) {
	ips := []string{"10.0.0.1"}
	up := func(t float64) record.Line { return sampleOf(t, c("nvme0", src1, "live", legs("optimized", 1)...)) }
	down := func(t float64) record.Line { return sampleOf(t, c("nvme0", src1, "live", legs("inaccessible", 1)...)) }
	cases := []struct {
		name    string
		samples []record.Line
		want    []window
	}{
		{"none", []record.Line{up(0), up(1)}, nil},
		{"one, closed at the first sample after it", []record.Line{up(0), down(1), down(2), up(3.5), up(4)}, []window{{start: 1, end: 3.5, ips: ips}}},
		{"two", []record.Line{down(0), up(1), down(2), up(3)}, []window{{start: 0, end: 1, ips: ips}, {start: 2, end: 3, ips: ips}}},
		{"open at the last sample", []record.Line{up(0), down(1), down(2)}, []window{{start: 1, end: 2, open: true, ips: ips}}},
		{"single paused last sample", []record.Line{up(0), down(1)}, []window{{start: 1, end: 1, open: true, ips: ips}}},
	}
	for _, tc := range cases {
		got := pauseWindows(tc.samples, vol1, []int{1})
		if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(window{})); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestAttribution: two migrations of one subsystem; windows are attributed
// by their start to the migration whose span (first phase line to terminal
// phase plus margin) contains it, the migration proper winning over a
// neighbour's margin; a window outside every span is unattributed; windows
// of another subsystem are not attributed to these migrations. m1 failed
// while Running (its freeze may have begun); m4, failed at validation,
// never started its cutover and takes no window (issue 27 item 2).
func TestAttribution(t *testing.T) {
	tl := []record.Line{
		{T: 10, Kind: record.KindPhase, Migration: "m1", NQN: vol1, Phase: record.PhasePending},
		{T: 15, Kind: record.KindPhase, Migration: "m1", NQN: vol1, Phase: record.PhaseRunning},
		{T: 20, Kind: record.KindPhase, Migration: "m1", NQN: vol1, Phase: record.PhaseFailed},
		{T: 25, Kind: record.KindPhase, Migration: "m2", NQN: vol1, Phase: record.PhasePending},
		{T: 30, Kind: record.KindPhase, Migration: "m3", NQN: "nqn.other", Phase: record.PhasePending},
		{T: 40, Kind: record.KindPhase, Migration: "m2", NQN: vol1, Phase: record.PhaseCompleted},
		{T: 60, Kind: record.KindPhase, Migration: "m4", NQN: vol1, Phase: record.PhasePending},
		{T: 61, Kind: record.KindPhase, Migration: "m4", NQN: vol1, Phase: record.PhaseValidating},
		{T: 62, Kind: record.KindPhase, Migration: "m4", NQN: vol1, Phase: record.PhaseFailed},
	}
	plan := record.Plan{Params: record.Params{AttributionMarginS: 10, Seed: record.DefaultSeedThresholds()}}
	j := NewJudge(plan)
	for _, l := range tl {
		if err := j.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	j.flush() // the last instant's lines
	cases := []struct {
		at   float64
		want string
	}{
		{5, ""},    // before every migration
		{10, "m1"}, // first phase line
		{22, "m1"}, // m1's margin, before m2 starts
		{27, "m2"}, // m2 proper beats m1's margin
		{45, "m2"}, // m2's margin
		{50, "m2"}, // margin end is inclusive
		{50.5, ""}, // after every span
		{61, ""},   // m4 proper: no cutover
		{70, ""},   // m4's margin
		{100, ""},  // long after
	}
	for _, tc := range cases {
		got := ""
		if m := j.attribute(vol1, tc.at); m != nil {
			got = m.id
		}
		if got != tc.want {
			t.Errorf("window at %v attributed to %q, want %q", tc.at, got, tc.want)
		}
	}
	if m := j.attribute("nqn.other", 100); m == nil || m.id != "m3" {
		t.Errorf("a migration without terminal phase must span to the end of the record, got %v", m)
	}
	if m := j.attribute("nqn.other", 12); m != nil {
		t.Errorf("window of nqn.other at 12 s attributed to %s", m.id)
	}
	if m := j.byID["m3"]; !math.IsInf(m.terminal, 1) {
		t.Errorf("m3 terminal = %v, want +Inf", m.terminal)
	}
}

// TestOpenWindowFlagged: a pause still open at the last sample closes there,
// is flagged, and counts against the bound with its measured length.
func TestOpenWindowFlagged(t *testing.T) {
	w := newWorld(1, "host-a")
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.endpoints(vol1, src1)
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.until(5)
	w.phase("m1", vol1, record.PhasePending, []string{src1}, []string{tgt1})
	w.until(6)
	w.ana("host-a", "nvme0", "inaccessible")
	w.until(14)
	s := Evaluate(w.plan, w.lines)
	got := s.Migrations[0].Hosts["host-a"]
	if !got.OpenWindow || got.LongestPauseS != 7 || got.Freezes != 1 {
		t.Fatalf("host-a = %+v, want an open window of 7 s (6..13)", got)
	}
	// Sampled every 1 s, 7 s measured is over the 5 s bound beyond the
	// sampling error (> 5 + 1 s): a failure even at this coarse interval.
	if r := checkOf(s, CheckPauseBound); r.Verdict != record.Fail {
		t.Errorf("pause-bound = %+v, want fail", r)
	}
}

func TestPauseBoundInconclusiveWithoutSamples(t *testing.T) {
	w := newWorld(1, "host-a")
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.state = map[string]map[string]record.Controller{} // no host sampled
	w.phase("m1", vol1, record.PhasePending, []string{src1}, []string{tgt1})
	w.until(1)
	w.phase("m1", vol1, record.PhaseCompleted, nil, nil)
	if r := checkOf(Evaluate(w.plan, w.lines), CheckPauseBound); r.Verdict != record.Inconclusive {
		t.Errorf("pause-bound = %+v, want inconclusive", r)
	}
}

func TestPauseBoundInconclusiveWhenMigrationsMissing(t *testing.T) {
	plan, tl := migrationRun(clean)
	plan.Params.Migrations = 3
	if r := checkOf(Evaluate(plan, tl), CheckPauseBound); r.Verdict != record.Inconclusive {
		t.Errorf("pause-bound = %+v, want inconclusive (1 of 3 migrations)", r)
	}
}

// TestIPv6Endpoints: endpoints and addresses compare in canonical form, so
// a published "[fd00:0::3]:4426" matches a controller at "[fd00::3]:4426".
func TestIPv6Endpoints(t *testing.T) {
	w := newWorld(1, "host-a")
	w.plan.Params.SettleS = 1 // the record covers the settle period (no migration: from 0 s)
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.endpoints(vol1, "[fd00:0::3]:4426")
	w.ctrl("host-a", "nvme0", vol1, "[fd00::3]:4426", "live", legs("optimized", 1)...)
	w.until(3)
	s := Evaluate(w.plan, w.lines)
	if res := checkOf(s, CheckPathCompleteness); res.Verdict != record.Pass || len(s.MissingEndpoints) != 0 {
		t.Errorf("completeness = %+v %+v, want pass", res, s.MissingEndpoints)
	}
	if res := checkOf(s, CheckLeakedControllers); res.Verdict != record.Pass || len(s.LeakedControllers) != 0 {
		t.Errorf("leaks = %+v %+v, want pass", res, s.LeakedControllers)
	}
}

func TestNeverPublishedIsInconclusive(t *testing.T) {
	w := newWorld(1, "host-a")
	w.plan.Params.SettleS = 1 // the record covers the settle period (no migration: from 0 s)
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.until(3)
	s := Evaluate(w.plan, w.lines)
	if res := checkOf(s, CheckPathCompleteness); res.Verdict != record.Inconclusive {
		t.Errorf("completeness = %+v, want inconclusive", res)
	}
	if res := checkOf(s, CheckLeakedControllers); res.Verdict != record.Inconclusive {
		t.Errorf("leaks = %+v, want inconclusive", res)
	}
}

// TestLeaksUseLastEndpointsBeforeSettleEnd: an endpoints line after the last
// sample is ignored; the one before it decides.
func TestLeaksUseLastEndpointsBeforeSettleEnd(t *testing.T) {
	w := newWorld(1, "host-a")
	w.plan.Params.SettleS = 1 // the record covers the settle period (no migration: from 0 s)
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.endpoints(vol1, src1)
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.until(3)
	w.endpoints(vol1, tgt1) // after the last sample (2 s)
	s := Evaluate(w.plan, w.lines)
	if res := checkOf(s, CheckLeakedControllers); res.Verdict != record.Pass || len(s.LeakedControllers) != 0 {
		t.Errorf("leaks = %+v %+v, want pass", res, s.LeakedControllers)
	}
}

func TestFaultsLandedPlannedButNotInjected(t *testing.T) {
	plan, tl := migrationRun(clean)
	plan.Faults = append(plan.Faults, record.FaultSpec{Fault: "target-restart", Target: "node-2"})
	if r := FaultsLanded(plan, tl); r.Verdict != record.Inconclusive {
		t.Errorf("faults-landed = %+v, want inconclusive", r)
	}
}

func TestOverall(t *testing.T) {
	r := func(vs ...string) []record.CheckResult {
		out := make([]record.CheckResult, len(vs))
		for i, v := range vs {
			out[i] = record.CheckResult{Name: "c", Verdict: v}
		}
		return out
	}
	cases := []struct {
		in   []record.CheckResult
		want string
	}{
		{r(record.Pass, record.Pass), record.Pass},
		{r(record.Pass, record.Inconclusive), record.Inconclusive},
		{r(record.Inconclusive, record.Fail, record.Pass), record.Fail},
		{r(record.Pass, "bogus"), record.Inconclusive},
		{nil, record.Pass},
	}
	for _, tc := range cases {
		if got := Overall(tc.in); got != tc.want {
			t.Errorf("Overall(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestEvaluateDeterministic: the same record evaluates to an equal summary.
func TestEvaluateDeterministic(t *testing.T) {
	plan, tl := migrationRun(secondFreeze)
	a, b := Evaluate(plan, tl), Evaluate(plan, tl)
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("two evaluations differ:\n%s", d)
	}
}

// TestEvaluateEmptyRecord: an empty or sample-less record evaluates without
// panicking and never passes a run in which a planned migration never ran.
func TestEvaluateEmptyRecord(t *testing.T) {
	plan := record.Plan{Params: record.Params{Migrations: 1, PauseCritS: 5, FreezesAllowed: 1, Seed: record.DefaultSeedThresholds()}}
	s := Evaluate(plan, nil)
	if s.Verdict != record.Inconclusive {
		t.Errorf("empty record verdict %q, want inconclusive; checks %+v", s.Verdict, s.Checks)
	}
	tl := []record.Line{{T: 3, Kind: record.KindPhase, Migration: "m1", NQN: vol1, Phase: record.PhasePending}}
	s = Evaluate(plan, tl)
	if len(s.Migrations) != 1 || s.Migrations[0].EndS != 3 || s.Verdict == record.Pass {
		t.Errorf("sample-less record: %+v", s)
	}
}

// TestLeakKindsFromInspect: a live controller at a published endpoint with
// a leg to only one of two namespaces is reported by nvmeof.Inspect (asked
// per namespace) as controller-not-contributing; one with no leg at all, in
// a subsystem the host shows with no namespace, as no-namespace.
func TestLeakKindsFromInspect(t *testing.T) {
	w := newWorld(1, "host-a", "host-b")
	w.plan.Params.SettleS = 1 // the record covers the settle period (no migration: from 0 s)
	w.volume("vol1", vol1, []int{1, 2}, "host-a")
	w.volume("vol2", "nqn.2023-02.io.simplyblock:vol2", []int{1}, "host-b")
	w.endpoints(vol1, tgt1, tgt2)
	w.endpoints("nqn.2023-02.io.simplyblock:vol2", tgt1)
	w.ctrl("host-a", "nvme0", vol1, tgt1, "live", legs("optimized", 1, 2)...)
	w.ctrl("host-a", "nvme1", vol1, tgt2, "live", legs("non-optimized", 1)...)
	w.state["host-b"]["nvme0"] = record.Controller{Name: "nvme0", NQN: "nqn.2023-02.io.simplyblock:vol2", Address: tgt1, State: "live"}
	w.until(2)
	s := Evaluate(w.plan, w.lines)
	leaks, res := s.LeakedControllers, checkOf(s, CheckLeakedControllers)
	want := []record.Leak{
		{Host: "host-a", Controller: "nvme1", NQN: vol1, Address: tgt2, State: "live", Kind: "controller-not-contributing"},
		{Host: "host-b", Controller: "nvme0", NQN: "nqn.2023-02.io.simplyblock:vol2", Address: tgt1, State: "live", Kind: "no-namespace"},
	}
	if d := cmp.Diff(want, leaks); d != "" {
		t.Errorf("leaks (-want +got):\n%s", d)
	}
	if res.Verdict != record.Fail {
		t.Errorf("verdict %q, want fail", res.Verdict)
	}
}
