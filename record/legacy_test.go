package record

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOldPlansLoad: plan.json files written before params.model (main at
// 99ca590: fiomig run --release-sources, fiomig reproduce small-healthy;
// and the older testdata/plan.json with no seed thresholds) still load,
// their switches read from params.extra's strings and their shape from
// the top of params into the typed Model, once; the plan with no
// seed_checks reads the default thresholds it was judged with.
func TestOldPlansLoad(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Params
	}{
		{"testdata/plan.json", Params{Migrations: 1, SampleIntervalS: 0.1, SettleSampleIntervalS: 0.1, PauseCritS: 5,
			FreezesAllowed: 1, SettleS: 2, AttributionMarginS: 30, GapS: 5, Seed: DefaultSeedThresholds(),
			Model: Model{Hosts: 2, Volumes: 2, ConsumersPerVolume: 1, CutoverPauseS: 2}}},
		{"testdata/plan-run-99ca590.json", Params{Migrations: 23, SampleIntervalS: 0.1, SettleSampleIntervalS: 1, PauseCritS: 5,
			FreezesAllowed: 1, SettleS: 400, AttributionMarginS: 30, TimelineFormat: FormatChangeOnly, HeartbeatIntervalS: 0.1,
			Seed: DefaultSeedThresholds(), GapS: 5, Faults: FaultsDefault,
			Model: Model{Hosts: 3, Volumes: 10, ConsumersPerVolume: 1, NamespacesPerVolume: 1, CutoverPauseS: 2,
				ControlPlane: ControlPlaneSbcli, LvolMonitor: true, CSIRestore: CSIRestoreByEndpoint, ReleaseSources: true}}},
		{"testdata/plan-reproduce-99ca590.json", Params{Migrations: 3, SampleIntervalS: 0.1, SettleSampleIntervalS: 1, PauseCritS: 5,
			FreezesAllowed: 1, SettleS: 60, AttributionMarginS: 30, TimelineFormat: FormatChangeOnly, HeartbeatIntervalS: 0.1,
			Seed: DefaultSeedThresholds(), GapS: 5, Incident: "small-healthy", FaultSchedule: "incident",
			Model: Model{Hosts: 2, Volumes: 2, ConsumersPerVolume: 1, NamespacesPerVolume: 1, CutoverPauseS: 2,
				ControlPlane: ControlPlaneSbcli, CSIRestore: CSIRestoreOff, Operator: OperatorFixed, ReconnectReset: ReconnectResetFull,
				KernelDNR: KernelDNRHonor, Pods: true, PodToleranceS: 5}}},
	} {
		plan, err := ReadPlan(tc.file)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if d := cmp.Diff(tc.want, plan.Params); d != "" {
			t.Errorf("%s: params (-want +got):\n%s", tc.file, d)
		}
		// Written again, it is a plan of today's format, which reads back
		// the same.
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(plan); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), `"extra"`) || !strings.Contains(b.String(), `"model":{"version":0,`) {
			t.Errorf("%s rewritten: %s", tc.file, b.String())
		}
		again, err := ParsePlan(b.Bytes(), "again")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(plan, again); d != "" {
			t.Errorf("%s: rewritten plan reads back differently (-first +again):\n%s", tc.file, d)
		}
	}
}

// TestOldPlanBadExtra: a params.extra value that does not parse is an
// error naming it; an unknown params.extra key is refused like any
// unknown field; a model version from a later fiomig is refused.
func TestOldPlanBadExtra(t *testing.T) {
	old, err := os.ReadFile("testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{`"gap_s": "5"`, `"lvol_monitor": "maybe"`, `params.extra.lvol_monitor: "maybe": want true or false`},
		{`"gap_s": "5"`, `"sync_s": "60"`, `params.extra.sync_s: "60": want MIN-MAX seconds`},
		{`"gap_s": "5"`, `"bogus": "1"`, `unknown field "bogus"`},
		{`"extra": {`, `"model": {"version": 2}, "extra": {`, `params.model.version 2: this fiomig reads model versions up to 1`},
	} {
		s := string(old)
		if !strings.Contains(s, tc.old) {
			t.Fatalf("testdata/plan.json lacks %s", tc.old)
		}
		_, err := ParsePlan([]byte(strings.Replace(s, tc.old, tc.new, 1)), "p.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "p.json:") {
			t.Errorf("%s: error %v, want it to start with p.json: and contain %q", tc.new, err, tc.want)
		}
	}
}

// TestSeedThresholdZeroIsKept: a seed_checks threshold of 0 is written and
// read back as 0; one plan.json lacks (fiomig before every field was
// written left zeros out, and older still the whole section) reads as
// its default, which that run was judged with.
func TestSeedThresholdZeroIsKept(t *testing.T) {
	old, err := os.ReadFile("testdata/plan-run-99ca590.json")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := ParsePlan(old, "old")
	if err != nil {
		t.Fatal(err)
	}
	plan.Params.Seed.MaxTimedOut, plan.Params.Seed.MinCompleted, plan.Params.Seed.MaxPaths = 0, 0, 0
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"max_timed_out":0,`, `"min_completed":0,`, `"max_paths":0,`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("plan.json written without %s: %s", k, b)
		}
	}
	again, err := ParsePlan(b, "again")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(plan.Params.Seed, again.Params.Seed); d != "" {
		t.Errorf("read back (-written +read):\n%s", d)
	}
	// A section with some fields (as fiomig wrote it with omitempty).
	part := strings.Replace(string(old), `"max_timed_out": 0.1,`, ``, 1)
	part = strings.Replace(part, `"max_paths": 3,`, ``, 1)
	if part == string(old) {
		t.Fatal("test edit did not apply")
	}
	got, err := ParsePlan([]byte(part), "part")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(DefaultSeedThresholds(), got.Params.Seed); d != "" {
		t.Errorf("absent fields do not read as their defaults (-want +got):\n%s", d)
	}
}
