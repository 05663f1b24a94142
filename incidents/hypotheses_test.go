package incidents

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// TestCombinations: fio-mig-1787159565 declares three unknowns (4 first
// failures × 2 reconnect resets × 4 zero-leg sources): every combination
// of one alternative each, the last unknown fastest; exactly one is the
// file as written; each combination's world carries its alternatives'
// switches over the file's, and its faults are its alternative's.
func TestCombinations(t *testing.T) {
	inc, err := Find(Default)
	if err != nil {
		t.Fatal(err)
	}
	cs := inc.Combinations()
	if len(cs) != 32 {
		t.Fatalf("%d combinations, want 4 × 2 × 4 = 32", len(cs))
	}
	var asWritten []string
	for _, c := range cs {
		if c.AsWritten {
			asWritten = append(asWritten, c.ID+" "+c.Label())
		}
	}
	if d := cmp.Diff([]string{"H1 restart or drop (as the file) · upstream (full) · none"}, asWritten); d != "" {
		t.Errorf("combinations as written (-want +got):\n%s", d)
	}
	if got := cs[1].Label(); got != "restart or drop (as the file) · upstream (full) · listener race" {
		t.Errorf("H2 %q: want the last unknown to vary fastest", got)
	}
	byLabel := map[string]Combination{}
	for _, c := range cs {
		byLabel[c.Label()] = c
	}
	c, ok := byLabel["dropped CONNECTs · partial · failed swap re-add"]
	if !ok {
		t.Fatal("no combination dropped CONNECTs · partial · failed swap re-add")
	}
	m, err := c.Incident.World(record.OperatorPrefix)
	if err != nil {
		t.Fatal(err)
	}
	file, _ := inc.World(record.OperatorPrefix)
	want := file
	want.ReconnectReset, want.SwapReaddFail = record.ReconnectResetPartial, 0.01
	if d := cmp.Diff(want, m); d != "" {
		t.Errorf("world of %s (-want +got):\n%s", c.Label(), d)
	}
	if f := c.Incident.Faults.Seeded; f == nil || strings.Join(f.Kinds, ",") != "dropped-connects" {
		t.Errorf("faults of %s: %+v, want the dropped-connects family", c.Label(), c.Incident.Faults)
	}
	if f := byLabel["no fault · upstream (full) · none"].Incident.Faults; f.Seeded != nil || len(f.Scheduled) > 0 {
		t.Errorf("no fault: faults %+v, want none", f)
	}
	if inc.Faults.Seeded == nil || len(inc.Faults.Seeded.Kinds) != 2 {
		t.Errorf("the incident's own faults changed: %+v", inc.Faults)
	}
	if got := (Incident{}).Combinations(); got != nil {
		t.Errorf("no hypotheses: %d combinations, want none", len(got))
	}
}

// TestHypothesesAndSymptomsReject: a bad hypothesis or symptom is an
// error naming the file, the line of the field and the field (list items
// by index).
func TestHypothesesAndSymptomsReject(t *testing.T) {
	good, err := os.ReadFile("fio-mig-1787159565.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new string
		// at is the text whose line the error must name (in the edited file).
		at, want string
	}{
		{"unknown switch", "set: {reconnect_reset: partial}", "set: {reconect_reset: partial}", "set: {reconect_reset: partial}",
			"hypotheses[1].alternatives[1].set.reconect_reset: not a model setting"},
		{"switch of the wrong type", "set: {listener_race: true}", "set: {listener_race: \"yes\"}", "set: {listener_race: \"yes\"}",
			"hypotheses[2].alternatives[1].set.listener_race: want bool, got string"},
		{"switch of the wrong type, a string", "set: {reconnect_reset: partial}", "set: {reconnect_reset: 3}", "set: {reconnect_reset: 3}",
			"hypotheses[1].alternatives[1].set.reconnect_reset: want string, got number"},
		{"switch out of range", "set: {swap_readd_fail: 0.01}", "set: {swap_readd_fail: 2}", "set: {swap_readd_fail: 2}",
			"hypotheses[2].alternatives[2].set: model.swap_readd_fail: 2: want a probability 0 to 1"},
		{"operator as a switch", "set: {listener_race: true}", "set: {listener_race: true, operator: fixed}", "set: {listener_race: true, operator: fixed}",
			"hypotheses[2].alternatives[1].set.operator: the operator is operators.value's"},
		{"two unknowns set one switch", "set: {nsid_divergence: true}", "set: {nsid_divergence: true, reconnect_reset: partial}",
			"set: {nsid_divergence: true, reconnect_reset: partial}", `hypotheses[2].alternatives[3].set.reconnect_reset: unknown "reconnect reset" sets it too`},
		{"no confirm", "        confirm:\n          log_line: the hosts' dmesg shows \"IDs don't match", "        confirmed:\n          log_line: the hosts' dmesg shows \"IDs don't match",
			"confirmed:", `unknown field "confirmed"`},
		{"empty confirm", "        confirm:\n          log_line: the hosts' dmesg shows \"IDs don't match for shared namespace N\" or \"duplicate IDs in subsystem for nsid M\"\n",
			"        confirm: {}\n", "        confirm: {}", "hypotheses[2].alternatives[3].confirm: give what would confirm it"},
		{"alternative without a source", "        set: {listener_race: true}\n        source: sourced\n", "        set: {listener_race: true}\n",
			"      - name: listener race", `hypotheses[2].alternatives[1]: source ""`},
		{"alternative named twice", "      - name: NSID divergence", "      - name: listener race", "      - name: listener race\n        set: {nsid",
			`hypotheses[2].alternatives[3].name: "listener race" twice in zero-leg source`},
		{"two unknowns replace the faults", "        set: {nsid_divergence: true}\n", "        set: {nsid_divergence: true}\n        faults: {source: sourced}\n",
			"        faults: {source: sourced}", `hypotheses[2].alternatives[3].faults: unknown "first failure" replaces the faults too`},
		{"bad alternative faults", "kinds: [target-restart], phase: Validating, after_s: [0.5, 2.5], for_s: [190, 300], first_migration: 1, last_migration: 5}",
			"kinds: [target-restart], phase: Validating, after_s: [0.5, 2.5], for_s: [190, 300], first_migration: 1, last_migration: 50}",
			"last_migration: 50}", "hypotheses[0].alternatives[1].faults.seeded: count ≥ 1"},
		{"symptom without figure or reason", "      not_modelled: the simulated fio pods have no filesystem", "      note2: x",
			"note2: x", `unknown field "note2"`},
		{"symptom neither modelled nor not", "      not_modelled: the simulated fio pods have no filesystem (docs/simulator.md); a pod dies when its I/O stalls past its tolerance\n", "",
			"    - name: XFS filesystem shutdowns", "symptoms.observed[6]: give figure"},
		{"symptom negative", "      figure: pods_killed\n      value: 8\n", "      figure: pods_killed\n      value: -8\n", "      value: -8",
			"symptoms.observed[4].value: -8: want a finite number ≥ 0"},
		{"symptom of the wrong type", "      figure: pods_killed\n      value: 8\n", "      figure: pods_killed\n      value: eight\n", "      value: eight",
			"symptoms.observed.value: want float64, got string"},
		{"symptoms of another operator", "symptoms:\n  operator: prefix\n", "symptoms:\n  operator: both\n", "  operator: both",
			`symptoms.operator: "both": want prefix or fixed`},
		{"tolerance out of range", "  tolerance:\n    value: 0.25\n", "  tolerance:\n    value: 1.5\n", "    value: 1.5",
			"symptoms.tolerance.value: 1.5: want a relative miss between 0 and 1"},
		{"symptom named twice", "    - name: fio pods killed\n", "    - name: rejected CONNECTs a minute\n", "    - name: rejected CONNECTs a minute\n      figure: pods",
			`symptoms.observed[4].name: "rejected CONNECTs a minute" listed twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := string(good)
			if !strings.Contains(b, tc.old) {
				t.Fatalf("fixture lacks %q", tc.old)
			}
			b = strings.Replace(b, tc.old, tc.new, 1)
			i := strings.Index(b, tc.at)
			if i < 0 {
				t.Fatalf("edited file lacks %q", tc.at)
			}
			line := strings.Count(b[:i], "\n") + 1
			_, err := Parse("fio-mig-1787159565.yaml", []byte(b))
			want := fmt.Sprintf("line %d: %s", line, tc.want)
			if err == nil || !strings.HasPrefix(err.Error(), "fio-mig-1787159565.yaml:") || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v\nwant it to contain %q", err, want)
			}
		})
	}
}

// TestTooManyCombinations: more than MaxCombinations combinations is an
// error naming the hypotheses.
func TestTooManyCombinations(t *testing.T) {
	good, err := os.ReadFile("fio-mig-1787159565.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := string(good)
	for i := range 3 {
		b += fmt.Sprintf("  - unknown: extra %d\n    alternatives:\n", i)
		for j := range 2 {
			b += fmt.Sprintf("      - {name: a%d, source: assumption, confirm: {command: x}}\n", j)
		}
	}
	_, err = Parse("fio-mig-1787159565.yaml", []byte(b))
	if err == nil || !strings.Contains(err.Error(), "hypotheses: more than 64 combinations") {
		t.Errorf("error %v, want too many combinations", err)
	}
}
