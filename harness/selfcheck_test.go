package harness

import (
	"bytes"
	"context"

	"os"
	"path/filepath"
	"slices"
	"strings"

	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

func TestSelfCheckAt(t *testing.T) {
	at := func(n int, share float64) []int {
		var out []int
		for i, ok := range selfCheckAt(n, share) {
			if ok {
				out = append(out, i)
			}
		}
		return out
	}
	for _, tc := range []struct {
		n     int
		share float64
		want  []int
	}{
		{100, 0.05, []int{0, 20, 40, 60, 80}},
		{101, 0.05, []int{0, 20, 40, 60, 80, 100}},
		{10, 0.05, []int{0}},
		{6, 0.34, []int{0, 2, 5}},
		{3, 1, []int{0, 1, 2}},
		{5, 0, nil},
	} {
		if diff := cmp.Diff(tc.want, at(tc.n, tc.share)); diff != "" {
			t.Errorf("%d seeds, share %v (-want +got):\n%s", tc.n, tc.share, diff)
		}
	}
}

// smallSpec is a cheap simulator run: 2 migrations, a short settle.
func smallSpec(t *testing.T) Spec {
	s := DefaultSpec()
	s.Params.Migrations, s.Params.SettleS, s.Out = 2, 35, t.TempDir()
	return s
}

// TestSelfCheckNamesANonDeterministicSeed: with the test hook making
// seed 3's runs differ, the self-check (seeds 1 and 3 of 1-4 rerun) fails
// the sweep naming seed 3 and only it; the same sweep without the hook
// finds both deterministic, and without the self-check nothing notices.
func TestSelfCheckNamesANonDeterministicSeed(t *testing.T) {
	sweep := func(share float64) SweepResult {
		t.Helper()
		res, err := Sweep(context.Background(), smallSpec(t), SweepOptions{Seeds: []int64{1, 2, 3, 4}, SeedsArg: "1-4", Jobs: 2,
			Timelines: KeepNone, SelfCheck: share})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := sweep(0.5)
	if d := res.Sweep.Determinism; d == nil || !slices.Equal(d.Seeds, []int64{1, 3}) || len(d.Mismatches) != 0 {
		t.Fatalf("without the hook: determinism %+v, want seeds 1 and 3 rerun, no mismatch", d)
	}
	t.Setenv(NondeterministicSeedEnv, "3")
	if d := sweep(0).Sweep.Determinism; d != nil {
		t.Errorf("--self-check 0: determinism %+v, want none", d)
	}
	res = sweep(0.5)
	d := res.Sweep.Determinism
	if d == nil || len(d.Mismatches) != 1 || d.Mismatches[0].Seed != 3 || d.Mismatches[0].First == d.Mismatches[0].Second {
		t.Fatalf("with seed 3 non-deterministic: determinism %+v, want one mismatch, seed 3", d)
	}
	if code := res.ExitCode(false); code != ExitFail {
		t.Errorf("exit %d, want %d", code, ExitFail)
	}
	var w bytes.Buffer
	res.Explain(&w, ExitFail, false)
	if !strings.Contains(w.String(), "seed 3 is not deterministic") {
		t.Errorf("Explain does not name seed 3:\n%s", w.String())
	}
	md, err := os.ReadFile(filepath.Join(res.Dir, record.SweepReportFile))
	if err != nil || !strings.Contains(string(md), "- seed 3: `") {
		t.Errorf("sweep.md does not name seed 3 (%v):\n%s", err, md)
	}
}

// TestUntilCoveredStopsAtTheShortestCoveringPrefix: with K = 1 the sweep
// keeps exactly the seeds up to the first after which every cell of the
// seeds' schedules has landed once — counted again here from the kept
// seeds' summary.json — whatever the number of jobs (the same sweep.json
// bytes with 1 and 3).
func TestUntilCoveredStopsAtTheShortestCoveringPrefix(t *testing.T) {
	var seeds []int64
	for i := range 40 {
		seeds = append(seeds, int64(i+1))
	}
	var first []byte
	for _, jobs := range []int{1, 3} {
		s := smallSpec(t)
		s.Params.Migrations = 4
		s.Params.Faults = "ana-flap,target-restart"
		res, err := Sweep(context.Background(), s, SweepOptions{Seeds: seeds, SeedsArg: "1-40", Jobs: jobs, Timelines: KeepNone, UntilCovered: 1})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Sweep.Coverage
		if c == nil || !c.Covered || len(c.NeverLanded) != 0 || len(res.Sweep.Seeds) >= len(seeds) {
			t.Fatalf("jobs %d: coverage %+v after %d seeds, want covered before seed 40", jobs, c, len(res.Sweep.Seeds))
		}
		landed := map[cell]int{}
		covered := func() bool {
			for _, x := range c.Cells {
				if landed[cell{x.Kind, x.Stage}] < 1 {
					return false
				}
			}
			return true
		}
		for i, x := range res.Sweep.Seeds {
			if covered() {
				t.Fatalf("jobs %d: covered after %d seeds, but the sweep kept %d", jobs, i, len(res.Sweep.Seeds))
			}
			b, err := os.ReadFile(filepath.Join(res.Dir, x.Dir, record.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			_, l := summaryFacts(b)
			for k, n := range l {
				landed[k] += n
			}
		}
		if !covered() {
			t.Fatalf("jobs %d: the %d kept seeds do not cover %+v", jobs, len(res.Sweep.Seeds), c.Cells)
		}
		if left, _ := filepath.Glob(filepath.Join(res.Dir, "seed-*")); len(left) != len(res.Sweep.Seeds) {
			t.Errorf("jobs %d: %d run directories for %d seeds kept", jobs, len(left), len(res.Sweep.Seeds))
		}
		b, err := os.ReadFile(filepath.Join(res.Dir, record.SweepFile))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Errorf("sweep.json differs between 1 and 3 jobs")
		}
	}
}

// TestUntilCoveredNamesCellsThatNeverLanded: dropped-connects after the
// cutover has no CONNECT to drop (a healthy run connects only while
// validating: docs/faults.md), so that cell never lands; the sweep runs
// every seed, is not covered, and names the cell.
func TestUntilCoveredNamesCellsThatNeverLanded(t *testing.T) {
	s := smallSpec(t)
	file := filepath.Join(t.TempDir(), "faults.yaml")
	if err := os.WriteFile(file, []byte("faults:\n- {kind: ana-flap, target: storage-1, when: in-freeze, migration: \"#1\", duration: 3}\n- {kind: dropped-connects, target: storage-2, when: after-cutover, migration: \"#2\", duration: 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Params.Faults = record.FaultsFilePrefix + file
	res, err := Sweep(context.Background(), s, SweepOptions{Seeds: []int64{1, 2}, SeedsArg: "1-2", Jobs: 2, Timelines: KeepNone, UntilCovered: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Sweep.Coverage
	want := &record.SweepCoverage{K: 1, Cells: []record.SweepCell{{Kind: "dropped-connects", Stage: record.StageAfterCutover}, {Kind: "ana-flap", Stage: record.StageInFreeze, Landed: 2}},
		NeverLanded: []string{"dropped-connects × after-cutover"}}
	if diff := cmp.Diff(want, c); diff != "" || len(res.Sweep.Seeds) != 2 {
		t.Errorf("coverage over %d seeds (-want +got):\n%s", len(res.Sweep.Seeds), diff)
	}
}

// TestInterruptedSeedsAreNotDone: a seed cut short by an interrupt is not
// counted "done" in the progress lines (nor in the ETA's rate): after one
// seed finished, "seed 2 interrupted — 1/8 done".
func TestInterruptedSeedsAreNotDone(t *testing.T) {
	var b bytes.Buffer
	sw := &sweeper{o: SweepOptions{Seeds: []int64{1, 2, 3, 4, 5, 6, 7, 8}, Progress: &b}, runs: make([]seedRun, 8), start: time.Now()}
	sw.done(0, seedRun{seed: record.SweepSeed{Seed: 1, Verdict: record.Pass}})
	sw.done(1, seedRun{seed: record.SweepSeed{Seed: 2}, interrupted: true})
	sw.done(2, seedRun{seed: record.SweepSeed{Seed: 3}, interrupted: true})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for i, want := range []string{"seed 1 pass — 1/8 done", "seed 2 interrupted — 1/8 done", "seed 3 interrupted — 1/8 done"} {
		if i >= len(lines) || !strings.Contains(lines[i], want) {
			t.Errorf("progress line %d: want %q in:\n%s", i+1, want, b.String())
		}
	}
}
