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
			err: `f.yaml: fault 1: field "when": "mid-freeze" is not a stage`},
		{name: "negative when", text: "faults:\n- {kind: target-restart, target: storage-1, when: -3, duration: 2}\n", err: `f.yaml: fault 1: field "when": time -3: want finite seconds >= 0`},
		{name: "when a list", text: "faults:\n- {kind: target-restart, target: storage-1, when: [1], duration: 2}\n", err: `f.yaml: fault 1: field "when": want a stage, a phase or seconds, got [1]`},
		// Types in the file's terms, not Go's.
		{name: "faults a mapping", text: "faults: {kind: target-restart}\n", err: `f.yaml: field "faults": want a list, got a mapping`},
		{name: "bad duration type", text: "faults:\n- {kind: target-restart, target: storage-1, when: 1, duration: long}\n",
			err: `f.yaml: fault 1: field "duration": want a number, got a string`},
		{name: "kind check", text: "faults:\n- {kind: target-restart, target: storage-1, when: 1}\n", err: `for_s must be > 0`},
		{name: "bad migration", text: "faults:\n- {kind: target-restart, target: storage-1, when: in-freeze, migration: '#0', duration: 1}\n", err: `want an id, #N`},
		{name: "empty", text: "# nothing\n", err: "f.yaml: empty fault file"},
		{name: "not yaml", text: "faults: [\n", err: "f.yaml: not YAML or JSON"},
		// A key given twice is an error naming its line, not last-one-wins
		// (which ran the second target, the second kind, or dropped a whole
		// first list of faults without a word).
		{name: "duplicate key in an entry", text: "faults:\n- kind: target-restart\n  target: storage-2\n  target: storage-3\n  when: in-freeze\n  duration: 10\n",
			err: `f.yaml: line 4: key "target" given twice`},
		{name: "duplicate top-level key", text: "faults:\n- {kind: target-restart, target: storage-2, when: in-freeze, duration: 10}\nfaults:\n- {kind: node-crash, target: storage-1, when: in-freeze, duration: 10}\n",
			err: `f.yaml: line 4: key "faults" given twice`}, // the line of the second key's value (yaml.v2)
		{name: "duplicate key in json", text: `{"faults": [{"kind": "target-restart", "kind": "node-crash", "target": "storage-2", "when": "in-freeze", "duration": 10}]}`,
			err: `key "kind" given twice`},
		{name: "nan", text: "faults:\n- {kind: target-restart, target: storage-2, when: in-freeze, duration: .nan}\n",
			err: `f.yaml: a number is NaN: want finite numbers`},
		// A param the kind does not read is an error naming it, not ignored
		// (mdoe: kill-job ran the default mode, abort).
		{name: "unknown param", text: "faults:\n- {kind: aborted-validation, target: mig-0002, when: Validating, params: {mdoe: kill-job, host: worker-1}}\n",
			err: `f.yaml: fault 1: fault aborted-validation on "mig-0002": params "mdoe": not a param of aborted-validation (known: after_s, mode, host)`},
		{name: "param of another kind", text: "faults:\n- {kind: target-restart, target: storage-2, when: in-freeze, duration: 10, params: {node: storage-1}}\n",
			err: `params "node": not a param of target-restart (known: after_s)`},
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

// TestExecutedScheduleParamsAreAccepted: a rerun of an executed schedule
// (plan.json's faults, as fiomig shrink reruns them) carries the params the
// Injector recorded; FromSpec accepts them while refusing unknown ones.
func TestExecutedScheduleParamsAreAccepted(t *testing.T) {
	s := record.FaultSpec{Fault: KindResetController, Target: "worker-1", Phase: record.StageInFreeze, Migration: "mig-0003",
		Params: map[string]string{"after_s": "0.2", "node": "storage-1", "injected_at_s": "12.5", "recovered_at_s": "12.5",
			"planned_migration": "#3+", "passed_over": "mig-0002: no live controller", "overlap": "one of 2 overlapping faults"}}
	if _, err := FromSpec(s); err != nil {
		t.Fatalf("an executed schedule's params are refused: %v", err)
	}
	s.Params["nod"] = "storage-2"
	if _, err := FromSpec(s); err == nil || !strings.Contains(err.Error(), `params "nod"`) {
		t.Fatalf("an unknown param: error %v, want one naming params \"nod\"", err)
	}
}
