package faults

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// drive advances c in steps of dt up to end, as the scenario does, and
// returns every line.
func drive(t *testing.T, c backend.Cluster, dt, end float64) []record.Line {
	t.Helper()
	var all []record.Line
	for i := 0; ; i++ {
		at := float64(i) * dt
		if at > end+1e-9 {
			return all
		}
		lines, err := c.AdvanceTo(at)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, lines...)
	}
}

func faultLines(lines []record.Line) []record.Line {
	var out []record.Line
	for _, l := range lines {
		if l.Kind == record.KindFault {
			out = append(out, l)
		}
	}
	return out
}

func assertOrdered(t *testing.T, lines []record.Line) {
	t.Helper()
	for i := 1; i < len(lines); i++ {
		if lines[i].T < lines[i-1].T {
			t.Fatalf("line %d at t=%v comes after t=%v: timeline out of order", i, lines[i].T, lines[i-1].T)
		}
	}
}

func phase(tm float64, mig, p string) record.Line {
	return record.Line{T: tm, Kind: record.KindPhase, Migration: mig, NQN: "nqn.vol1", Phase: p}
}

func TestTargetRestartAtTimeInjectsAndRecoversOnTime(t *testing.T) {
	f := newFake()
	in, err := NewInjector(f, []record.FaultSpec{{Fault: KindTargetRestart, Target: "storage-2", AtS: 1.23, ForS: 2.5}})
	if err != nil {
		t.Fatal(err)
	}
	lines := drive(t, in, 0.5, 6)
	got := faultLines(lines)
	want := []record.Line{
		{T: 1.23, Kind: record.KindFault, Fault: KindTargetRestart, Action: ActionInject, Target: "storage-2", Phase: record.StageIdle,
			Evidence: map[string]string{"ports_stopped": "4426,4428,4430"}},
		{T: 3.73, Kind: record.KindFault, Fault: KindTargetRestart, Action: ActionRecover, Target: "storage-2",
			Evidence: map[string]string{"ports_listening": "4426,4428,4430"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fault lines (-want +got):\n%s", d)
	}
	if f.stops != 1 || f.starts != 1 || f.down["storage-2"] {
		t.Errorf("stops=%d starts=%d down=%v; want one stop, one start, up at the end", f.stops, f.starts, f.down["storage-2"])
	}
	ex := in.Executed()
	if ex[0].Params["injected_at_s"] != "1.23" || ex[0].Params["recovered_at_s"] != "3.73" {
		t.Errorf("executed schedule params = %v, want injected_at_s 1.23, recovered_at_s 3.73", ex[0].Params)
	}
	// Recover is idempotent: recovering again changes nothing and is no error.
	if _, err := (&TargetRestart{Node: "storage-2"}).Recover(Env{Cluster: f}); err != nil || f.down["storage-2"] {
		t.Errorf("second recover: err %v, down %v", err, f.down["storage-2"])
	}
	// A vanished target counts as recovered.
	if ev, err := (&TargetRestart{Node: "storage-9"}).Recover(Env{Cluster: f}); err != nil || len(ev) != 0 {
		t.Errorf("recover of an unknown node: %v, %v; want no error, no evidence", ev, err)
	}
}

func TestPhaseTriggerFiresAtTheExactInstantWithAStepper(t *testing.T) {
	script := []record.Line{phase(0.31, "mig-0001", record.PhasePending), phase(3.37, "mig-0001", record.PhaseValidating)}
	spec := record.FaultSpec{Fault: KindTargetRestart, Target: "storage-1", Phase: record.PhaseValidating,
		Migration: "mig-0001", ForS: 1, Params: map[string]string{"after_s": "0.5"}}
	for _, tc := range []struct {
		name     string
		stepper  bool
		injectAt float64
	}{
		{"event stepper: exact", true, 3.87},
		// Without a stepper the phase line is seen at the end of the
		// AdvanceTo(3.4) that returned it; the delay then counts from the
		// line's own time, so the injection is still at 3.87.
		{"no stepper: delay from the phase line", false, 3.87},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(script...)
			var c backend.Cluster = f
			if tc.stepper {
				c = fakeStepper{f}
			}
			in, err := NewInjector(c, []record.FaultSpec{spec})
			if err != nil {
				t.Fatal(err)
			}
			lines := drive(t, in, 0.1, 6)
			assertOrdered(t, lines)
			got := faultLines(lines)
			if len(got) != 2 || got[0].Action != ActionInject || got[0].T != tc.injectAt || got[1].T != tc.injectAt+1 {
				t.Fatalf("fault lines %+v; want inject at %v, recover 1 s later", got, tc.injectAt)
			}
			if ex := in.Executed(); ex[0].Params["injected_at_s"] != "3.87" {
				t.Errorf("executed injected_at_s = %q", ex[0].Params["injected_at_s"])
			}
		})
	}
	// after_s 0 without a stepper: the injection waits for the end of the
	// AdvanceTo that reported the phase (3.4), never earlier than the phase.
	f := newFake(script...)
	spec.Params = nil
	in, _ := NewInjector(f, []record.FaultSpec{spec})
	got := faultLines(drive(t, in, 0.1, 6))
	if len(got) == 0 || got[0].T < 3.37 || got[0].T > 3.4+1e-9 {
		t.Errorf("coarse phase trigger injected at %+v, want within [3.37, 3.4]", got)
	}
}

// A fault file names a migration by the simulator's id mig-NNNN; on a
// backend that names its migrations otherwise (kube: <run>-mig-<n>) it
// fires on the N-th migration started, as on the simulator, instead of
// never (the run then ended inconclusive on faults-landed).
func TestSimulatorMigrationIDFiresOnOtherBackends(t *testing.T) {
	f := newFake(phase(1, "fiomig-1-ab-mig-1", record.PhaseValidating), phase(2, "fiomig-1-ab-mig-2", record.PhaseValidating),
		phase(3, "mig-0002", record.PhaseValidating))
	in, err := NewInjector(fakeStepper{f}, []record.FaultSpec{
		{Fault: KindTargetRestart, Target: "storage-3", Phase: record.PhaseValidating, Migration: "mig-0002", ForS: 0.5},
		{Fault: KindAbortedValidation, Target: "mig-0002", Params: map[string]string{"mode": ModeKillJob}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := faultLines(drive(t, in, 0.25, 4))
	ex := in.Executed()
	if len(ex) != 2 || ex[0].Migration != "fiomig-1-ab-mig-2" || ex[1].Migration != "fiomig-1-ab-mig-2" {
		t.Fatalf("executed %+v (fault lines %+v); want both on fiomig-1-ab-mig-2, the second migration started", ex, got)
	}
	if ex[0].Params["injected_at_s"] != "2" {
		t.Errorf("target-restart injected at %q, want 2 (the second migration's Validating)", ex[0].Params["injected_at_s"])
	}
	// On the simulator itself the id is exact: the simulator's own
	// mig-0002 never stands for another migration.
	f = newFake(phase(1, "mig-0001", record.PhaseValidating), phase(2, "mig-0003", record.PhaseValidating), phase(3, "mig-0002", record.PhaseValidating))
	in, _ = NewInjector(fakeStepper{f}, []record.FaultSpec{{Fault: KindTargetRestart, Target: "storage-3",
		Phase: record.PhaseValidating, Migration: "mig-0002", ForS: 0.5}})
	drive(t, in, 0.25, 4)
	if ex := in.Executed(); len(ex) != 1 || ex[0].Migration != "mig-0002" {
		t.Errorf("executed %+v, want mig-0002 itself", ex)
	}
}

func TestAnyMigrationTriggerResolvesToTheFirst(t *testing.T) {
	f := newFake(phase(1, "mig-0001", record.PhaseValidating), phase(2, "mig-0002", record.PhaseValidating))
	in, _ := NewInjector(fakeStepper{f}, []record.FaultSpec{{Fault: KindTargetRestart, Target: "storage-3",
		Phase: record.PhaseValidating, ForS: 0.5}})
	got := faultLines(drive(t, in, 0.25, 4))
	if len(got) != 2 || got[0].T != 1 {
		t.Fatalf("fault lines %+v; want one inject at t=1", got)
	}
	if ex := in.Executed(); ex[0].Migration != "mig-0001" {
		t.Errorf("executed migration %q, want mig-0001", ex[0].Migration)
	}
}

func TestDroppedConnectsLandWithTheFirstDrop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stepper bool
		landAt  float64
	}{
		{"event stepper: dated to the drop", true, 2.25},
		{"no stepper: dated to the end of the AdvanceTo that saw it", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.connects = []fakeConnect{{t: 0.5, target: "storage-2", host: "storage-1"}, {t: 2.25, target: "storage-2", host: "storage-3"},
				{t: 2.5, target: "storage-1", host: "storage-3"}, {t: 3.75, target: "storage-2", host: "storage-1"}, {t: 6, target: "storage-2", host: "storage-1"}}
			var c backend.Cluster = f
			if tc.stepper {
				c = fakeStepper{f}
			}
			in, _ := NewInjector(c, []record.FaultSpec{{Fault: KindDroppedConnects, Target: "storage-2", AtS: 1, ForS: 4}})
			lines := drive(t, in, 1, 7)
			assertOrdered(t, lines)
			got := faultLines(lines)
			want := []record.Line{
				// Stamped at the injection instant, with the evidence known then (none).
				{T: 1, Kind: record.KindFault, Fault: KindDroppedConnects, Action: ActionInject, Target: "storage-2", Phase: record.StageIdle},
				{T: tc.landAt, Kind: record.KindFault, Fault: KindDroppedConnects, Action: ActionLanded, Target: "storage-2",
					Evidence: map[string]string{"connects_dropped": "1"}},
				{T: 5, Kind: record.KindFault, Fault: KindDroppedConnects, Action: ActionRecover, Target: "storage-2",
					Evidence: map[string]string{"connects_dropped": "2"}},
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("fault lines (-want +got):\n%s", d)
			}
			if tc.stepper {
				// The landed line precedes the kernel's report of the dropped CONNECT.
				for i, l := range lines {
					if l.Kind == record.KindKernel && l.T == 2.25 && (i == 0 || lines[i-1].Kind != record.KindFault) {
						t.Errorf("kernel line of the first drop is not preceded by the landed line")
					}
				}
			}
			// Effect: only the CONNECTs to storage-2 inside [1, 5) failed.
			var failed []float64
			for _, l := range lines {
				if l.Kind == record.KindKernel && strings.HasPrefix(l.Message, "failed to connect") {
					failed = append(failed, l.T)
				}
			}
			if d := cmp.Diff([]float64{2.25, 3.75}, failed); d != "" {
				t.Errorf("failed CONNECTs (-want +got):\n%s", d)
			}
			if f.drops[len(f.drops)-1].open {
				t.Error("the drop rule is still open after recovery")
			}
		})
	}
}

func TestFaultWithoutEffectMakesTheVerdictInconclusive(t *testing.T) {
	f := newFake()
	f.connects = []fakeConnect{{t: 0.5, target: "storage-2", host: "storage-1"}}
	sched := []record.FaultSpec{{Fault: KindDroppedConnects, Target: "storage-2", AtS: 1, ForS: 2}}
	in, _ := NewInjector(f, sched)
	lines := drive(t, in, 1, 4)
	got := faultLines(lines)
	if len(got) != 2 || got[0].Action != ActionInject || len(got[0].Evidence) != 0 || got[0].T != 1 ||
		got[1].Action != ActionRecover || got[1].T != 3 || !strings.Contains(got[1].Reason, "no effect observed") {
		t.Fatalf("fault lines %+v; want an evidence-less inject line at the injection (1 s) and the recover line at the window's end saying why", got)
	}
	res := checks.FaultsLanded(record.Plan{Faults: in.Executed()}, lines)
	if res.Verdict != record.Inconclusive {
		t.Errorf("faults-landed = %s (%s), want inconclusive", res.Verdict, res.Detail)
	}
	// The same schedule with a CONNECT in the window lands and passes.
	f = newFake()
	f.connects = []fakeConnect{{t: 1.5, target: "storage-2", host: "storage-1"}}
	in, _ = NewInjector(f, sched)
	lines = drive(t, in, 1, 4)
	if res := checks.FaultsLanded(record.Plan{Faults: in.Executed()}, lines); res.Verdict != record.Pass {
		t.Errorf("faults-landed = %s (%s), want pass", res.Verdict, res.Detail)
	}
}

func TestAbortedValidation(t *testing.T) {
	script := []record.Line{phase(0.2, "mig-0001", record.PhasePending), phase(0.6, "mig-0001", record.PhaseValidating),
		phase(7, "mig-0001", record.PhaseRunning), phase(12, "mig-0001", record.PhaseCompleted)}
	t.Run("abort while validating", func(t *testing.T) {
		f := newFake(script...)
		in, _ := NewInjector(fakeStepper{f}, []record.FaultSpec{{Fault: KindAbortedValidation, Target: "mig-0001",
			Params: map[string]string{"after_s": "1"}}})
		lines := drive(t, in, 0.1, 14)
		got := faultLines(lines)
		if len(got) != 2 || got[0].T != 1.6 || got[0].Evidence["phase_before"] != record.PhaseValidating ||
			got[0].Evidence["phase_after"] != record.PhaseAborted {
			t.Fatalf("fault lines %+v; want inject at 1.6 with Validating -> Aborted", got)
		}
		if len(f.aborted) != 1 {
			t.Errorf("aborted %v, want mig-0001 once", f.aborted)
		}
	})
	t.Run("kill the validation job of the first consumer", func(t *testing.T) {
		f := newFake(script...)
		in, _ := NewInjector(fakeStepper{f}, []record.FaultSpec{{Fault: KindAbortedValidation, Target: "mig-0001",
			Params: map[string]string{"after_s": "2.5", "mode": ModeKillJob}}})
		got := faultLines(drive(t, in, 0.1, 14))
		want := map[string]string{"job_killed_on": "storage-1", "round": "1", "phase_before": record.PhaseValidating, "phase_after": record.PhaseFailed}
		if len(got) != 2 || got[0].T != 3.1 {
			t.Fatalf("fault lines %+v; want inject at 3.1", got)
		}
		if d := cmp.Diff(want, got[0].Evidence); d != "" {
			t.Errorf("evidence (-want +got):\n%s", d)
		}
	})
	t.Run("too late: the migration is past validating", func(t *testing.T) {
		f := newFake(script...)
		in, _ := NewInjector(fakeStepper{f}, []record.FaultSpec{{Fault: KindAbortedValidation, Target: "mig-0001",
			Params: map[string]string{"after_s": "13", "mode": ModeKillJob}}})
		lines := drive(t, in, 0.1, 15)
		got := faultLines(lines)
		if len(got) == 0 || len(got[0].Evidence) != 0 || got[0].Reason == "" {
			t.Fatalf("fault lines %+v; want an inject line without evidence, with the reason", got)
		}
		if len(in.Errors()) == 0 {
			t.Error("the failed injection is not in Errors()")
		}
	})
	t.Run("migration ends before its trigger phase", func(t *testing.T) {
		f := newFake(phase(0.2, "mig-0001", record.PhasePending), phase(0.4, "mig-0001", record.PhaseFailed))
		in, _ := NewInjector(fakeStepper{f}, []record.FaultSpec{{Fault: KindAbortedValidation, Target: "mig-0001"}})
		lines := drive(t, in, 0.1, 2)
		got := faultLines(lines)
		if len(got) != 1 || got[0].T != 0.4 || !strings.Contains(got[0].Reason, "ended Failed before entering Validating") {
			t.Fatalf("fault lines %+v", got)
		}
		if res := checks.FaultsLanded(record.Plan{Faults: in.Executed()}, lines); res.Verdict != record.Inconclusive {
			t.Errorf("faults-landed %s, want inconclusive", res.Verdict)
		}
	})
}

func TestRecoveryIsRegisteredBeforeInjectionAndRunsAtTheEnd(t *testing.T) {
	f := newFake()
	f.stopErr = errFake
	in, _ := NewInjector(f, []record.FaultSpec{
		{Fault: KindTargetRestart, Target: "storage-1", AtS: 1, ForS: 100},
		{Fault: KindDroppedConnects, Target: "storage-3", AtS: 1, ForS: 100},
		{Fault: KindTargetRestart, Target: "storage-2", AtS: 50, ForS: 1}, // never reached
	})
	drive(t, in, 1, 3)
	if !f.down["storage-1"] {
		t.Fatal("the half-failed stop did not take the node down (fake)")
	}
	lines := in.RecoverAll()
	if f.down["storage-1"] || f.drops[0].open {
		t.Errorf("after RecoverAll: storage-1 down %v, drop window open %v", f.down["storage-1"], f.drops[0].open)
	}
	var actions []string
	for _, l := range lines {
		actions = append(actions, l.Fault+" "+l.Action+" "+l.Target)
	}
	want := []string{
		"target-restart recover storage-1",
		"dropped-connects recover storage-3",
		"target-restart inject storage-2", // never reached: its line says so
	}
	if d := cmp.Diff(want, actions); d != "" {
		t.Errorf("RecoverAll lines (-want +got):\n%s", d)
	}
	if r := lines[2].Reason; !strings.HasPrefix(r, "not injected: the run ended before it") || len(lines[2].Evidence) != 0 {
		t.Errorf("never-injected fault's line %+v: want no evidence and a reason saying so", lines[2])
	}
	if again := in.RecoverAll(); len(again) != 0 {
		t.Errorf("a second RecoverAll returned %d lines", len(again))
	}
	// Close recovers too (the lines are lost; the world is restored).
	f2 := newFake()
	in2, _ := NewInjector(f2, []record.FaultSpec{{Fault: KindTargetRestart, Target: "storage-1", AtS: 0, ForS: 100}})
	drive(t, in2, 1, 1)
	if err := in2.Close(); err != nil || f2.down["storage-1"] {
		t.Errorf("Close: %v, storage-1 still down %v", err, f2.down["storage-1"])
	}
}

func TestBackendWithoutKnobs(t *testing.T) {
	f := newFake()
	in, _ := NewInjector(bare{f}, []record.FaultSpec{{Fault: KindTargetRestart, Target: "storage-1", AtS: 0.5, ForS: 1}})
	lines := drive(t, in, 0.5, 2)
	got := faultLines(lines)
	if len(got) != 2 || len(got[0].Evidence) != 0 || !strings.Contains(got[0].Reason, "cannot restart targets") {
		t.Fatalf("fault lines %+v", got)
	}
}

func TestFromSpec(t *testing.T) {
	for _, tc := range []struct {
		spec    record.FaultSpec
		wantErr string
	}{
		{record.FaultSpec{Fault: KindTargetRestart, Target: "storage-1", ForS: 5}, ""},
		{record.FaultSpec{Fault: KindTargetRestart, Target: "storage-1"}, "for_s must be > 0"},
		{record.FaultSpec{Fault: KindTargetRestart, ForS: 1}, "no target"},
		{record.FaultSpec{Fault: KindDroppedConnects, Target: "10.0.0.2:4428", ForS: 5}, ""},
		{record.FaultSpec{Fault: KindDroppedConnects, Target: "storage-1", ForS: -1}, "negative"},
		{record.FaultSpec{Fault: KindAbortedValidation, Target: "mig-0002"}, ""},
		{record.FaultSpec{Fault: KindAbortedValidation, Target: "mig-0002", Params: map[string]string{"mode": "nuke"}}, "mode"},
		{record.FaultSpec{Fault: KindAbortedValidation, Target: "mig-0002", Migration: "mig-0003"}, "target of an aborted validation"},
		{record.FaultSpec{Fault: KindTargetRestart, Target: "storage-1", ForS: 1, Params: map[string]string{"after_s": "x"}}, "after_s"},
		{record.FaultSpec{Fault: "disk-fire", Target: "storage-1"}, "unknown kind"},
		// An unpadded simulator id names no migration (the simulator's
		// third is mig-0003): refused, not left to never fire.
		{record.FaultSpec{Fault: KindTargetRestart, Target: "storage-1", ForS: 1, Phase: record.PhaseValidating, Migration: "mig-3"}, "is mig-0003; or write #3"},
		{record.FaultSpec{Fault: KindAbortedValidation, Target: "mig-03"}, `target "mig-03"`},
		{record.FaultSpec{Fault: KindTargetRestart, Target: "storage-1", ForS: 1, Phase: record.PhaseValidating, Migration: "mig-10000"}, ""},
	} {
		_, err := FromSpec(tc.spec)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%+v: %v", tc.spec, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%+v: error %v, want it to contain %q", tc.spec, err, tc.wantErr)
		}
	}
}

func TestSeededIsDeterministic(t *testing.T) {
	o := SeededOptions{Count: 3, Kinds: []string{KindTargetRestart, KindDroppedConnects, KindAbortedValidation},
		Migrations: []string{"mig-0001", "mig-0002", "mig-0003", "mig-0004", "mig-0005", "mig-0006"},
		Nodes:      []string{"storage-1", "storage-2", "storage-3"}, AfterS: [2]float64{0, 3}, ForS: [2]float64{10, 30}}
	a, err := Seeded(7, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Seeded(7, o)
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("seed 7 twice differs:\n%s", d)
	}
	seen := map[string]bool{}
	for _, s := range a {
		if seen[s.Migration] {
			t.Errorf("migration %s drawn twice", s.Migration)
		}
		seen[s.Migration] = true
		if _, err := FromSpec(s); err != nil {
			t.Error(err)
		}
	}
	differs := false
	for seed := int64(1); seed <= 5 && !differs; seed++ {
		c, _ := Seeded(seed, o)
		differs = !cmp.Equal(a, c)
	}
	if !differs {
		t.Error("seeds 1..5 all give seed 7's schedule")
	}
	if _, err := Seeded(1, SeededOptions{Count: 7, Kinds: o.Kinds, Migrations: o.Migrations, Nodes: o.Nodes}); err == nil {
		t.Error("more faults than migrations accepted")
	}
	// Without migrations: node faults at seeded times, in time order.
	timed := SeededOptions{Count: 4, Kinds: []string{KindTargetRestart, KindDroppedConnects}, Nodes: o.Nodes,
		AtS: [2]float64{10, 100}, ForS: [2]float64{5, 10}}
	ts, err := Seeded(3, timed)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range ts {
		if s.Phase != "" || s.AtS < 10 || s.AtS > 100 || (i > 0 && s.AtS < ts[i-1].AtS) {
			t.Errorf("timed fault %d: %+v; want at_s in [10, 100], sorted, no phase", i, s)
		}
	}
	timed.Kinds = append(timed.Kinds, KindAbortedValidation)
	if _, err := Seeded(3, timed); err == nil {
		t.Error("aborted-validation without migrations accepted")
	}
}

var errFake = errorString("fake: stop half failed")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestOverlappingTargetRestartsShareOneEffect: two target restarts of one
// node whose windows overlap are one effect, reference-counted: the second
// injects nothing (its evidence says it joined), the first recover does not
// start the target (its line says who holds the effect), the last one
// does. The timeline, the executed schedule and checks.FaultsLanded agree.
func TestOverlappingTargetRestartsShareOneEffect(t *testing.T) {
	f := newFake()
	sched := []record.FaultSpec{
		{Fault: KindTargetRestart, Target: "storage-2", AtS: 1, ForS: 4},
		{Fault: KindTargetRestart, Target: "storage-2", AtS: 2, ForS: 5},
	}
	in, err := NewInjector(f, sched)
	if err != nil {
		t.Fatal(err)
	}
	var downAt6 bool
	var lines []record.Line
	for _, at := range []float64{0, 1, 2, 3, 4, 5, 6, 7, 8} {
		ls, err := in.AdvanceTo(at)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, ls...)
		if at == 6 {
			downAt6 = f.down["storage-2"]
		}
	}
	got := faultLines(lines)
	want := []record.Line{
		{T: 1, Kind: record.KindFault, Fault: KindTargetRestart, Action: ActionInject, Target: "storage-2", Phase: record.StageIdle,
			Evidence: map[string]string{"ports_stopped": "4426,4428,4430"}},
		{T: 2, Kind: record.KindFault, Fault: KindTargetRestart, Action: ActionInject, Target: "storage-2", Phase: record.StageIdle,
			Evidence: map[string]string{"overlaps": "target-restart on storage-2 in effect since 1 s", "holders": "2"}},
		{T: 5, Kind: record.KindFault, Fault: KindTargetRestart, Action: ActionRecover, Target: "storage-2",
			Evidence: map[string]string{"effect_held_by": "1 overlapping fault(s)", "until": "the last one recovers"}},
		{T: 7, Kind: record.KindFault, Fault: KindTargetRestart, Action: ActionRecover, Target: "storage-2",
			Evidence: map[string]string{"ports_listening": "4426,4428,4430"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fault lines (-want +got):\n%s", d)
	}
	if f.stops != 1 || f.starts != 1 || !downAt6 || f.down["storage-2"] {
		t.Errorf("stops=%d starts=%d, down at 6 s %v, down at the end %v; want one stop, one start at 7 s (the last recover)",
			f.stops, f.starts, downAt6, f.down["storage-2"])
	}
	ex := in.Executed()
	for i, s := range ex {
		if !strings.Contains(s.Params["overlap"], "one of 2 overlapping target-restart faults on storage-2: the effect began at 1 s and ended at 7 s") {
			t.Errorf("executed entry %d params %v: want the overlap named with the effect's span", i, s.Params)
		}
	}
	plan := record.Plan{Params: record.Params{}, Faults: ex}
	if c := checks.FaultsLanded(plan, lines); c.Verdict != record.Pass {
		t.Errorf("faults-landed %s: %s", c.Verdict, c.Detail)
	}
}

// counterFake is a ConnectDropper with a counter readable while the drop
// is open (as kube's nftables rule): Landed must read it without stopping
// and restarting the drop, and the recover line must count each drop once.
type counterFake struct{ *fakeCluster }

func (f counterFake) DroppedConnects(target string) (int64, error) {
	for _, d := range f.drops {
		if d.open && d.target == target {
			return d.dropped, nil
		}
	}
	return 0, nil
}

func TestDroppedConnectsReadsACounterWithoutStopping(t *testing.T) {
	f := newFake()
	f.connects = []fakeConnect{{t: 2.25, target: "storage-2", host: "storage-3"}, {t: 3.75, target: "storage-2", host: "storage-1"}}
	in, _ := NewInjector(counterFake{f}, []record.FaultSpec{{Fault: KindDroppedConnects, Target: "storage-2", AtS: 1, ForS: 4}})
	lines := drive(t, in, 1, 7)
	got := faultLines(lines)
	want := []record.Line{
		{T: 1, Kind: record.KindFault, Fault: KindDroppedConnects, Action: ActionInject, Target: "storage-2", Phase: record.StageIdle},
		{T: 3, Kind: record.KindFault, Fault: KindDroppedConnects, Action: ActionLanded, Target: "storage-2",
			Evidence: map[string]string{"connects_dropped": "1"}},
		{T: 5, Kind: record.KindFault, Fault: KindDroppedConnects, Action: ActionRecover, Target: "storage-2",
			Evidence: map[string]string{"connects_dropped": "2"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fault lines (-want +got):\n%s", d)
	}
	if len(f.drops) != 1 {
		t.Errorf("the drop was opened %d times, want once (read without stop and restart)", len(f.drops))
	}
}
