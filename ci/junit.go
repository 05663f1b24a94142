package ci

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// JUnit XML with testcase properties (TestGrid reads a testcase's
// <properties>: numeric values become the cell's metrics).
type jSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []jSuite `xml:"testsuite"`
}

type jSuite struct {
	Name       string      `xml:"name,attr"`
	Tests      int         `xml:"tests,attr"`
	Failures   int         `xml:"failures,attr"`
	Errors     int         `xml:"errors,attr"`
	Skipped    int         `xml:"skipped,attr"`
	Properties []jProperty `xml:"properties>property,omitempty"`
	Cases      []jCase     `xml:"testcase"`
}

type jProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type jCase struct {
	Name       string      `xml:"name,attr"`
	ClassName  string      `xml:"classname,attr"`
	Properties []jProperty `xml:"properties>property,omitempty"`
	Failure    *jMessage   `xml:"failure"`
	Skipped    *jMessage   `xml:"skipped"`
	SystemOut  string      `xml:"system-out,omitempty"`
}

type jMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// Testcase classnames.
const (
	ClassChecks     = "fiomig.checks"
	ClassMigrations = "fiomig.migrations"
	ClassHosts      = "fiomig.hosts"
	ClassSeeds      = "fiomig.seeds"
)

// num formats a property value as a plain decimal number (no exponent),
// the form TestGrid parses as a metric.
func num(v float64) string { return strconv.FormatFloat(record.RoundT(v), 'f', -1, 64) }

// testcase makes a case of verdict: fail (and any unknown verdict) a
// <failure>, inconclusive a <skipped>, pass and warn a passing case; every
// case has the property "verdict" (pass, fail, inconclusive, warn, or
// VerdictNoCutover) first, so TestGrid can show inconclusive apart from
// red. detail goes into the message and system-out.
func testcase(class, name, verdict, detail string, props ...jProperty) jCase {
	c := jCase{Name: name, ClassName: class, Properties: append([]jProperty{{"verdict", verdict}}, props...)}
	switch verdict {
	case record.Pass, reports.VerdictNoCutover:
		c.SystemOut = detail
	case record.Warn:
		c.SystemOut = "warn: " + detail
	case record.Inconclusive:
		c.Skipped = &jMessage{Message: "inconclusive: " + detail}
	default:
		c.Failure = &jMessage{Message: detail, Type: verdict, Text: detail}
	}
	return c
}

// checkProps are the figures a check's testcase carries as properties.
func checkProps(name string, figs []Figure) []jProperty {
	var want []string
	switch name {
	case checks.CheckPauseBound:
		want = []string{FigPauseP50, FigPauseP95, FigPauseMax, FigOverBound, FigPauseCrit}
	case checks.CheckLeakedControllers:
		want = []string{FigLeaked}
	case checks.CheckPathCompleteness:
		want = []string{FigMissingEndpoints}
	case checks.CheckControllerChurn:
		want = []string{FigReconnects}
	}
	var out []jProperty
	for _, w := range want {
		if v, ok := FigureValue(figs, w); ok {
			out = append(out, jProperty{w, num(v)})
		}
	}
	return out
}

// RunJUnit is the JUnit of one run for TestGrid: one suite named context
// (properties seed, command, verdict), and testcases whose names depend on
// neither the seed nor the run — so the same flags give the same names for
// every seed:
//   - one per check (classname fiomig.checks, name the check), the
//     figures it judges as numeric properties (pause-bound:
//     pause_p50/p95/max_seconds, over_bound_fraction, pause_crit_seconds;
//     leaked-controllers: leaked_controllers; path-completeness:
//     missing_endpoints; controller-churn: reconnects);
//   - one per migration (fiomig.migrations, "pause-bound/mig-0003"; the
//     migration ids are ordinals): reports.MigrationVerdict, properties
//     longest_pause_seconds (left out for a migration that never cut
//     over: no pause, not one of 0 s) and freezes, the swimlane attached
//     ([[ATTACHMENT|path]], GitLab's form) when attach names one;
//   - one per topology host for the end-state checks
//     (fiomig.hosts, "leaked-controllers/worker-1",
//     "path-completeness/worker-1"): fail with the host's leaks or missing
//     endpoints, else the check's verdict when it is not fail (a host is
//     not judged apart when the check is inconclusive).
//
// attach maps a migration id to a file to attach (may be nil).
func RunJUnit(context string, r reports.StoredRun, attach map[string]string) ([]byte, error) {
	sum, plan := r.Summary, r.Plan
	figs := Figures([]reports.StoredRun{r})
	s := jSuite{Name: context, Properties: []jProperty{
		{"seed", strconv.FormatInt(sum.Seed, 10)}, {"command", plan.Command}, {"verdict", sum.Verdict}}}
	byName := map[string]record.CheckResult{}
	for _, c := range sum.Checks {
		byName[c.Name] = c
		s.Cases = append(s.Cases, testcase(ClassChecks, c.Name, c.Verdict, c.Detail, checkProps(c.Name, figs)...))
	}
	for _, m := range sum.Migrations {
		v := reports.MigrationVerdict(plan, m)
		longest, freezes := 0.0, m.Freezes
		var where []string
		for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
			hp := m.Hosts[h]
			longest = max(longest, checks.JudgedPauseS(hp))
			where = append(where, fmt.Sprintf("%s %s s", h, record.FormatT(checks.JudgedPauseS(hp))))
		}
		detail := fmt.Sprintf("%s (%s): longest pause %s s, %d freeze(s)", m.ID, reports.OutcomeText(m), record.FormatT(longest), freezes)
		if len(where) > 0 {
			detail += "; " + strings.Join(where, ", ")
		}
		props := []jProperty{{"longest_pause_seconds", num(longest)}, {"freezes", strconv.Itoa(freezes)}}
		if m.NoCutover {
			// It never cut over: it has no pause to chart, not a pause of 0 s.
			props = props[1:]
		}
		c := testcase(ClassMigrations, checks.CheckPauseBound+"/"+m.ID, v, detail, props...)
		if a := attach[m.ID]; a != "" {
			c.SystemOut += "\n[[ATTACHMENT|" + a + "]]"
		}
		s.Cases = append(s.Cases, c)
	}
	hostCase := func(check string, count map[string]int, what string) {
		cr, ok := byName[check]
		if !ok {
			return
		}
		for _, h := range plan.Topology.Hosts {
			n := count[h.Name]
			v, detail := cr.Verdict, fmt.Sprintf("%d %s on %s", n, what, h.Name)
			switch {
			case n > 0:
				v = record.Fail
			case v == record.Fail:
				v = record.Pass // the check failed on other hosts
			}
			if v == record.Inconclusive {
				detail += " (" + cr.Detail + ")"
			}
			s.Cases = append(s.Cases, testcase(ClassHosts, check+"/"+h.Name, v, detail, jProperty{strings.ReplaceAll(what, " ", "_"), strconv.Itoa(n)}))
		}
	}
	leaks, missing := map[string]int{}, map[string]int{}
	for _, l := range sum.LeakedControllers {
		leaks[l.Host]++
	}
	for _, m := range sum.MissingEndpoints {
		missing[m.Host]++
	}
	hostCase(checks.CheckLeakedControllers, leaks, "leaked controllers")
	hostCase(checks.CheckPathCompleteness, missing, "missing endpoints")
	return encodeJUnit(context, s)
}

// SweepJUnit is the JUnit of a sweep: per check one testcase over every
// seed (fiomig.checks, the check's name: fail when a seed failed it, else
// inconclusive when one was, else pass; properties runs_fail,
// runs_inconclusive, runs_pass and the figures as RunJUnit's, pooled),
// then per seed and check one testcase (fiomig.seeds, "seed-7/pause-bound":
// the names of a sweep over the same seeds are the same). runs are the
// sweep's seeds (reports.LoadRunSet).
func SweepJUnit(context string, seedsArg string, runs []reports.StoredRun) ([]byte, error) {
	figs := Figures(runs)
	verdict := ""
	for _, r := range runs {
		verdict = worst(verdict, r.Summary.Verdict)
	}
	s := jSuite{Name: context, Properties: []jProperty{{"seeds", seedsArg}, {"runs", strconv.Itoa(len(runs))}, {"verdict", verdict}}}
	var names []string
	counts := map[string]map[string][]int64{}
	details := map[string]string{}
	for _, r := range runs {
		for _, c := range r.Summary.Checks {
			if counts[c.Name] == nil {
				counts[c.Name] = map[string][]int64{}
				names = append(names, c.Name)
			}
			counts[c.Name][c.Verdict] = append(counts[c.Name][c.Verdict], r.Summary.Seed)
			if c.Verdict != record.Pass && details[c.Name] == "" {
				details[c.Name] = fmt.Sprintf("seed %d: %s", r.Summary.Seed, c.Detail)
			}
		}
	}
	for _, n := range names {
		c := counts[n]
		v := record.Pass
		switch {
		case len(c[record.Fail]) > 0:
			v = record.Fail
		case len(c[record.Inconclusive]) > 0:
			v = record.Inconclusive
		case len(c[record.Warn]) > 0:
			v = record.Warn
		}
		detail := fmt.Sprintf("%d of %d seed(s) fail, %d inconclusive", len(c[record.Fail]), len(runs), len(c[record.Inconclusive]))
		if len(c[record.Fail]) > 0 {
			detail += "; failing seeds " + seedList(c[record.Fail])
		}
		if details[n] != "" {
			detail += "; first: " + details[n]
		}
		props := []jProperty{{"runs_fail", strconv.Itoa(len(c[record.Fail]))}, {"runs_inconclusive", strconv.Itoa(len(c[record.Inconclusive]))}, {"runs_pass", strconv.Itoa(len(c[record.Pass]))}}
		s.Cases = append(s.Cases, testcase(ClassChecks, n, v, detail, append(props, checkProps(n, figs)...)...))
	}
	for _, r := range runs {
		for _, c := range r.Summary.Checks {
			s.Cases = append(s.Cases, testcase(ClassSeeds, fmt.Sprintf("seed-%d/%s", r.Summary.Seed, c.Name), c.Verdict, c.Detail))
		}
	}
	return encodeJUnit(context, s)
}

func seedList(seeds []int64) string {
	var parts []string
	for i, s := range seeds {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("… %d more", len(seeds)-20))
			break
		}
		parts = append(parts, strconv.FormatInt(s, 10))
	}
	return strings.Join(parts, ", ")
}

// worst is the worse of two verdicts: fail, inconclusive, then others.
func worst(a, b string) string {
	rank := map[string]int{record.Fail: 3, record.Inconclusive: 2, "": 0}
	ra, ok := rank[a]
	if !ok {
		ra = 1
	}
	rb, ok := rank[b]
	if !ok {
		rb = 1
	}
	if rb > ra {
		return b
	}
	return a
}

func encodeJUnit(context string, s jSuite) ([]byte, error) {
	for _, c := range s.Cases {
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	s.Tests = len(s.Cases)
	root := jSuites{Name: context, Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Suites: []jSuite{s}}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("render junit: %w", err)
	}
	b.WriteString("\n")
	return b.Bytes(), nil
}
