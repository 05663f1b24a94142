package analysis

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadIncidentRejectsUnknownNames: a band naming a figure, a check or a
// comparison fiomig does not compute is a bad incident file (an error naming
// the file and the field), never a band that silently fails at the end of
// the run ("check freezez: not run").
func TestLoadIncidentRejectsUnknownNames(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("..", "cmd", "fiomig", "testdata", "incidents", "small-healthy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"figure", "figure: validation_failed", "figure: validation_faild", `expected[1].figure: unknown figure "validation_faild"`},
		{"check", "check: freezes", "check: freezez", `expected[2].check: unknown check "freezez"`},
		{"compare", "compare: fixed-le-prefix-confined", "compare: fixed-le-prefix", `expected[3].compare: unknown comparison "fixed-le-prefix"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(good), tc.from) {
				t.Fatalf("fixture lacks %q", tc.from)
			}
			file := filepath.Join(t.TempDir(), "small-healthy.yaml")
			edited := strings.Replace(string(good), tc.from, tc.to, 1)
			if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadIncident(file)
			if err == nil {
				t.Fatalf("LoadIncident accepted %s", tc.to)
			}
			// The error names the line the edit is on (1-based).
			line := strings.Count(edited[:strings.Index(edited, tc.to)], "\n") + 1
			if want := fmt.Sprintf("%s: line %d: %s", file, line, tc.want); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q\nwant it to contain %q", err, want)
			}
		})
	}
	// A symptom naming a figure fiomig does not compute.
	inc, err := os.ReadFile(filepath.Join("..", "incidents", "fiomig-1787171993.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fiomig-1787171993.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(inc), "figure: migrations_refrozen", "figure: migrations_refrozn", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(inc), "figure: migrations_refrozen", "figure: migrations_refrozn", 1)
	line := strings.Count(edited[:strings.Index(edited, "figure: migrations_refrozn")], "\n") + 1
	if _, err := LoadIncident(file); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s: line %d: symptoms.observed[0].figure: unknown figure \"migrations_refrozn\"", file, line)) {
		t.Errorf("symptom of an unknown figure: error %v", err)
	}
	// The unchanged file loads: the rejections above are the edits'.
	file = filepath.Join(t.TempDir(), "small-healthy.yaml")
	if err := os.WriteFile(file, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIncident(file); err != nil {
		t.Fatalf("unchanged fixture: %v", err)
	}
}
