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
	good := `{"t":0,"kind":"phase","migration":"m1","phase":"Pending"}` + "\n"
	for _, tc := range []struct {
		name, in, wantSub string
		truncated         bool
		wantLines         int
	}{
		{"bad json names line", good + "{nope\n", "tl:2: not a JSON timeline line", false, 1},
		{"no kind", good + good + `{"t":1}` + "\n", "tl:3: line has no \"kind\"", false, 2},
		{"negative t", `{"t":-1,"kind":"io"}` + "\n", "tl:1: field \"t\"", false, 0},
		{"truncated last line", good + `{"t":1,"kind":"sam`, "tl:2: last line is truncated", true, 1},
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
	if err := WriteJSON(p, Plan{Seed: 7, Params: Params{SampleIntervalS: 0.1}}); err != nil {
		t.Fatal(err)
	}
	plan, err := ReadPlan(p)
	if err != nil || plan.Seed != 7 {
		t.Errorf("ReadPlan = %+v, %v", plan, err)
	}
}
