package reports

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// TestWilson checks the interval against values worked by hand from the
// formula (z = 1.959964): 5 of 10 → centre 0.5, half-width
// 1.959964·√(0.025 + 0.009604)/1.384146 = 0.263407; 0 of 12 → [0, 0.242494]
// (centre = half-width = (z²/24)/(1 + z²/12)); 12 of 12 mirrors it.
func TestWilson(t *testing.T) {
	const z = 1.959963984540054
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{5, 10, 0.236593, 0.763407},
		{0, 12, 0, 0.242494},
		{12, 12, 0.757506, 1},
		{0, 0, 0, 0},
	} {
		lo, hi := Wilson(tc.k, tc.n, z)
		if math.Abs(lo-tc.lo) > 1e-6 || math.Abs(hi-tc.hi) > 1e-6 {
			t.Errorf("Wilson(%d, %d) = [%.6f, %.6f], want [%.6f, %.6f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

func TestSweepFigures(t *testing.T) {
	mig := func(p float64) record.SweepMigration {
		return record.SweepMigration{ID: "m", LongestPauseS: p, OverBound: p > 5}
	}
	seeds := []record.SweepSeed{
		{Seed: 1, Migrations: []record.SweepMigration{mig(1), mig(2), mig(3)}},
		{Seed: 2, Migrations: []record.SweepMigration{mig(4), mig(6)}},
		{Seed: 3, Migrations: []record.SweepMigration{}},
	}
	p, ob := SweepFigures(seeds, 5)
	// Type 7 over 1,2,3,4,6: rank p/100·4 → p50 = 3, p90 = 4 + 0.6·2 = 5.2,
	// p99 = 4 + 0.96·2 = 5.92.
	want := record.SweepPauses{Migrations: 5, PercentileMethod: PercentileMethod, P50S: 3, P90S: 5.2, P99S: 5.92, MaxS: 6}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("pauses (-want +got):\n%s", diff)
	}
	lo, hi := Wilson(1, 5, 1.959963984540054)
	if ob.Migrations != 5 || ob.Over != 1 || ob.Fraction != 0.2 || math.Abs(ob.Low95-lo) > 1e-6 || math.Abs(ob.High95-hi) > 1e-6 || ob.PauseCritS != 5 {
		t.Errorf("over_bound %+v, want 1 of 5, 0.2, [%.6f, %.6f]", ob, lo, hi)
	}
	if empty, eob := SweepFigures(nil, 5); empty.Migrations != 0 || empty.MaxS != 0 || eob.Fraction != 0 || eob.IntervalMethod == "" {
		t.Errorf("no migration: %+v %+v", empty, eob)
	}
}

func TestSweepMigrationsTakeTheLongestHost(t *testing.T) {
	sum := record.Summary{Migrations: []record.MigrationSummary{
		{ID: "mig-0001", Outcome: record.PhaseCompleted, Hosts: map[string]record.HostPauses{"a": {LongestPauseS: 2}, "b": {LongestPauseS: 5.5}}},
		{ID: "mig-0002", Outcome: record.PhaseFailed, Hosts: map[string]record.HostPauses{}},
	}}
	got := SweepMigrations(sum, 5)
	want := []record.SweepMigration{
		{ID: "mig-0001", Outcome: record.PhaseCompleted, LongestPauseS: 5.5, OverBound: true},
		{ID: "mig-0002", Outcome: record.PhaseFailed, LongestPauseS: 0, OverBound: false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSweepMarkdownListsFailingSeedsWithCommands(t *testing.T) {
	sw := record.Sweep{SeedsArg: "1-2", Command: "fiomig sweep --seeds=1-2", SeedsListed: 2,
		Seeds: []record.SweepSeed{
			{Seed: 1, Verdict: record.Pass, Dir: "seed-1", Command: "fiomig run --seed=1"},
			{Seed: 2, Verdict: record.Fail, Dir: "seed-2", TimelineKept: true, FailedChecks: []string{"pause-bound"}, Command: "fiomig run --seed=2"},
		}}
	md := string(SweepMarkdown(sw))
	for _, want := range []string{"seed 2 (pause-bound), seed-2: `fiomig run --seed=2`", "Percentile method", "Interval method", "seed-1 (timeline dropped)"} {
		if !strings.Contains(md, want) {
			t.Errorf("sweep.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "seed 1 (") {
		t.Errorf("sweep.md lists passing seed 1 as failing:\n%s", md)
	}
}
