package incidents

import (
	"fmt"
	"math"
)

// Symptoms are what was observed in the incident itself: the figures its
// sources report, each compared with the model's value over the seeds
// run (never judged: the bands in Expected decide the exit code). A
// symptom is reproduced when the model's relative miss stays within
// Tolerance (analysis.SymptomTable states the rule).
type Symptoms struct {
	// Operator is the operator variant the incident ran (prefix or
	// fixed): the symptoms are compared with its runs.
	Operator string `json:"operator"`
	// Tolerance is the largest relative miss |model − observed| /
	// max(observed, 1) that still counts as the same figure.
	Tolerance Margin `json:"tolerance"`
	// Observed are the incident's figures, in the order shown.
	Observed []Symptom `json:"observed"`
}

// Symptom is one observed figure of the incident.
type Symptom struct {
	// Name says what was observed, in the source's words
	// ("validation failures", "rejected CONNECTs a minute 2.5 h later").
	Name string `json:"name"`
	// Figure is the model's figure it is compared with (a json name of
	// analysis.IncidentFigures, e.g. "validation_failed"); empty when the
	// model has none, and then NotModelled says why.
	Figure      string `json:"figure,omitempty"`
	NotModelled string `json:"not_modelled,omitempty"`
	// Value is the observed value (a count, per minute, or seconds, as the
	// figure); ≥ 0.
	Value float64 `json:"value"`
	// Source and Note say where the value was reported.
	Source Source `json:"source"`
	Note   string `json:"note,omitempty"`
}

// validate reports every bad field of the symptoms block.
func (s *Symptoms) validate(bad func(string, ...any), src func(string, Source)) {
	if s == nil {
		return
	}
	if s.Operator != "prefix" && s.Operator != "fixed" {
		bad("symptoms.operator: %q: want prefix or fixed (the operator the incident ran)", s.Operator)
	}
	src("symptoms.tolerance", s.Tolerance.Source)
	if !(s.Tolerance.Value > 0 && s.Tolerance.Value < 1) {
		bad("symptoms.tolerance.value: %g: want a relative miss between 0 and 1 (e.g. 0.25)", s.Tolerance.Value)
	}
	if len(s.Observed) == 0 {
		bad("symptoms.observed: none (drop the symptoms block, or list what was observed)")
	}
	seen := map[string]bool{}
	for i, o := range s.Observed {
		f := fmt.Sprintf("symptoms.observed[%d]", i)
		src(f, o.Source)
		switch {
		case o.Name == "":
			bad("%s.name: missing", f)
		case seen[o.Name]:
			bad("%s.name: %q listed twice", f, o.Name)
		}
		seen[o.Name] = true
		switch {
		case o.Figure == "" && o.NotModelled == "":
			bad("%s: give figure (the model's figure it is compared with) or not_modelled (why the model has none)", f)
		case o.Figure != "" && o.NotModelled != "":
			bad("%s: figure and not_modelled exclude each other", f)
		}
		if math.IsNaN(o.Value) || math.IsInf(o.Value, 0) || o.Value < 0 {
			bad("%s.value: %g: want a finite number ≥ 0", f, o.Value)
		}
	}
}

// Modelled says whether the model has a figure for the symptom.
func (o Symptom) Modelled() bool { return o.Figure != "" }
