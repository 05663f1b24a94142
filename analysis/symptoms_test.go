package analysis

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/incidents"
)

// TestMiss: the relative miss, floored at 1 for an observed 0 and capped
// at 1 (hand-computed).
func TestMiss(t *testing.T) {
	for _, tc := range []struct{ x, o, want float64 }{
		{16, 16, 0}, {12, 16, 0.25}, {20, 16, 0.25}, {0, 146, 1}, {300, 146, 1}, {0, 0, 0}, {0.5, 0, 0.5}, {2, 0, 1},
	} {
		if got := Miss(tc.x, tc.o); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Miss(%g, %g) = %g, want %g", tc.x, tc.o, got, tc.want)
		}
	}
}

// symptomIncident observes 16 validation failures, 146 rejections a
// minute and one thing the model does not have, for the prefix operator.
func symptomIncident() incidents.Incident {
	return incidents.Incident{Symptoms: &incidents.Symptoms{Operator: "prefix", Tolerance: incidents.Margin{Value: 0.25},
		Observed: []incidents.Symptom{
			{Name: "failed", Figure: "validation_failed", Value: 16},
			{Name: "rejections", Figure: "rejections_per_min", Value: 146},
			{Name: "shutdowns", NotModelled: "no filesystem", Value: 0},
		}}}
}

func figRun(op string, seed int64, failed int, rej float64) Run {
	return Run{Figures: IncidentFigures{Operator: op, Seed: seed, ValidationFailed: failed, RejectionsPerMin: rej}}
}

// TestSymptoms: over three seeds of the prefix operator (the fixed runs
// are not compared), 15, 16, 17 failures miss by 1/16, 0, 1/16 — within
// the tolerance 0.25 on all three seeds, reproduced; 0, 0 and 146
// rejections a minute show it on one seed of three, not reproduced; the
// third is not modelled. Each seed's distance is the mean of its two
// misses.
func TestSymptoms(t *testing.T) {
	runs := []Run{figRun("prefix", 1, 15, 0), figRun("fixed", 1, 99, 999), figRun("prefix", 2, 16, 0), figRun("prefix", 3, 17, 146)}
	tab := Symptoms(symptomIncident(), runs)
	if d := cmp.Diff([]int64{1, 2, 3}, tab.Seeds); d != "" {
		t.Errorf("seeds (-want +got):\n%s", d)
	}
	marks := []string{}
	for _, r := range tab.Rows {
		marks = append(marks, r.Mark)
	}
	if d := cmp.Diff([]string{Reproduced, NotReproduced, NotModelled}, marks); d != "" {
		t.Errorf("marks (-want +got):\n%s", d)
	}
	if tab.Modelled != 2 || tab.Reproduced != 1 || tab.NotModelled != 1 || tab.All() {
		t.Errorf("modelled %d reproduced %d not modelled %d all %t, want 2, 1, 1, false", tab.Modelled, tab.Reproduced, tab.NotModelled, tab.All())
	}
	r := tab.Rows[0]
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"value mean", r.Value.Mean, 16}, {"value lo", r.Value.Lo, 16 - 4.3027/math.Sqrt(3)}, {"miss mean", r.Miss.Mean, 1.0 / 24},
		{"shown", float64(r.Shown), 3}, {"rejections shown", float64(tab.Rows[1].Shown), 1}, {"min", r.Min, 15}, {"max", r.Max, 17}} {
		if math.Abs(x.got-x.want) > 5e-4 {
			t.Errorf("%s %.4f, want %.4f", x.name, x.got, x.want)
		}
	}
	want := []float64{(1.0/16 + 1) / 2, 0.5, (1.0 / 16) / 2}
	if d := cmp.Diff(want, tab.Distances, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); d != "" {
		t.Errorf("distances (-want +got):\n%s", d)
	}
	if tab.Distance.Hi > 1 || tab.Distance.Lo < 0 {
		t.Errorf("distance %+v not clipped to [0, 1]", tab.Distance)
	}
}

// TestSymptomsOneSeedAndNotRun: with one seed a symptom is marked by that
// seed's miss; with two, both must show it (more than half); with no run of the incident's operator every
// modelled symptom is not run, and nothing counts as reproduced.
func TestSymptomsOneSeedAndNotRun(t *testing.T) {
	inc := symptomIncident()
	tab := Symptoms(inc, []Run{figRun("prefix", 3, 11, 140)})
	if tab.Rows[0].Mark != NotReproduced || tab.Rows[1].Mark != Reproduced || tab.Rows[1].Miss.N != 1 {
		t.Errorf("one seed: rows %+v, want 11 for 16 (miss 0.3125) not reproduced and 140 for 146 (miss 0.041) reproduced", tab.Rows)
	}
	tab = Symptoms(inc, []Run{figRun("prefix", 3, 16, 140), figRun("prefix", 4, 16, 0)})
	if tab.Rows[0].Mark != Reproduced || tab.Rows[1].Mark != NotReproduced {
		t.Errorf("two seeds: rows %+v, want 16, 16 reproduced and 140, 0 (one of two) not", tab.Rows)
	}
	tab = Symptoms(inc, []Run{figRun("fixed", 3, 16, 146)})
	if len(tab.Seeds) != 0 || tab.Rows[0].Mark != NotRun || tab.Rows[1].Mark != NotRun || tab.Reproduced != 0 || tab.All() {
		t.Errorf("no prefix run: %+v, want every modelled symptom not run", tab)
	}
	if tab := Symptoms(incidents.Incident{}, nil); tab.Declared {
		t.Errorf("no symptoms block: declared")
	}
}

// TestRankHypotheses: by mean distance, then the upper bound, then
// declaration order.
func TestRankHypotheses(t *testing.T) {
	h := func(id string, mean, hi float64) HypothesisResult {
		return HypothesisResult{ID: id, Symptoms: SymptomTable{Distance: Interval{Mean: mean, Lo: mean - 0.1, Hi: hi, N: 5}}}
	}
	hs := []HypothesisResult{h("H1", 0.5, 0.6), h("H2", 0.2, 0.4), h("H3", 0.2, 0.3), h("H4", 0.5, 0.6), h("H5", 0.1, 0.9)}
	RankHypotheses(hs)
	var got []string
	for i, x := range hs {
		got = append(got, x.ID)
		if x.Rank != i+1 {
			t.Errorf("%s rank %d, want %d", x.ID, x.Rank, i+1)
		}
	}
	if d := cmp.Diff([]string{"H5", "H3", "H2", "H1", "H4"}, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

// TestJudgeHypothesis: a combination reproducing every modelled symptom
// is marked so, and the fix is judged with the incident's margin — not
// exercised when neither operator failed on a cause the fix removes.
func TestJudgeHypothesis(t *testing.T) {
	inc := symptomIncident()
	inc.Expected = []incidents.Expectation{{Compare: CompareFixedLEPrefix, Verdict: "pass", Margin: &incidents.Margin{Value: 2}}}
	var seeds []SeedRuns
	for s := int64(1); s <= 3; s++ {
		seeds = append(seeds, SeedRuns{Seed: s, Runs: []Run{figRun("prefix", s, 16, 146), figRun("fixed", s, 16, 146)}})
	}
	h := JudgeHypothesis(inc, incidents.Combination{ID: "H2"}, seeds)
	if !h.Reproduces || h.ID != "H2" || h.Symptoms.Distance.Mean != 0 {
		t.Errorf("reproduces %t, id %s, distance %+v: want true, H2, 0", h.Reproduces, h.ID, h.Symptoms.Distance)
	}
	if h.Fix == nil || h.Fix.Verdict != NotExercised || h.Fix.Margin != 2 {
		t.Errorf("fix %+v, want not exercised with margin 2", h.Fix)
	}
	inc.Expected = nil
	if h := JudgeHypothesis(inc, incidents.Combination{ID: "H2"}, seeds); h.Fix != nil {
		t.Errorf("no comparison in the incident: fix %+v, want none", h.Fix)
	}
}
