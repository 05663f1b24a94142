package analysis

import (
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
)

// Run is one operator's reproduction of an incident, analysed from its
// record: the figures, the incident file's expectations judged on them,
// whether every judged one holds (the shape), and the incident's observed
// symptoms beside this run's figures (one seed; marked not run when the
// incident ran the other operator).
type Run struct {
	Figures  IncidentFigures
	Bands    []BandResult
	Shape    Shape
	Symptoms SymptomTable
}

// Analyse computes a run's figures from its record (ComputeIncidentFigures),
// judges inc's expectations on them (JudgeBands, ShapeOf) and sets inc's
// symptoms beside them (Symptoms).
func Analyse(inc incidents.Incident, plan record.Plan, lines []record.Line, sum record.Summary) Run {
	return JudgeRun(inc, ComputeIncidentFigures(plan, lines, sum), sum)
}

// JudgeRun is the run of figures f and summary sum (summary.json, whose
// checks the check bands read) as Analyse makes it: inc's expectations
// judged on them and its symptoms set beside them. A seed farm's pods send
// a run's figures and summary.json (docs/farm.md); the harness judges them
// here with the same call.
func JudgeRun(inc incidents.Incident, f IncidentFigures, sum record.Summary) Run {
	r := Run{Figures: f}
	r.Bands = JudgeBands(inc, r.Figures, sum)
	r.Shape = ShapeOf(r.Bands, r.Figures, inc.Notes)
	r.Symptoms = Symptoms(inc, []Run{r})
	return r
}

// SymptomsOf is the symptom table of one seed's runs: that of the run of
// the operator the incident ran, else the first run's (marked not run).
func SymptomsOf(runs []Run) SymptomTable {
	for _, r := range runs {
		if len(r.Symptoms.Seeds) > 0 {
			return r.Symptoms
		}
	}
	if len(runs) > 0 {
		return runs[0].Symptoms
	}
	return SymptomTable{}
}

// SeedRuns are one seed's runs of an incident (one per operator).
type SeedRuns struct {
	Seed int64
	Runs []Run
}

// OK: every judged expectation of every run holds.
func (s SeedRuns) OK() bool {
	for _, r := range s.Runs {
		if !r.Shape.OK {
			return false
		}
	}
	return true
}

// Pairs are the SeedPair of every seed where both operators ran.
func Pairs(seeds []SeedRuns) []SeedPair {
	var out []SeedPair
	for _, s := range seeds {
		if p := PairOf(s.Runs); p != nil {
			out = append(out, *p)
		}
	}
	return out
}
