package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
)

// defaultRun runs the main job (DefaultParams) with the default fault
// schedule of seed on the control plane variant cp, with the fixed
// operator's extra source release (release_sources, fiomig's extra): these
// tests judge the harness on a system that cleans up after itself; the
// operator as sourced leaves each completed migration's source paths
// reconnecting into "does not allow host" for ctrl_loss_tmo (sim tests
// TestSourcePathsAfterCompleted, TestMigrationPhasesAndCutover). tune, when
// set, changes the model last.
func defaultRun(tb testing.TB, seed int64, cp string, tune func(*record.Model)) Result {
	tb.Helper()
	p := DefaultParams()
	p.Model.ControlPlane, p.Model.ReleaseSources = cp, true
	if tune != nil {
		tune(&p.Model)
	}
	c, err := SimCluster(seed, p)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	sched, err := FaultSchedule(seed, p, c.Topology(), nil, "")
	if err != nil {
		tb.Fatal(err)
	}
	res, err := Run(context.Background(), c, Config{Plan: record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: seed, Params: p, Faults: sched},
		OutDir: tb.TempDir(), StartUnix: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// TestDefaultFaultScheduleCoversEveryKindAndStage: the default schedule
// has one fault of every kind, its stages cover every stage, and the same
// seed draws the same schedule.
func TestDefaultFaultScheduleCoversEveryKindAndStage(t *testing.T) {
	p := DefaultParams()
	c, err := SimCluster(1, p)
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(1); seed <= 20; seed++ {
		s, err := FaultSchedule(seed, p, c.Topology(), nil, "")
		if err != nil {
			t.Fatal(err)
		}
		again, _ := FaultSchedule(seed, p, c.Topology(), nil, "")
		if d := cmp.Diff(s, again); d != "" {
			t.Fatalf("seed %d: two draws differ:\n%s", seed, d)
		}
		var kinds, stages []string
		for _, f := range s {
			kinds = append(kinds, f.Fault)
			if !slices.Contains(stages, f.Phase) {
				stages = append(stages, f.Phase)
			}
		}
		slices.Sort(kinds)
		slices.Sort(stages)
		want := slices.Sorted(slices.Values(faults.Kinds))
		wantStages := slices.Sorted(slices.Values(record.Stages))
		if !slices.Equal(kinds, want) || !slices.Equal(stages, wantStages) {
			t.Errorf("seed %d: kinds %v, stages %v; want every kind once (%v) and every stage", seed, kinds, stages, want)
		}
	}
	if s, _ := FaultSchedule(1, p, c.Topology(), []string{}, ""); len(s) != 0 {
		t.Errorf("--faults none: %d faults", len(s))
	}
	if s, _ := FaultSchedule(1, p, c.Topology(), []string{faults.KindANAFlap}, ""); len(s) != 1 || s[0].Fault != faults.KindANAFlap {
		t.Errorf("--faults ana-flap: %+v", s)
	}
}

// TestDefaultFaultsAHealthySystemSurvives: with the control plane's cancel
// fixed (fixed-cancel), or with sbcli's cancel (the default) and the two
// sourced repairs the main job runs (the lvol monitor, the fixed CSI
// driver's ip:port restore), the main job with its default faults passes —
// every fault landed, no check failed (seed 1 here; docs: seeds 1-10) —
// but for the silent stalls of a node crash or partition: the host's I/O
// sits on its optimized path to the lost node until the kernel's
// keep-alive gives up, kato to 1.5 × kato (5-7.5 s) after the fault
// (docs/host-model.md), and pause-bound and freezes count that stall in
// the migration whose span it falls in (stallFailures). With sbcli's
// cancel and no repair it fails path-completeness, and the detail names
// the cancelled migration before the lost path: a real defect, not the
// harness.
func TestDefaultFaultsAHealthySystemSurvives(t *testing.T) {
	for _, cp := range []string{"fixed-cancel", "sbcli"} {
		seed := int64(1)
		res := defaultRun(t, seed, cp, nil)
		for _, c := range res.Summary.Checks {
			if c.Verdict == record.Fail && !stallFailure(t, res.Summary, c) {
				t.Errorf("seed %d, %s: %s %s: %s", seed, cp, c.Name, c.Verdict, c.Detail)
			}
		}
		kinds := map[string]bool{}
		for _, f := range res.Summary.Faults {
			if f.Status == record.FaultLanded {
				kinds[f.Kind] = true
			}
		}
		if len(kinds) < 6 {
			t.Errorf("seed %d: %d kinds landed, want >= 6", seed, len(kinds))
		}
	}
	res := defaultRun(t, 1, "sbcli", func(m *record.Model) { m.LvolMonitor, m.CSIRestore = false, record.CSIRestoreOff })
	for _, c := range res.Summary.Checks {
		switch {
		case c.Name == "path-completeness":
			if c.Verdict != record.Fail || !strings.Contains(c.Detail, "ended Failed") {
				t.Errorf("sbcli: path-completeness %s (%s); want a failure naming the cancelled migration", c.Verdict, c.Detail)
			}
		case c.Name == "migration-outcomes":
			// Also allowed to fail with sbcli: each cancel deletes the
			// source tertiary's subsystem (no lvol monitor here), which
			// fails the volume's next migration, and a node crash during a
			// validation fails it since the reboot does not bring the
			// migration's listeners back before its cutover (sourced
			// restart, sim/faults.go recreateLvols): seed 1 completes
			// 18 of 23 (0.78 < 0.8; 19 before the restart was sourced).
			t.Logf("sbcli: migration-outcomes %s: %s", c.Verdict, c.Detail)
		case c.Verdict == record.Fail && !stallFailure(t, res.Summary, c):
			t.Errorf("sbcli: %s failed too: %s", c.Name, c.Detail)
		}
	}
}

// stallFailure reports whether check c failed only on silent stalls that a
// node-crash or network-partition fault began: pause-bound or freezes,
// every window of theirs over the bound (or past a migration's first)
// starting at such a stall's start, itself the fault's injection.
func stallFailure(t *testing.T, s record.Summary, c record.CheckResult) bool {
	t.Helper()
	if c.Name != "pause-bound" && c.Name != "freezes" {
		return false
	}
	cause := map[string]bool{} // host at start time
	for _, st := range s.Stalls {
		for _, f := range s.Faults {
			if (f.Kind == faults.KindNodeCrash || f.Kind == faults.KindNetworkPartition) && f.InjectedS == st.StartS {
				cause[fmt.Sprint(st.Host, st.StartS)] = true
			}
		}
	}
	if len(cause) == 0 {
		return false
	}
	crit := 5.0
	for _, m := range s.Migrations {
		for h, hp := range m.Hosts {
			for i, w := range hp.Windows {
				over := (c.Name == "pause-bound" && w[1]-w[0] > crit) || (c.Name == "freezes" && i > 0)
				if over && !cause[fmt.Sprint(h, w[0])] {
					return false
				}
			}
		}
	}
	t.Logf("%s failed on silent stalls of a node crash or partition: %s", c.Name, c.Detail)
	return true
}

// BenchmarkMainJob is `fiomig run` with its defaults (23 migrations, the
// default faults, settle 60 s, sampled every 0.1 s), without the CLI.
func BenchmarkMainJob(b *testing.B) {
	for b.Loop() {
		defaultRun(b, 1, "sbcli", nil)
	}
}
