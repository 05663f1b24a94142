package checks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

func phase(t float64, id, nqn, ph string) record.Line {
	return record.Line{T: t, Kind: record.KindPhase, Migration: id, NQN: nqn, Phase: ph}
}

func ioLine(t float64, pod, nqn string, completed int64) record.Line {
	return record.Line{T: t, Kind: record.KindIO, Volume: "v-" + pod, Pod: pod, NQN: nqn, Host: "h1",
		Completed: record.Int64(completed), Errors: record.Int64(0), PodState: "running"}
}

func kern(t float64, host, ctrl, msg string) record.Line {
	return record.Line{T: t, Kind: record.KindKernel, Host: host, Controller: ctrl, Message: msg}
}

func sample(t float64, host string, cs ...record.Controller) record.Line {
	return record.Line{T: t, Kind: record.KindSample, Host: host, Controllers: cs}
}

func ctrl(name, nqn, state string, tmo int, legs ...int) record.Controller {
	c := record.Controller{Name: name, NQN: nqn, Address: "10.0.0.1:4420", State: state, CtrlLossTmo: &tmo, Legs: []record.Leg{}}
	for _, n := range legs {
		c.Legs = append(c.Legs, record.Leg{NSID: n, ANA: "optimized"})
	}
	return c
}

// outcomes: n migrations, the first `completed` Completed in 60 s, then
// `failed` Failed, the rest never terminal (timed out).
func outcomes(n, completed, failed int) []record.Line {
	var ls []record.Line
	for i := range n {
		id := fmt.Sprintf("mig-%04d", i+1)
		ls = append(ls, phase(float64(i*100), id, "nqn.a", record.PhasePending))
		switch {
		case i < completed:
			ls = append(ls, phase(float64(i*100+60), id, "nqn.a", record.PhaseCompleted))
		case i < completed+failed:
			ls = append(ls, phase(float64(i*100+60), id, "nqn.a", record.PhaseFailed))
		}
	}
	return ls
}

// TestSeedChecksFailAndPass: each check of the seed harness, on a record
// that violates it and on one that does not. pods marks a run with a
// workload.
func TestSeedChecksFailAndPass(t *testing.T) {
	plan := record.Plan{Params: record.Params{Seed: record.DefaultSeedThresholds(), Model: record.Model{Pods: true}}}
	one := func(f func(record.Plan, []record.Line) (record.CheckResult, bool)) func(record.Plan, []record.Line) record.CheckResult {
		return func(p record.Plan, ls []record.Line) record.CheckResult { r, _ := f(p, ls); return r }
	}
	var outage, outageOK, killed []record.Line
	for i := range 40 {
		c := int64(100)
		if i >= 5 && i < 35 { // 30 one-second intervals without I/O
			c = 0
		}
		outage = append(outage, ioLine(float64(i+1), "p1", "nqn.a", c))
		if i == 34 {
			c = 100 // 29 s only
		}
		outageOK = append(outageOK, ioLine(float64(i+1), "p1", "nqn.a", c))
	}
	killed = append(killed, ioLine(1, "p1", "nqn.a", 100), record.Line{T: 2, Kind: record.KindIO, Volume: "v-p1", Pod: "p1", NQN: "nqn.a", Host: "h1",
		Completed: record.Int64(0), PodState: "killed", Reason: "no I/O for 5 s"}, sample(40, "h1"))
	lost := func(at float64, errno int, blocks int64) record.Line {
		l := ioLine(at, "p1", "nqn.a", 100)
		l.Errno, l.VerifyErrors = errno, record.Int64(blocks)
		return l
	}
	migs := []record.Line{phase(10, "mig-0001", "nqn.a", record.PhasePending), phase(40, "mig-0001", "nqn.a", record.PhaseCompleted),
		phase(200, "mig-0002", "nqn.a", record.PhasePending), phase(230, "mig-0002", "nqn.a", record.PhaseCompleted)}
	with := func(base []record.Line, extra ...record.Line) []record.Line {
		out := append(append([]record.Line{}, base...), extra...)
		// keep time order
		for i := 1; i < len(out); i++ {
			for j := i; j > 0 && out[j].T < out[j-1].T; j-- {
				out[j], out[j-1] = out[j-1], out[j]
			}
		}
		return out
	}
	newc := func(t float64, c, nqn string) record.Line {
		return kern(t, "h1", c, fmt.Sprintf(`new ctrl: NQN %q, addr 10.0.0.1:4420, hostnqn: x`, nqn))
	}
	var churn5, churn4 []record.Line
	for i := range 5 {
		churn5 = append(churn5, newc(float64(i), fmt.Sprintf("nvme%d", i), "nqn.a"))
		churn4 = append(churn4, newc(float64(i), fmt.Sprintf("nvme%d", i), "nqn.a"))
	}
	churn4 = append(churn4, kern(9, "h1", "nvme0", "Removing controller (-107)..."))
	tgt := func(t float64, node string, n int64) record.Line {
		return record.Line{T: t, Kind: record.KindTarget, Node: node, RejectedConnects: record.Int64(n), NotAllowedConnects: record.Int64(n)}
	}
	for _, tc := range []struct {
		name    string
		check   func(record.Plan, []record.Line) record.CheckResult
		lines   []record.Line
		verdict string
		detail  string
		failing []string
	}{
		{"outcomes: 8 of 10 completed", MigrationOutcomes, outcomes(10, 8, 2), record.Pass, "8 of 10 completed", nil},
		{"outcomes: 7 of 10 completed", MigrationOutcomes, outcomes(10, 7, 3), record.Fail, "(0.70, want >= 0.80)", []string{"mig-0008", "mig-0009", "mig-0010"}},
		{"outcomes: 2 of 10 timed out", MigrationOutcomes, outcomes(10, 8, 0), record.Fail, "2 timed out (0.20, want <= 0.10)", []string{"mig-0009", "mig-0010"}},
		{"outage: 30 s without I/O", one(IOOutage), outage, record.Fail, "p1 30 s from 6 s", nil},
		{"outage: 29 s without I/O", one(IOOutage), outageOK, record.Pass, "longest run without I/O 29 s < 30 s", nil},
		{"outage: a killed pod is out to the end", one(IOOutage), killed, record.Fail, "p1 (killed) 38 s from 2 s", nil},
		{"integrity: EILSEQ 20 s after a migration", one(DataIntegrity), with(migs, lost(60, 84, 5)), record.Fail, "mig-0001 5 block(s)", []string{"mig-0001"}},
		{"integrity: EIO outside every migration", one(DataIntegrity), with(migs, lost(100, 5, 0)), record.Fail, "outside every migration: p1 EIO at 100 s", nil},
		{"integrity: ENOSPC, EROFS within the lag", one(DataIntegrity), with(migs, lost(220, 28, 0), lost(270, 30, 0)), record.Fail, "mig-0002 2 block(s)", []string{"mig-0002"}},
		{"integrity: clean", one(DataIntegrity), with(migs, ioLine(60, "p1", "nqn.a", 100)), record.Pass, "no verify failure", nil},
		{"integrity: other errno is not integrity", one(DataIntegrity), with(migs, lost(60, 121, 0)), record.Pass, "no verify failure", nil},
		{"churn: 5 net controllers", one(ControllerChurn), churn5, record.Fail, "h1: 5 net controllers created for nqn.a", nil},
		{"churn: 4 net controllers", one(ControllerChurn), churn4, record.Pass, "at most 4 net controllers", nil},
		{"churn: 101 reconnect attempts", one(ControllerChurn), append(churn4[:1:1], kern(300, "h1", "nvme0", "Failed reconnect attempt 101/1800")),
			record.Fail, "h1 nvme0 nqn.a: more than 100 reconnect attempts", nil},
		{"churn: 100 reconnect attempts", one(ControllerChurn), append(churn4[:1:1], kern(300, "h1", "nvme0", "Failed reconnect attempt 100/1800")),
			record.Pass, "no controller past 100", nil},
		{"loss timeout 3600 warns", one(LossTimeout), []record.Line{sample(1, "h1", ctrl("nvme0", "nqn.a", "live", 3600, 1))}, record.Warn, "h1 nvme0 (10.0.0.1:4420) 3600 s", nil},
		{"loss timeout off warns", one(LossTimeout), []record.Line{sample(1, "h1", ctrl("nvme0", "nqn.a", "live", -1, 1))}, record.Warn, "-1 s", nil},
		{"loss timeout 60 passes", one(LossTimeout), []record.Line{sample(1, "h1", ctrl("nvme0", "nqn.a", "live", 60, 1))}, record.Pass, "<= 60 s", nil},
		{"4 paths warn", PathsPerSubsystem, []record.Line{sample(1, "h1", ctrl("nvme0", "nqn.a", "live", 60, 1), ctrl("nvme1", "nqn.a", "live", 60, 1),
			ctrl("nvme2", "nqn.a", "live", 60, 1), ctrl("nvme3", "nqn.a", "live", 60))}, record.Warn, "h1: 4 controllers for nqn.a", nil},
		{"4 paths during the run, 3 at the end", PathsPerSubsystem, []record.Line{sample(1, "h1", ctrl("nvme0", "nqn.a", "live", 60, 1), ctrl("nvme1", "nqn.a", "live", 60, 1),
			ctrl("nvme2", "nqn.a", "live", 60, 1), ctrl("nvme3", "nqn.a", "live", 60)),
			sample(2, "h1", ctrl("nvme0", "nqn.a", "live", 60, 1), ctrl("nvme1", "nqn.a", "live", 60, 1), ctrl("nvme2", "nqn.a", "live", 60, 1))}, record.Pass, "at most 3", nil},
		{"dirty start: live with no namespace", DirtyStart, []record.Line{sample(0, "h1", ctrl("nvme0", "nqn.a", "live", 60, 1), ctrl("nvme1", "nqn.a", "live", 3600))},
			record.Inconclusive, "dirty start: 1 controller(s) leaked before the run: h1 nvme1", nil},
		{"dirty start: connecting", DirtyStart, []record.Line{sample(0, "h1", ctrl("nvme0", "nqn.a", "connecting", 3600))}, record.Inconclusive, "connecting", nil},
		{"clean start, leak later", DirtyStart, []record.Line{sample(0, "h1", ctrl("nvme0", "nqn.a", "live", 60, 1)), sample(9, "h1", ctrl("nvme1", "nqn.a", "connecting", 60))},
			record.Pass, "clean start", nil},
		{"50 not-allowed rejections", one(TargetLogPatternCheck), []record.Line{tgt(0, "n1", 0), tgt(0, "n2", 0), tgt(10, "n1", 30), tgt(20, "n2", 20)},
			record.Fail, "50 \"does not allow host\" rejection(s) logged (fail at >= 50): n1 30, n2 20", nil},
		{"49 not-allowed rejections", one(TargetLogPatternCheck), []record.Line{tgt(0, "n1", 1), tgt(10, "n1", 50)}, record.Pass, "49 \"does not allow host\"", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.check(plan, tc.lines)
			if r.Verdict != tc.verdict || !strings.Contains(r.Detail, tc.detail) {
				t.Errorf("%s: %s (%s), want %s containing %q", r.Name, r.Verdict, r.Detail, tc.verdict, tc.detail)
			}
			if d := cmp.Diff(tc.failing, r.Failing); d != "" {
				t.Errorf("failing (-want +got):\n%s", d)
			}
		})
	}
}

// TestSeedChecksNotMade: without the lines a check reads it is not made;
// with a workload declared but no io line, the io checks are inconclusive.
func TestSeedChecksNotMade(t *testing.T) {
	names := func(rs []record.CheckResult) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.Name+"="+r.Verdict)
		}
		return strings.Join(s, " ")
	}
	lines := append(outcomes(2, 2, 0), sample(200, "h1", record.Controller{Name: "nvme0", NQN: "nqn.a", State: "live", Legs: []record.Leg{{NSID: 1, ANA: "optimized"}}}))
	got := names(SeedChecks(record.Plan{Params: record.Params{Seed: record.DefaultSeedThresholds()}}, lines))
	if want := "migration-outcomes=pass paths-per-subsystem=pass dirty-start=pass"; got != want {
		t.Errorf("no workload, kernel, target lines: %s, want %s", got, want)
	}
	got = names(SeedChecks(record.Plan{Params: record.Params{Seed: record.DefaultSeedThresholds(), Model: record.Model{Pods: true}}}, lines))
	if !strings.Contains(got, "io-outage=inconclusive data-integrity=inconclusive") {
		t.Errorf("pods declared, no io line: %s", got)
	}
}

// TestJudgesLineKeepsWhatTheChecksNeed: the seed checks give the same
// results on the lines JudgesLine keeps as on all of them.
func TestJudgesLineKeepsWhatTheChecksNeed(t *testing.T) {
	plan := record.Plan{Params: record.Params{Seed: record.DefaultSeedThresholds(), Model: record.Model{Pods: true}}}
	var all []record.Line
	all = append(all, phase(0, "mig-0001", "nqn.a", record.PhasePending))
	for i := range 100 {
		c := int64(100)
		if (i >= 10 && i < 45) || (i >= 50 && i < 52) {
			c = 0
		}
		all = append(all, ioLine(float64(i+1), "p1", "nqn.a", c), ioLine(float64(i+1), "p2", "nqn.a", 100))
		all = append(all, kern(float64(i+1), "h1", "nvme0", fmt.Sprintf("Failed reconnect attempt %d/1800", i+50)))
	}
	all = append(all, phase(120, "mig-0001", "nqn.a", record.PhaseCompleted))
	keep := JudgesLine(plan)
	var kept []record.Line
	for _, l := range all {
		if keep(l) {
			kept = append(kept, l)
		}
	}
	if len(kept) > len(all)/4 {
		t.Errorf("kept %d of %d lines", len(kept), len(all))
	}
	if d := cmp.Diff(SeedChecks(plan, all), SeedChecks(plan, kept)); d != "" {
		t.Errorf("results on all lines vs kept lines (-all +kept):\n%s", d)
	}
}

// TestOneNamespaceFreezeIsAFreeze: on a namespaced subsystem (NSIDs 1..3)
// a pause is per namespace: samples in which only NSID 2 has no accessible
// leg make a pause window, and two such stretches are two freezes.
func TestOneNamespaceFreezeIsAFreeze(t *testing.T) {
	mk := func(at float64, ana2 string) record.Line {
		c := record.Controller{Name: "nvme0", NQN: "nqn.ns", Address: "10.0.0.1:4426", State: "live",
			Legs: []record.Leg{{NSID: 1, ANA: "optimized"}, {NSID: 2, ANA: ana2}, {NSID: 3, ANA: "optimized"}}}
		return record.Line{T: at, Kind: record.KindSample, Host: "h1", Controllers: []record.Controller{c},
			Subsystems: []record.Subsystem{{NQN: "nqn.ns", NSIDs: []int{1, 2, 3}}}}
	}
	var samples []record.Line
	for i := range 40 {
		ana := "optimized"
		if (i >= 10 && i < 15) || (i >= 25 && i < 28) {
			ana = "inaccessible"
		}
		samples = append(samples, mk(float64(i)*0.1, ana))
	}
	if !Paused(samples[10], "nqn.ns", []int{1, 2, 3}) || Paused(samples[0], "nqn.ns", []int{1, 2, 3}) {
		t.Fatal("a sample with NSID 2 inaccessible must pause the subsystem, one with all accessible must not")
	}
	if !Paused(samples[10], "nqn.ns", nil) {
		t.Error("the namespaces the sample shows are judged even when the plan names none")
	}
	ws := pauseWindows(samples, "nqn.ns", []int{1, 2, 3})
	if len(ws) != 2 {
		t.Fatalf("windows %+v, want two freezes of NSID 2", ws)
	}
}

// TestMigrationOutcomesOnAShortRecord: a migration with no terminal phase
// whose record ends within MigrationTimeoutS (420 s) of its start is still
// running, not timed out, on a short record (a killed run): the check
// fails only if it fails with every running one completing, passes only if
// it passes with every one timing out. outcomes(10, c, f) starts mig-N at
// (N-1)×100 s and its record ends at 900 s, so the non-terminal ones
// (mig-0009, mig-0010 below) started less than 420 s before the end. On a
// whole record the same lines count them as timed out.
func TestMigrationOutcomesOnAShortRecord(t *testing.T) {
	short := record.Coverage{Short: true, Note: "the record is short: test"}
	for _, tc := range []struct {
		name       string
		lines      []record.Line
		whole, cut string
	}{
		{"8 completed, 2 running: inconclusive", outcomes(10, 8, 0), record.Fail, record.Inconclusive},
		{"9 completed, 1 running: passes whatever it does", outcomes(10, 9, 0), record.Pass, record.Pass},
		{"5 completed, 3 failed, 2 running: fails whatever they do", outcomes(10, 5, 3), record.Fail, record.Fail},
	} {
		plan := record.Plan{Params: record.Params{Seed: record.DefaultSeedThresholds()}}
		if got := MigrationOutcomes(plan, tc.lines); got.Verdict != tc.whole {
			t.Errorf("%s: whole record %+v, want %s", tc.name, got, tc.whole)
		}
		res := []record.CheckResult{MigrationOutcomes(plan, tc.lines)}
		notJudgedShort(res, plan, tc.lines, short)
		got := res[0]
		if got.Verdict != tc.cut {
			t.Errorf("%s: short record %+v, want %s", tc.name, got, tc.cut)
		}
		if !strings.Contains(got.Detail, "still running when the record ends at 900 s, less than 420 s after their start") ||
			!strings.Contains(got.Detail, "not judged: the record is short: test") {
			t.Errorf("%s: detail %q does not say which migrations were still running and why", tc.name, got.Detail)
		}
	}
}

// TestMigrationOutcomesCountsThoseNotStarted: a short record that holds
// fewer migrations than planned (a run interrupted after its third of 23)
// is judged over the planned count: the migrations not started yet could
// each still complete, so one failed of three is inconclusive, not a
// failing 2 of 3 (0.67 < 0.80); four failed of 10 planned fails whatever
// the six not started do. The detail says how many were not started.
func TestMigrationOutcomesCountsThoseNotStarted(t *testing.T) {
	short := record.Coverage{Short: true, Note: "the record is short: test"}
	for _, tc := range []struct {
		name           string
		planned        int
		lines          []record.Line
		verdict, notes string
	}{
		{"1 failed of 3 started, 23 planned", 23, outcomes(3, 2, 1), record.Inconclusive, "20 of the 23 planned migrations not started"},
		{"4 failed of 4 started, 10 planned", 10, outcomes(4, 0, 4), record.Fail, "6 of the 10 planned migrations not started"},
	} {
		plan := record.Plan{Params: record.Params{Seed: record.DefaultSeedThresholds(), Migrations: tc.planned}}
		res := []record.CheckResult{MigrationOutcomes(plan, tc.lines)}
		notJudgedShort(res, plan, tc.lines, short)
		if got := res[0]; got.Verdict != tc.verdict || !strings.Contains(got.Detail, tc.notes) {
			t.Errorf("%s: %s %q, want %s saying %q", tc.name, got.Verdict, got.Detail, tc.verdict, tc.notes)
		}
	}
}

// TestZeroThresholdIsStrict: a threshold of 0 is that bound, not "use the
// default": --max-timed-out 0 fails on one timed-out migration of 20
// (0.05 <= the default 0.10), --min-completed 0 passes with none
// completed, --max-reconnects 0 fails on one reconnect attempt,
// --max-paths 0 warns on one path, --outage 0 fails on one sample without
// I/O.
func TestZeroThresholdIsStrict(t *testing.T) {
	with := func(f func(*record.SeedThresholds)) record.Plan {
		s := record.DefaultSeedThresholds()
		f(&s)
		return record.Plan{Params: record.Params{Seed: s, Model: record.Model{Pods: true}}}
	}
	one := func(f func(record.Plan, []record.Line) (record.CheckResult, bool)) func(record.Plan, []record.Line) record.CheckResult {
		return func(p record.Plan, ls []record.Line) record.CheckResult { r, _ := f(p, ls); return r }
	}
	gap := []record.Line{ioLine(1, "p1", "nqn.a", 100), ioLine(2, "p1", "nqn.a", 0), ioLine(3, "p1", "nqn.a", 100)}
	for _, tc := range []struct {
		name    string
		plan    record.Plan
		check   func(record.Plan, []record.Line) record.CheckResult
		lines   []record.Line
		verdict string
		detail  string
	}{
		{"max-timed-out 0", with(func(s *record.SeedThresholds) { s.MaxTimedOut = 0 }), MigrationOutcomes, outcomes(20, 19, 0), record.Fail, "1 timed out (0.05, want <= 0.00)"},
		{"min-completed 0", with(func(s *record.SeedThresholds) { s.MinCompleted = 0 }), MigrationOutcomes, outcomes(10, 0, 10), record.Pass, "0 of 10 completed within 420 s (0.00, want >= 0.00)"},
		{"max-reconnects 0", with(func(s *record.SeedThresholds) { s.MaxReconnects = 0 }), one(ControllerChurn),
			[]record.Line{kern(1, "h1", "nvme0", "Failed reconnect attempt 1/1800")}, record.Fail, "more than 0 reconnect attempts"},
		{"max-paths 0", with(func(s *record.SeedThresholds) { s.MaxPaths = 0 }), PathsPerSubsystem,
			[]record.Line{sample(1, "h1", ctrl("nvme0", "nqn.a", "live", 60, 1))}, record.Warn, "more than 0 paths"},
		{"outage 0", with(func(s *record.SeedThresholds) { s.OutageS = 0 }), one(IOOutage), gap, record.Fail, "no I/O >= 0 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.check(tc.plan, tc.lines)
			if r.Verdict != tc.verdict || !strings.Contains(r.Detail, tc.detail) {
				t.Errorf("%s: %s (%s), want %s containing %q", r.Name, r.Verdict, r.Detail, tc.verdict, tc.detail)
			}
		})
	}
}
