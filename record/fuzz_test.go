package record

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The fuzz targets run their seeds (testdata/plan.json and
// testdata/timeline.jsonl, cut from a real run, plus the f.Add lines)
// under "go test"; "make fuzz" runs each for FUZZTIME.

// FuzzParsePlan: any input gives a valid plan or an error naming the file;
// a plan that parses encodes and parses back to itself.
func FuzzParsePlan(f *testing.F) {
	b, err := os.ReadFile("testdata/plan.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(validPlanJSON))
	f.Add([]byte(`{"seed": "x"}`))
	f.Add([]byte(`{"params":{"pause_crit":5}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlan(data, "plan.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "plan.json: ") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Errorf("parsed plan does not validate: %v", err)
		}
		dir := t.TempDir()
		if err := WriteJSON(dir+"/plan.json", p); err != nil {
			t.Fatal(err)
		}
		again, err := ReadPlan(dir + "/plan.json")
		if err != nil {
			t.Fatalf("plan %+v does not read back: %v", p, err)
		}
		b1, _ := os.ReadFile(dir + "/plan.json")
		if err := WriteJSON(dir+"/again.json", again); err != nil {
			t.Fatal(err)
		}
		b2, _ := os.ReadFile(dir + "/again.json")
		if !bytes.Equal(b1, b2) {
			t.Errorf("round trip changed the plan:\n%s\n%s", b1, b2)
		}
	})
}

// FuzzScanTimeline: any input gives lines with a known kind, t >= 0 and
// never decreasing, or an error naming file:line; never a panic.
func FuzzScanTimeline(f *testing.F) {
	b, err := os.ReadFile("testdata/timeline.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"t":0,"kind":"phase","migration":"m1","nqn":"nqn.a","phase":"Pending"}` + "\n" + `{"t":1,"kind":"sam`))
	f.Add([]byte(`{"kind":"io","volume":"v1","t":2}` + "\n\n" + `{"t":1,"kind":"io","volume":"v1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		prev := 0.0
		err := ScanTimeline(bytes.NewReader(data), "tl", func(l Line) error {
			if l.T < prev || l.T < 0 {
				t.Errorf("t %v after %v", l.T, prev)
			}
			prev = l.T
			if len(requiredFields(l)) > 0 {
				t.Errorf("line %+v lacks %v", l, requiredFields(l))
			}
			return nil
		})
		if err != nil && !strings.HasPrefix(err.Error(), "tl:") {
			t.Errorf("error does not name the line: %v", err)
		}
	})
}
