package faults_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/backend"
	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
)

// The simulated cluster offers every knob of hooks.go (and the retried
// cutover's), on virtual time and on the wall clock with real fio alike
// (issue 24 item 2: FioCluster offered none, so --workload=fio injected
// no fault).
type everyKnob interface {
	backend.Cluster
	faults.TargetRestarter
	faults.ConnectDropper
	faults.MigrationAborter
	faults.EventStepper
	faults.NodeCrasher
	faults.Partitioner
	faults.ConnectRejecter
	faults.OperatorRestarter
	faults.ControllerResetter
	faults.ANAFlapper
	faults.StageReporter
	faults.CutoverRetrier
}

var (
	_ everyKnob = (*simbackend.Cluster)(nil)
	_ everyKnob = (*simbackend.FioCluster)(nil)
)

type simRun struct {
	plan    record.Plan
	lines   []record.Line
	summary record.Summary
	inj     *faults.Injector
	dir     string // the run directory
}

// runWithFaults runs the migrations scenario on the simulator with a fault
// schedule through the whole pipeline (scenario.Run: samples, checks,
// reports) and returns the record.
func runWithFaults(t *testing.T, cfg simbackend.Config, p record.Params, schedule []record.FaultSpec) simRun {
	t.Helper()
	c, err := simbackend.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inj, err := faults.NewInjector(c, schedule)
	if err != nil {
		t.Fatal(err)
	}
	defer inj.Close()
	p.Model = cfg.Model // the world the plan records is the one that ran
	plan := record.Plan{Tool: "fiomig", Scenario: "faults-test", Seed: cfg.Seed, Params: p, Faults: schedule}
	res, err := scenario.Run(context.Background(), inj, scenario.Config{Plan: plan, OutDir: t.TempDir(), StartUnix: 1})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := record.ReadTimeline(res.Dir + "/" + record.TimelineFile)
	if err != nil {
		t.Fatal(err)
	}
	plan, err = record.ReadPlan(res.Dir + "/" + record.PlanFile)
	if err != nil {
		t.Fatal(err)
	}
	return simRun{plan: plan, lines: lines, summary: res.Summary, inj: inj, dir: res.Dir}
}

// params: migrations one after another, then settle seconds sampled every
// settleEvery seconds.
func params(migrations int, settle, settleEvery float64) record.Params {
	p := scenario.DefaultParams()
	p.Migrations, p.SettleS, p.SettleSampleIntervalS = migrations, settle, settleEvery
	return p
}

func faultLinesOf(lines []record.Line, kind string) []record.Line {
	var out []record.Line
	for _, l := range lines {
		if l.Kind == record.KindFault && l.Fault == kind {
			out = append(out, l)
		}
	}
	return out
}

func check(s record.Summary, name string) record.CheckResult {
	for _, c := range s.Checks {
		if c.Name == name {
			return c
		}
	}
	return record.CheckResult{}
}

// lastStates maps "<host>/<nvmeN>" to the state of that controller in the
// host's last sample at or before t.
func statesAt(lines []record.Line, t float64) map[string]string {
	out := map[string]string{}
	last := map[string]record.Line{}
	for _, l := range lines {
		if l.Kind == record.KindSample && l.T <= t {
			last[l.Host] = l
		}
	}
	for h, l := range last {
		for _, c := range l.Controllers {
			out[h+"/"+c.Name] = c.State
		}
	}
	return out
}

// TestTargetRestartEvidenceAndEffect: restarting one storage node for 10 s
// takes its controllers out of live on every host (the evidence names
// them), each reconnects once the target is back, and — with 3-way HA the
// other nodes' paths keep serving — no pause window opens. Restarting all
// three nodes leaves every namespace without a path: a pause window opens
// on every consumer host from the restart until the paths come back (no
// migration runs: summary.json's fault_windows put each down to a
// restart), and the fio pods, whose tolerance is 5 s, die.
func TestTargetRestartEvidenceAndEffect(t *testing.T) {
	cfg := simbackend.Config{Seed: 3, Model: record.Model{Pods: true}}
	one := runWithFaults(t, cfg, params(0, 30, 0.1), []record.FaultSpec{
		{Fault: faults.KindTargetRestart, Target: "storage-2", AtS: 5, ForS: 10}})
	fl := faultLinesOf(one.lines, faults.KindTargetRestart)
	if len(fl) != 2 || fl[0].Action != faults.ActionInject || fl[1].Action != faults.ActionRecover {
		t.Fatalf("fault lines %+v; want inject then recover", fl)
	}
	ev := fl[0].Evidence
	if ev["controllers_no_longer_live"] == "" || ev["controllers_no_longer_live"] == "0" || ev["ports_down"] != "3" {
		t.Fatalf("inject evidence %v; want controllers that left live and 3 ports down", ev)
	}
	if fl[0].T != 5 || fl[1].T != 15 {
		t.Errorf("injected at %v, recovered at %v; want 5 and 15", fl[0].T, fl[1].T)
	}
	t.Logf("one node: inject %v, recover %v", fl[0].Evidence, fl[1].Evidence)
	lost := strings.Fields(ev["controllers"])
	during, after := statesAt(one.lines, 10), statesAt(one.lines, 30)
	for _, c := range lost {
		if strings.HasPrefix(c, "(+") {
			break
		}
		if during[c] == "live" {
			t.Errorf("%s is live while its target is down", c)
		}
		if after[c] != "live" {
			t.Errorf("%s is %q 15 s after the target came back, want live", c, after[c])
		}
	}
	reconnected := 0
	for _, l := range one.lines {
		if l.Kind == record.KindKernel && l.T > 15 && strings.HasPrefix(l.Message, "Successfully reconnected") {
			reconnected++
		}
	}
	if reconnected == 0 {
		t.Error("no kernel line says a controller reconnected after the restart")
	}
	if n := len(one.summary.Unattributed); n != 0 {
		t.Errorf("one node restarted: %d pause windows, want none (the HA paths serve): %+v", n, one.summary.Unattributed)
	}
	if c := check(one.summary, "faults-landed"); c.Verdict != record.Pass {
		t.Errorf("faults-landed %s: %s", c.Verdict, c.Detail)
	}

	all := runWithFaults(t, cfg, params(0, 40, 0.1), []record.FaultSpec{
		{Fault: faults.KindTargetRestart, Target: "storage-1", AtS: 5, ForS: 10},
		{Fault: faults.KindTargetRestart, Target: "storage-2", AtS: 5, ForS: 10},
		{Fault: faults.KindTargetRestart, Target: "storage-3", AtS: 5, ForS: 10}})
	hosts := map[string]bool{}
	t.Logf("all nodes: windows the faults explain %+v", all.summary.FaultWindows)
	for _, w := range all.summary.FaultWindows {
		hosts[w.Host] = true
		if w.Window[0] < 5 || w.Window[0] > 5.1+1e-9 || w.Window[1] < 15 || w.Window[1] > 20 || !strings.HasPrefix(w.Cause, faults.KindTargetRestart+" on storage-") {
			t.Errorf("pause window %v on %s for %s (%s); want it to open at the restart (5 s), close after the return (15 s) and be put down to a restart", w.Window, w.Host, w.NQN, w.Cause)
		}
	}
	if len(all.summary.FaultWindows) != 10 || len(hosts) != 3 || len(all.summary.Unattributed) != 0 {
		t.Errorf("all nodes restarted: %d pause windows explained by the restarts on %d hosts, %d unattributed; want one per volume (10) on all 3 hosts, explained (checks: a window an injected fault explains is not a finding)",
			len(all.summary.FaultWindows), len(hosts), len(all.summary.Unattributed))
	}
	killed := 0
	for _, l := range all.lines {
		if l.Kind == record.KindIO && l.PodState == "killed" {
			killed++
			if l.T < 10 || l.T > 11 {
				t.Errorf("pod %s killed at %v, want just after 5 s + 5 s tolerance", l.Pod, l.T)
			}
		}
	}
	if killed != 10 {
		t.Errorf("%d pods killed, want all 10 (no I/O for longer than the 5 s tolerance)", killed)
	}
}

// TestDroppedConnectsFailValidation: CONNECTs to one node dropped from the
// start of a migration's validation, for longer than the validation Job's
// three attempts (each connect to that node's target listener waits the
// 60 s admin_timeout, 2 s between attempts), get no answer; every attempt
// times out and the migration fails its path validation. The inject line
// is stamped at the injection instant (the phase trigger), the landed line
// at the first drop carries the count.
func TestDroppedConnectsFailValidation(t *testing.T) {
	sched := []record.FaultSpec{{Fault: faults.KindDroppedConnects, Target: "storage-3", Phase: record.PhaseValidating,
		Migration: "mig-0001", ForS: 200}}
	r := runWithFaults(t, simbackend.Config{Seed: 5}, params(1, 60, 1), sched)
	fl := faultLinesOf(r.lines, faults.KindDroppedConnects)
	if len(fl) != 3 || fl[0].Action != faults.ActionInject || fl[1].Action != faults.ActionLanded || fl[2].Action != faults.ActionRecover {
		t.Fatalf("fault lines %+v; want inject, landed and recover", fl)
	}
	var validating, failed record.Line
	for _, l := range r.lines {
		if l.Kind == record.KindPhase && l.Migration == "mig-0001" {
			switch l.Phase {
			case record.PhaseValidating:
				validating = l
			case record.PhaseFailed:
				failed = l
			}
		}
	}
	t.Logf("dropped: %+v / %+v / %+v; failed %q", fl[0], fl[1], fl[2], failed.Reason)
	if fl[0].T != validating.T || len(fl[0].Evidence) != 0 {
		t.Errorf("inject line %+v; want it at the Validating phase (%v), without evidence yet", fl[0], validating.T)
	}
	if fl[1].Evidence["connects_dropped"] == "" || fl[1].T < validating.T || fl[1].T > validating.T+5 {
		t.Errorf("landed line %+v; want connects_dropped evidence within the first seconds of Validating (%v)", fl[1], validating.T)
	}
	if want, _ := strconv.ParseFloat(r.inj.Executed()[0].Params["injected_at_s"], 64); fl[0].T != want {
		t.Errorf("inject line at %v, plan.json injected_at_s %v: want the same instant", fl[0].T, want)
	}
	if failed.Kind == "" || !strings.Contains(failed.Reason, "path validation failed") || !strings.Contains(failed.Reason, "10.0.0.3") {
		t.Errorf("mig-0001 did not fail validation on the dropped node: %+v", failed)
	}
	if c := check(r.summary, "faults-landed"); c.Verdict != record.Pass {
		t.Errorf("faults-landed %s: %s", c.Verdict, c.Detail)
	}
	ex := r.inj.Executed()
	if ex[0].Params["injected_at_s"] == "" || ex[0].Params["recovered_at_s"] == "" {
		t.Errorf("executed schedule %+v lacks the injection and recovery times", ex[0])
	}
}

// TestAbortedValidation: aborting a migration while Validating ends it
// Aborted (evidence: the phase it was in); killing a validation Job
// mid-attempt (blocked on a CONNECT to a node that drops them) fails it,
// and the target paths the Job had connected are left behind by the prefix
// operator — still there, connecting, two minutes later — while the fixed
// operator's 60 s ctrl_loss_tmo removes them.
func TestAbortedValidation(t *testing.T) {
	abort := runWithFaults(t, simbackend.Config{Seed: 2}, params(1, 10, 1), []record.FaultSpec{
		{Fault: faults.KindAbortedValidation, Target: "mig-0001", Params: map[string]string{"after_s": "1"}}})
	fl := faultLinesOf(abort.lines, faults.KindAbortedValidation)
	if len(fl) == 0 || fl[0].Evidence["phase_before"] != record.PhaseValidating || fl[0].Evidence["phase_after"] != record.PhaseAborted {
		t.Fatalf("abort fault lines %+v", fl)
	}
	if got := abort.summary.Migrations[0].Outcome; got != record.PhaseAborted {
		t.Errorf("outcome %s, want Aborted", got)
	}
	for _, l := range abort.lines {
		if l.Kind == record.KindPhase && l.Phase == record.PhaseAborted && !strings.Contains(l.Reason, faults.KindAbortedValidation) {
			t.Errorf("Aborted phase line reason %q does not name the fault", l.Reason)
		}
	}

	leftBehind := map[string]int{}
	for _, op := range []string{"prefix", "fixed"} {
		r := runWithFaults(t, simbackend.Config{Seed: 2, Model: record.Model{Operator: op}}, params(1, 120, 2), []record.FaultSpec{
			{Fault: faults.KindDroppedConnects, Target: "storage-3", Phase: record.PhaseValidating, Migration: "mig-0001", ForS: 30},
			{Fault: faults.KindAbortedValidation, Target: "mig-0001", Params: map[string]string{"mode": faults.ModeKillJob, "after_s": "10"}}})
		fl := faultLinesOf(r.lines, faults.KindAbortedValidation)
		if len(fl) == 0 || fl[0].Evidence["job_killed_on"] == "" || fl[0].Evidence["round"] == "" {
			t.Fatalf("%s: kill-job fault lines %+v", op, fl)
		}
		if !strings.Contains(fl[0].Evidence["target_path_controllers"], "=live") {
			t.Errorf("%s: kill-job evidence %v: want the live target paths the Job had connected", op, fl[0].Evidence)
		}
		t.Logf("%s: kill-job %v at %v; leaks %+v", op, fl[0].Evidence, fl[0].T, r.summary.LeakedControllers)
		if got := r.summary.Migrations[0].Outcome; got != record.PhaseFailed {
			t.Errorf("%s: outcome %s, want Failed", op, got)
		}
		for _, l := range r.summary.LeakedControllers {
			if l.State == "connecting" {
				leftBehind[op]++
			}
		}
	}
	if leftBehind["prefix"] == 0 || leftBehind["fixed"] != 0 {
		t.Errorf("connecting controllers left after the killed Job, 2 min later: %v; want some with prefix, none with fixed", leftBehind)
	}
}

var (
	_ faults.NodeCrasher        = (*simbackend.Cluster)(nil)
	_ faults.Partitioner        = (*simbackend.Cluster)(nil)
	_ faults.ConnectRejecter    = (*simbackend.Cluster)(nil)
	_ faults.OperatorRestarter  = (*simbackend.Cluster)(nil)
	_ faults.ControllerResetter = (*simbackend.Cluster)(nil)
	_ faults.ANAFlapper         = (*simbackend.Cluster)(nil)
	_ faults.StageReporter      = (*simbackend.Cluster)(nil)
)

// TestMoreFaultKindsLandAndRecover injects each fault kind of issue 10 into
// the simulator through the whole pipeline and checks its evidence, its
// effect on the hosts' kernels (read back from the samples) and that the
// world is whole again after recovery: with 3-way HA no pause window opens
// and every fault landed.
func TestMoreFaultKindsLandAndRecover(t *testing.T) {
	for _, tc := range []struct {
		name       string
		migrations int
		spec       record.FaultSpec
		evidence   string // a key the landed evidence must hold
		check      func(t *testing.T, r simRun, inject, landed record.Line)
	}{
		{name: "node-crash", spec: record.FaultSpec{Fault: faults.KindNodeCrash, Target: "storage-2", AtS: 5, ForS: 12},
			evidence: "controllers_no_longer_live",
			check: func(t *testing.T, r simRun, inject, landed record.Line) {
				// Hosts notice only by keep-alive timeout: 5–7.5 s for the
				// kernel default kato of the CSI paths.
				if d := landed.T - inject.T; d < 5 || d > 7.5 {
					t.Errorf("landed %v s after the crash, want within kato 5..7.5 s", d)
				}
			}},
		{name: "network-partition", spec: record.FaultSpec{Fault: faults.KindNetworkPartition, Target: "worker-1/storage-2", AtS: 5, ForS: 12},
			evidence: "controllers_no_longer_live",
			check: func(t *testing.T, r simRun, inject, landed record.Line) {
				for _, c := range strings.Fields(landed.Evidence["controllers"]) {
					if !strings.HasPrefix(c, "worker-1/") {
						t.Errorf("controller %s of another host lost to a worker-1/storage-2 partition", c)
					}
				}
				for k, st := range statesAt(r.lines, 15) {
					if !strings.HasPrefix(k, "worker-1/") && st != "live" {
						t.Errorf("%s is %s during a partition of worker-1 only", k, st)
					}
				}
			}},
		{name: "connect-rejected", migrations: 1, spec: record.FaultSpec{Fault: faults.KindConnectRejected, Target: "storage-3", Phase: record.StageInValidation, Migration: "#1", ForS: 2},
			evidence: "connects_rejected"},
		{name: "operator-restart", migrations: 1, spec: record.FaultSpec{Fault: faults.KindOperatorRestart, Target: faults.OperatorTarget, Phase: record.StageBeforeCutover, Migration: "#1", ForS: 5},
			evidence: "reconciles_deferred",
			check: func(t *testing.T, r simRun, inject, landed record.Line) {
				var completed float64
				for _, l := range r.lines {
					if l.Kind == record.KindPhase && l.Phase == record.PhaseCompleted {
						completed = l.T
					}
				}
				if completed < inject.T+5 {
					t.Errorf("Completed at %v, before the operator came back at %v", completed, inject.T+5)
				}
			}},
		{name: "reset-controller", spec: record.FaultSpec{Fault: faults.KindResetController, Target: "worker-1", AtS: 5, Params: map[string]string{"node": "storage-1"}},
			evidence: "controllers_no_longer_live",
			check: func(t *testing.T, r simRun, inject, landed record.Line) {
				for k, st := range statesAt(r.lines, 6) {
					if st != "live" {
						t.Errorf("%s is %s 1 s after a reset it should have survived at once", k, st)
					}
				}
			}},
		{name: "ana-flap", spec: record.FaultSpec{Fault: faults.KindANAFlap, Target: "storage-1", AtS: 5, ForS: 5},
			evidence: "listeners_made_inaccessible",
			check: func(t *testing.T, r simRun, inject, landed record.Line) {
				during, after := anaAt(r.lines, 7, "10.0.0.1:"), anaAt(r.lines, 15, "10.0.0.1:")
				if len(during) == 0 || during["optimized"]+during["non-optimized"] != 0 {
					t.Errorf("legs at storage-1 during the flap: %v, want all inaccessible", during)
				}
				if after["optimized"]+after["non-optimized"] == 0 || after["inaccessible"] != 0 {
					t.Errorf("legs at storage-1 after the flap: %v, want accessible again", after)
				}
			}},
		{name: "target-restart in the freeze", migrations: 1, spec: record.FaultSpec{Fault: faults.KindTargetRestart, Target: "storage-1", Phase: record.StageInFreeze, Migration: "#1", ForS: 3},
			evidence: "controllers_no_longer_live",
			check: func(t *testing.T, r simRun, inject, landed record.Line) {
				if inject.Phase != record.StageInFreeze || inject.Migration != "mig-0001" {
					t.Errorf("inject line %+v: want stage in-freeze of mig-0001", inject)
				}
				if len(r.summary.Migrations) != 1 || r.summary.Migrations[0].Freezes != 1 {
					t.Fatalf("migrations %+v", r.summary.Migrations)
				}
				var w [2]float64
				for _, hp := range r.summary.Migrations[0].Hosts {
					w = hp.Windows[0]
				}
				// The control plane starts the freeze; the host sees it after
				// the ANA change notice, at its next sample (0.1 s).
				if inject.T < w[0]-0.5 || inject.T > w[1] {
					t.Errorf("injected at %v, not at the start of the freeze window %v the host saw", inject.T, w)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runWithFaults(t, simbackend.Config{Seed: 4}, params(tc.migrations, 90, 0.1), []record.FaultSpec{tc.spec})
			fl := faultLinesOf(r.lines, tc.spec.Fault)
			var inject, landed, recovered record.Line
			for _, l := range fl {
				switch l.Action {
				case faults.ActionInject:
					inject = l
				case faults.ActionLanded:
					landed = l
				case faults.ActionRecover:
					recovered = l
				}
			}
			if len(inject.Evidence) > 0 {
				landed = inject
			}
			if inject.Kind == "" || recovered.Kind == "" || landed.Evidence[tc.evidence] == "" || landed.Evidence[tc.evidence] == "0" {
				t.Fatalf("fault lines %+v; want inject, evidence %s, recover", fl, tc.evidence)
			}
			t.Logf("inject %v at %v (%s); evidence %v at %v; recover %v at %v", inject.Target, inject.T, inject.Phase, landed.Evidence, landed.T, recovered.Evidence, recovered.T)
			if c := check(r.summary, "faults-landed"); c.Verdict != record.Pass {
				t.Errorf("faults-landed %s: %s", c.Verdict, c.Detail)
			}
			for _, name := range []string{"pause-bound", "unattributed-pauses", "leaked-controllers", "path-completeness"} {
				if c := check(r.summary, name); c.Verdict == record.Fail {
					t.Errorf("%s failed: %s", name, c.Detail)
				}
			}
			for k, st := range statesAt(r.lines, 1e9) {
				if st != "live" {
					t.Errorf("%s is %s at the end; the world should be whole after recovery", k, st)
				}
			}
			if tc.check != nil {
				tc.check(t, r, inject, landed)
			}
		})
	}
}

// anaAt counts, over every host's last sample at or before t, the ANA
// states of legs on controllers whose address starts with prefix.
func anaAt(lines []record.Line, t float64, prefix string) map[string]int {
	last := map[string]record.Line{}
	for _, l := range lines {
		if l.Kind == record.KindSample && l.T <= t {
			last[l.Host] = l
		}
	}
	out := map[string]int{}
	for _, l := range last {
		for _, c := range l.Controllers {
			if strings.HasPrefix(c.Address, prefix) {
				for _, g := range c.Legs {
					out[g.ANA]++
				}
			}
		}
	}
	return out
}

// TestNewHooksRecoverIdempotently: recovering twice, or something never
// injected, changes nothing and is no error; an unknown target counts as
// recovered.
func TestNewHooksRecoverIdempotently(t *testing.T) {
	c, err := simbackend.New(simbackend.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CrashNode("storage-1"); err != nil {
		t.Fatal(err)
	}
	if ev, err := c.CrashNode("storage-1"); err != nil || ev != nil {
		t.Errorf("second crash: %v %v; want no change", ev, err)
	}
	for i := range 2 {
		ev, err := c.BootNode("storage-1")
		if err != nil || (i == 1) != (ev == nil) {
			t.Errorf("boot %d: %v %v", i+1, ev, err)
		}
	}
	for _, f := range []func() (map[string]string, error){
		func() (map[string]string, error) { return c.BootNode("storage-9") },
		func() (map[string]string, error) { return c.Heal("worker-1", "storage-1") },
		func() (map[string]string, error) { return c.Heal("worker-9", "storage-1") },
		c.StartOperator,
		func() (map[string]string, error) { return c.RestoreANA("storage-1") },
		func() (map[string]string, error) { return c.RestoreANA("storage-9") },
	} {
		if ev, err := f(); err != nil || ev != nil {
			t.Errorf("recover of nothing: %v %v; want no change, no error", ev, err)
		}
	}
	if n, err := c.StopRejectingConnects("storage-1", ""); n != 0 || err != nil {
		t.Errorf("stop rejecting nothing: %d %v", n, err)
	}
}

// TestPassedOverWhereItCannotLand (issue 24 item 4): a "#N+" fault that
// would find nothing to break when its migration reaches the stage — here
// a controller reset at a node whose controllers are still reconnecting
// after a crash — is passed over to the next migration that gets
// there with something to break, and lands; plan.json names the migrations
// passed over and why. Before, it was injected into nothing and the run
// was inconclusive ("left no evidence"). Aimed at one migration ("#2"), the
// fault is injected whatever and says it left no evidence.
func TestPassedOverWhereItCannotLand(t *testing.T) {
	crash := record.FaultSpec{Fault: faults.KindNodeCrash, Target: "storage-1", Migration: "#1+", Phase: record.StageAfterCutover,
		ForS: 12, Params: map[string]string{"after_s": "0.5"}}
	reset := func(mig string) record.FaultSpec {
		return record.FaultSpec{Fault: faults.KindResetController, Target: "worker-1", Migration: mig, Phase: record.StageInValidation,
			Params: map[string]string{"node": "storage-1", "after_s": "5"}}
	}
	p := params(8, 30, 1)
	cfg := simbackend.Config{Seed: 2, Model: record.Model{ReleaseSources: true}}
	run := runWithFaults(t, cfg, p, []record.FaultSpec{crash, reset("#2+")})
	fl := faultLinesOf(run.lines, faults.KindResetController)
	if len(fl) == 0 || fl[0].Action != faults.ActionInject || fl[0].Evidence["controllers_no_longer_live"] == "" || fl[0].Migration == "mig-0002" {
		t.Fatalf("reset-controller lines %+v: want it injected, with evidence, after mig-0002", fl)
	}
	ex := run.plan.Faults[1]
	if !strings.Contains(ex.Params["passed_over"], "mig-0002 (no live controller of worker-1 at storage-1)") || ex.Migration != fl[0].Migration {
		t.Errorf("plan.json %+v: want passed_over naming mig-0002 and why, and the migration it landed on (%s)", ex, fl[0].Migration)
	}
	if c := check(run.summary, "faults-landed"); c.Verdict != record.Pass {
		t.Errorf("faults-landed %s: %s", c.Verdict, c.Detail)
	}
	t.Logf("reset-controller landed on %s at %.3f s; passed over %s", fl[0].Migration, fl[0].T, ex.Params["passed_over"])

	exact := runWithFaults(t, cfg, p, []record.FaultSpec{crash, reset("#2")})
	fl = faultLinesOf(exact.lines, faults.KindResetController)
	if len(fl) == 0 || fl[0].Migration != "mig-0002" || len(fl[0].Evidence) > 0 {
		t.Errorf("aimed at #2: %+v; want it injected on mig-0002 with no evidence", fl)
	}
	if c := check(exact.summary, "faults-landed"); c.Verdict != record.Inconclusive {
		t.Errorf("aimed at #2: faults-landed %s: %s; want inconclusive", c.Verdict, c.Detail)
	}
}
