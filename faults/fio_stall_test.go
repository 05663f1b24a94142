package faults_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
	"github.com/fiomig/fiomig/workload"
)

// TestFioGapAgreesWithSilentStall (issue 28): real fio on the wall-clock
// backend, its volume's consumer partitioned from the source primary — a
// live, optimized path — as the migration goes Running, the cutover 1-2 s
// later. fio's I/O sits on the silent path until the kernel's keep-alive
// gives up (5-7.5 s); the ANA pause, counting the silent stall, agrees
// with fio's gap (fio-pause-agreement, within its tolerance and the run's
// noise floor), where the samples alone show only the cutover's ~2 s.
// Skips with a reason without fio, /dev/fuse or root; fails then under
// FIOMIG_REQUIRE_TOOLS=1.
func TestFioGapAgreesWithSilentStall(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: real fio through FUSE runs in wall time (-short)")
	}
	tooltest.Require(t, workload.Available())
	p := scenario.DefaultParams()
	p.Migrations, p.Model.Volumes, p.SettleS, p.AttributionMarginS, p.GapS = 1, 1, 3, 2, 1
	p.Model.ReleaseSources = true
	p.Model.SyncMinS, p.Model.SyncMaxS = 1, 2
	// The stall outlasts the migration (Completed comes in 5-7 s):
	// sample the settle period as finely as the migration, or its window
	// ends on the settle period's 1 s grid.
	p.SettleSampleIntervalS = p.SampleIntervalS
	sched := []record.FaultSpec{{Fault: faults.KindNetworkPartition, Target: "worker-1/storage-1", Migration: "#1",
		Phase: record.StageBeforeCutover, ForS: 15}}
	res, err := scenario.RunFio(context.Background(), 4, scenario.Config{
		Plan:   record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: 4, Command: "go test", Params: p, Faults: sched},
		OutDir: t.TempDir(), StartUnix: 1700000000,
	}, scenario.FioOptions{RateIOPS: 50, MountDir: filepath.Join(t.TempDir(), "mnt")})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if len(s.Stalls) == 0 {
		t.Fatalf("no silent stall in the summary; faults %+v", s.Faults)
	}
	t.Logf("stalls %+v", s.Stalls)
	if s.Fio == nil || len(s.Fio.Comparisons) != 1 {
		t.Fatalf("fio summary %+v: want one comparison", s.Fio)
	}
	c := s.Fio.Comparisons[0]
	t.Logf("fio gap %.3f s, ANA pause %.3f s (diff %.3f, tolerance %.3f, noise floor %.3f, load %+v)",
		c.FioGapS, c.PauseS, c.DiffS, s.Fio.ToleranceS, s.Fio.NoiseFloorS, s.Fio.Load)
	if c.PauseS < 5 || c.FioGapS < 5 {
		t.Errorf("ANA pause %.3f s, fio gap %.3f s: want both the silent stall's, at least kato (5 s)", c.PauseS, c.FioGapS)
	}
	if math.Abs(c.DiffS) > s.Fio.ToleranceS+s.Fio.NoiseFloorS+1e-9 {
		t.Errorf("fio gap %.3f s and ANA pause %.3f s differ by %.3f s, beyond tolerance %.3f + noise floor %.3f",
			c.FioGapS, c.PauseS, c.DiffS, s.Fio.ToleranceS, s.Fio.NoiseFloorS)
	}
	for _, r := range s.Checks {
		if r.Name == checks.CheckFioPauseAgreement && r.Verdict == record.Fail {
			t.Errorf("%s: %s", r.Name, r.Detail)
		}
	}
}
