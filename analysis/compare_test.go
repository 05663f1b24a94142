package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// causes is one synthetic run: loss window, injected fault (one kind),
// leak kinds the fix removes, other (of which unexplained).
func causes(loss, fault, removable, other, unexplained int) RunCauses {
	c := RunCauses{Total: loss + fault + removable + other, Loss: loss, Fault: fault, Removable: removable,
		Other: other, Unexplained: unexplained, FaultKinds: map[string]int{}}
	if fault > 0 {
		c.FaultKinds[CauseFault+" (dropped-connects)"] = fault
	}
	return c
}

func row(t *testing.T, c SeedsComparison, class string) CauseInterval {
	t.Helper()
	for _, r := range c.Rows {
		if r.Class == class {
			return r
		}
	}
	t.Fatalf("no row %q in %+v", class, c.Rows)
	return CauseInterval{}
}

// TestJudgeOverSeeds: the verdict of the comparison over seeds on
// synthetic per-seed figures (nothing here comes from the simulator).
func TestJudgeOverSeeds(t *testing.T) {
	// A spread of prefix figures the fixed runs are built from.
	// A spread of prefix figures the fixed runs are built from; seeds 2 and
	// 6 fail on leak kinds the fix removes (else nothing would exercise it).
	base := []RunCauses{causes(3, 2, 0, 0, 0), causes(5, 1, 1, 0, 0), causes(0, 3, 0, 0, 0), causes(7, 2, 0, 1, 0),
		causes(2, 0, 0, 0, 0), causes(4, 4, 2, 0, 0), causes(1, 2, 0, 0, 0), causes(6, 1, 0, 0, 0), causes(3, 3, 0, 0, 0), causes(2, 2, 0, 0, 0)}
	pairs := func(fixed func(i int, p RunCauses) RunCauses, prefix func(i int, p RunCauses) RunCauses) []SeedPair {
		var out []SeedPair
		for i, p := range base {
			if prefix != nil {
				p = prefix(i, p)
			}
			out = append(out, SeedPair{Seed: int64(i + 1), Prefix: p, Fixed: fixed(i, p)})
		}
		return out
	}
	same := func(_ int, p RunCauses) RunCauses { return p }
	noRemovable := func(_ int, p RunCauses) RunCauses { return causes(p.Loss, p.Fault, 0, p.Other, p.Unexplained) }
	for _, tc := range []struct {
		name    string
		pairs   []SeedPair
		verdict string
		detail  string
	}{
		{"identical runs pass", pairs(same, nil), record.Pass, "confined to the leak kinds the fix removes"},
		{"identical runs where nothing the fix removes occurred are not exercised, not a pass", pairs(same, noRemovable),
			NotExercised, "nothing the fix removes occurred: no validation failed on a leak kind the fix removes"},
		{"a systematic +3 loss-window failures per seed in fixed fails",
			pairs(func(_ int, p RunCauses) RunCauses {
				return causes(p.Loss+3, p.Fault, p.Removable, p.Other, p.Unexplained)
			}, nil), record.Fail, "sbcli subsystem-loss window: interval [3.00, 3.00] excludes 0"},
		// Nothing removable occurs here either: not exercised, and the
		// intervals alone fail on the held cause that moved (Intervals).
		{"a systematic decrease of injected-fault failures in fixed is not exercised, the intervals alone failing (the fix cannot change them)",
			pairs(func(_ int, p RunCauses) RunCauses {
				return causes(p.Loss, p.Fault+[]int{-1, -2}[int(p.Loss)%2], p.Removable, p.Other, p.Unexplained)
			}, func(_ int, p RunCauses) RunCauses { return causes(p.Loss, p.Fault+2, 0, p.Other, 0) }), NotExercised,
			"nothing the fix removes occurred: no validation failed on a leak kind the fix removes (nor on a loss window downstream of one) in either operator on any of the 10 seeds, so the comparison cannot show what the fix does; the intervals alone: fail — injected fault: interval [-1.88, -1.12] excludes 0"},
		// The sourced default of fio-mig-1787159565 on seeds 1-10: nothing
		// removable, no held cause alone out of ±its noise, yet fixed fails
		// more in total on every seed: not exercised (the fix's benefit is
		// untested), and the intervals alone fail — a measured difference
		// kept in Intervals, which fails the exit code (Refuted).
		{"fixed failing more in total where nothing the fix removes occurred is not exercised, the intervals alone failing",
			pairs(func(i int, p RunCauses) RunCauses {
				return causes(p.Loss+[]int{2, -1}[i%2], p.Fault+[]int{-1, 2}[i%2], 0, p.Other, 0)
			}, func(_ int, p RunCauses) RunCauses { return causes(p.Loss, p.Fault+1, 0, p.Other, 0) }), NotExercised,
			"the intervals alone: fail — total: interval [1.00, 1.00] wholly above 0, fixed fails more (a measured difference"},
		{"a difference only in fix-removable causes passes",
			pairs(func(_ int, p RunCauses) RunCauses {
				return causes(p.Loss, p.Fault, 0, p.Other, 0)
			}, func(i int, p RunCauses) RunCauses { return causes(p.Loss, p.Fault, 1+i%4, p.Other, 0) }), record.Pass, "confined"},
		{"fixed failing more on the leak kinds it removes fails through the total",
			pairs(func(_ int, p RunCauses) RunCauses {
				return causes(p.Loss, p.Fault, p.Removable+1, p.Other, 0)
			}, nil), record.Fail, "total: interval [1.00, 1.00] wholly above 0"},
		{"one unexplained failure in one run fails, however the intervals look",
			pairs(func(i int, p RunCauses) RunCauses {
				if i == 4 {
					return causes(p.Loss, p.Fault, p.Removable, p.Other+1, 1)
				}
				return p
			}, nil), record.Fail, "unexplained validation failures (seed 5 fixed 1)"},
		{"n=3 with large spread is inconclusive",
			[]SeedPair{{Seed: 1, Prefix: causes(2, 1, 0, 0, 0), Fixed: causes(6, 1, 0, 0, 0)},
				{Seed: 2, Prefix: causes(6, 1, 0, 0, 0), Fixed: causes(2, 1, 0, 0, 0)},
				{Seed: 3, Prefix: causes(3, 1, 1, 0, 0), Fixed: causes(3, 1, 1, 0, 0)}}, record.Inconclusive, "would need about"},
		{"an observed mean beyond δ that does not exclude 0 is inconclusive, and no number of seeds reaches ±δ",
			[]SeedPair{{Seed: 1, Prefix: causes(0, 1, 0, 0, 0), Fixed: causes(9, 1, 0, 0, 0)},
				{Seed: 2, Prefix: causes(4, 1, 1, 0, 0), Fixed: causes(3, 1, 1, 0, 0)},
				{Seed: 3, Prefix: causes(0, 1, 0, 0, 0), Fixed: causes(9, 1, 0, 0, 0)},
				{Seed: 4, Prefix: causes(4, 1, 0, 0, 0), Fixed: causes(3, 1, 0, 0, 0)}}, record.Inconclusive, "no number of seeds reaches ±δ"},
		{"one seed is not judged", pairs(same, nil)[:1], NotJudged, "needs at least 2"},
		{"no seed is not judged", nil, NotJudged, "needs at least 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := JudgeOverSeeds(tc.pairs, 2)
			if c.Verdict != tc.verdict || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("verdict %s — %s; want %s with %q", c.Verdict, c.Detail, tc.verdict, tc.detail)
			}
			// Intervals is kept exactly when not exercised, and says fail
			// exactly when the detail quotes a failing interval.
			wantIntervals := ""
			if tc.verdict == NotExercised {
				wantIntervals = record.Pass
				if strings.Contains(tc.detail, "alone: fail") {
					wantIntervals = record.Fail
				}
			}
			if c.Intervals != wantIntervals {
				t.Errorf("intervals %q, want %q", c.Intervals, wantIntervals)
			}
			if c.Verdict == record.Inconclusive && strings.Contains(tc.detail, "would need") {
				// At sample SD 4 (D = +4, −4, 0), t(0.975, n−1)·4/√n ≤ 2
				// first holds at n = 18 (t(0.975, 17) = 2.110: 1.989).
				if c.SeedsNeeded != 18 {
					t.Errorf("seeds needed %d, want 18", c.SeedsNeeded)
				}
			}
		})
	}
}

// TestJudgeOverSeedsInterval: the interval is the paired t-interval — for
// D = 1, 2, 3: mean 2, sample SD 1, t(0.975, 2) = 4.3027 (any t table), so
// 2 ± 4.3027/√3 = [−0.484, 4.484].
func TestJudgeOverSeedsInterval(t *testing.T) {
	var ps []SeedPair
	for i, d := range []int{1, 2, 3} {
		ps = append(ps, SeedPair{Seed: int64(i + 1), Prefix: causes(1, 0, 0, 0, 0), Fixed: causes(1+d, 0, 0, 0, 0)})
	}
	r := row(t, JudgeOverSeeds(ps, 2), ClassLoss)
	if d := cmp.Diff([]int{1, 2, 3}, r.D); d != "" {
		t.Errorf("D (-want +got):\n%s", d)
	}
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"mean", r.Mean, 2}, {"sd", r.SD, 1}, {"lo", r.Lo, -0.4841}, {"hi", r.Hi, 4.4841}} {
		if math.Abs(x.got-x.want) > 5e-4 {
			t.Errorf("%s %.4f, want %.4f", x.name, x.got, x.want)
		}
	}
	if r.Verdict != "too wide" {
		t.Errorf("row verdict %q, want too wide", r.Verdict)
	}
}

// TestCausesOf: a run's failures sorted into the comparison's classes.
func TestCausesOf(t *testing.T) {
	f := IncidentFigures{Failures: []ValidationFailure{
		{Cause: CauseSubsystemLoss}, {Cause: CauseSubsystemLoss}, {Cause: CauseParkedLeak}, {Cause: CauseZeroLegLeak},
		{Cause: CauseFault + " (target-restart)"}, {Cause: CauseCompletedPathLeak}, {Cause: CauseUnexplained + " (refused)"},
	}}
	want := RunCauses{Total: 7, Loss: 2, Fault: 1, Removable: 2, Other: 2, Unexplained: 1,
		FaultKinds: map[string]int{CauseFault + " (target-restart)": 1}}
	if d := cmp.Diff(want, CausesOf(f)); d != "" {
		t.Errorf("CausesOf (-want +got):\n%s", d)
	}
}

// TestCausesOfLossDownstream: a loss-window failure whose window was
// opened by the cancel of a migration that failed on a leak kind the fix
// removes — directly or through a chain of loss windows — counts with the
// removable kinds; one opened by any other failure's cancel, by a cancel
// with no validation failure, or on a looping chain stays loss window.
func TestCausesOfLossDownstream(t *testing.T) {
	loss := func(mig, by string) ValidationFailure {
		return ValidationFailure{Migration: mig, Cause: CauseSubsystemLoss, CancelledBy: by}
	}
	f := IncidentFigures{Failures: []ValidationFailure{
		{Migration: "mig-0001", Cause: CauseConnectingLeak},
		loss("mig-0002", "mig-0001"), loss("mig-0003", "mig-0002"), loss("mig-0004", "mig-0003"), // chain from a removable leak
		{Migration: "mig-0005", Cause: CauseFault + " (dropped-connects)"},
		loss("mig-0006", "mig-0005"), loss("mig-0007", "mig-0006"), // chain from an injected fault
		loss("mig-0008", "mig-0099"),                               // cancelled without a validation failure
		loss("mig-0009", "mig-0010"), loss("mig-0010", "mig-0009"), // a loop
		{Migration: "mig-0011", Cause: CauseCompletedPathLeak}, loss("mig-0012", "mig-0011"), // a leak the fix does not remove
	}}
	want := RunCauses{Total: 12, Loss: 6, Fault: 1, Removable: 4, LossDownstream: 3, Other: 1,
		FaultKinds: map[string]int{CauseFault + " (dropped-connects)": 1}}
	if d := cmp.Diff(want, CausesOf(f)); d != "" {
		t.Errorf("CausesOf (-want +got):\n%s", d)
	}
}

// TestJudgeOverSeedsLossDownstream: over 5 seeds, a prefix run with one
// failure on a leak kind the fix removes followed by 3 loss-window
// failures its cancel opened (a chain), against a fixed run with none of
// them, passes: the whole difference is the fix's. The same 3 loss
// windows opened by an injected-fault failure (which fixed fails too) are
// held, and a systematic difference in them fails. Synthetic figures;
// each seed adds 0-2 unrelated loss windows to both runs.
func TestJudgeOverSeedsLossDownstream(t *testing.T) {
	run := func(seed int, first string, chain bool) IncidentFigures {
		var fs []ValidationFailure
		for k := range seed % 3 {
			fs = append(fs, ValidationFailure{Migration: fmt.Sprintf("mig-01%02d", k), Cause: CauseSubsystemLoss, CancelledBy: "mig-0200"})
		}
		if first != "" {
			fs = append(fs, ValidationFailure{Migration: "mig-0001", Cause: first})
		}
		if chain {
			fs = append(fs, ValidationFailure{Migration: "mig-0002", Cause: CauseSubsystemLoss, CancelledBy: "mig-0001"},
				ValidationFailure{Migration: "mig-0003", Cause: CauseSubsystemLoss, CancelledBy: "mig-0002"},
				ValidationFailure{Migration: "mig-0004", Cause: CauseSubsystemLoss, CancelledBy: "mig-0001"})
		}
		return IncidentFigures{Seed: int64(seed), Failures: fs}
	}
	fault := CauseFault + " (dropped-connects)"
	for _, tc := range []struct {
		name          string
		prefixFirst   string
		fixedFirst    string
		verdict, want string
	}{
		{"downstream of a removable leak: the fix's, passes", CauseParkedLeak, "", record.Pass, "confined to the leak kinds the fix removes"},
		// Nothing removable occurs in this case: not exercised, with the
		// intervals alone failing on the held loss window.
		{"downstream of an injected fault: held, a systematic −3 fails the intervals", fault, fault, NotExercised, "the intervals alone: fail — " + CauseSubsystemLoss + ": interval [-3.00, -3.00] excludes 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pairs []SeedPair
			for seed := 1; seed <= 5; seed++ {
				pairs = append(pairs, SeedPair{Seed: int64(seed), Prefix: CausesOf(run(seed, tc.prefixFirst, true)), Fixed: CausesOf(run(seed, tc.fixedFirst, false))})
			}
			c := JudgeOverSeeds(pairs, 2)
			if c.Verdict != tc.verdict || !strings.Contains(c.Detail, tc.want) {
				t.Errorf("verdict %s — %s; want %s with %q", c.Verdict, c.Detail, tc.verdict, tc.want)
			}
			if tc.verdict == NotExercised && c.Intervals != record.Fail {
				t.Errorf("intervals %q, want fail", c.Intervals)
			}
			if tc.verdict == record.Pass {
				if r := row(t, c, ClassRemovable); r.Mean != -4 {
					t.Errorf("removable mean D %.2f, want −4 (1 leak + 3 downstream loss windows per seed)", r.Mean)
				}
				if r := row(t, c, ClassLossDownstream); r.Mean != -3 || r.Verdict != "described" {
					t.Errorf("downstream row mean D %.2f verdict %s, want −3, described", r.Mean, r.Verdict)
				}
			}
		})
	}
}

// TestDescribePair: one seed's two runs are described — failures by
// class, each migration whose outcome or cause differs, and where the
// plans diverge.
func TestDescribePair(t *testing.T) {
	fig := func(op string, plans map[string]string, fails ...ValidationFailure) Run {
		return Run{Figures: IncidentFigures{Operator: op, Seed: 4, Failures: fails, ValidationFailed: len(fails), Plans: plans}}
	}
	plans := map[string]string{"mig-0001": "a", "mig-0002": "b", "mig-0003": "c"}
	other := map[string]string{"mig-0001": "a", "mig-0002": "x", "mig-0003": "c"}
	d := DescribePair([]Run{
		fig("prefix", plans, ValidationFailure{Migration: "mig-0001", Cause: CauseParkedLeak}, ValidationFailure{Migration: "mig-0003", Cause: CauseSubsystemLoss}),
		fig("fixed", other, ValidationFailure{Migration: "mig-0002", Cause: CauseSubsystemLoss}, ValidationFailure{Migration: "mig-0003", Cause: CauseSubsystemLoss}),
	})
	want := []Difference{{"mig-0001", "prefix", CauseParkedLeak, ""}, {"mig-0002", "fixed", "", CauseSubsystemLoss}}
	if d == nil || d.PlansDivergeAt != "mig-0002" || d.Pair.Seed != 4 || d.Pair.Prefix.Removable != 1 || d.Pair.Fixed.Loss != 2 {
		t.Fatalf("description %+v", d)
	}
	if diff := cmp.Diff(want, d.Differences); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
	if DescribePair([]Run{fig("fixed", plans)}) != nil {
		t.Error("one operator described as a pair")
	}
}
