package reports

import (
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// withMaskedPair is fixture() plus m3 of vol1, Completed, whose cutover on
// host-a (40 s) ends a node-crash's fault window [34, 40] s (6 s): the
// pair has no window of its own (masked_by set, one freeze); host-b saw
// a 2 s cutover pause.
func withMaskedPair() (record.Plan, record.Summary) {
	plan, sum := fixture()
	sum.Migrations = append(sum.Migrations, record.MigrationSummary{
		ID: "m3", NQN: "nqn.2023-02.io.simplyblock:vol1", Outcome: record.PhaseCompleted, StartS: 30, EndS: 41, CompletedS: fptr(41), Freezes: 1,
		Hosts: map[string]record.HostPauses{
			"host-a": {Freezes: 1, Windows: [][2]float64{}, FaultWindows: [][2]float64{{34, 40}}, CutoverS: fptr(40),
				MaskedBy: &record.Masked{Window: [2]float64{34, 40}, Fault: "node-crash on node-1 from 34 s", BoundS: 6}},
			"host-b": {LongestPauseS: 2, Freezes: 1, Windows: [][2]float64{{38, 40}}, CutoverS: fptr(40)},
		},
	})
	return plan, sum
}

// TestMaskedPairIsNotAMeasuredPause: a (migration, host) pair whose
// cutover lies inside a fault window has no measured cutover pause. The
// report's row says where it hid and the bound (inconclusive over the
// pause bound, pass within it); the run's pause statistics and ECDF
// sample leave the pair out (it counted as a 0 s pause), and a sweep
// leaves the migration out of its percentiles and — unless a pause was
// seen over the bound — of its fraction over the bound, saying so.
func TestMaskedPairIsNotAMeasuredPause(t *testing.T) {
	plan, sum := withMaskedPair()
	m3 := sum.Migrations[2]
	if v := MigrationVerdict(plan, m3); v != record.Inconclusive {
		t.Errorf("m3 with a 6 s masked cutover, bound 5 s: verdict %s, want inconclusive", v)
	}
	within := plan
	within.Params.PauseCritS = 6
	if v := MigrationVerdict(within, m3); v != record.Pass {
		t.Errorf("m3 with a 6 s masked cutover, bound 6 s: verdict %s, want pass", v)
	}
	md := string(Markdown(plan, WithStats(sum)))
	row := ""
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| m3 | vol1 |") {
			row = l
		}
	}
	if want := "host-a 0 s (cutover inside the fault window [34, 40] s of node-crash on node-1 from 34 s, its own pause ≤ 6 s)"; !strings.Contains(row, want) || !strings.HasSuffix(row, "| **inconclusive** |") {
		t.Errorf("m3's row %q: want %q, inconclusive", row, want)
	}
	if want := "Pairs left out, their cutover inside a fault window and its pause not measured: m3 on host-a."; !strings.Contains(md, want) {
		t.Errorf("report.md does not say the masked pair is left out of the statistics (%q)", want)
	}
	if st := Stats(sum); st.Pauses != 5 || st.Masked != 1 {
		t.Errorf("stats %+v: want 5 pairs, 1 masked left out", st)
	}
	if ps := Pauses(sum); len(ps.Longest) != 5 || len(ps.Windows) != 6 {
		t.Errorf("ECDF sample: %d longest, %d windows; want 5 (host-a of m3 left out) and 6", len(ps.Longest), len(ps.Windows))
	}
	migs := SweepMigrations(sum, 5)
	if len(migs) != 3 || !migs[2].Masked || migs[2].OverBound || migs[0].Masked {
		t.Fatalf("sweep migrations %+v: want m3 (only) masked, not over", migs)
	}
	p, ob := SweepFigures([]record.SweepSeed{{Seed: 42, Migrations: migs}}, 5)
	if p.Migrations != 2 || p.Masked != 1 || ob.Migrations != 2 || ob.Masked != 1 || ob.Over != 1 {
		t.Errorf("sweep pauses %+v, over bound %+v: want m3 left out of both (2 migrations, 1 masked), 1 over", p, ob)
	}
	// A pause seen over the bound is over whatever the masked one was: in
	// the fraction, still out of the percentiles.
	migs[2].OverBound = true
	p, ob = SweepFigures([]record.SweepSeed{{Seed: 42, Migrations: migs}}, 5)
	if p.Migrations != 2 || p.Masked != 1 || ob.Migrations != 3 || ob.Masked != 0 || ob.Over != 2 {
		t.Errorf("m3 over the bound: sweep pauses %+v, over bound %+v: want 2 in the percentiles (1 masked), 2 of 3 over", p, ob)
	}
	sw := string(SweepMarkdown(record.Sweep{SeedsArg: "42", Seeds: []record.SweepSeed{{Seed: 42, Migrations: migs}}, Pauses: p, OverBound: ob}))
	if !strings.Contains(sw, "Over 2 migrations of 1 seeds that cut over (1 more left out: a host's cutover inside a fault window, its pause not measured)") {
		t.Errorf("sweep.md does not say how many it left out as masked:\n%s", sw)
	}
}
