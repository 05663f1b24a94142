package checks

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

func fioPlan(sample, margin float64, migrations int) record.Plan {
	return record.Plan{Params: record.Params{SampleIntervalS: sample, AttributionMarginS: margin, Migrations: migrations, PauseCritS: 5, Seed: record.DefaultSeedThresholds()}}
}

func TestFioToleranceS(t *testing.T) {
	for _, c := range []struct{ sample, want float64 }{{0.05, 0.25}, {0.1, 0.25}, {0.125, 0.25}, {0.2, 0.4}, {1, 2}} {
		if got := FioToleranceS(fioPlan(c.sample, 0, 0)); got != c.want {
			t.Errorf("sample interval %g: tolerance %g, want %g", c.sample, got, c.want)
		}
	}
}

func gapAt(start, length float64) record.FioGap {
	return record.FioGap{StartS: start, EndS: start + length, LengthS: length}
}

func ptrGap(vol string, g record.FioGap) *record.FioGap {
	g.Volume = vol
	return &g
}

// Two migrations of volume A (the second starts inside the first one's
// margin) and one of volume B; gaps are attributed by their start like
// pause windows.
func TestCompareFioAttribution(t *testing.T) {
	plan := fioPlan(0.1, 5, 3)
	migs := []record.MigrationSummary{
		{ID: "m1", NQN: "nqnA", Outcome: record.PhaseCompleted, StartS: 0, EndS: 10,
			Hosts: map[string]record.HostPauses{"h1": {LongestPauseS: 2.0}}},
		{ID: "m2", NQN: "nqnB", Outcome: record.PhaseCompleted, StartS: 11, EndS: 20,
			Hosts: map[string]record.HostPauses{"h2": {LongestPauseS: 3.0}}},
		{ID: "m3", NQN: "nqnA", Outcome: record.PhaseFailed, StartS: 12, EndS: 25,
			Hosts: map[string]record.HostPauses{"h1": {LongestPauseS: 0}}},
	}
	vols := []record.FioVolume{
		{Volume: "A", NQN: "nqnA", Host: "h1", Completions: 900, Gaps: []record.FioGap{
			gapAt(1, 0.06),   // m1, short
			gapAt(7, 2.05),   // m1: the cutover
			gapAt(13, 0.3),   // m3's core wins over m1's margin
			gapAt(40, 0.2),   // outside, below tolerance: dropped
			gapAt(45, 0.9),   // outside, reported
			gapAt(-1, 0.07)}, // before everything, short
		},
		{Volume: "B", NQN: "nqnB", Host: "h2", Completions: 900, Gaps: []record.FioGap{gapAt(15, 3.4)}},
	}
	comps, un := CompareFio(plan, migs, vols)
	want := []record.FioComparison{
		{Migration: "m1", Volume: "A", NQN: "nqnA", Host: "h1", PauseS: 2, FioGapS: 2.05, FioGap: ptrGap("A", gapAt(7, 2.05)), DiffS: 0.05, Agree: true},
		{Migration: "m2", Volume: "B", NQN: "nqnB", Host: "h2", PauseS: 3, FioGapS: 3.4, FioGap: ptrGap("B", gapAt(15, 3.4)), DiffS: 0.4, Agree: false},
		{Migration: "m3", Volume: "A", NQN: "nqnA", Host: "h1", PauseS: 0, FioGapS: 0.3, FioGap: ptrGap("A", gapAt(13, 0.3)), DiffS: 0.3, Agree: false},
	}
	if diff := cmp.Diff(want, comps); diff != "" {
		t.Errorf("comparisons (-want +got):\n%s", diff)
	}
	wantUn := []record.FioGap{{Volume: "A", StartS: 45, EndS: 45.9, LengthS: 0.9}}
	if diff := cmp.Diff(wantUn, un); diff != "" {
		t.Errorf("unattributed (-want +got):\n%s", diff)
	}
}

// A migration whose volume's fio had no gap of at least the listing minimum
// compares as a 0 s gap: it agrees with no pause, and disagrees with one.
func TestCompareFioNoGap(t *testing.T) {
	plan := fioPlan(0.1, 30, 2)
	migs := []record.MigrationSummary{
		{ID: "m1", NQN: "n", Outcome: record.PhaseFailed, StartS: 0, EndS: 5, Hosts: map[string]record.HostPauses{"h": {}}},
		{ID: "m2", NQN: "n", Outcome: record.PhaseCompleted, StartS: 100, EndS: 110, Hosts: map[string]record.HostPauses{"h": {LongestPauseS: 2.1}}},
	}
	vols := []record.FioVolume{{Volume: "v", NQN: "n", Host: "h", Completions: 900}}
	comps, _ := CompareFio(plan, migs, vols)
	if len(comps) != 2 || !comps[0].Agree || comps[0].FioGap != nil || comps[1].Agree || comps[1].DiffS != -2.1 {
		t.Errorf("comparisons %+v: want m1 agreeing at 0 s, m2 off by -2.1 s", comps)
	}
}

// A migration that never reached a terminal phase spans to the end (the
// open gap is its, not unattributed) but is not judged: an interrupted run
// must not count it as an agreeing pair.
func TestCompareFioOpenMigration(t *testing.T) {
	plan := fioPlan(0.1, 1, 1)
	migs := []record.MigrationSummary{{ID: "m1", NQN: "n", Outcome: record.PhaseRunning, StartS: 0, EndS: 3,
		Hosts: map[string]record.HostPauses{"h": {LongestPauseS: 9}}}}
	vols := []record.FioVolume{{Volume: "v", NQN: "n", Host: "h", Completions: 900, Gaps: []record.FioGap{{StartS: 20, EndS: 29, LengthS: 9, Open: true}}}}
	comps, un := CompareFio(plan, migs, vols)
	if len(un) != 0 || len(comps) != 1 || comps[0].FioGapS != 9 || comps[0].Agree ||
		comps[0].NotJudged != "m1 reached no terminal phase (last phase Running)" {
		t.Errorf("comparisons %+v, unattributed %+v: want the open gap in m1, not judged", comps, un)
	}
}

// The tester's interrupted run: mig-0002 stopped in Validating with no
// pause and no fio gap. It must not count as an agreeing pair.
func TestFioAgreementLeavesOutUnfinishedMigrations(t *testing.T) {
	plan := fioPlan(0.1, 10, 2)
	migs := []record.MigrationSummary{
		{ID: "mig-0001", NQN: "n10", Outcome: record.PhaseCompleted, StartS: 1, EndS: 17, Hosts: map[string]record.HostPauses{"h": {LongestPauseS: 1.6}}},
		{ID: "mig-0002", NQN: "n7", Outcome: record.PhaseValidating, StartS: 22, EndS: 25, Hosts: map[string]record.HostPauses{"h": {}}},
	}
	vols := []record.FioVolume{{Volume: "vol-010", NQN: "n10", Host: "h", Completions: 900, Gaps: []record.FioGap{gapAt(13.7, 1.6)}},
		{Volume: "vol-007", NQN: "n7", Host: "h", Completions: 900}}
	fs := record.FioSummary{ToleranceS: FioToleranceS(plan), Volumes: vols}
	fs.Comparisons, fs.Unattributed = CompareFio(plan, migs, vols)
	got := FioChecks(plan, fs)[0]
	want := "fio's longest gap and the ANA pause agree within 0.25 s for 1 migration/volume pair(s); largest difference 0 s (mig-0001 vol-010); not judged: 1 pair(s) of a migration with no terminal phase (mig-0002 vol-007)"
	if got.Verdict != record.Pass || got.Detail != want {
		t.Errorf("agreement %s %q,\nwant pass %q", got.Verdict, got.Detail, want)
	}
}

// One volume's fio directory deleted (the tester removed fio/vol-007, a
// migrated volume, then fio/vol-001, an unmigrated one): every fio check
// is inconclusive for that volume alone, names it, and counts only the
// volumes it judged — never a "fio gap 0 s" disagreement, never "no I/O
// error on 10 volume(s)".
func TestFioChecksMissingVolumeEvidence(t *testing.T) {
	plan := fioPlan(0.1, 10, 2)
	migs := []record.MigrationSummary{
		{ID: "mig-0001", NQN: "n10", Outcome: record.PhaseCompleted, StartS: 1, EndS: 17, Hosts: map[string]record.HostPauses{"h": {LongestPauseS: 1.6}}},
		{ID: "mig-0002", NQN: "n7", Outcome: record.PhaseCompleted, StartS: 22, EndS: 40, Hosts: map[string]record.HostPauses{"h": {LongestPauseS: 1.9}}},
	}
	for _, miss := range []string{"vol-007", "vol-001"} {
		var vols []record.FioVolume
		for _, v := range []record.FioVolume{{Volume: "vol-001", NQN: "n1"}, {Volume: "vol-007", NQN: "n7"}, {Volume: "vol-010", NQN: "n10", Gaps: []record.FioGap{gapAt(13.7, 1.6)}}} {
			v.Host = "h"
			if v.Volume == miss {
				v.Problems = []string{"fio/" + miss + " missing"}
			} else {
				v.Completions = 900
				if v.Volume == "vol-007" {
					v.Gaps = []record.FioGap{gapAt(30, 1.9)}
				}
			}
			vols = append(vols, v)
		}
		fs := record.FioSummary{ToleranceS: FioToleranceS(plan), Volumes: vols}
		fs.Comparisons, fs.Unattributed = CompareFio(plan, migs, vols)
		got := FioChecks(plan, fs)
		why := miss + ": fio logged no completion (fio/" + miss + " missing)"
		for i, want := range []string{
			map[string]string{
				"vol-007": "1 of 2 migration/volume pair(s) not judged, fio evidence missing: mig-0002 " + why + "; the other 1 agree within 0.25 s",
				"vol-001": "fio's longest gap and the ANA pause agree within 0.25 s for 2 migration/volume pair(s); largest difference 0 s (mig-0001 vol-010)",
			}[miss],
			"1 of 3 volume(s) not judged, fio evidence missing: " + why + "; no corrupted block on the other 2",
			"1 of 3 volume(s) not judged, fio evidence missing: " + why + "; no I/O error on the other 2",
		} {
			wantV := record.Inconclusive
			if i == 0 && miss == "vol-001" { // vol-001 took part in no migration
				wantV = record.Pass
			}
			if got[i].Verdict != wantV || got[i].Detail != want {
				t.Errorf("%s missing: %s = %s %q,\nwant %s %q", miss, got[i].Name, got[i].Verdict, got[i].Detail, wantV, want)
			}
		}
	}
}

func TestFioChecks(t *testing.T) {
	plan := fioPlan(0.1, 30, 1)
	okVol := record.FioVolume{Volume: "v1", Host: "h", Completions: 500}
	cases := []struct {
		name string
		fs   record.FioSummary
		want []string // verdicts of agreement, integrity, errors
		in   []string // substrings of the details, in check order ("" = any)
	}{
		{"all good", record.FioSummary{ToleranceS: 0.25, Volumes: []record.FioVolume{okVol},
			Comparisons: []record.FioComparison{{Migration: "m1", Volume: "v1", PauseS: 2, FioGapS: 2.1, DiffS: 0.1, Agree: true}}},
			[]string{record.Pass, record.Pass, record.Pass}, []string{"largest difference 0.1 s (m1 v1)", "no corrupted block on 1 volume", "no I/O error"}},
		{"disagreement", record.FioSummary{ToleranceS: 0.25, Volumes: []record.FioVolume{okVol},
			Comparisons: []record.FioComparison{{Migration: "m1", Volume: "v1", Host: "h", PauseS: 2, FioGapS: 7.5, DiffS: 5.5},
				{Migration: "m2", Volume: "v1", Host: "h", PauseS: 2, FioGapS: 1.7, DiffS: -0.3}}},
			[]string{record.Fail, record.Pass, record.Pass}, []string{"m1 v1 on h: fio gap 7.5 s vs ANA pause 2 s (off by 5.5 s > 0.25 s); m2 v1 on h: fio gap 1.7 s vs ANA pause 2 s (off by 0.3 s > 0.25 s)", "", ""}},
		{"stalls outside migrations are named, not judged", record.FioSummary{ToleranceS: 0.25, Volumes: []record.FioVolume{okVol},
			Comparisons:  []record.FioComparison{{Migration: "m1", Volume: "v1", Host: "h", PauseS: 2, FioGapS: 2, Agree: true}},
			Unattributed: []record.FioGap{{Volume: "v1", StartS: 50, EndS: 50.3, LengthS: 0.3}, {Volume: "v1", StartS: 60, EndS: 61, LengthS: 1}}},
			[]string{record.Pass, record.Pass, record.Pass}, []string{"not judged: 2 fio stall(s) of at least 0.25 s outside every migration, longest 1 s on v1 at [60, 61] s", "", ""}},
		{"verify failure", record.FioSummary{ToleranceS: 0.25, Volumes: []record.FioVolume{{Volume: "v1", Completions: 9,
			VerifyFailures: []record.FioVerifyFailure{{Offset: 40960, Length: 4096, Kind: "md5"}}}}},
			[]string{record.Inconclusive, record.Fail, record.Pass}, []string{"no finished migration of a volume", "data integrity failure: 1 corrupted block(s): v1: md5 verify failure at offset 40960 (4096 bytes)", ""}},
		{"errors, drain excepted", record.FioSummary{ToleranceS: 0.25, Volumes: []record.FioVolume{
			{Volume: "v1", Completions: 9, DrainErrors: 3, Errors: []record.FioErrno{{Errno: 107, Name: "ENOTCONN", Class: "path-loss", Count: 3}}},
			{Volume: "v2", Completions: 9, DrainErrors: 1, Errors: []record.FioErrno{{Errno: 5, Name: "EIO", Class: "io-error", Count: 4}, {Errno: 107, Name: "ENOTCONN", Class: "path-loss", Count: 2}}}}},
			[]string{record.Inconclusive, record.Pass, record.Fail}, []string{"", "", "v2: 4 × EIO (io-error), 1 × ENOTCONN (path-loss)"}},
		{"fio never ran", record.FioSummary{ToleranceS: 0.25, Volumes: []record.FioVolume{{Volume: "v1", Problems: []string{"fio's per-I/O log: missing"}}},
			Comparisons: []record.FioComparison{{Migration: "m1", Volume: "v1", Agree: true}}},
			[]string{record.Inconclusive, record.Inconclusive, record.Inconclusive}, []string{"m1 v1: fio logged no completion (fio's per-I/O log: missing)", "v1: fio logged no completion", "v1: fio logged no completion"}},
	}
	for _, c := range cases {
		got := FioChecks(plan, c.fs)
		names := []string{CheckFioPauseAgreement, CheckFioDataIntegrity, CheckFioIOErrors}
		for i, r := range got {
			if r.Name != names[i] || r.Verdict != c.want[i] || !strings.Contains(r.Detail, c.in[i]) {
				t.Errorf("%s: check %d = %+v; want %s %s containing %q", c.name, i, r, names[i], c.want[i], c.in[i])
			}
		}
	}
}

// fio's noise floor is its longest closed stall that overlaps no pause
// window its host saw on the volume's NQN, over the volumes with fio
// evidence: inside a migration but clear of its pause counts, another NQN's
// pause explains nothing, and a gap touching a pause window (a migration's,
// or outside every migration a fault's — a partition's silent stall — or an
// unattributed one), an open gap at the run's edge and a volume without
// evidence do not count.
func TestFioNoiseFloor(t *testing.T) {
	migs := []record.MigrationSummary{
		{ID: "m1", NQN: "nA", Outcome: record.PhaseCompleted, StartS: 10, EndS: 20, Hosts: map[string]record.HostPauses{"h": {LongestPauseS: 1.6, Windows: [][2]float64{{15, 16.6}}}}},
		{ID: "m2", NQN: "nB", Outcome: record.PhaseCompleted, StartS: 30, EndS: 40, Hosts: map[string]record.HostPauses{"h": {LongestPauseS: 1.9, Windows: [][2]float64{{35, 36.9}}}}},
	}
	a := record.FioVolume{Volume: "A", NQN: "nA", Host: "h", Completions: 900, Gaps: []record.FioGap{
		{StartS: 0, EndS: 3, LengthS: 3, Open: true}, // fio starting: the run's edge
		gapAt(14.5, 2.5), // m1's cutover, lengthened
		gapAt(11, 0.7),   // inside m1, clear of its pause
		gapAt(33, 0.4)},  // outside m1
	}
	b := record.FioVolume{Volume: "B", NQN: "nB", Host: "h", Completions: 900, Gaps: []record.FioGap{gapAt(5, 0.3), gapAt(35, 1.9)}}
	c := record.FioVolume{Volume: "C", NQN: "nC", Host: "h", Problems: []string{"gone"}, Gaps: []record.FioGap{gapAt(5, 7)}}
	if diff := cmp.Diff(ptrGap("A", gapAt(11, 0.7)), FioNoiseFloor(record.Summary{Migrations: migs}, []record.FioVolume{a, b, c})); diff != "" {
		t.Errorf("noise floor (-want +got):\n%s", diff)
	}
	a.Gaps = append(a.Gaps, gapAt(35.2, 1.2)) // during m2's pause, which is nB's
	if diff := cmp.Diff(ptrGap("A", gapAt(35.2, 1.2)), FioNoiseFloor(record.Summary{Migrations: migs}, []record.FioVolume{a, b, c})); diff != "" {
		t.Errorf("noise floor (-want +got):\n%s", diff)
	}
	b.Gaps = b.Gaps[1:]
	if got := FioNoiseFloor(record.Summary{Migrations: migs}, []record.FioVolume{b, c}); got != nil {
		t.Errorf("noise floor %+v, want none: B's only gap is its pause, C has no evidence", got)
	}
	// Outside every migration: a partition's silent stall of h's path of
	// nB (a fault window, 50-57.1 s) explains B's 7 s gap, and an
	// unattributed pause of nB (60-61 s) its 1 s one; the fault window of
	// another host explains nothing.
	b.Gaps = append(b.Gaps, gapAt(50.1, 7), gapAt(60, 1), gapAt(70, 0.5))
	sum := record.Summary{Migrations: migs,
		FaultWindows: []record.HostWindow{{Host: "h", NQN: "nB", Window: [2]float64{50, 57.1}, Cause: "network-partition on h/s1 from 50 s"},
			{Host: "other", NQN: "nB", Window: [2]float64{69, 72}}},
		Unattributed: []record.HostWindow{{Host: "h", NQN: "nB", Window: [2]float64{60, 61}}}}
	if diff := cmp.Diff(ptrGap("B", gapAt(70, 0.5)), FioNoiseFloor(sum, []record.FioVolume{b, c})); diff != "" {
		t.Errorf("noise floor (-want +got):\n%s", diff)
	}
}

// The load flake, both ways: a cutover whose fio gap a 0.9 s stall of the
// machine lengthened (pause 1.6 s, fio gap 2.5 s). With the machine's own
// 0.9 s stall measured in the same run clear of every pause window, the check
// cannot tell and says so (inconclusive, naming the floor and the load);
// with no such stall the same difference is a disagreement (fail); and a
// difference beyond the tolerance plus the floor fails even under load.
func TestFioAgreementNoiseFloor(t *testing.T) {
	plan := fioPlan(0.1, 2, 1)
	migs := []record.MigrationSummary{{ID: "m1", NQN: "n", Outcome: record.PhaseCompleted, StartS: 10, EndS: 20,
		Hosts: map[string]record.HostPauses{"h": {LongestPauseS: 1.6, Windows: [][2]float64{{14, 15.6}}}}}}
	judge := func(gaps ...record.FioGap) record.CheckResult {
		vols := []record.FioVolume{{Volume: "v", NQN: "n", Host: "h", Completions: 900, Gaps: gaps}}
		fs := record.FioSummary{ToleranceS: FioToleranceS(plan), Volumes: vols, Load: &record.MachineLoad{Avg1: 10.2, CPUs: 2}}
		fs.Comparisons, fs.Unattributed = CompareFio(plan, migs, vols)
		if g := FioNoiseFloor(record.Summary{Migrations: migs}, vols); g != nil {
			fs.NoiseFloorS, fs.NoiseGap = g.LengthS, g
		}
		return FioChecks(plan, fs)[0]
	}
	for _, c := range []struct {
		name    string
		gaps    []record.FioGap
		verdict string
		detail  string
	}{
		{"lengthened cutover, machine stalled as long elsewhere", []record.FioGap{gapAt(13.1, 2.5), gapAt(27, 0.9)}, record.Inconclusive,
			"fio and the ANA samples differ by more than the tolerance 0.25 s, but by no more than 1.15 s, on 1 of 1 judged migration/volume pair(s): m1 v on h: fio gap 2.5 s vs ANA pause 1.6 s (off by 0.9 s); the machine's own stalls could account for that (fio's noise floor 0.9 s (its longest stall clear of every pause window, v at [27, 27.9] s; load average 10.20 on 2 CPU(s) at the end of the run)), so this run cannot tell; not judged: 1 fio stall(s) of at least 0.25 s outside every migration, longest 0.9 s on v at [27, 27.9] s"},
		{"lengthened cutover, the stall inside the migration", []record.FioGap{gapAt(11, 0.9), gapAt(13.1, 2.5)}, record.Inconclusive,
			"on 1 of 1 judged migration/volume pair(s): m1 v on h: fio gap 2.5 s vs ANA pause 1.6 s (off by 0.9 s); the machine's own stalls could account for that (fio's noise floor 0.9 s (its longest stall clear of every pause window, v at [11, 11.9] s;"},
		{"lengthened cutover, quiet machine", []record.FioGap{gapAt(13.1, 2.5), gapAt(27, 0.1)}, record.Fail,
			"fio and the ANA samples disagree (tolerance 0.25 s) on 1 of 1 judged migration/volume pair(s): m1 v on h: fio gap 2.5 s vs ANA pause 1.6 s (off by 0.9 s > 0.25 s tolerance + 0.1 s noise floor)"},
		{"no stall outside the migration", []record.FioGap{gapAt(13.1, 2.5)}, record.Fail,
			"fio and the ANA samples disagree (tolerance 0.25 s) on 1 of 1 judged migration/volume pair(s): m1 v on h: fio gap 2.5 s vs ANA pause 1.6 s (off by 0.9 s > 0.25 s)"},
		{"beyond tolerance plus floor", []record.FioGap{gapAt(13.1, 3.5), gapAt(27, 0.9)}, record.Fail,
			"(off by 1.9 s > 0.25 s tolerance + 0.9 s noise floor)"},
		{"agreement under small noise", []record.FioGap{gapAt(14, 1.7), gapAt(27, 0.2)}, record.Pass,
			"fio's longest gap and the ANA pause agree within 0.25 s for 1 migration/volume pair(s); largest difference 0.1 s (m1 v); fio's noise floor 0.2 s (its longest stall clear of every pause window, v at [27, 27.2] s; load average 10.20 on 2 CPU(s) at the end of the run)"},
		{"agreement, but the floor reaches the pause bound", []record.FioGap{gapAt(14, 1.7), gapAt(27, 4.8)}, record.Inconclusive,
			"fio's noise floor 4.8 s (its longest stall clear of every pause window, v at [27, 31.8] s; load average 10.20 on 2 CPU(s) at the end of the run): the tolerance 0.25 s plus that floor reaches the pause bound 5 s, so fio cannot tell a cutover within the bound from one beyond it on this machine; the 1 judged pair(s) agree within 0.25 s"},
	} {
		got := judge(c.gaps...)
		if got.Verdict != c.verdict || !strings.Contains(got.Detail, c.detail) {
			t.Errorf("%s: %s %q,\nwant %s containing %q", c.name, got.Verdict, got.Detail, c.verdict, c.detail)
		}
	}
}
