package analysis

import (
	"cmp"
	"slices"

	"github.com/fiomig/fiomig/incidents"
)

// NotEvidence is what a matching hypothesis is not.
const NotEvidence = "a hypothesis that reproduces the symptoms is not evidence that it happened: it shows only that " +
	"the model with those switches can produce what was observed; what would confirm it on a lab is listed with it"

// HypothesisResult is one combination of an incident's hypotheses run
// over seeds: its symptom table (the incident's operator's runs), whether
// it reproduces every modelled symptom, and the fix judged against the
// prefix operator under it.
type HypothesisResult struct {
	Combination incidents.Combination `json:"-"`
	ID          string                `json:"id"`
	Label       string                `json:"label"`
	Symptoms    SymptomTable          `json:"symptoms"`
	// Reproduces: every modelled symptom is reproduced (SymptomTable.All).
	Reproduces bool `json:"reproduces"`
	// Fix is the incident's comparison (JudgeOverSeeds with its margin)
	// over this combination's seeds; nil when the incident has none or
	// one operator ran.
	Fix *SeedsComparison `json:"fix,omitempty"`
	// Rank is 1 for the closest profile (RankHypotheses).
	Rank int `json:"rank"`
}

// JudgeHypothesis is combination c's result over seeds (each seed's runs,
// every operator that ran).
func JudgeHypothesis(inc incidents.Incident, c incidents.Combination, seeds []SeedRuns) HypothesisResult {
	var runs []Run
	for _, s := range seeds {
		runs = append(runs, s.Runs...)
	}
	h := HypothesisResult{Combination: c, ID: c.ID, Label: c.Label(), Symptoms: Symptoms(inc, runs)}
	h.Reproduces = h.Symptoms.All()
	for _, e := range inc.Expected {
		if e.Compare == "" || e.Margin == nil {
			continue
		}
		if pairs := Pairs(seeds); len(pairs) > 0 {
			cmp := JudgeOverSeeds(pairs, e.Margin.Value)
			h.Fix = &cmp
		}
		break
	}
	return h
}

// RankHypotheses orders hs by the distance of their symptom profile to
// the observed one (DistanceRule): the smaller mean first, then the
// smaller upper bound, then declaration order; Rank numbers them from 1.
func RankHypotheses(hs []HypothesisResult) {
	order := map[string]int{}
	for i, h := range hs {
		order[h.ID] = i
	}
	slices.SortStableFunc(hs, func(a, b HypothesisResult) int {
		return cmp.Or(cmp.Compare(a.Symptoms.Distance.Mean, b.Symptoms.Distance.Mean),
			cmp.Compare(a.Symptoms.Distance.Hi, b.Symptoms.Distance.Hi), cmp.Compare(order[a.ID], order[b.ID]))
	})
	for i := range hs {
		hs[i].Rank = i + 1
	}
}
