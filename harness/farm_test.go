package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

func TestShardTasks(t *testing.T) {
	check := selfCheckAt(7, 0.34) // positions 0, 2, 5
	got := shardTasks(7, 3, check)
	seen := map[farmTask]int{}
	for i, tasks := range got {
		for _, x := range tasks {
			if _, dup := seen[x]; dup {
				t.Errorf("task %+v dealt twice", x)
			}
			seen[x] = i
		}
	}
	for p := range 7 {
		if seen[farmTask{p, false}] != p%3 {
			t.Errorf("position %d on shard %d, want %d", p, seen[farmTask{p, false}], p%3)
		}
		i, again := seen[farmTask{p, true}]
		if again != check[p] || (again && i == p%3) {
			t.Errorf("position %d: second run on shard %d (dealt %v), want one on another shard iff rechecked (%v)", p, i, again, check[p])
		}
	}
	if one := shardTasks(3, 1, []bool{true, true, true}); len(one[0]) != 3 {
		t.Errorf("one shard: %+v, want the three first runs only (the harness reruns)", one)
	}
}

// farmLines runs every shard of o and returns their lines, as a farm's
// pods print them.
func farmLines(t *testing.T, s Spec, o SweepOptions, shards int) []farmLine {
	t.Helper()
	var out []farmLine
	for i := range shards {
		var buf bytes.Buffer
		x := s
		x.Out = t.TempDir()
		if err := Shard(context.Background(), x, o, shards, i, &buf); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&buf)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var l farmLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			l.index = i
			out = append(out, l)
		}
		if left, _ := os.ReadDir(x.Out); len(left) != 0 {
			t.Errorf("shard %d left %d entries in its --out", i, len(left))
		}
	}
	return out
}

// TestFarmMergeIsTheLocalSweep: the lines of three shards (as a farm's
// pods print them, one index's arriving twice as when it is retried), fed
// to the farm's merge, give sweep.json, sweep.md and the ECDF byte for
// byte as the local sweep of the same seeds — the seeds that keep their
// timeline re-created here, their summary.json the pods' — and a seed
// whose retried run gives another summary is named.
func TestFarmMergeIsTheLocalSweep(t *testing.T) {
	s := smallSpec(t)
	s.Params.Migrations = 3
	s.Params.Model.CutoverPauseS = 4.5 // some seeds over the 5 s bound: their timelines are kept
	o := SweepOptions{Seeds: []int64{1, 2, 3, 4, 5, 6, 7}, SeedsArg: "1-7", Jobs: 2, Timelines: KeepFailing, MaxTimelines: 2,
		SelfCheck: 0.34, StartUnix: 1700000000}
	local, err := Sweep(context.Background(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	lines := farmLines(t, s, o, 3)
	merge := func(lines []farmLine) SweepResult {
		t.Helper()
		x := s
		x.Out = t.TempDir()
		sw, err := newSweep(x, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.create(); err != nil {
			t.Fatal(err)
		}
		ends, rep := map[int]farmLine{}, &farmRecord{}
		for _, l := range lines {
			if _, err := farmTake(l, ends, rep, sw.farmLine); err != nil {
				t.Fatal(err)
			}
		}
		if len(ends) != 3 {
			t.Fatalf("%d end lines, want 3", len(ends))
		}
		res, err := sw.finish(context.Background(), func(x record.SweepSeed) (*record.SweepMismatch, error) { return sw.recreate(context.Background(), x) })
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var retried []farmLine
	for _, l := range lines {
		if l.index == 1 {
			retried = append(retried, l)
		}
	}
	farm := merge(append(lines, retried...))
	for _, f := range []string{record.SweepFile, record.SweepReportFile, reports.ECDFPlotFile, reports.ECDFSVGFile} {
		a, err := os.ReadFile(filepath.Join(local.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(farm.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the farm's differs from the local sweep's", f)
		}
	}
	kept := 0
	for _, x := range farm.Sweep.Seeds {
		for _, f := range []string{record.PlanFile, record.SummaryFile, record.TimelineFile} {
			a, errA := os.ReadFile(filepath.Join(local.Dir, x.Dir, f))
			b, errB := os.ReadFile(filepath.Join(farm.Dir, x.Dir, f))
			if (errA == nil) != (errB == nil) || !bytes.Equal(a, b) {
				t.Errorf("seed %d: %s differs (local %v, farm %v)", x.Seed, f, errA, errB)
			}
		}
		if x.TimelineKept {
			kept++
		}
	}
	if d := farm.Sweep.Determinism; d == nil || len(d.Seeds) != 3 || len(d.Mismatches) != 0 {
		t.Errorf("determinism %+v, want 3 seeds rerun on other shards, no mismatch", d)
	}
	if kept != 2 {
		t.Errorf("%d seeds kept their timeline (re-created here), want --max-timelines 2", kept)
	}

	bad := append([]farmLine(nil), lines...)
	for _, l := range retried {
		if l.Seed != nil {
			l.Sum = "0000"
			bad = append(bad, l)
			break
		}
	}
	d := merge(bad).Sweep.Determinism
	if d == nil || len(d.Mismatches) != 1 || d.Mismatches[0].Second != "0000" {
		t.Errorf("a retried seed with another summary: determinism %+v, want it named", d)
	}
}

// TestFarmMergeStopsOnCoverage: a farm's lines arriving shard by shard in
// turn (as four pods print them) stop the merge once the coverage is
// reached, and the sweep is the local --until-covered sweep's, byte for
// byte: the same shortest covering prefix.
func TestFarmMergeStopsOnCoverage(t *testing.T) {
	s := smallSpec(t)
	s.Params.Migrations, s.Params.Faults = 4, "ana-flap,target-restart"
	var seeds []int64
	for i := range 24 {
		seeds = append(seeds, int64(i+1))
	}
	o := SweepOptions{Seeds: seeds, SeedsArg: "1-24", Jobs: 2, Timelines: KeepNone, SelfCheck: 0.1, UntilCovered: 1, StartUnix: 1700000000}
	local, err := Sweep(context.Background(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	if !local.Sweep.Coverage.Covered || len(local.Sweep.Seeds) == len(seeds) {
		t.Fatalf("local: covered %v after %d seeds; want covered before seed 24", local.Sweep.Coverage.Covered, len(local.Sweep.Seeds))
	}
	byShard := map[int][]farmLine{}
	for _, l := range farmLines(t, s, o, 4) {
		byShard[l.index] = append(byShard[l.index], l)
	}
	x := s
	x.Out = t.TempDir()
	sw, err := newSweep(x, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.create(); err != nil {
		t.Fatal(err)
	}
	ends, rep := map[int]farmLine{}, &farmRecord{}
	stopped := false
	for i := 0; !stopped && i < len(seeds); i++ {
		for shard := range 4 {
			if i >= len(byShard[shard]) {
				continue
			}
			if stopped, err = farmTake(byShard[shard][i], ends, rep, sw.farmLine); err != nil {
				t.Fatal(err)
			}
			if stopped {
				break
			}
		}
	}
	if !stopped {
		t.Fatal("the merge never stopped on coverage")
	}
	farm, err := sw.finish(context.Background(), func(record.SweepSeed) (*record.SweepMismatch, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{record.SweepFile, record.SweepReportFile} {
		a, _ := os.ReadFile(filepath.Join(local.Dir, f))
		b, _ := os.ReadFile(filepath.Join(farm.Dir, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the farm's differs from the local --until-covered sweep's", f)
		}
	}
}
