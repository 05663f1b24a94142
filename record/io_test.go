package record

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTimelineRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), TimelineFile)
	tw, err := CreateTimeline(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Line{
		{T: 0, Kind: KindEndpoints, NQN: "nqn.a", Endpoints: []string{"10.0.0.1:4420", "[fd00::1]:4420"}},
		{T: 0.1 + 0.2, Kind: KindSample, Host: "h1", Controllers: []Controller{{Name: "nvme0", NQN: "nqn.a", Address: "10.0.0.1:4420", State: "live", Legs: []Leg{{NSID: 1, ANA: "optimized"}}}}},
		{T: 1, Kind: KindPhase, Migration: "m1", NQN: "nqn.a", Phase: PhasePending, SourceEndpoints: []string{"10.0.0.1:4420"}},
		{T: 2, Kind: KindTarget, Node: "n1", RejectedConnects: Int64(0)},
	}
	for _, l := range want {
		if err := tw.Append(l); err != nil {
			t.Fatal(err)
		}
	}
	// Flushed as written: readable before Close.
	got, err := ReadTimeline(path)
	if err != nil {
		t.Fatal(err)
	}
	want[1].T = 0.3 // rounded to the microsecond on write
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("timeline round trip (-want +got):\n%s", d)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tw.Append(Line{Kind: ""}); err == nil {
		t.Error("Append accepted a line without kind")
	}
}

func TestScanTimelineErrors(t *testing.T) {
	good := `{"t":0,"kind":"phase","migration":"m1","nqn":"nqn.a","phase":"Pending"}` + "\n"
	io := func(t string) string { return `{"t":` + t + `,"kind":"io","volume":"v1"}` + "\n" }
	for _, tc := range []struct {
		name, in, wantSub string
		truncated         bool
		wantLines         int
	}{
		{"bad json names line", good + "{nope\n", "tl:2: not a JSON timeline line", false, 1},
		{"no kind", good + good + `{"t":1}` + "\n", "tl:3: line has no \"kind\"", false, 2},
		{"unknown kind", good + `{"t":1,"kind":"bogus"}` + "\n", `tl:2: unknown kind "bogus" (want one of sample, phase`, false, 1},
		{"no t", good + `{"kind":"io","volume":"v1"}` + "\n", `tl:2: io line has no field "t"`, false, 1},
		{"phase without migration", good + `{"t":31,"kind":"phase"}` + "\n", `tl:2: phase line has no "migration", "nqn", "phase"`, false, 1},
		{"sample without host", `{"t":1,"kind":"sample"}` + "\n", `tl:1: sample line has no "host"`, false, 0},
		{"negative t", io("-1"), "tl:1: field \"t\"", false, 0},
		{"truncated last line", good + `{"t":1,"kind":"sam`, "tl:2: last line is truncated", true, 1},
		{"t going backwards", io("0") + io("32.1") + "\n" + `{"t":1,"kind":"sample","host":"h"}` + "\n",
			"tl:4: t went backwards: 1 after 32.1", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := ScanTimeline(strings.NewReader(tc.in), "tl", func(Line) error { n++; return nil })
			if err == nil || !strings.Contains(err.Error(), tc.wantSub) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantSub)
			}
			if got := errors.Is(err, ErrTruncated); got != tc.truncated {
				t.Errorf("errors.Is(err, ErrTruncated) = %v, want %v", got, tc.truncated)
			}
			if n != tc.wantLines {
				t.Errorf("lines delivered before the error = %d, want %d", n, tc.wantLines)
			}
		})
	}
}

func TestCreateRunDirSuffixes(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "out")
	var got []string
	for range 3 {
		d, err := CreateRunDir(parent, 1787159565)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, filepath.Base(d))
	}
	want := []string{"fio-mig-1787159565", "fio-mig-1787159565-2", "fio-mig-1787159565-3"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("run dir names (-want +got):\n%s", d)
	}
}

func TestReadPlanErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, PlanFile)
	if err := os.WriteFile(p, []byte(`{"seed": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPlan(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("ReadPlan error = %v, want it to name %s", err, p)
	}
	if err := WriteJSON(p, Plan{Seed: 7, Params: Params{SampleIntervalS: 0.1, PauseCritS: 5, Seed: DefaultSeedThresholds()}}); err != nil {
		t.Fatal(err)
	}
	plan, err := ReadPlan(p)
	if err != nil || plan.Seed != 7 {
		t.Errorf("ReadPlan = %+v, %v", plan, err)
	}
}

// TestScanTimelineEqualTimesInOrder: lines of one instant (a phase line and
// the samples taken at it) share t; only a decrease is rejected; "t" need
// not come first.
func TestScanTimelineEqualTimesInOrder(t *testing.T) {
	in := `{"t":1.5,"kind":"phase","migration":"m1","nqn":"nqn.a","phase":"Pending"}` + "\n" +
		`{"t":1.5,"kind":"sample","host":"h"}` + "\n" + `{"kind":"sample","host":"h","t":2}` + "\n"
	n := 0
	if err := ScanTimeline(strings.NewReader(in), "tl", func(Line) error { n++; return nil }); err != nil || n != 3 {
		t.Errorf("ScanTimeline = %v after %d lines, want nil after 3", err, n)
	}
}

// validPlanJSON is a plan.json that ReadPlan accepts: one migration, two
// hosts, one volume consumed by both.
const validPlanJSON = `{
  "seed": 3,
  "params": {"migrations": 1, "sample_interval_s": 0.1, "settle_sample_interval_s": 0.1,
    "pause_crit_s": 5, "freezes_allowed": 1, "settle_s": 60, "attribution_margin_s": 30},
  "topology": {
    "hosts": [{"name": "h1", "hostnqn": "nqn.h1"}, {"name": "h2", "hostnqn": "nqn.h2"}],
    "volumes": [{"name": "v1", "nqn": "nqn.v1", "nsids": [1], "consumers": ["h1", "h2"]}]
  }
}`

// validTopology is validPlanJSON's topology member.
const validTopology = `"topology": {
    "hosts": [{"name": "h1", "hostnqn": "nqn.h1"}, {"name": "h2", "hostnqn": "nqn.h2"}],
    "volumes": [{"name": "v1", "nqn": "nqn.v1", "nsids": [1], "consumers": ["h1", "h2"]}]
  }`

// TestReadPlanValidatesThresholds: every threshold the checks judge with,
// and the topology they judge over, is checked on read; the error names the
// file and the field (and says when the field is missing or null).
func TestReadPlanValidatesThresholds(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, PlanFile)
	read := func(doc string) error {
		t.Helper()
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadPlan(p)
		return err
	}
	if err := read(validPlanJSON); err != nil {
		t.Fatalf("valid plan rejected: %v", err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"pause_crit_s null", `"pause_crit_s": 5`, `"pause_crit_s": null`, "params.pause_crit_s (CUTOVER_PAUSE_CRIT_S) must be > 0 seconds, it is missing or null"},
		{"pause_crit_s missing", `"pause_crit_s": 5,`, ``, "params.pause_crit_s (CUTOVER_PAUSE_CRIT_S) must be > 0 seconds, it is missing or null"},
		{"pause_crit_s 0", `"pause_crit_s": 5`, `"pause_crit_s": 0`, "params.pause_crit_s (CUTOVER_PAUSE_CRIT_S) must be > 0 seconds, got 0"},
		{"pause_crit_s -1", `"pause_crit_s": 5`, `"pause_crit_s": -1`, "params.pause_crit_s (CUTOVER_PAUSE_CRIT_S) must be > 0 seconds, got -1"},
		{"freezes_allowed -1", `"freezes_allowed": 1`, `"freezes_allowed": -1`, "params.freezes_allowed (CUTOVER_FREEZES_ALLOWED) must be >= 0, got -1"},
		{"freezes_allowed null", `"freezes_allowed": 1`, `"freezes_allowed": null`, "params.freezes_allowed (CUTOVER_FREEZES_ALLOWED) must be >= 0, it is missing or null"},
		{"settle_s -1", `"settle_s": 60`, `"settle_s": -1`, "params.settle_s must be >= 0 seconds, got -1"},
		{"attribution_margin_s -0.5", `"attribution_margin_s": 30`, `"attribution_margin_s": -0.5`, "params.attribution_margin_s must be >= 0 seconds, got -0.5"},
		{"settle_sample_interval_s -1", `"settle_sample_interval_s": 0.1`, `"settle_sample_interval_s": -1`, "params.settle_sample_interval_s must be >= 0"},
		{"sample_interval_s 0", `"sample_interval_s": 0.1,`, `"sample_interval_s": 0,`, "params.sample_interval_s must be > 0 seconds, got 0"},
		{"topology null", validTopology, `"topology": null`, "topology.hosts is empty (or null) but params.migrations is 1"},
		{"no volumes", `"volumes": [{"name": "v1", "nqn": "nqn.v1", "nsids": [1], "consumers": ["h1", "h2"]}]`, `"volumes": []`, "topology.volumes is empty (or null) but params.migrations is 1"},
		{"unknown consumer", `"consumers": ["h1", "h2"]`, `"consumers": ["h1", "h3"]`, `topology.volumes[0] (v1) has consumer "h3", which is not in topology.hosts`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(validPlanJSON, tc.old, tc.new, 1)
			if doc == validPlanJSON {
				t.Fatalf("test edit %q did not apply", tc.old)
			}
			err := read(doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p+": ") {
				t.Errorf("ReadPlan error = %v, want %q naming %s", err, tc.want, p)
			}
		})
	}
	// Without migrations an empty topology is a valid (if thin) plan.
	doc := strings.Replace(strings.Replace(validPlanJSON, `"migrations": 1`, `"migrations": 0`, 1), validTopology, `"topology": null`, 1)
	if err := read(doc); err != nil {
		t.Errorf("plan without migrations or topology rejected: %v", err)
	}
}

// A field plan.json does not have is named, not ignored.
func TestParsePlanNamesUnknownField(t *testing.T) {
	bad := strings.Replace(validPlanJSON, `"pause_crit_s"`, `"pause_crit"`, 1)
	if bad == validPlanJSON {
		t.Fatal("test setup: validPlanJSON has no pause_crit_s")
	}
	_, err := ParsePlan([]byte(bad), "run/plan.json")
	if err == nil || !strings.Contains(err.Error(), `run/plan.json: json: unknown field "pause_crit"`) {
		t.Errorf("ParsePlan with params.pause_crit = %v, want an error naming the field and the file", err)
	}
	if _, err := ParsePlan([]byte(validPlanJSON+"{}"), "p"); err == nil || !strings.Contains(err.Error(), "trailing data") {
		t.Errorf("trailing object: %v", err)
	}
	if _, err := ParsePlan([]byte(validPlanJSON), "p"); err != nil {
		t.Errorf("valid plan: %v", err)
	}
}
