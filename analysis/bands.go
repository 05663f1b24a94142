package analysis

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
)

// BandResult is one expectation of an incident judged on one operator's run.
type BandResult struct {
	Expectation incidents.Expectation `json:"expectation"`
	// Got is the measured figure, or the check's verdict and failing set.
	Got string `json:"got"`
	// Judged is false when the expectation is for another operator.
	Judged bool `json:"judged"`
	OK     bool `json:"ok"`
	// Refuted: a compare expectation not exercised (nothing the fix
	// removes occurred) whose intervals alone fail — a measured finding
	// (SeedsComparison.Intervals).
	Refuted bool `json:"refuted,omitempty"`
}

// FigureNames are the figures a band may name: the numeric json fields of
// IncidentFigures, sorted.
func FigureNames() []string {
	var out []string
	t := reflect.TypeFor[IncidentFigures]()
	for i := range t.NumField() {
		f := t.Field(i)
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Float64:
			out = append(out, strings.Split(f.Tag.Get("json"), ",")[0])
		}
	}
	slices.Sort(out)
	return out
}

// figureValue is the figure named name in f (a FigureNames entry).
func figureValue(f IncidentFigures, name string) (float64, bool) {
	v := reflect.ValueOf(f)
	t := v.Type()
	for i := range t.NumField() {
		if strings.Split(t.Field(i).Tag.Get("json"), ",")[0] != name {
			continue
		}
		switch fv := v.Field(i); fv.Kind() {
		case reflect.Int, reflect.Int64:
			return float64(fv.Int()), true
		case reflect.Float64:
			return fv.Float(), true
		}
	}
	return 0, false
}

// JudgeBands judges every expectation of inc on one operator's figures and
// summary: a figure must fall in [Min, Max]; a check must have the verdict
// and, when Failing is given, fail on exactly those migrations
// (summary.json checks[].failing).
func JudgeBands(inc incidents.Incident, f IncidentFigures, sum record.Summary) []BandResult {
	var out []BandResult
	for _, e := range inc.Expected {
		if e.Compare != "" {
			continue // JudgeCompare, across the operators
		}
		r := BandResult{Expectation: e, Judged: e.Operator == "" || e.Operator == f.Operator}
		if e.Figure != "" {
			v, ok := figureValue(f, e.Figure)
			r.Got = fmt.Sprintf("%g", v)
			r.OK = ok && (e.Min == nil || v >= *e.Min) && (e.Max == nil || v <= *e.Max)
			if !ok {
				r.Got = "no such figure"
			}
		} else {
			r.Got = "not run"
			for _, c := range sum.Checks {
				if c.Name != e.Check {
					continue
				}
				got := slices.Sorted(slices.Values(c.Failing))
				r.Got = c.Verdict
				if len(got) > 0 {
					r.Got += " on " + strings.Join(got, ", ")
				}
				want := slices.Sorted(slices.Values(e.Failing))
				r.OK = c.Verdict == e.Verdict && (len(want) == 0 || slices.Equal(want, got))
			}
		}
		out = append(out, r)
	}
	return out
}

// ShapeOf is the run's shape: OK when every judged expectation holds;
// Missing names each that does not; Notes explain the mechanisms behind
// the figures (IncidentNotes, from the record and own, the incident
// file's notes).
func ShapeOf(bands []BandResult, f IncidentFigures, own incidents.Notes) Shape {
	s := Shape{OK: true, Notes: IncidentNotes(f, own)}
	for _, b := range bands {
		if b.Judged && !b.OK {
			s.OK = false
			s.Missing = append(s.Missing, fmt.Sprintf("%s %s, want %s [%s]", BandName(b.Expectation), b.Got, b.Expectation.Range(), b.Expectation.Source))
		}
	}
	return s
}

// BandName names an expectation: its figure, "check NAME" or "compare NAME".
func BandName(e incidents.Expectation) string {
	if e.Compare != "" {
		return "compare " + e.Compare
	}
	if e.Check != "" {
		return "check " + e.Check
	}
	return e.Figure
}

// LoadIncident finds name in the incident catalogue (embedded, then dirs;
// a name ending in ".yaml" is a file path) and checks that every figure
// its bands name is one IncidentFigures computes and every check one a run
// judges. Errors name the file and the field.
func LoadIncident(name string, dirs ...string) (incidents.Incident, error) {
	inc, err := incidents.Find(name, dirs...)
	if err != nil {
		return inc, err
	}
	return inc, checkFigureNames(inc)
}

// ParseIncident is LoadIncident of an incident file's bytes b (incidents
// Parse; file names it), as a seed farm's pods receive it.
func ParseIncident(file string, b []byte) (incidents.Incident, error) {
	inc, err := incidents.Parse(file, b)
	if err != nil {
		return inc, err
	}
	return inc, checkFigureNames(inc)
}

// checkNames are the checks a run's summary.json can hold (checks.Check*):
// an expectation naming another check could never hold, so it is a bad
// incident file rather than a failed band.
var checkNames = []string{
	checks.CheckPauseBound, checks.CheckFreezes, checks.CheckLeakedControllers,
	checks.CheckPathCompleteness, checks.CheckSplitBrain, checks.CheckServedAfterCutover,
	checks.CheckUnattributedPauses, checks.CheckFaultsLanded,
	checks.CheckMigrationOutcomes, checks.CheckIOOutage, checks.CheckDataIntegrity,
	checks.CheckControllerChurn, checks.CheckLossTimeout, checks.CheckPathsPerSubsystem,
	checks.CheckDirtyStart, checks.CheckTargetLogPattern,
	checks.CheckFioPauseAgreement, checks.CheckFioDataIntegrity, checks.CheckFioIOErrors,
}

func checkFigureNames(inc incidents.Incident) error {
	known := FigureNames()
	// at is "<file>: line N: <field>" (without the line when the file's
	// text does not hold the field).
	at := func(field string) string {
		if n := inc.Line(field); n > 0 {
			return fmt.Sprintf("%s: line %d: %s", inc.File, n, field)
		}
		return inc.File + ": " + field
	}
	for i, e := range inc.Expected {
		if e.Figure != "" && !slices.Contains(known, e.Figure) {
			return fmt.Errorf("%s: unknown figure %q (known: %s)", at(fmt.Sprintf("expected[%d].figure", i)), e.Figure, strings.Join(known, ", "))
		}
		if e.Check != "" && !slices.Contains(checkNames, e.Check) {
			return fmt.Errorf("%s: unknown check %q (known: %s)", at(fmt.Sprintf("expected[%d].check", i)), e.Check, strings.Join(checkNames, ", "))
		}
		if e.Compare != "" && e.Compare != CompareFixedLEPrefix {
			return fmt.Errorf("%s: unknown comparison %q (known: %s)", at(fmt.Sprintf("expected[%d].compare", i)), e.Compare, CompareFixedLEPrefix)
		}
	}
	if s := inc.Symptoms; s != nil {
		for i, o := range s.Observed {
			if o.Figure != "" && !slices.Contains(known, o.Figure) {
				return fmt.Errorf("%s: unknown figure %q (known: %s)", at(fmt.Sprintf("symptoms.observed[%d].figure", i)), o.Figure, strings.Join(known, ", "))
			}
		}
	}
	return nil
}
