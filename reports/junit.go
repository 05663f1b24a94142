package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"

	"github.com/fiomig/fiomig/record"
)

// JUnit names in junit.xml.
const (
	JUnitSuiteName = "fiomig"
	JUnitClassName = "fiomig.checks"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure"`
	Skipped   *junitSkipped `xml:"skipped"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// JUnit renders junit.xml: <testsuites> holding one <testsuite> named
// "fiomig" with properties seed (sum.Seed) and command (plan.Command) and one
// <testcase> per check of sum in order (name = check name, classname
// "fiomig.checks"). A fail check carries <failure message="detail"
// type="fail">detail</failure>; an inconclusive check carries <skipped
// message="detail"/>; a pass check carries its detail as <system-out>, a
// warn check "warn: detail" there (JUnit has no warning); any
// other verdict is a failure whose type is that verdict ("no verdict" when
// empty). Text is escaped by
// encoding/xml (characters XML cannot hold become U+FFFD). Equal inputs give
// equal bytes.
func JUnit(plan record.Plan, sum record.Summary) ([]byte, error) {
	s := junitSuite{
		Name: JUnitSuiteName,
		Properties: []junitProperty{
			{Name: "seed", Value: strconv.FormatInt(sum.Seed, 10)},
			{Name: "command", Value: plan.Command},
		},
	}
	for _, c := range sum.Checks {
		tc := junitCase{Name: c.Name, ClassName: JUnitClassName}
		switch c.Verdict {
		case record.Pass:
			tc.SystemOut = c.Detail
		case record.Warn:
			tc.SystemOut = "warn: " + c.Detail
		case record.Inconclusive:
			tc.Skipped = &junitSkipped{Message: c.Detail}
			s.Skipped++
		default:
			typ := c.Verdict
			if typ == "" {
				typ = "no verdict"
			}
			tc.Failure = &junitFailure{Message: c.Detail, Type: typ, Text: c.Detail}
			s.Failures++
		}
		s.Cases = append(s.Cases, tc)
	}
	s.Tests = len(s.Cases)
	root := junitSuites{Name: JUnitSuiteName, Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Suites: []junitSuite{s}}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("render %s: %w", JUnitFile, err)
	}
	b.WriteString("\n")
	return b.Bytes(), nil
}
