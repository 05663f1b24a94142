package faults_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
	"github.com/fiomig/fiomig/workload"
)

// TestFioRunLandsFaults (issue 24 item 2): the wall-clock backend with real
// fio (scenario.RunFio, backend/sim FioCluster) carries the fault kinds the
// virtual-time one does, with the same evidence. Four kinds through four
// different knobs — a killed validation Job, a target restart in the
// cutover window, an operator down while it polls the data sync (lagging:
// it lands with the first reconcile that waited) and a controller reset
// after the cutover — each leave their evidence, and faults-landed passes.
// Before, every inject line said "the sim backend cannot …". Skips with a
// reason without fio, /dev/fuse or root; fails then under
// FIOMIG_REQUIRE_TOOLS=1.
func TestFioRunLandsFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: real fio through FUSE runs in wall time (-short)")
	}
	tooltest.Require(t, workload.Available())
	p := scenario.DefaultParams()
	p.Migrations, p.Model.Volumes, p.SettleS, p.AttributionMarginS, p.GapS = 4, 3, 3, 2, 1
	p.Model.ReleaseSources = true // a clean system, as the main job
	after := map[string]string{"after_s": "0.2"}
	sched := []record.FaultSpec{
		{Fault: faults.KindAbortedValidation, Target: "#1", Migration: "#1", Phase: record.PhaseValidating,
			Params: map[string]string{"mode": faults.ModeKillJob, "after_s": "1.5"}},
		{Fault: faults.KindTargetRestart, Target: "storage-2", Migration: "#2+", Phase: record.StageInFreeze, ForS: 2, Params: after},
		{Fault: faults.KindOperatorRestart, Target: faults.OperatorTarget, Migration: "#3+", Phase: record.StageBeforeCutover, ForS: 3, Params: after},
		{Fault: faults.KindResetController, Target: "worker-1", Migration: "#4+", Phase: record.StageAfterCutover, Params: after},
	}
	res, err := scenario.RunFio(context.Background(), 5, scenario.Config{
		Plan:   record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: 5, Command: "go test", Params: p, Faults: sched},
		OutDir: t.TempDir(), StartUnix: 1700000000,
	}, scenario.FioOptions{RateIOPS: 50, MountDir: filepath.Join(t.TempDir(), "mnt")})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := record.ReadTimeline(filepath.Join(res.Dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	landed := map[string]map[string]string{}
	for _, l := range lines {
		if l.Kind == record.KindFault {
			t.Logf("t=%.3f %s %s %s %v %s", l.T, l.Fault, l.Action, l.Target, l.Evidence, l.Reason)
			if (l.Action == faults.ActionInject || l.Action == faults.ActionLanded) && len(l.Evidence) > 0 {
				landed[l.Fault] = l.Evidence
			}
		}
	}
	for _, want := range []struct{ kind, key string }{
		{faults.KindAbortedValidation, "job_killed_on"},
		{faults.KindTargetRestart, "controllers_no_longer_live"},
		{faults.KindOperatorRestart, "reconciles_deferred"},
		{faults.KindResetController, "controllers_no_longer_live"},
	} {
		if landed[want.kind][want.key] == "" {
			t.Errorf("%s: evidence %v, want %s (as on virtual time)", want.kind, landed[want.kind], want.key)
		}
	}
	var fl record.CheckResult
	for _, c := range res.Summary.Checks {
		if c.Name == checks.CheckFaultsLanded {
			fl = c
		}
	}
	if fl.Verdict != record.Pass {
		t.Errorf("faults-landed %s: %s; want pass", fl.Verdict, fl.Detail)
	}
}
