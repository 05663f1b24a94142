package reports

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// withFailedMigration is fixture() plus m3, which failed at validation
// (no cutover: summary.json no_cutover, its reason from the Failed line)
// on both hosts, with no pause charged to it.
func withFailedMigration() (record.Plan, record.Summary) {
	plan, sum := fixture()
	sum.Migrations = append(sum.Migrations, record.MigrationSummary{
		ID: "m3", NQN: "nqn.2023-02.io.simplyblock:vol1", Outcome: record.PhaseFailed, StartS: 90, EndS: 91.3,
		Reason: "NVMe path validation failed on host-a: validation Job killed", NoCutover: true,
		Hosts: map[string]record.HostPauses{"host-a": {Windows: [][2]float64{}}, "host-b": {Windows: [][2]float64{}}},
	})
	return plan, sum
}

// TestDistributionsCountCutOverMigrationsOnly (issue 27 item 1): a
// migration that never cut over has no cutover pause: the run's pause
// statistics and ECDF sample, and a sweep's percentiles and Wilson
// interval, count the migrations that cut over and say how many did not —
// they counted m3's hosts as two 0 s pauses.
func TestDistributionsCountCutOverMigrationsOnly(t *testing.T) {
	_, sum := withFailedMigration()
	want := record.Stats{PercentileMethod: PercentileMethod, Pauses: 4, NoCutover: 1, P50PauseS: 2.625, P95PauseS: 6.6125, MaxPauseS: 7.25}
	if d := cmp.Diff(want, Stats(sum)); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}
	if ps := Pauses(sum); len(ps.Longest) != 4 || len(ps.Windows) != 5 {
		t.Errorf("ECDF sample: %d longest, %d windows; want 4 and 5", len(ps.Longest), len(ps.Windows))
	}

	migs := SweepMigrations(sum, 5)
	if len(migs) != 3 || !migs[2].NoCutover || migs[2].OverBound {
		t.Fatalf("sweep migrations %+v, want m3 marked no_cutover", migs)
	}
	p, ob := SweepFigures([]record.SweepSeed{{Seed: 42, Migrations: migs}}, 5)
	if p.Migrations != 2 || p.NoCutover != 1 || p.P50S != 4.75 {
		t.Errorf("sweep pauses %+v, want 2 migrations (p50 of 2.25 and 7.25 = 4.75), 1 without a cutover", p)
	}
	lo, hi := Wilson(1, 2, 1.959963984540054)
	if ob.Migrations != 2 || ob.NoCutover != 1 || ob.Over != 1 || math.Abs(ob.Low95-lo) > 1e-6 || math.Abs(ob.High95-hi) > 1e-6 {
		t.Errorf("over bound %+v, want 1 of 2 in [%.6f, %.6f], 1 without a cutover", ob, lo, hi)
	}
	md := string(SweepMarkdown(record.Sweep{SeedsArg: "42", Seeds: []record.SweepSeed{{Seed: 42, Migrations: migs}}, Pauses: p, OverBound: ob}))
	if !strings.Contains(md, "Over 2 migrations of 1 seeds that cut over (1 did not: ended Failed or Aborted before Running)") {
		t.Errorf("sweep.md does not say how many did not cut over:\n%s", md)
	}
}

// TestFailedMigrationShowsItsReason (issue 27 item 1): report.md's row of a
// migration that failed names why and says it had no cutover, instead of
// "0 s … pass"; the pause statistics say it is left out; its swimlane's
// title carries the reason.
func TestFailedMigrationShowsItsReason(t *testing.T) {
	plan, sum := withFailedMigration()
	md := string(Markdown(plan, WithStats(sum)))
	row := ""
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| m3 | vol1 |") {
			row = l
		}
	}
	for _, want := range []string{"Failed: NVMe path validation failed on host-a: validation Job killed", "no cutover"} {
		if !strings.Contains(row, want) {
			t.Errorf("m3's row %q lacks %q", row, want)
		}
	}
	if strings.Contains(row, "0 s") || strings.HasSuffix(row, "| pass |") {
		t.Errorf("m3's row %q reads as a 0 s pause that passed", row)
	}
	if !strings.Contains(md, "m3 (Failed before Running: no cutover)") {
		t.Errorf("report.md does not say m3 is left out of the pause statistics:\n%s", md)
	}
	p, _, _ := Swimlane(plan, Cutover{Migration: sum.Migrations[2], FromS: 80, ToS: 100})
	if want := "m3 (vol1): Failed — NVMe path validation failed on host-a: validation Job killed; no cutover"; p.Title.Text != want {
		t.Errorf("swimlane title %q, want %q", p.Title.Text, want)
	}
}
