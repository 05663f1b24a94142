package reports

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

const anaNQN = "nqn.2023-02.io.simplyblock:c:lvol:v1"

// anaSample is worker-1's state at t: the source path 10.0.0.1:4420 and
// the target path 10.0.0.2:4420 in the given controller states and ANA
// states ("" = no such controller).
func anaSample(t float64, srcState, srcANA, tgtState, tgtANA string) record.Line {
	l := record.Line{T: t, Kind: record.KindSample, Host: "worker-1"}
	if srcState != "" {
		l.Controllers = append(l.Controllers, record.Controller{Name: "nvme0", NQN: anaNQN, Address: "10.0.0.1:4420", State: srcState, Legs: []record.Leg{{NSID: 1, ANA: srcANA}}})
	}
	if tgtState != "" {
		l.Controllers = append(l.Controllers, record.Controller{Name: "nvme1", NQN: anaNQN, Address: "10.0.0.2:4420", State: tgtState, Legs: []record.Leg{{NSID: 1, ANA: tgtANA}}})
	}
	return l
}

func anaRun(samples ...record.Line) ([]record.Line, record.Summary) {
	tl := []record.Line{{T: 0, Kind: record.KindPhase, Migration: "mig-0001", NQN: anaNQN, Phase: "Pending",
		SourceEndpoints: []string{"10.0.0.1:4420"}, TargetEndpoints: []string{"10.0.0.2:4420"}}}
	tl = append(tl, samples...)
	sum := record.Summary{Migrations: []record.MigrationSummary{{ID: "mig-0001", NQN: anaNQN, Outcome: "Completed"}}}
	return tl, sum
}

func f(v float64) *float64 { return &v }

// TestAnatomyCutover: a cutover whose target controller connected before
// the window (Validating), source lost at 10 (seen after 9.9), target
// optimized at 17: three steps, ended by the target.
func TestAnatomyCutover(t *testing.T) {
	tl, sum := anaRun(
		anaSample(9.8, "live", "optimized", "connecting", ""),
		anaSample(9.9, "live", "optimized", "live", "inaccessible"),
		anaSample(10, "live", "inaccessible", "live", "inaccessible"),
		anaSample(16.9, "live", "inaccessible", "live", "change"),
		anaSample(17, "live", "inaccessible", "live", "optimized"),
	)
	sum.Migrations[0].Hosts = map[string]record.HostPauses{"worker-1": {LongestPauseS: 7, Freezes: 1, Windows: [][2]float64{{10, 17}}}}
	got := WithAnatomy(sum, tl).Migrations[0].Hosts["worker-1"].Anatomy
	want := []record.PauseAnatomy{{Window: [2]float64{10, 17}, EndedBy: "target", Steps: []record.PauseStep{
		{Step: record.StepSourceLost, AtS: f(10), AfterS: f(9.9), SinceStartS: f(0), Detail: "the first paused sample; source paths: 10.0.0.1:4420 live/inaccessible"},
		{Step: record.StepTargetLive, AtS: f(9.9), AfterS: f(9.8), SinceStartS: f(-0.1), Detail: "live before the window (10.0.0.2:4420 live/inaccessible)"},
		{Step: record.StepTargetAccessible, AtS: f(17), AfterS: f(16.9), SinceStartS: f(7), Detail: "target paths: 10.0.0.2:4420 live/optimized"},
	}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("anatomy (-want +got):\n%s", d)
	}
	if sum.Migrations[0].Hosts["worker-1"].Anatomy != nil {
		t.Error("WithAnatomy changed its argument's map")
	}
	md := anatomyMarkdown(WithAnatomy(sum, tl))
	for _, s := range []string{"on worker-1, [10, 17] s (ended: a target path became accessible)", "| 3. target ANA accessible | 17 s (after 16.9 s) | +7 s |"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
}

// TestAnatomyReconnectAndHole: the target controller reconnects inside the
// window, and the target's ANA change falls in a hole in the host's
// samples (12 to 16.5): the step says it is known only to the hole.
func TestAnatomyReconnectAndHole(t *testing.T) {
	tl, sum := anaRun(
		anaSample(9.9, "live", "optimized", "", ""),
		anaSample(10, "connecting", "optimized", "", ""),
		anaSample(11, "connecting", "optimized", "connecting", ""),
		anaSample(12, "connecting", "optimized", "live", "inaccessible"),
		anaSample(16.5, "deleting", "", "live", "optimized"),
	)
	sum.Migrations[0].Hosts = map[string]record.HostPauses{"worker-1": {LongestPauseS: 6.5, Freezes: 1, Windows: [][2]float64{{10, 16.5}}}}
	sum.SampleHoles = []record.SampleHole{{Host: "worker-1", From: 12, To: 16.5, IntervalS: 0.1}}
	a := WithAnatomy(sum, tl).Migrations[0].Hosts["worker-1"].Anatomy[0]
	if a.EndedBy != "target" || len(a.Steps) != 3 {
		t.Fatalf("anatomy %+v", a)
	}
	if s := a.Steps[0]; !strings.Contains(s.Detail, "10.0.0.1:4420 connecting/optimized") || s.InSampleHole {
		t.Errorf("source lost: %+v", s)
	}
	if s := a.Steps[1]; *s.AtS != 12 || *s.AfterS != 11 || s.InSampleHole {
		t.Errorf("target live: %+v", s)
	}
	if s := a.Steps[2]; *s.AtS != 16.5 || !s.InSampleHole || !strings.Contains(s.Detail, "only known to lie in (12, 16.5] s") {
		t.Errorf("target accessible in the hole: %+v", s)
	}
	if md := anatomyMarkdown(WithAnatomy(sum, tl)); !strings.Contains(md, "16.5 s (after 12 s), in a sample hole") {
		t.Errorf("markdown does not say hole:\n%s", md)
	}
}

// TestAnatomySourceCameBack: a window ended by the source path coming
// back (an aborted cutover) has no target step; with fio, the first
// completion is the end of fio's gap over the window.
func TestAnatomySourceCameBack(t *testing.T) {
	tl, sum := anaRun(
		anaSample(4.9, "live", "optimized", "live", "inaccessible"),
		anaSample(5, "live", "inaccessible", "live", "inaccessible"),
		anaSample(8, "live", "optimized", "live", "inaccessible"),
	)
	sum.Migrations[0].Hosts = map[string]record.HostPauses{"worker-1": {LongestPauseS: 3, Freezes: 1, Windows: [][2]float64{{5, 8}}}}
	sum.Fio = &record.FioSummary{MinGapS: 0.5, Volumes: []record.FioVolume{{Volume: "vol-1", NQN: anaNQN, Host: "worker-1",
		Gaps: []record.FioGap{{StartS: 1, EndS: 1.6}, {StartS: 4.95, EndS: 8.2, LengthS: 3.25}}}}}
	a := WithAnatomy(sum, tl).Migrations[0].Hosts["worker-1"].Anatomy[0]
	if a.EndedBy != "source" {
		t.Errorf("ended by %q, want source", a.EndedBy)
	}
	if s := a.Steps[2]; s.Step != record.StepTargetAccessible || s.AtS != nil || !strings.Contains(s.Detail, "a source path came back: 10.0.0.1:4420 live/optimized") {
		t.Errorf("target step: %+v", s)
	}
	if s := a.Steps[3]; s.Step != record.StepFirstCompletion || *s.AtS != 8.2 || *s.AfterS != 4.95 || *s.SinceStartS != 3.2 {
		t.Errorf("fio step: %+v", s)
	}
}

// TestAnatomySilentStall: a window that begins with a silent stall (the
// source path live and optimized while nothing reached its target) names
// the stall as the source path's loss, with the keep-alive estimate.
func TestAnatomySilentStall(t *testing.T) {
	tl, sum := anaRun(
		anaSample(20, "live", "optimized", "live", "inaccessible"),
		anaSample(25, "connecting", "optimized", "live", "inaccessible"),
		anaSample(26, "connecting", "optimized", "live", "optimized"),
	)
	sum.Migrations[0].Hosts = map[string]record.HostPauses{"worker-1": {LongestPauseS: 6.5, Freezes: 1, Windows: [][2]float64{{19.5, 26}}}}
	sum.Stalls = []record.Stall{{Host: "worker-1", Controller: "nvme0", NQN: anaNQN, StartS: 19.5, EndS: 25, Estimate: true, LatestStartS: f(20.5)}}
	a := WithAnatomy(sum, tl).Migrations[0].Hosts["worker-1"].Anatomy[0]
	if len(a.Steps) != 4 {
		t.Fatalf("steps %+v", a.Steps)
	}
	s := a.Steps[0]
	if s.Step != record.StepSilentStall || *s.AtS != 19.5 || s.AfterS != nil || !strings.Contains(s.Detail, "a silent stall of nvme0 (10.0.0.1:4420, source path)") || !strings.Contains(s.Detail, "began between 19.5 and 20.5 s") {
		t.Errorf("stall step: %+v", s)
	}
	if s := a.Steps[1]; s.Step != record.StepStallEnded || *s.AtS != 25 {
		t.Errorf("stall end: %+v", s)
	}
	if s := a.Steps[3]; s.Step != record.StepTargetAccessible || *s.AtS != 26 || *s.SinceStartS != 6.5 {
		t.Errorf("target accessible: %+v", s)
	}
}

// TestAnatomyStalledTargetPath: a stall of the target path itself, live
// and optimized from the window's start, does not count as the target's
// service: step 3 is the first sample after the stall ended.
func TestAnatomyStalledTargetPath(t *testing.T) {
	tl, sum := anaRun(
		anaSample(9.9, "live", "optimized", "live", "inaccessible"),
		anaSample(10, "live", "inaccessible", "live", "optimized"),
		anaSample(14, "live", "inaccessible", "connecting", "optimized"),
		anaSample(15, "live", "inaccessible", "live", "optimized"),
	)
	tl[1].Controllers[1].Name = "nvme1"
	sum.Migrations[0].Hosts = map[string]record.HostPauses{"worker-1": {LongestPauseS: 5, Freezes: 1, Windows: [][2]float64{{10, 15}}}}
	sum.Stalls = []record.Stall{{Host: "worker-1", Controller: "nvme1", NQN: anaNQN, StartS: 10, EndS: 14}}
	a := WithAnatomy(sum, tl).Migrations[0].Hosts["worker-1"].Anatomy[0]
	if s := a.Steps[0]; !strings.Contains(s.Detail, "nvme1 (10.0.0.2:4420, target path)") {
		t.Errorf("stall step: %+v", s)
	}
	if s := a.Steps[3]; s.Step != record.StepTargetAccessible || *s.AtS != 15 || *s.AfterS != 14 {
		t.Errorf("target accessible after the stall: %+v", s)
	}
}
