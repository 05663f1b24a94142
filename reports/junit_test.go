package reports

import (
	"encoding/xml"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// TestJUnitGolden compares junit.xml with testdata/junit.golden.xml;
// regenerate with `go test ./reports -run Golden -update`.
func TestJUnitGolden(t *testing.T) {
	plan, sum := goldenFixture()
	got, err := JUnit(plan, WithStats(sum))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "junit.golden.xml", got)
}

// TestJUnitRoundTrip decodes junit.xml with encoding/xml into the JUnit
// shape and compares every name, message and property with the input,
// markup and newlines included; counts match the verdicts.
func TestJUnitRoundTrip(t *testing.T) {
	plan, _ := fixture()
	plan.Command = `fiomig run --seed 7 --label '<a & "b">'`
	sum := record.Summary{Seed: -7, Verdict: record.Fail, Checks: []record.CheckResult{
		{Name: "pause-bound", Verdict: record.Fail, Detail: "m1 on host-a paused 7 s > 5 s\nm2 <nqn.x&y> \"q\""},
		{Name: "split-brain", Verdict: record.Pass, Detail: "none"},
		{Name: "faults-landed", Verdict: record.Inconclusive, Detail: "kill-node: no evidence <none>"},
		{Name: "odd", Verdict: "", Detail: "no verdict given"},
	}}
	b, err := JUnit(plan, sum)
	if err != nil {
		t.Fatal(err)
	}
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		ClassName string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure"`
		Skipped   *skipped `xml:"skipped"`
		SystemOut string   `xml:"system-out"`
	}
	type property struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	type suite struct {
		Name       string     `xml:"name,attr"`
		Tests      int        `xml:"tests,attr"`
		Failures   int        `xml:"failures,attr"`
		Skipped    int        `xml:"skipped,attr"`
		Properties []property `xml:"properties>property"`
		Cases      []testcase `xml:"testcase"`
	}
	var got struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Suites   []suite  `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, b)
	}
	want := []suite{{
		Name: "fiomig", Tests: 4, Failures: 2, Skipped: 1,
		Properties: []property{{"seed", "-7"}, {"command", plan.Command}},
		Cases: []testcase{
			{Name: "pause-bound", ClassName: "fiomig.checks", Failure: &failure{Message: sum.Checks[0].Detail, Type: "fail", Text: sum.Checks[0].Detail}},
			{Name: "split-brain", ClassName: "fiomig.checks", SystemOut: "none"},
			{Name: "faults-landed", ClassName: "fiomig.checks", Skipped: &skipped{Message: "kill-node: no evidence <none>"}},
			{Name: "odd", ClassName: "fiomig.checks", Failure: &failure{Message: "no verdict given", Type: "no verdict", Text: "no verdict given"}},
		},
	}}
	if d := cmp.Diff(want, got.Suites); d != "" {
		t.Errorf("junit.xml round trip (-want +got):\n%s", d)
	}
	if got.Tests != 4 || got.Failures != 2 {
		t.Errorf("<testsuites> tests=%d failures=%d, want 4 and 2", got.Tests, got.Failures)
	}
}
