package analysis

import (
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
)

// Run is one operator's reproduction of an incident, analysed from its
// record: the figures, the incident file's expectations judged on them,
// and whether every judged one holds (the shape).
type Run struct {
	Figures IncidentFigures
	Bands   []BandResult
	Shape   Shape
}

// Analyse computes a run's figures from its record (ComputeIncidentFigures)
// and judges inc's expectations on them (JudgeBands, ShapeOf).
func Analyse(inc incidents.Incident, plan record.Plan, lines []record.Line, sum record.Summary) Run {
	r := Run{Figures: ComputeIncidentFigures(plan, lines, sum)}
	r.Bands = JudgeBands(inc, r.Figures, sum)
	r.Shape = ShapeOf(r.Bands, r.Figures)
	return r
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
