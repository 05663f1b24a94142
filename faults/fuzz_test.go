package faults

import (
	"strings"
	"testing"
)

// FuzzParse: a fault file of any content gives fault specs each with a
// kind and a target, or an error that names the file; never a panic.
// "go test" runs the seeds; "make fuzz" runs it for FUZZTIME.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"# a comment\nfaults:\n- kind: target-restart\n  target: storage-2\n  when: in-freeze\n  migration: \"#3\"\n  duration: 10\n  params: {after_s: 0.5}\n" +
			"- kind: dropped-connects\n  target: 10.0.0.3:4420\n  when: 30\n  duration: 5\n" +
			"- kind: aborted-validation\n  target: mig-0002\n  when: Validating\n  params: {mode: kill-job, host: worker-1}\n",
		`[{"kind":"target-restart","target":"storage-1","when":"t=12.5","duration":1},{"kind":"target-restart","target":"storage-1","when":"20s","duration":1}]`,
		"faults: []\nfault: []\n", "faults:\n- {target: storage-1, when: 1}\n", "", "null", "[1]", "{",
		"faults:\n- {kind: target-restart, target: storage-1, when: -3, duration: 2}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, err := Parse(data, "f.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		for i, s := range specs {
			if s.Fault == "" {
				t.Errorf("spec %d without a kind: %+v", i, s)
			}
		}
	})
}
