package analysis

import (
	"math"
	"slices"

	"github.com/montanaflynn/stats"

	"github.com/fiomig/fiomig/incidents"
)

// Marks of a symptom (SymptomRow.Mark).
const (
	Reproduced    = "reproduced"
	NotReproduced = "not reproduced"
	NotModelled   = "not modelled"
	// NotRun: no run of the operator the incident ran.
	NotRun = "not run"
)

// MissRule states when a symptom counts as reproduced.
const MissRule = "a symptom's miss on one seed is |model − observed| / max(observed, 1), capped at 1 (a miss of the " +
	"observed value's own size or more counts as wholly missed); a seed shows the symptom when its miss is at most the " +
	"incident file's tolerance, and the symptom is reproduced when more than half of the seeds run show it (with one " +
	"seed: when it does); otherwise not reproduced"

// DistanceRule states the distance of a run's symptom profile to the
// incident's.
const DistanceRule = "distance of one seed = the mean miss over the modelled symptoms (0: every figure as observed, " +
	"1: every figure wholly missed); over the seeds its mean and 95 % t-interval (montanaflynn/stats v0.14.0 Mean, " +
	"StandardDeviationSample; gonum v0.17.0 StudentsT quantile), clipped to [0, 1]"

// Interval is a mean over seeds with its 95 % t-interval [Lo, Hi] (Lo =
// Hi = Mean with fewer than 2 seeds); N is the number of seeds.
type Interval struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	N    int     `json:"n"`
}

// intervalOf is the mean of xs with its 95 % t-interval.
func intervalOf(xs []float64) Interval {
	in := Interval{N: len(xs)}
	if len(xs) == 0 {
		return in
	}
	in.Mean, _ = stats.Mean(xs)
	in.Lo, in.Hi = in.Mean, in.Mean
	if len(xs) >= 2 {
		sd, _ := stats.StandardDeviationSample(xs)
		h := halfWidth(sd, len(xs))
		in.Lo, in.Hi = in.Mean-h, in.Mean+h
	}
	return in
}

// Overlaps: the two intervals share a point.
func (a Interval) Overlaps(b Interval) bool { return a.Lo <= b.Hi && b.Lo <= a.Hi }

// Miss is a model value x's miss of the observed value o (MissRule):
// |x − o| / max(o, 1), capped at 1.
func Miss(x, o float64) float64 {
	return math.Min(1, math.Abs(x-o)/math.Max(o, 1))
}

// SymptomRow is one observed symptom beside the model's value over the
// seeds run.
type SymptomRow struct {
	Symptom incidents.Symptom `json:"symptom"`
	// Mark is Reproduced, NotReproduced, NotModelled or NotRun.
	Mark string `json:"mark"`
	// Values are the model's figure on each seed (the incident's
	// operator's runs, in seed order); Value its mean with interval, Min
	// and Max its range.
	Values []float64 `json:"values,omitempty"`
	Value  Interval  `json:"value"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	// Miss is the mean miss over the seeds with its interval; Shown the
	// seeds whose miss is within the tolerance (MissRule).
	Miss  Interval `json:"miss"`
	Shown int      `json:"shown"`
}

// SymptomTable is an incident's observed symptoms beside one model's
// values over seeds: the runs of the operator the incident ran.
type SymptomTable struct {
	// Declared: the incident file lists symptoms (else the rest is empty).
	Declared  bool         `json:"declared"`
	Operator  string       `json:"operator"`
	Seeds     []int64      `json:"seeds"`
	Tolerance float64      `json:"tolerance"`
	Rows      []SymptomRow `json:"rows"`
	// Modelled and Reproduced count the rows; NotModelled the others.
	Modelled    int `json:"modelled"`
	Reproduced  int `json:"reproduced"`
	NotModelled int `json:"not_modelled"`
	// Distances are each seed's distance (DistanceRule); Distance their
	// mean with its interval, clipped to [0, 1].
	Distances []float64 `json:"distances,omitempty"`
	Distance  Interval  `json:"distance"`
}

// All: every modelled symptom is reproduced (and at least one is
// modelled and was run).
func (t SymptomTable) All() bool {
	return t.Modelled > 0 && t.Reproduced == t.Modelled && len(t.Seeds) > 0
}

// Symptoms sets inc's observed symptoms beside the runs of the operator
// the incident ran (one run per seed; other operators' runs are skipped):
// each modelled symptom's value per seed, its mean and interval, its miss
// and mark (MissRule), and the profile's distance per seed and over the
// seeds (DistanceRule). Pure.
func Symptoms(inc incidents.Incident, runs []Run) SymptomTable {
	s := inc.Symptoms
	if s == nil {
		return SymptomTable{}
	}
	t := SymptomTable{Declared: true, Operator: s.Operator, Tolerance: s.Tolerance.Value}
	var figs []IncidentFigures
	for _, r := range runs {
		if r.Figures.Operator == s.Operator {
			figs = append(figs, r.Figures)
			t.Seeds = append(t.Seeds, r.Figures.Seed)
		}
	}
	misses := make([][]float64, len(figs)) // per seed, per modelled symptom
	for _, o := range s.Observed {
		row := SymptomRow{Symptom: o}
		switch {
		case !o.Modelled():
			row.Mark = NotModelled
			t.NotModelled++
		case len(figs) == 0:
			row.Mark = NotRun
			t.Modelled++
		default:
			t.Modelled++
			var ms []float64
			for i, f := range figs {
				v, _ := figureValue(f, o.Figure)
				row.Values = append(row.Values, v)
				ms = append(ms, Miss(v, o.Value))
				misses[i] = append(misses[i], ms[i])
				if ms[i] <= t.Tolerance {
					row.Shown++
				}
			}
			row.Value, row.Miss = intervalOf(row.Values), intervalOf(ms)
			row.Min, row.Max = slices.Min(row.Values), slices.Max(row.Values)
			row.Mark = NotReproduced
			if 2*row.Shown > len(figs) {
				row.Mark = Reproduced
				t.Reproduced++
			}
		}
		t.Rows = append(t.Rows, row)
	}
	for _, ms := range misses {
		if len(ms) > 0 {
			d, _ := stats.Mean(ms)
			t.Distances = append(t.Distances, d)
		}
	}
	t.Distance = intervalOf(t.Distances)
	t.Distance.Lo, t.Distance.Hi = math.Max(0, t.Distance.Lo), math.Min(1, t.Distance.Hi)
	return t
}
