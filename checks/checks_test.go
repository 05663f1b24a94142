package checks

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

func verdicts(s record.Summary) map[string]string {
	m := map[string]string{}
	for _, c := range s.Checks {
		m[c.Name] = c.Verdict
	}
	return m
}

var allChecks = []string{
	CheckPauseBound, CheckFreezes, CheckLeakedControllers, CheckPathCompleteness,
	CheckSplitBrain, CheckServedAfterCutover, CheckUnattributedPauses, CheckFaultsLanded,
	// The seed harness's checks this synthetic record has the lines for
	// (no io, kernel or target lines, no ctrl_loss_tmo: those are not made).
	CheckMigrationOutcomes, CheckPathsPerSubsystem, CheckDirtyStart,
}

func TestEvaluateCleanRunPassesEveryCheck(t *testing.T) {
	plan, tl := migrationRun(clean)
	s := Evaluate(plan, tl)
	want := map[string]string{}
	for _, c := range allChecks {
		want[c] = record.Pass
	}
	if d := cmp.Diff(want, verdicts(s)); d != "" {
		t.Fatalf("verdicts (-want +got):\n%s\nchecks: %+v", d, s.Checks)
	}
	if s.Verdict != record.Pass || s.Seed != 7 {
		t.Fatalf("verdict %q seed %d, want pass 7", s.Verdict, s.Seed)
	}
	var names []string
	for _, c := range s.Checks {
		names = append(names, c.Name)
	}
	if d := cmp.Diff(allChecks, names); d != "" {
		t.Errorf("check order (-want +got):\n%s", d)
	}

	// The cutover: samples at 20.0 .. 21.5 s are paused, 22.0 s is not;
	// the host sees tgt1 optimized and no source at 22.0 s, the control
	// plane says Completed at 22.5 s.
	completed, cut, lag := 22.5, 22.0, -0.5
	hp := record.HostPauses{LongestPauseS: 2, Freezes: 1, Windows: [][2]float64{{20, 22}}, CutoverS: &cut, CutoverLagS: &lag}
	want1 := []record.MigrationSummary{{
		ID: "m1", NQN: vol1, Outcome: record.PhaseCompleted, StartS: 10, EndS: 22.5, CompletedS: &completed,
		Freezes: 1, Hosts: map[string]record.HostPauses{"host-a": hp, "host-b": hp},
	}}
	if d := cmp.Diff(want1, s.Migrations); d != "" {
		t.Errorf("migrations (-want +got):\n%s", d)
	}
	if len(s.Unattributed)+len(s.LeakedControllers)+len(s.MissingEndpoints) != 0 {
		t.Errorf("findings on a clean run: %+v %+v %+v", s.Unattributed, s.LeakedControllers, s.MissingEndpoints)
	}
	if s.Unattributed == nil || s.LeakedControllers == nil || s.MissingEndpoints == nil {
		t.Errorf("nil finding slices would encode as null, want []")
	}
}

// TestEveryCheckCanFail feeds one synthetic record per violation and
// expects exactly that check to leave pass.
func TestEveryCheckCanFail(t *testing.T) {
	cases := []struct {
		name    string
		v       violation
		check   string
		verdict string
		overall string
	}{
		{"long pause", longPause, CheckPauseBound, record.Fail, record.Fail},
		{"second freeze", secondFreeze, CheckFreezes, record.Fail, record.Fail},
		{"leaked controller", leakedCtrl, CheckLeakedControllers, record.Fail, record.Fail},
		{"controller still connecting", notLive, CheckLeakedControllers, record.Fail, record.Fail},
		{"missing 4428 next to 4426", missing4428, CheckPathCompleteness, record.Fail, record.Fail},
		{"split-brain sample", splitBraining, CheckSplitBrain, record.Fail, record.Fail},
		{"target serves only some namespaces", partialTarget, CheckServedAfterCutover, record.Fail, record.Fail},
		{"unattributed pause", unattributed, CheckUnattributedPauses, record.Fail, record.Fail},
		{"fault without evidence", faultNoEvidence, CheckFaultsLanded, record.Inconclusive, record.Inconclusive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, tl := migrationRun(tc.v)
			s := Evaluate(plan, tl)
			want := map[string]string{}
			for _, c := range allChecks {
				want[c] = record.Pass
			}
			want[tc.check] = tc.verdict
			if d := cmp.Diff(want, verdicts(s)); d != "" {
				t.Errorf("verdicts (-want +got):\n%s\nchecks: %+v", d, s.Checks)
			}
			if s.Verdict != tc.overall {
				t.Errorf("overall verdict %q, want %q", s.Verdict, tc.overall)
			}
		})
	}
}
