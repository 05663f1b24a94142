package analysis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzIncidentLines: IncidentLines reads any file without a panic, and an
// error names the file. Seeds: a real run's timeline lines
// (record/testdata/timeline.jsonl) and cut-off lines. "go test" runs the
// seeds; "make fuzz" runs it for FUZZTIME.
func FuzzIncidentLines(f *testing.F) {
	b, err := os.ReadFile("../record/testdata/timeline.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"t":1,"kind":"kernel","host":"h","message":"new ctrl: x"}` + "\n" + `{"t":2,"kind":"sample","host":"h","controllers":[`))
	f.Add([]byte(`{"t":1,"kind":"io","volume":"v","pod_state":"killed","completed":"x"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "timeline.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := IncidentLines(p); err != nil && !strings.Contains(err.Error(), p) {
			t.Errorf("error does not name the file: %v", err)
		}
	})
}
