package history

import (
	"math"
	"testing"

	"github.com/fiomig/fiomig/record"
)

func entry(id, commit, config string, seeds []int64, verdicts ...string) Entry {
	e := Entry{ID: id, Labels: Labels{Commit: commit}, Config: config, MemberSeeds: seeds}
	for _, v := range verdicts {
		e.Checks = append(e.Checks, map[string]string{"pause-bound": v, "leaked-controllers": record.Pass})
	}
	return e
}

// TestFlakes: runs of the same commit and seed that disagree are flakes;
// a change of commit is a flip only when grouping by seeds.
func TestFlakes(t *testing.T) {
	P, F := record.Pass, record.Fail
	es := []Entry{
		entry("r1", "a", "x", []int64{1, 2}, P, P),
		entry("r2", "a", "x", []int64{1, 2}, F, P), // seed 1 flips
		entry("r3", "a", "x", []int64{1, 2}, P, P), // and back
		entry("r4", "b", "x", []int64{1, 2}, F, F), // a new commit: both fail
		entry("r5", "b", "x", []int64{1, 2}, F, F),
	}
	got, err := Flakes(es, "")
	if err != nil {
		t.Fatal(err)
	}
	pb := got[0]
	// Groups (a, seed 1), (a, seed 2), (b, seed 1), (b, seed 2): 2+2+1+1
	// transitions, 2 flips.
	if pb.Check != "pause-bound" || pb.Flips != 2 || pb.Transitions != 6 || pb.Groups != 4 || pb.LastFlip != "seed 1: fail → pass at r3 (after r2)" {
		t.Errorf("by commit+seeds: %+v", pb)
	}
	// Wilson 95 % for 2 of 6: [0.0968, 0.7000] (E. B. Wilson 1927; R's
	// prop.test without correction gives the same to 4 places).
	if math.Abs(pb.Low95-0.0968) > 1e-3 || math.Abs(pb.High95-0.7) > 1e-3 {
		t.Errorf("interval [%v, %v], want [0.0968, 0.7000]", pb.Low95, pb.High95)
	}
	if lc := got[1]; lc.Check != "leaked-controllers" || lc.Flips != 0 || lc.Transitions != 6 || lc.High95 == 0 {
		t.Errorf("leaked-controllers: %+v", lc)
	}
	bySeeds, _ := Flakes(es, BySeeds)
	if bySeeds[0].Flips != 4 || bySeeds[0].Transitions != 8 { // seed 1: P F P F F; seed 2: P P P F F
		t.Errorf("by seeds: %+v", bySeeds[0])
	}
	// Another configuration is another group under commit+seeds.
	es[1].Config = "y"
	if got, _ := Flakes(es, ByCommitSeeds); got[0].Flips != 0 {
		t.Errorf("a run of other parameters counted as a repeat: %+v", got[0])
	}
	if _, err := Flakes(es, "moon"); err == nil {
		t.Error("unknown grouping: no error")
	}
}
