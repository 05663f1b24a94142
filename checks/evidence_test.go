package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// withSeedLines adds to migrationRun's record what the simulator's records
// carry besides samples: a ctrl_loss_tmo on every controller, a kernel line
// per controller created, a target line: the checks controller-churn,
// loss-timeout and target-log-pattern are then made.
func withSeedLines(plan record.Plan, tl []record.Line) (record.Plan, []record.Line) {
	out := slices.Clone(tl)
	tmo := 60
	for i, l := range out {
		if l.Kind == record.KindSample {
			cs := slices.Clone(l.Controllers)
			for k := range cs {
				cs[k].CtrlLossTmo = &tmo
			}
			out[i].Controllers = cs
		}
	}
	var n int64
	out = append(out,
		record.Line{T: 10, Kind: record.KindKernel, Host: "host-a", Controller: "nvme2", Message: `new ctrl: NQN "` + vol1 + `", addr 10.0.0.3:4426`},
		record.Line{T: 10, Kind: record.KindTarget, Node: "node-3", NotAllowedConnects: &n})
	slices.SortStableFunc(out, func(a, b record.Line) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	return plan, out
}

// TestNoCheckPassesOnNothing (issue 27 item 5): a check with no evidence is
// inconclusive, never pass — on an empty timeline (the plan asks for a
// migration and a fault), with a plan whose topology is empty too, and on a
// settled record of a run with --migrations 0 (split-brain said "pass (0
// host samples within 0 migrations)"). Re-judging an empty timeline makes
// every check the whole record makes (none is dropped: issue 27 item 4).
func TestNoCheckPassesOnNothing(t *testing.T) {
	plan, full := withSeedLines(migrationRun(clean))
	whole := Evaluate(plan, full)
	if whole.Verdict != record.Pass {
		t.Fatalf("the whole record: %s %+v", whole.Verdict, whole.Checks)
	}
	var names []string
	for _, c := range whole.Checks {
		names = append(names, c.Name)
	}
	for _, want := range []string{CheckControllerChurn, CheckLossTimeout, CheckTargetLogPattern} {
		if !slices.Contains(names, want) {
			t.Fatalf("the whole record makes no %s: %v", want, names)
		}
	}

	bare := plan
	bare.Topology = record.Topology{}
	for name, c := range map[string]struct {
		plan record.Plan
		tl   []record.Line
	}{
		"empty timeline":                 {plan, nil},
		"empty timeline, empty topology": {bare, nil},
		"format line only":               {plan, []record.Line{{T: 0, Kind: record.KindFormat, Version: record.FormatChangeOnly}}},
	} {
		s := Evaluate(c.plan, c.tl)
		var got []string
		for _, r := range s.Checks {
			got = append(got, r.Name)
			if r.Verdict != record.Inconclusive {
				t.Errorf("%s: %s = %s (%s), want inconclusive", name, r.Name, r.Verdict, r.Detail)
			}
		}
		if !slices.Equal(got, names) {
			t.Errorf("%s: checks %v, want the whole record's %v", name, got, names)
		}
		if s.Verdict != record.Inconclusive {
			t.Errorf("%s: verdict %s, want inconclusive", name, s.Verdict)
		}
	}

	// --migrations 0: hosts sampled through a settle period, no migration.
	w := newWorld(0.5, "host-a")
	w.plan.Params.Migrations = 0
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.endpoints(vol1, src1)
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.until(41)
	s := Evaluate(w.plan, w.lines)
	for _, name := range []string{CheckPauseBound, CheckFreezes, CheckSplitBrain, CheckServedAfterCutover, CheckMigrationOutcomes} {
		if c := checkOf(s, name); c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, "no migration") {
			t.Errorf("--migrations 0: %s = %s (%s), want inconclusive: no migration", name, c.Verdict, c.Detail)
		}
	}
	// What the samples show is evidence: leaks, completeness, pauses.
	for _, name := range []string{CheckLeakedControllers, CheckPathCompleteness, CheckUnattributedPauses} {
		if c := checkOf(s, name); c.Verdict != record.Pass {
			t.Errorf("--migrations 0: %s = %s (%s), want pass", name, c.Verdict, c.Detail)
		}
	}

	// Migrations, but none Completed (each failed at validation): nothing
	// for served-after-cutover to judge, no cutover for the pause checks.
	w = newWorld(0.5, "host-a")
	w.plan.Params.Migrations = 1
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.endpoints(vol1, src1)
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.until(10)
	w.phase("m1", vol1, record.PhasePending, []string{src1}, []string{tgt1})
	w.until(12)
	w.phase("m1", vol1, record.PhaseFailed, nil, nil)
	w.until(60)
	s = Evaluate(w.plan, w.lines)
	for _, name := range []string{CheckPauseBound, CheckFreezes, CheckServedAfterCutover} {
		if c := checkOf(s, name); c.Verdict != record.Inconclusive {
			t.Errorf("no Completed migration: %s = %s (%s), want inconclusive", name, c.Verdict, c.Detail)
		}
	}
}

// TestInterruptedFailsOnASeenViolation (issue 27 item 7): a run stopped by
// a signal after its 7 s cutover pause (bound 5 s) closed fails — the
// violation was seen — though its record is short; one that saw nothing
// fail is inconclusive, never pass.
func TestInterruptedFailsOnASeenViolation(t *testing.T) {
	for _, tc := range []struct {
		v    violation
		want string
	}{{longPause, record.Fail}, {clean, record.Inconclusive}} {
		plan, tl := migrationRun(tc.v)
		s := Interrupted(Evaluate(plan, cutAt(tl, 30)))
		if !s.Coverage.Short || !s.Interrupted || s.Verdict != tc.want {
			t.Errorf("violation %d cut at 30 s: short %v, interrupted %v, verdict %s; want short, interrupted, %s\n%+v",
				tc.v, s.Coverage.Short, s.Interrupted, s.Verdict, tc.want, s.Checks)
		}
	}
}
