package scenario

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// cancelOn cancels when a progress line containing mark is written.
type cancelOn struct {
	mark   string
	cancel context.CancelFunc
}

func (c cancelOn) Write(b []byte) (int, error) {
	if strings.Contains(string(b), c.mark) {
		c.cancel()
	}
	return len(b), nil
}

// TestInterruptedMidRunJudgesWhatWasRecorded: a run interrupted after its
// second migration writes summary.json with the checks over the record so far
// (docs/fio.md "Interrupts and leftovers"), interrupted and inconclusive —
// not an empty summary (the streaming judge keeps no lines, so judging
// tl.Kept() judged nothing and fiomig run said "interrupted before the first
// sample").
func TestInterruptedMidRunJudgesWhatWasRecorded(t *testing.T) {
	p := small()
	c, err := SimCluster(1, p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Run(ctx, c, Config{Plan: record.Plan{Seed: 1, Params: p}, OutDir: t.TempDir(), StartUnix: 1,
		Progress: cancelOn{mark: "[2/", cancel: cancel}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted {
		t.Fatal("the run was not interrupted")
	}
	var sum record.Summary
	b, err := os.ReadFile(filepath.Join(res.Dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted || sum.Verdict != record.Inconclusive {
		t.Errorf("summary.json: interrupted %v, verdict %s; want true, inconclusive", sum.Interrupted, sum.Verdict)
	}
	if len(sum.Checks) == 0 || sum.Coverage == nil {
		t.Errorf("summary.json has %d checks, coverage %v: want the checks over the record so far", len(sum.Checks), sum.Coverage)
	}
	if len(sum.Migrations) < 2 || len(sum.Migrations) >= p.Migrations {
		t.Errorf("summary.json has %d migrations, want at least the 2 recorded and fewer than the %d planned", len(sum.Migrations), p.Migrations)
	}
}

// TestInterruptedRunFailsOnASeenViolation (issue 27 item 7): a run whose
// cutovers pause 7 s (bound 5 s), interrupted during its third migration,
// has seen the bound broken: summary.json says interrupted and fail, not
// inconclusive.
func TestInterruptedRunFailsOnASeenViolation(t *testing.T) {
	p := small()
	p.Model.CutoverPauseS = 7
	c, err := SimCluster(1, p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Run(ctx, c, Config{Plan: record.Plan{Seed: 1, Params: p}, OutDir: t.TempDir(), StartUnix: 1,
		Progress: cancelOn{mark: "[3/", cancel: cancel}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted {
		t.Fatal("the run was not interrupted")
	}
	var sum record.Summary
	b, err := os.ReadFile(filepath.Join(res.Dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	bound := record.CheckResult{}
	for _, c := range sum.Checks {
		if c.Name == "pause-bound" {
			bound = c
		}
	}
	if !sum.Interrupted || sum.Verdict != record.Fail || bound.Verdict != record.Fail {
		t.Errorf("summary.json: interrupted %v, verdict %s, pause-bound %+v; want true, fail, fail", sum.Interrupted, sum.Verdict, bound)
	}
}

// TestInterruptedRunResolvesItsFaults (issue 27 item 6): a run interrupted
// after a fault aimed at "#1" fired writes plan.json with the schedule as
// executed (the fault's migration resolved), and summary.json's
// faults-landed agrees with the fault's own lines — not "on #1 planned 1
// time(s), injected 0" beside a fault landed on mig-0001 — as a re-judge of
// the stored plan and timeline (fiomig report) does.
func TestInterruptedRunResolvesItsFaults(t *testing.T) {
	p := small()
	c, err := SimCluster(1, p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sched := []record.FaultSpec{{Fault: "aborted-validation", Target: "#1", Migration: "#1", Phase: record.PhaseValidating,
		Params: map[string]string{"mode": "abort", "after_s": "0.5"}}}
	res, err := Run(ctx, c, Config{Plan: record.Plan{Seed: 1, Params: p, Faults: sched}, OutDir: t.TempDir(), StartUnix: 1,
		Progress: cancelOn{mark: "[1/", cancel: cancel}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted {
		t.Fatal("the run was not interrupted")
	}
	plan, err := record.ReadPlan(filepath.Join(res.Dir, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Faults) != 1 || plan.Faults[0].Target != "mig-0001" || plan.Faults[0].Params["injected_at_s"] == "" {
		t.Errorf("plan.json faults %+v: want the schedule as executed (target mig-0001, injected_at_s)", plan.Faults)
	}
	var sum record.Summary
	b, err := os.ReadFile(filepath.Join(res.Dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	fl := checkOf(sum, checks.CheckFaultsLanded)
	if fl.Verdict != record.Pass || strings.Contains(fl.Detail, "planned") {
		t.Errorf("summary.json faults-landed %s %q: want pass (the one fault landed on mig-0001)", fl.Verdict, fl.Detail)
	}
	lines, err := record.ReadTimeline(filepath.Join(res.Dir, record.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	if again := checkOf(checks.Evaluate(plan, lines), checks.CheckFaultsLanded); again.Verdict != fl.Verdict || again.Detail != fl.Detail {
		t.Errorf("re-judged from plan.json and timeline.jsonl: %+v; summary.json says %+v", again, fl)
	}
}
