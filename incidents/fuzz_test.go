package incidents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: an incident file of any content parses to an incident or
// gives an error naming the file; never a panic. Seeds: the catalogue's
// own files. "go test" runs the seeds; "make fuzz" runs it for FUZZTIME.
func FuzzParse(f *testing.F) {
	paths, err := filepath.Glob("*.yaml")
	if err != nil || len(paths) == 0 {
		f.Fatalf("no incident files to seed from (%v)", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: x\nbogus: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("inc.yaml", data)
		if err != nil && !strings.Contains(err.Error(), "inc.yaml") {
			t.Errorf("error does not name the file: %v", err)
		}
	})
}
