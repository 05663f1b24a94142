package incidents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
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
		{"unknown nested field", "fio-mig-1787159565.yaml", "  hosts: 3\n", "  hosts: 3\n  hots: 3\n", `line 23: topology.hots: not a model setting (known: `},
		{"switch of the wrong type", "fio-mig-1787159565.yaml", "    value: true\n", "    value: \"on\"\n", `line 47: model.lvol_monitor.value: want bool, got string`},
		{"operator in the model", "fio-mig-1787159565.yaml", "  cutover_pause_s: 2\n", "  cutover_pause_s: 2\n  operator: fixed\n", `model.operator: the operator is operators.value's`},
		{"switch without a source", "fio-mig-1787159565.yaml", "    value: honor\n    source: sourced\n", "    value: honor\n", `kernel.kernel_dnr: source ""`},
		{"value of the wrong type", "fio-mig-1787159565.yaml", "  hosts: 3\n", "  hosts: three\n", `fio-mig-1787159565.yaml: line 22: topology.hosts: want int, got string`},
		{"wrong type in a list item", "fio-mig-1787159565.yaml", "    max: 36\n", "    max: lots\n", `fio-mig-1787159565.yaml: line 251: expected.max: want float64, got string`},
		{"YAML syntax", "fio-mig-1787159565.yaml", "  hosts: 3\n", "  hosts: [3\n", `fio-mig-1787159565.yaml: yaml: line `},
		{"missing source", "fio-mig-1787159565.yaml", "    max: 23\n    source: sourced\n", "    max: 23\n", `expected[0]: source ""`},
		{"bad source", "fio-mig-1787159565.yaml", "  source: assumption\n  note: >-\n    No source", "  source: guess\n  note: >-\n    No source", `faults: source "guess"`},
		{"name differs from file", "other.yaml", "", "", `name: "fio-mig-1787159565" differs from the file's name "other"`},
		{"band without bounds", "fio-mig-1787159565.yaml", "    min: 23\n    max: 23\n", "", `expected[0]: figure "migrations" without min or max`},
		{"bad control plane", "fio-mig-1787159565.yaml", "    value: sbcli", "    value: sbclu", `model.control_plane: "sbclu"`},
		{"compare with a band", "fio-mig-1787159565.yaml", "  - compare: fixed-le-prefix-confined\n", "  - compare: fixed-le-prefix-confined\n    max: 3\n", "compare takes a verdict only"},
		{"compare without a verdict", "fio-mig-1787159565.yaml", "  - compare: fixed-le-prefix-confined\n    verdict: pass\n", "  - compare: fixed-le-prefix-confined\n", `verdict ""`},
		{"compare without a margin", "fio-mig-1787159565.yaml", "    margin:\n      value: 2\n      source: assumption\n", "    margin:\n      value: 0\n      source: assumption\n", "compare needs margin.value > 0"},
		{"margin without a source", "fio-mig-1787159565.yaml", "    margin:\n      value: 2\n      source: assumption\n", "    margin:\n      value: 2\n", `margin: source ""`},
		{"margin on a figure", "fio-mig-1787159565.yaml", "    min: 23\n    max: 23\n", "    min: 23\n    max: 23\n    margin:\n      value: 1\n      source: assumption\n", "margin belongs to a compare"},
		{"figure and compare", "fio-mig-1787159565.yaml", "  - compare: fixed-le-prefix-confined\n", "  - compare: fixed-le-prefix-confined\n    figure: leaked\n", "give exactly one of figure, check or compare"},
		{"negative gap", "fio-mig-1787159565.yaml", "  gap_s: 15\n", "  gap_s: -1\n", "pacing.gap_s: -1: want a finite number of seconds ≥ 0"},
		{"zero sample interval", "fio-mig-1787159565.yaml", "  sample_interval_s: 0.5\n", "  sample_interval_s: 0\n", "pacing.sample_interval_s: 0: want seconds > 0"},
		{"job start max < min", "fio-mig-1787159565.yaml", "  job_start_s: [10, 30]\n", "  job_start_s: [30, 10]\n", "pacing.job_start_s: [30 10]: want [min, max]"},
		{"sync not a range", "fio-mig-1787159565.yaml", "  sync_s: [60, 180]\n", "  sync_s: [60]\n", "pacing.sync_s: [60]: want [min, max]"},
		{"sync not numbers", "fio-mig-1787159565.yaml", "  sync_s: [60, 180]\n", "  sync_s: 60-180\n", "sync_s"},
		{"negative timeout", "fio-mig-1787159565.yaml", "  migration_timeout_s: 420\n", "  migration_timeout_s: -420\n", "pacing.migration_timeout_s: -420"},
		{"tag of an unknown value", "fio-mig-1787159565.yaml", "  tags:\n    migrations:\n", "  tags:\n    gap: {source: sourced}\n    migrations:\n", "pacing.tags.gap: not a pacing value"},
		{"tag of an unset value", "fio-mig-1787159565.yaml", "  migration_timeout_s: 420\n", "", "pacing.tags.migration_timeout_s: tags a value the file does not set"},
		{"tag without a source", "fio-mig-1787159565.yaml", "    gap_s:\n      source: sourced\n", "    gap_s:\n", `pacing.tags.gap_s: source ""`},
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

// TestPacingOptional: the pacing values added for docs/sources.md §9.5
// (job_start_s, sync_s, migration_timeout_s, tags) are optional: a file
// without them parses with them unset (the simulator's and the run's
// defaults apply), and the catalogue's incident carries §6.1's values,
// each tagged.
func TestPacingOptional(t *testing.T) {
	inc, err := LoadFile("../cmd/fiomig/testdata/incidents/small-healthy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p := inc.Pacing; p.JobStartS != nil || p.SyncS != nil || p.MigrationTimeoutS != 0 || p.Tags != nil || p.SourceOf("gap_s") != Assumption {
		t.Errorf("small-healthy pacing %+v: want the optional values unset", p)
	}
	inc, err = Find("fio-mig-1787159565")
	if err != nil {
		t.Fatal(err)
	}
	p := inc.Pacing
	got := []float64{p.GapS, p.JobStartS[0], p.JobStartS[1], p.SyncS[0], p.SyncS[1], p.MigrationTimeoutS, p.SettleS}
	if d := cmp.Diff([]float64{15, 10, 30, 60, 180, 420, 9000}, got); d != "" {
		t.Errorf("fio-mig-1787159565 pacing (gap, job start, sync, timeout, settle) is not docs/sources.md §9.5's (-want +got):\n%s", d)
	}
	for _, f := range pacingFields {
		if _, ok := p.Tags[f]; !ok {
			t.Errorf("fio-mig-1787159565 pacing.%s has no tag of its own", f)
		}
	}
	if p.SourceOf("gap_s") != Sourced || p.SourceOf("sync_s") != Assumption || p.SourceOf("job_start_s") != Assumption {
		t.Errorf("sources gap %s, sync %s, job start %s: want sourced (the seed harness's default), assumption, assumption",
			p.SourceOf("gap_s"), p.SourceOf("sync_s"), p.SourceOf("job_start_s"))
	}
}

// TestWorld: an incident's topology, model and kernel blocks and its
// pacing's ranges make one record.Model, by plan.json's names; csi_restore
// "operator" follows the operator's release; what the file leaves out
// stays zero (the simulator's default).
func TestWorld(t *testing.T) {
	inc, err := Find(Default)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ op, csi string }{{record.OperatorPrefix, record.CSIRestoreByIP}, {record.OperatorFixed, record.CSIRestoreByEndpoint}} {
		got, err := inc.World(tc.op)
		if err != nil {
			t.Fatal(err)
		}
		want := record.Model{Nodes: 3, Hosts: 3, HostsAreNodes: true, Volumes: 2, NamespacesPerVolume: 5, ConsumersPerVolume: 3,
			Pods: true, PodToleranceS: 5, ControlPlane: record.ControlPlaneSbcli, LvolMonitor: true, CSIRestore: tc.csi,
			CutoverPauseS: 2, ReconnectReset: record.ReconnectResetFull, KernelDNR: record.KernelDNRHonor, Operator: tc.op,
			SyncMinS: 60, SyncMaxS: 180, JobStartMinS: 10, JobStartMaxS: 30}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: world (-want +got):\n%s", tc.op, d)
		}
	}
	if src := inc.Model.SourceOf("lvol_monitor"); src != Sourced {
		t.Errorf("model.lvol_monitor source %q, want sourced", src)
	}
}
