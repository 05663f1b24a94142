package checks

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// cutAt keeps the lines of a timeline at or before t (a run killed at t).
func cutAt(tl []record.Line, t float64) []record.Line {
	var out []record.Line
	for _, l := range tl {
		if l.T <= t {
			out = append(out, l)
		}
	}
	return out
}

func checkOf(s record.Summary, name string) record.CheckResult {
	for _, c := range s.Checks {
		if c.Name == name {
			return c
		}
	}
	return record.CheckResult{}
}

// TestShortRecordIsNotJudgedSettled: migrationRun completes m1 at 22.5 s
// and settles 40 s, so the settle period ends at 62.5 s (sampled every
// 0.5 s, which is the tolerance). A record cut 0.1 s after Completed, or
// in the middle of the settle period, leaves leaks and completeness
// inconclusive — even with a controller that would count as leaked — and
// says why; one whose last sample is within one settle sample interval of
// the end is judged.
func TestShortRecordIsNotJudgedSettled(t *testing.T) {
	cases := []struct {
		name     string
		v        violation
		cut      float64
		short    bool
		leaks    string
		complete string
		served   string
		overall  string
	}{
		{"cut 0.1 s after Completed", clean, 22.6, true, record.Inconclusive, record.Inconclusive, record.Inconclusive, record.Inconclusive},
		{"cut in the settle period", clean, 55, true, record.Inconclusive, record.Inconclusive, record.Pass, record.Inconclusive},
		{"leak seen before the settle end", leakedCtrl, 55, true, record.Inconclusive, record.Inconclusive, record.Pass, record.Inconclusive},
		{"last sample 61.5 s: more than one interval short", clean, 61.9, true, record.Inconclusive, record.Inconclusive, record.Pass, record.Inconclusive},
		{"last sample 62 s: within one interval", clean, 62.2, false, record.Pass, record.Pass, record.Pass, record.Pass},
		{"leak after the settle end", leakedCtrl, 62.5, false, record.Fail, record.Pass, record.Pass, record.Fail},
		{"whole record", clean, 1000, false, record.Pass, record.Pass, record.Pass, record.Pass},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, tl := migrationRun(tc.v)
			s := Evaluate(plan, cutAt(tl, tc.cut))
			if s.Coverage == nil || s.Coverage.Short != tc.short || s.Coverage.SettleEndS != 62.5 {
				t.Fatalf("coverage = %+v, want short=%v, settle end 62.5 s", s.Coverage, tc.short)
			}
			got := []string{checkOf(s, CheckLeakedControllers).Verdict, checkOf(s, CheckPathCompleteness).Verdict,
				checkOf(s, CheckServedAfterCutover).Verdict, s.Verdict}
			want := []string{tc.leaks, tc.complete, tc.served, tc.overall}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("leaks, completeness, served, overall = %v, want %v\nchecks: %+v", got, want, s.Checks)
			}
			if tc.short {
				for _, name := range []string{CheckLeakedControllers, CheckPathCompleteness} {
					d := checkOf(s, name).Detail
					if !strings.Contains(d, "the record is short") || !strings.Contains(d, "before the end of the settle period at 62.5 s (last terminal phase at 22.5 s + settle 40 s)") {
						t.Errorf("%s detail %q does not say the record stops before the settle end", name, d)
					}
				}
				if len(s.LeakedControllers) != 0 || len(s.MissingEndpoints) != 0 {
					t.Errorf("a short record lists findings as leaks: %+v %+v", s.LeakedControllers, s.MissingEndpoints)
				}
			}
		})
	}
	// The leak seen at 55 s is counted in the detail, not listed.
	plan, tl := migrationRun(leakedCtrl)
	if d := checkOf(Evaluate(plan, cutAt(tl, 55)), CheckLeakedControllers).Detail; !strings.Contains(d, "1 controller(s) would count as leaked") {
		t.Errorf("detail %q does not count the would-be leak", d)
	}
}

// TestHostSamplesStoppingEarly: one host sampled to the end, the other only
// until 40 s: that host is not judged, and the checks say so.
func TestHostSamplesStoppingEarly(t *testing.T) {
	plan, tl := migrationRun(clean)
	var kept []record.Line
	for _, l := range tl {
		if !(l.Kind == record.KindSample && l.Host == "host-b" && l.T > 40) {
			kept = append(kept, l)
		}
	}
	s := Evaluate(plan, kept)
	for _, name := range []string{CheckLeakedControllers, CheckPathCompleteness} {
		c := checkOf(s, name)
		if c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, "the last sample of host-b is at 40 s, before the end of the settle period at 62.5 s") {
			t.Errorf("%s = %+v, want inconclusive naming host-b", name, c)
		}
	}
}

// TestNoMigrationIsInconclusive: a record with no migration to judge —
// the plan asked for none, or the timeline has no phase line — is too thin
// to pass the migration checks, while a settled record still judges leaks.
func TestNoMigrationIsInconclusive(t *testing.T) {
	for _, planned := range []int{0, 1} {
		w := newWorld(0.5, "host-a")
		w.plan.Params.Migrations = planned
		w.volume("vol1", vol1, []int{1}, "host-a")
		w.endpoints(vol1, src1)
		w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
		w.until(41) // settle 40 s from the run start
		s := Evaluate(w.plan, w.lines)
		for _, name := range []string{CheckPauseBound, CheckFreezes, CheckServedAfterCutover} {
			c := checkOf(s, name)
			if c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, "no migration in the record") {
				t.Errorf("planned %d: %s = %+v, want inconclusive: no migration in the record", planned, name, c)
			}
		}
		wantLeaks := record.Pass
		if planned > 0 {
			wantLeaks = record.Inconclusive // the run stopped before its settle period
		}
		if c := checkOf(s, CheckLeakedControllers); c.Verdict != wantLeaks {
			t.Errorf("planned %d: leaks = %+v, want %s", planned, c, wantLeaks)
		}
		if s.Verdict != record.Inconclusive {
			t.Errorf("planned %d: overall %q, want inconclusive", planned, s.Verdict)
		}
	}
}

// TestFewerMigrationsThanPlanned: a timeline with 1 of 2 planned migrations
// (a run stopped early) is inconclusive overall, and each migration check
// says why.
func TestFewerMigrationsThanPlanned(t *testing.T) {
	plan, tl := migrationRun(clean)
	plan.Params.Migrations = 2
	s := Evaluate(plan, tl)
	if s.Verdict != record.Inconclusive || !s.Coverage.Short {
		t.Fatalf("overall %q coverage %+v, want inconclusive and short", s.Verdict, s.Coverage)
	}
	for _, name := range []string{CheckPauseBound, CheckFreezes, CheckServedAfterCutover} {
		if c := checkOf(s, name); c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, "the plan asked for 2 migrations, the timeline has 1") {
			t.Errorf("%s = %+v, want inconclusive: 1 of 2", name, c)
		}
	}
	if c := checkOf(s, CheckLeakedControllers); c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, "holds 1 of the 2 planned migrations") {
		t.Errorf("leaks = %+v, want inconclusive: 1 of 2 planned", c)
	}
}

// servedRun is one migration of vol1 (NSID 1, host-a, sampled every 0.5 s)
// whose Completed line lands between two samples, at 22.3 s; the target
// serves from 22 s on, the source is gone.
func servedRun(margin float64) (record.Plan, []record.Line) {
	w := newWorld(0.5, "host-a")
	w.plan.Params.Migrations, w.plan.Params.AttributionMarginS, w.plan.Params.SettleS = 1, margin, 10
	w.volume("vol1", vol1, []int{1}, "host-a")
	w.endpoints(vol1, src1)
	w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1)...)
	w.until(10)
	w.phase("m1", vol1, record.PhasePending, []string{src1}, []string{tgt1})
	w.ctrl("host-a", "nvme1", vol1, tgt1, "live", legs("inaccessible", 1)...)
	w.until(20)
	w.ana("host-a", "nvme0", "inaccessible")
	w.until(22)
	w.drop("host-a", "nvme0")
	w.ana("host-a", "nvme1", "optimized")
	w.endpoints(vol1, tgt1)
	w.until(22.3)
	w.phase("m1", vol1, record.PhaseCompleted, nil, nil)
	w.until(60)
	return w.plan, w.lines
}

// TestServedJudgedAtFirstSampleAfterMargin: with --attribution-margin=0 the
// migration is judged at the first sample at or after Completed (22.5 s),
// not left inconclusive for want of a sample exactly at 22.3 s; with a
// 30 s margin at the first sample at or after 52.3 s.
func TestServedJudgedAtFirstSampleAfterMargin(t *testing.T) {
	for _, margin := range []float64{0, 30} {
		plan, tl := servedRun(margin)
		if c := checkOf(Evaluate(plan, tl), CheckServedAfterCutover); c.Verdict != record.Pass {
			t.Errorf("margin %v: served-after-cutover = %+v, want pass", margin, c)
		}
	}
	// Cut before Completed + margin: nothing to judge at, and it says so.
	plan, tl := servedRun(30)
	c := checkOf(Evaluate(plan, cutAt(tl, 40)), CheckServedAfterCutover)
	if c.Verdict != record.Inconclusive || !strings.Contains(c.Detail, "m1 on host-a: no sample at or after Completed + margin (22.3 s + 30 s = 52.3 s); its last sample is at 40 s") {
		t.Errorf("cut at 40 s: %+v, want inconclusive naming 52.3 s", c)
	}
}

// TestServedJudgedAtThatSample: the judgement is the sample at the end of
// the margin, not a later one: the target stops serving NSID 1 from 22.5 s
// to 23 s; with margin 0 that is the judged sample, so the check fails.
func TestServedJudgedAtThatSample(t *testing.T) {
	plan, tl := servedRun(0)
	for i, l := range tl {
		if l.Kind == record.KindSample && l.T == 22.5 {
			tl[i].Controllers = []record.Controller{{Name: "nvme1", NQN: vol1, Address: tgt1, State: "connecting", Legs: legs("optimized", 1)}}
		}
	}
	c := checkOf(Evaluate(plan, tl), CheckServedAfterCutover)
	if c.Verdict != record.Fail || !strings.Contains(c.Detail, "m1 on host-a at 22.5 s: NSID 1 not served") {
		t.Errorf("served-after-cutover = %+v, want fail at 22.5 s", c)
	}
}

// TestOverBoundDetailsStayShort: the failing pause-bound and freezes details
// count and name the worst case instead of listing every pair (report.md's
// "Over the pause bound" lists them).
func TestOverBoundDetailsStayShort(t *testing.T) {
	plan, tl := migrationRun(longPause)
	want := `2 of 2 migration/host pair(s) over CUTOVER_PAUSE_CRIT_S = 5 s; longest 7 s (m1 on host-a); see "Over the pause bound"`
	if c := checkOf(Evaluate(plan, tl), CheckPauseBound); c.Verdict != record.Fail || c.Detail != want {
		t.Errorf("pause-bound = %+v\nwant detail %q", c, want)
	}
	plan, tl = migrationRun(secondFreeze)
	want = `1 of 1 migration(s) over CUTOVER_FREEZES_ALLOWED = 1; most 2 freezes (m1 on host-a [20, 22] [25, 26] s, host-b [20, 22] [25, 26] s); see "Over the pause bound"`
	if c := checkOf(Evaluate(plan, tl), CheckFreezes); c.Verdict != record.Fail || c.Detail != want {
		t.Errorf("freezes = %+v\nwant detail %q", c, want)
	}
}

func TestLineValidator(t *testing.T) {
	plan, _ := migrationRun(clean)
	v := LineValidator(plan)
	if err := v(record.Line{T: 1, Kind: record.KindSample, Host: "host-a"}); err != nil {
		t.Errorf("sample of host-a: %v", err)
	}
	if err := v(record.Line{T: 1, Kind: record.KindPhase, Migration: "m1"}); err != nil {
		t.Errorf("phase line: %v", err)
	}
	err := v(record.Line{T: 1, Kind: record.KindSample, Host: "host-z"})
	if err == nil || !strings.Contains(err.Error(), `sample of host "host-z", which is not in plan.json topology.hosts`) {
		t.Errorf("sample of host-z: %v", err)
	}
}

// TestLineValidatorFormatVersion: the timeline's format version is its
// plan's (record/FORMAT.md). Each case feeds lines in order; the last one
// is the line judged.
func TestLineValidatorFormatVersion(t *testing.T) {
	sample := record.Line{T: 0, Kind: record.KindSample, Host: "host-a"}
	format := func(v int) record.Line { return record.Line{T: 0, Kind: record.KindFormat, Version: v} }
	for _, tc := range []struct {
		name    string
		planFmt int // plan.json params.timeline_format (0: absent)
		lines   []record.Line
		wantErr string // "" for no error on any line
	}{
		{"v1 plan, no format line", 0, []record.Line{sample, sample}, ""},
		{"v1 plan stated, no format line", record.FormatFull, []record.Line{sample}, ""},
		{"v2 plan, format line first", record.FormatChangeOnly, []record.Line{format(2), sample}, ""},
		{"v2 plan, format line missing", record.FormatChangeOnly, []record.Line{sample},
			"first line is of kind \"sample\", but plan.json params.timeline_format says version 2"},
		{"v2 plan, format line states 1", record.FormatChangeOnly, []record.Line{format(1)},
			"format line states version 1, but plan.json params.timeline_format says 2"},
		{"v1 plan, format line states 2", 0, []record.Line{format(2)},
			"format line states version 2, but plan.json params.timeline_format says 1"},
		{"format line second", record.FormatChangeOnly, []record.Line{format(2), format(2)},
			"format line (version 2) after the first line"},
	} {
		plan, _ := migrationRun(clean)
		plan.Params.TimelineFormat = tc.planFmt
		v := LineValidator(plan)
		var err error
		for i, l := range tc.lines {
			if err = v(l); err != nil && i != len(tc.lines)-1 {
				t.Fatalf("%s: line %d: %v", tc.name, i+1, err)
			}
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
	}
}

// TestShortRecordEndOfRunSeedChecks: a run killed mid-migration (cut at
// 15 s, m1 Validating: each host holds the source's 2 and the target's 2
// controllers of vol1, and host-a's kernel has created 6 controllers it
// removes at 25 s) leaves the checks judged on the record's end —
// paths-per-subsystem (4 > 3 paths) and controller-churn's net controllers
// (6 > 4) — inconclusive, saying the record is short, where the whole
// record passes them; a controller past MaxReconnects reconnect attempts,
// seen before the cut, still fails controller-churn. Through the Judge and
// the reference alike.
func TestShortRecordEndOfRunSeedChecks(t *testing.T) {
	plan, tl := migrationRun(clean)
	var churn []record.Line
	for i := range 6 {
		name := fmt.Sprintf("nvme%d", 10+i)
		churn = append(churn, kern(12, "host-a", name, fmt.Sprintf("new ctrl: NQN %q, addr 10.0.0.9:4420", vol1)),
			kern(25, "host-a", name, "Removing ctrl: NQN "+vol1))
	}
	reconnect := kern(14, "host-b", "nvme1", "Failed reconnect attempt 101")
	type verdicts struct{ paths, churn string }
	for _, tc := range []struct {
		name  string
		lines []record.Line
		cut   float64
		want  verdicts
		words []string // in controller-churn's detail
	}{
		{"whole record", churn, 1000, verdicts{record.Pass, record.Pass}, nil},
		{"killed mid-migration", churn, 15, verdicts{record.Inconclusive, record.Inconclusive},
			[]string{"net controllers not judged: the record is short", "at most 6 net controllers per subsystem and host (bound 4)", "host-a: 6 net controllers created for " + vol1}},
		{"killed mid-migration after a reconnect storm", append(slices.Clone(churn), reconnect), 15, verdicts{record.Inconclusive, record.Fail},
			[]string{"1 controller(s) over 100 reconnect attempts: host-b nvme1", "net controllers not judged: the record is short"}},
	} {
		all := append(slices.Clone(tl), tc.lines...)
		sort.SliceStable(all, func(a, b int) bool { return all[a].T < all[b].T })
		for how, s := range map[string]record.Summary{"Judge": Evaluate(plan, cutAt(all, tc.cut)), "reference": refEvaluate(plan, cutAt(all, tc.cut))} {
			paths, churnRes := checkOf(s, CheckPathsPerSubsystem), checkOf(s, CheckControllerChurn)
			if got := (verdicts{paths.Verdict, churnRes.Verdict}); got != tc.want {
				t.Errorf("%s, %s: paths-per-subsystem, controller-churn = %+v, want %+v\n%+v\n%+v", tc.name, how, got, tc.want, paths, churnRes)
			}
			for _, w := range tc.words {
				if !strings.Contains(churnRes.Detail, w) {
					t.Errorf("%s, %s: controller-churn detail %q lacks %q", tc.name, how, churnRes.Detail, w)
				}
			}
			if tc.want.paths == record.Inconclusive && (!strings.Contains(paths.Detail, "not judged: the record is short") ||
				!strings.Contains(paths.Detail, "the last samples would warn: more than 3 paths per subsystem")) {
				t.Errorf("%s, %s: paths-per-subsystem detail %q does not say why and what the last samples showed", tc.name, how, paths.Detail)
			}
		}
	}
}
