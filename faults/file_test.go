package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

func TestParseFile(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []record.FaultSpec
		err        string // substring of the error; "" = no error
	}{
		{name: "yaml", text: `
# a comment
faults:
- kind: target-restart
  target: storage-2
  when: in-freeze
  migration: "#3"
  duration: 10
  params: {after_s: 0.5}
- kind: dropped-connects
  target: 10.0.0.3:4420
  when: 30
  duration: 5
- kind: aborted-validation
  target: mig-0002
  when: Validating
  params: {mode: kill-job, host: worker-1}
`, want: []record.FaultSpec{
			{Fault: KindTargetRestart, Target: "storage-2", Phase: record.StageInFreeze, Migration: "#3", ForS: 10, Params: map[string]string{"after_s": "0.5"}},
			{Fault: KindDroppedConnects, Target: "10.0.0.3:4420", AtS: 30, ForS: 5},
			{Fault: KindAbortedValidation, Target: "mig-0002", Phase: record.PhaseValidating, Params: map[string]string{"mode": ModeKillJob, "host": "worker-1"}},
		}},
		{name: "json list, time forms", text: `[{"kind":"target-restart","target":"storage-1","when":"t=12.5","duration":1},
			{"kind":"target-restart","target":"storage-1","when":"20s","duration":1}]`,
			want: []record.FaultSpec{
				{Fault: KindTargetRestart, Target: "storage-1", AtS: 12.5, ForS: 1},
				{Fault: KindTargetRestart, Target: "storage-1", AtS: 20, ForS: 1},
			}},
		{name: "phase case-insensitive", text: "faults:\n- {kind: target-restart, target: storage-1, when: running, duration: 2}\n",
			want: []record.FaultSpec{{Fault: KindTargetRestart, Target: "storage-1", Phase: record.PhaseRunning, ForS: 2}}},
		{name: "unknown field", text: "faults:\n- {kind: target-restart, target: storage-1, when: 1, duration: 2, durtion: 3}\n",
			err: `f.yaml: fault 1: unknown field "durtion" (known fields: kind, target, when, migration, duration, params)`},
		{name: "unknown top-level field", text: "faults: []\nfault: []\n", err: `f.yaml: unknown field "fault"`},
		{name: "unknown kind", text: "faults:\n- {kind: target-reboot, target: storage-1, when: 1, duration: 2}\n",
			err: `f.yaml: fault 1: field "kind": unknown fault kind "target-reboot"`},
		{name: "missing kind", text: "faults:\n- {target: storage-1, when: 1}\n", err: `fault 1: field "kind": missing`},
		{name: "bad when", text: "faults:\n- {kind: target-restart, target: storage-1, when: mid-freeze, duration: 2}\n",
			err: `"mid-freeze" is not a stage`},
		{name: "negative when", text: "faults:\n- {kind: target-restart, target: storage-1, when: -3, duration: 2}\n", err: `want finite seconds >= 0`},
		{name: "bad duration type", text: "faults:\n- {kind: target-restart, target: storage-1, when: 1, duration: long}\n",
			err: `f.yaml: fault 1: field "duration": want float64, got string`},
		{name: "kind check", text: "faults:\n- {kind: target-restart, target: storage-1, when: 1}\n", err: `for_s must be > 0`},
		{name: "bad migration", text: "faults:\n- {kind: target-restart, target: storage-1, when: in-freeze, migration: '#0', duration: 1}\n", err: `want an id, #N`},
		{name: "empty", text: "# nothing\n", err: "f.yaml: empty fault file"},
		{name: "not yaml", text: "faults: [\n", err: "f.yaml: not YAML or JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.yaml")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ParseFile(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one containing %q", err, tc.err)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("schedule (-want +got):\n%s", d)
			}
		})
	}
}

// TestWriteFileRoundTrip: an executed schedule writes as a fault file that
// parses back to the planned schedule (the result params dropped).
func TestWriteFileRoundTrip(t *testing.T) {
	planned := []record.FaultSpec{
		{Fault: KindTargetRestart, Target: "storage-2", Phase: record.StageInFreeze, Migration: "#3", ForS: 10, Params: map[string]string{"after_s": "0.5"}},
		{Fault: KindDroppedConnects, Target: "storage-3", AtS: 42.5, ForS: 5},
		{Fault: KindAbortedValidation, Target: "mig-0004", Phase: record.PhaseValidating, Params: map[string]string{"mode": ModeAbort}},
	}
	executed := make([]record.FaultSpec, len(planned))
	for i, s := range planned {
		s.Params = map[string]string{"injected_at_s": "12", "recovered_at_s": "22"}
		for k, v := range planned[i].Params {
			s.Params[k] = v
		}
		executed[i] = s
	}
	path := filepath.Join(t.TempDir(), "min.yaml")
	if err := WriteFile(path, executed); err != nil {
		t.Fatal(err)
	}
	got, err := ParseFile(path)
	if err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("%v\n%s", err, b)
	}
	if d := cmp.Diff(planned, got); d != "" {
		b, _ := os.ReadFile(path)
		t.Errorf("round trip (-want +got):\n%s\nfile:\n%s", d, b)
	}
}
