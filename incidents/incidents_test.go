package incidents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatalogueParses: every embedded incident parses, is named after its
// file, and carries a source on every expectation.
func TestCatalogueParses(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(Names()) || len(all) == 0 {
		t.Fatalf("catalogue %d incidents, names %v", len(all), Names())
	}
	for _, inc := range all {
		if inc.File != "incidents/"+inc.Name+".yaml" || len(inc.Expected) == 0 {
			t.Errorf("%s: file %s, %d expectations", inc.Name, inc.File, len(inc.Expected))
		}
	}
}

func TestParseRejects(t *testing.T) {
	good, err := os.ReadFile("fio-mig-1787159565.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"unknown top-level field", "fio-mig-1787159565.yaml", "name: fio-mig-1787159565", "name: fio-mig-1787159565\nbogus: 1", `fio-mig-1787159565.yaml: line 7: unknown field "bogus"`},
		{"unknown nested field", "fio-mig-1787159565.yaml", "  hosts: 3\n", "  hosts: 3\n  hots: 3\n", `unknown field "hots"`},
		{"missing source", "fio-mig-1787159565.yaml", "    incident: \"23\"\n    source: sourced\n", "    incident: \"23\"\n", `expected[0]: source ""`},
		{"bad source", "fio-mig-1787159565.yaml", "  source: assumption\n  note: >-\n    No source", "  source: guess\n  note: >-\n    No source", `faults: source "guess"`},
		{"name differs from file", "other.yaml", "", "", `name: "fio-mig-1787159565" differs from the file's name "other"`},
		{"band without bounds", "fio-mig-1787159565.yaml", "    min: 23\n    max: 23\n", "", `expected[0]: figure "migrations" without min or max`},
		{"bad control plane", "fio-mig-1787159565.yaml", "    value: sbcli", "    value: sbclu", `model.control_plane.value: "sbclu"`},
		{"compare with a band", "fio-mig-1787159565.yaml", "  - compare: fixed-le-prefix-confined\n", "  - compare: fixed-le-prefix-confined\n    max: 3\n", "compare takes a verdict only"},
		{"compare without a verdict", "fio-mig-1787159565.yaml", "  - compare: fixed-le-prefix-confined\n    verdict: pass\n", "  - compare: fixed-le-prefix-confined\n", `verdict ""`},
		{"compare without a margin", "fio-mig-1787159565.yaml", "    margin:\n      value: 2\n      source: assumption\n", "    margin:\n      value: 0\n      source: assumption\n", "compare needs margin.value > 0"},
		{"margin without a source", "fio-mig-1787159565.yaml", "    margin:\n      value: 2\n      source: assumption\n", "    margin:\n      value: 2\n", `margin: source ""`},
		{"margin on a figure", "fio-mig-1787159565.yaml", "    min: 23\n    max: 23\n", "    min: 23\n    max: 23\n    margin:\n      value: 1\n      source: assumption\n", "margin belongs to a compare"},
		{"figure and compare", "fio-mig-1787159565.yaml", "  - compare: fixed-le-prefix-confined\n", "  - compare: fixed-le-prefix-confined\n    figure: leaked\n", "give exactly one of figure, check or compare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := string(good)
			if tc.old != "" {
				if !strings.Contains(b, tc.old) {
					t.Fatalf("fixture lacks %q", tc.old)
				}
				b = strings.Replace(b, tc.old, tc.new, 1)
			}
			_, err := Parse(tc.file, []byte(b))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.file+":") {
				t.Errorf("error %v, want it to start with %s: and contain %q", err, tc.file, tc.want)
			}
		})
	}
}

// TestFindFileAndDir: an incident is found by path, and a directory adds
// incidents to the catalogue; an unknown name lists the known ones.
func TestFindFileAndDir(t *testing.T) {
	dir := t.TempDir()
	b, _ := os.ReadFile("fio-mig-1787159565.yaml")
	s := strings.Replace(string(b), "name: fio-mig-1787159565", "name: extra-one", 1)
	f := filepath.Join(dir, "extra-one.yaml")
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if inc, err := Find(f); err != nil || inc.Name != "extra-one" {
		t.Errorf("by path: %v %v", inc.Name, err)
	}
	if inc, err := Find("extra-one", dir); err != nil || inc.File != f {
		t.Errorf("by dir: %v %v", inc.File, err)
	}
	if _, err := Find("nope", dir); err == nil || !strings.Contains(err.Error(), "extra-one") || !strings.Contains(err.Error(), "fio-mig-1787159565") {
		t.Errorf("unknown: %v", err)
	}
}
