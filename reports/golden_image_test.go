package reports

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// swimlaneFixture is a synthetic run of one migration m1 of vol1 on two
// consumer hosts, sampled every 0.5 s from 0 to 40 s: source paths
// 10.0.0.1:4420 (optimized) and 10.0.0.2:4420 (non-optimized); at 8 s the
// target paths 10.0.0.3:4420 and 10.0.0.1:4430 appear inaccessible
// (connecting for 1 s on host-b); every path is inaccessible from 14 s to
// 16.5 s on host-a and to 19 s on host-b (a second freeze 21-22 s on
// host-b), then the targets serve; the sources go at 24 s. A
// kill-node fault runs from 12 s to 18 s, a connect-drop from 20 s with
// no recover; fio on host-a stalls 14.2-16.6 s.
func swimlaneFixture() (record.Plan, record.Summary, []record.Line) {
	const nqn = "nqn.2023-02.io.simplyblock:vol1"
	plan := record.Plan{Seed: 7, Params: record.Params{PauseCritS: 5, FreezesAllowed: 1, AttributionMarginS: 5, SampleIntervalS: 0.5},
		Topology: record.Topology{Hosts: []record.HostInfo{{Name: "host-a"}, {Name: "host-b"}},
			Volumes: []record.VolumeInfo{{Name: "vol1", NQN: nqn, NSIDs: []int{1}, Consumers: []string{"host-a", "host-b"}}}}}
	var tl []record.Line
	phase := func(t float64, p string) {
		l := record.Line{T: t, Kind: record.KindPhase, Migration: "m1", NQN: nqn, Phase: p}
		if p == record.PhasePending {
			l.SourceEndpoints = []string{"10.0.0.1:4420", "10.0.0.2:4420"}
			l.TargetEndpoints = []string{"10.0.0.3:4420", "10.0.0.1:4430"}
		}
		tl = append(tl, l)
	}
	ctl := func(name, addr, state, ana string) record.Controller {
		return record.Controller{Name: name, NQN: nqn, Address: addr, State: state, Legs: []record.Leg{{NSID: 1, ANA: ana}}}
	}
	phases := map[float64]string{5: record.PhasePending, 6: record.PhaseValidating, 10: record.PhaseRunning, 20: record.PhaseCompleted}
	for step := 0; step <= 80; step++ {
		t := float64(step) / 2
		if p, ok := phases[t]; ok {
			phase(t, p)
		}
		switch t {
		case 12:
			tl = append(tl, record.Line{T: t, Kind: record.KindFault, Fault: "kill-node", Action: "inject", Target: "node-2"})
		case 18:
			tl = append(tl, record.Line{T: t, Kind: record.KindFault, Fault: "kill-node", Action: "recover", Target: "node-2"})
		case 20:
			tl = append(tl, record.Line{T: t, Kind: record.KindFault, Fault: "connect-drop", Action: "inject", Target: "node-3"})
		}
		for _, h := range []string{"host-a", "host-b"} {
			end := 16.5
			if h == "host-b" {
				end = 19
			}
			frozen := (t >= 14 && t < end) || (h == "host-b" && t >= 21 && t < 22)
			var cs []record.Controller
			if t < 24 {
				s1, s2 := "optimized", "non-optimized"
				if t >= 14 {
					s1, s2 = "inaccessible", "inaccessible"
				}
				cs = append(cs, ctl("nvme0", "10.0.0.1:4420", "live", s1), ctl("nvme1", "10.0.0.2:4420", "live", s2))
			}
			if t >= 8 {
				t1, t2 := "inaccessible", "inaccessible"
				if t >= 14 && !frozen {
					t1, t2 = "optimized", "non-optimized"
				}
				st := "live"
				if h == "host-b" && t < 9 {
					st = "connecting"
				}
				cs = append(cs, ctl("nvme2", "10.0.0.3:4420", st, t1), ctl("nvme3", "10.0.0.1:4430", "live", t2))
			}
			tl = append(tl, record.Line{T: t, Kind: record.KindSample, Host: h, Controllers: cs})
		}
	}
	sum := record.Summary{Seed: 7, Verdict: record.Pass,
		Migrations: []record.MigrationSummary{{ID: "m1", NQN: nqn, Outcome: record.PhaseCompleted, StartS: 5, EndS: 20, CompletedS: fptr(20), Freezes: 2,
			Hosts: map[string]record.HostPauses{
				"host-a": {LongestPauseS: 2.5, Freezes: 1, Windows: [][2]float64{{14, 16.5}}},
				"host-b": {LongestPauseS: 5, Freezes: 2, Windows: [][2]float64{{14, 19}, {21, 22}}},
			}}},
		Fio: &record.FioSummary{Volumes: []record.FioVolume{{Volume: "vol1", NQN: nqn, Host: "host-a",
			Gaps: []record.FioGap{{StartS: 14.2, EndS: 16.6, LengthS: 2.4}}}}},
	}
	// The faults as the checks list them (the report's faults table).
	ev := checks.Evaluate(plan, tl)
	sum.Faults, sum.FaultMatrix = ev.Faults, ev.FaultMatrix
	return plan, sum, tl
}

// ecdfFixture is three summaries (a sweep's seeds) of five migrations on
// one host each, with pauses spread over 1-7 s.
func ecdfFixture() []record.Summary {
	var sums []record.Summary
	for s := 0; s < 3; s++ {
		sum := record.Summary{Seed: int64(s + 1)}
		for i := 0; i < 5; i++ {
			p := 1 + float64((i*7+s*3)%13)/2
			sum.Migrations = append(sum.Migrations, record.MigrationSummary{ID: fmt.Sprintf("m%d", i), Outcome: record.PhaseCompleted,
				Hosts: map[string]record.HostPauses{"h": {LongestPauseS: p, Windows: [][2]float64{{0, p}, {10, 10 + p/3}}}}})
		}
		sums = append(sums, sum)
	}
	return sums
}

// imageDiff counts the pixels of a and b whose colour differs by more
// than 64 in any channel (of 255); a size difference counts every pixel.
func imageDiff(a, b image.Image) (differ, total int) {
	ab, bb := a.Bounds(), b.Bounds()
	total = ab.Dx() * ab.Dy()
	if ab.Size() != bb.Size() {
		return total, total
	}
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			r1, g1, b1, a1 := a.At(ab.Min.X+x, ab.Min.Y+y).RGBA()
			r2, g2, b2, a2 := b.At(bb.Min.X+x, bb.Min.Y+y).RGBA()
			for _, d := range [][2]uint32{{r1, r2}, {g1, g2}, {b1, b2}, {a1, a2}} {
				if diff := int(d[0]>>8) - int(d[1]>>8); diff > 64 || diff < -64 {
					differ++
					break
				}
			}
		}
	}
	return differ, total
}

// goldenTolerance is the share of pixels that may differ from a golden
// image: anti-aliasing of the embedded Liberation fonts (gonum/plot draws
// text with its own fonts, never the system's) may move a few edge
// pixels between CPUs; a missing bar, window or label moves thousands.
const goldenTolerance = 0.002

// checkGoldenImage compares the PNG got with testdata/<name>, rewriting it
// with -update. On a mismatch the got image is written beside the test's
// temporary files and named in the failure.
func checkGoldenImage(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantB, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if err := compareImages(wantB, got); err != nil {
		path := filepath.Join(t.TempDir(), name)
		_ = os.WriteFile(path, got, 0o644)
		t.Errorf("%s: %v; the image drawn is %s (go test ./reports -run GoldenImage -update rewrites the golden file)", golden, err, path)
	}
}

// compareImages decodes two PNGs and fails when more than goldenTolerance
// of their pixels differ.
func compareImages(wantPNG, gotPNG []byte) error {
	want, err := png.Decode(bytes.NewReader(wantPNG))
	if err != nil {
		return fmt.Errorf("golden: %w", err)
	}
	got, err := png.Decode(bytes.NewReader(gotPNG))
	if err != nil {
		return fmt.Errorf("drawn: %w", err)
	}
	if want.Bounds().Size() != got.Bounds().Size() {
		return fmt.Errorf("size %v, want %v", got.Bounds().Size(), want.Bounds().Size())
	}
	if d, n := imageDiff(want, got); float64(d) > goldenTolerance*float64(n) {
		return fmt.Errorf("%d of %d pixels differ (tolerance %.1f%%)", d, n, 100*goldenTolerance)
	}
	return nil
}

// TestSwimlaneGoldenImage draws the fixture's swimlane (lanes from the
// synthetic timeline through Cutovers) and compares it with
// testdata/swimlane.golden.png.
func TestSwimlaneGoldenImage(t *testing.T) {
	plan, sum, tl := swimlaneFixture()
	cs := Cutovers(sum, tl)
	b, err := SwimlaneBytes(plan, cs[0], "png")
	if err != nil {
		t.Fatal(err)
	}
	checkGoldenImage(t, "swimlane.golden.png", b)
}

// TestECDFGoldenImage draws the ECDF of the three-seed fixture and compares
// it with testdata/ecdf.golden.png.
func TestECDFGoldenImage(t *testing.T) {
	b, err := ECDFBytes("Pause windows over 3 seeds", ecdfFixture(), 5, "png")
	if err != nil {
		t.Fatal(err)
	}
	checkGoldenImage(t, "ecdf.golden.png", b)
}

// TestGoldenImageCatchesAChange: the comparison is not blind — the
// swimlane without its pause windows, and the ECDF with another bound,
// both fail against the golden images.
func TestGoldenImageCatchesAChange(t *testing.T) {
	plan, sum, tl := swimlaneFixture()
	want, err := os.ReadFile(filepath.Join("testdata", "swimlane.golden.png"))
	if err != nil {
		t.Fatal(err)
	}
	for h, hp := range sum.Migrations[0].Hosts {
		hp.Windows = nil
		sum.Migrations[0].Hosts[h] = hp
	}
	got, err := SwimlaneBytes(plan, Cutovers(sum, tl)[0], "png")
	if err != nil {
		t.Fatal(err)
	}
	if compareImages(want, got) == nil {
		t.Error("a swimlane without its pause windows matches the golden image")
	}
	wantE, err := os.ReadFile(filepath.Join("testdata", "ecdf.golden.png"))
	if err != nil {
		t.Fatal(err)
	}
	gotE, err := ECDFBytes("Pause windows over 3 seeds", ecdfFixture(), 3, "png")
	if err != nil {
		t.Fatal(err)
	}
	if compareImages(wantE, gotE) == nil {
		t.Error("an ECDF with the bound at 3 s matches the golden image drawn at 5 s")
	}
}

// TestCutoversLanes: the fixture's lanes are host × path, source paths
// first, with the states and spans the samples give.
func TestCutoversLanes(t *testing.T) {
	_, sum, tl := swimlaneFixture()
	c := Cutovers(sum, tl)[0]
	if c.FromS != 0 || c.ToS != 27 {
		t.Errorf("span [%v, %v], want [0, 27] (start 5 − 5, last window end 22 + 5)", c.FromS, c.ToS)
	}
	var names []string
	for _, l := range c.Lanes {
		names = append(names, l.Host+" "+l.Address+" "+l.Role)
	}
	want := []string{"host-a 10.0.0.1:4420 source", "host-a 10.0.0.2:4420 source", "host-a 10.0.0.1:4430 target", "host-a 10.0.0.3:4420 target",
		"host-b 10.0.0.1:4420 source", "host-b 10.0.0.2:4420 source", "host-b 10.0.0.1:4430 target", "host-b 10.0.0.3:4420 target"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("lanes %v, want %v", names, want)
	}
	// host-b's 10.0.0.3:4420: connecting 8-9, inaccessible 9-19, optimized 19-21, inaccessible 21-22, optimized 22-27.
	got := fmt.Sprint(c.Lanes[7].Segments)
	if w := "[{8 9 connecting} {9 19 inaccessible} {19 21 optimized} {21 22 inaccessible} {22 27 optimized}]"; got != w {
		t.Errorf("host-b 10.0.0.3:4420 segments %s, want %s", got, w)
	}
	if len(c.Faults) != 2 || !c.Faults[1].Open || c.Faults[0].ToS != 18 {
		t.Errorf("faults %+v, want kill-node 12-18 and an open connect-drop", c.Faults)
	}
	if len(c.Phases) != 4 || !c.FioRan || len(c.FioGaps["host-a"]) != 1 {
		t.Errorf("phases %v, fio %v %v", c.Phases, c.FioRan, c.FioGaps)
	}
}

// TestWriteWithTimeline: with the timeline, Write draws one swimlane per
// migration (PNG and SVG, byte-identical across two writes), counts churn
// into summary.json, links the swimlane from report.md's worst-cutover
// line and embeds it in report.html.
func TestWriteWithTimeline(t *testing.T) {
	plan, sum, tl := swimlaneFixture()
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := WriteRun(d, Input{Plan: plan, Summary: sum, Timeline: tl}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{record.SummaryFile, ReportFile, HTMLReportFile, SwimlaneFile("m1", "png"), SwimlaneFile("m1", "svg"), ECDFPlotFile} {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		y, _ := os.ReadFile(filepath.Join(b, f))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two writes of the same input", f)
		}
	}
	md, _ := os.ReadFile(filepath.Join(a, ReportFile))
	if !bytes.Contains(md, []byte("**Worst cutover:** m1 (vol1) on host-b — longest pause 5 s ≤ 5 s")) ||
		!bytes.Contains(md, []byte("Swimlane: [plots/swimlane-m1.png](plots/swimlane-m1.png).")) {
		t.Errorf("report.md's worst cutover does not name m1 on host-b with its swimlane:\n%s", md)
	}
	js, _ := os.ReadFile(filepath.Join(a, record.SummaryFile))
	// Created: nvme2 and nvme3 on both hosts at 8 s; removed: nvme0, nvme1 at 24 s.
	for _, want := range []string{`"controllers_created": 4`, `"controllers_removed": 4`, `"reconnects": 0`, `"net_created_max": 0`} {
		if !bytes.Contains(js, []byte(want)) {
			t.Errorf("summary.json lacks %s", want)
		}
	}
	page, _ := os.ReadFile(filepath.Join(a, HTMLReportFile))
	if !bytes.Contains(page, []byte(`data-plot="swimlane-m1"`)) || !bytes.Contains(page, []byte(`<table id="faults">`)) {
		t.Error("report.html lacks the swimlane figure or the faults table")
	}
}

// TestWriteWithoutSamplesSaysSo: the same run written without its
// timeline (a run past the host states a report keeps) has a worst cutover
// but no anatomy or swimlane, and report.md and report.html say why; with
// the timeline they do not.
func TestWriteWithoutSamplesSaysSo(t *testing.T) {
	plan, sum, tl := swimlaneFixture()
	const note = "No pause anatomy, swimlane or churn count: this report was drawn without the timeline"
	for _, c := range []struct {
		tl   []record.Line
		want bool
	}{{nil, true}, {tl, false}} {
		d := t.TempDir()
		if err := WriteRun(d, Input{Plan: plan, Summary: sum, Timeline: c.tl}); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{ReportFile, HTMLReportFile} {
			b, _ := os.ReadFile(filepath.Join(d, f))
			if got := bytes.Contains(b, []byte(note)); got != c.want || !bytes.Contains(b, []byte("Worst cutover:")) {
				t.Errorf("timeline given %v: %s says why there is no anatomy: %v, want %v", c.tl != nil, f, got, c.want)
			}
		}
	}
}

// TestMarkdownFitsAPullRequest: a run of 1,000 migrations, every one over
// the bound on three hosts, with 1,000 leaks and unattributed pauses,
// still gives a report.md under 60,000 characters that starts with the
// verdict and ends with the rerun command.
func TestMarkdownFitsAPullRequest(t *testing.T) {
	plan, sum := fixture()
	sum.Migrations, sum.LeakedControllers, sum.Unattributed = nil, nil, nil
	for i := 0; i < 1000; i++ {
		hs := map[string]record.HostPauses{}
		for _, h := range []string{"host-a", "host-b", "host-c"} {
			hs[h] = record.HostPauses{LongestPauseS: 6 + float64(i%7), Freezes: 3, Windows: [][2]float64{{1, 7}, {8, 9}, {10, 11}}}
		}
		id := fmt.Sprintf("mig-%04d", i)
		sum.Migrations = append(sum.Migrations, record.MigrationSummary{ID: id, NQN: "nqn.2023-02.io.simplyblock:vol1", Outcome: "Completed", Freezes: 3, Hosts: hs})
		sum.LeakedControllers = append(sum.LeakedControllers, record.Leak{Host: "host-a", Controller: fmt.Sprintf("nvme%d", i), NQN: "nqn.x", Address: "10.0.0.1:4420", State: "connecting", Kind: "not-live"})
		sum.Unattributed = append(sum.Unattributed, record.HostWindow{Host: "host-a", NQN: "nqn.x", Window: [2]float64{float64(i), float64(i) + 1}})
	}
	sum.Checks[6].Detail = strings.Repeat("a long detail; ", 2000)
	md := Markdown(plan, WithStats(sum))
	if len(md) >= 60000 {
		t.Errorf("report.md is %d characters, want < 60,000", len(md))
	}
	if !bytes.HasPrefix(md, []byte("# fiomig run report — FAIL\n\n**Verdict: fail**")) {
		t.Errorf("report.md does not start with the verdict:\n%.300s", md)
	}
	if !bytes.HasSuffix(md, []byte("Reproduce the run: `"+plan.Command+"`\n")) {
		t.Errorf("report.md does not end with the rerun command:\n…%s", md[len(md)-200:])
	}
	for _, want := range []string{"… and 3960 more", "900 more migration(s) within the bound are left out", "900 more left out here"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// BenchmarkSwimlane draws one cutover's swimlane as PNG and as SVG.
func BenchmarkSwimlane(b *testing.B) {
	plan, sum, tl := swimlaneFixture()
	c := Cutovers(sum, tl)[0]
	for b.Loop() {
		for _, f := range []string{"png", "svg"} {
			if _, err := SwimlaneBytes(plan, c, f); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCompare compares two sets of 2,300 cutovers (a 100-seed sweep
// of the default run each) with the default 2,000 bootstrap resamples.
func BenchmarkCompare(b *testing.B) {
	set := func(shift float64) RunSet {
		var s RunSet
		for seed := 0; seed < 100; seed++ {
			sum := record.Summary{Seed: int64(seed), Verdict: record.Pass}
			for i := 0; i < 23; i++ {
				p := 1.5 + float64((seed*23+i)%11)/10 + shift
				sum.Migrations = append(sum.Migrations, record.MigrationSummary{ID: fmt.Sprint(i), Outcome: record.PhaseCompleted,
					Hosts: map[string]record.HostPauses{"h": {LongestPauseS: p}}})
			}
			s.Runs = append(s.Runs, StoredRun{Summary: sum})
		}
		s.Sweep = true
		return s
	}
	base, nw := set(0), set(0.1)
	for b.Loop() {
		Compare(base, nw, DefaultCompareOptions)
	}
}

// TestSwimlaneBytesStable: with fio on both hosts and two states no legend
// knows, fifty renders of the same cutover are byte-identical (no map
// order leaks into the drawing; Go randomises a small map's iteration start
// per map, so an order leak between two hosts shows in a render with
// probability 1/8, and fifty renders miss it with probability < 0.2 %).
func TestSwimlaneBytesStable(t *testing.T) {
	plan, sum, tl := swimlaneFixture()
	sum.Fio.Volumes = append(sum.Fio.Volumes, record.FioVolume{Volume: "vol1", NQN: sum.Migrations[0].NQN, Host: "host-b",
		Gaps: []record.FioGap{{StartS: 14.1, EndS: 19.2, LengthS: 5.1}}})
	for i := range tl {
		if tl[i].Kind == record.KindSample && tl[i].T == 20 && len(tl[i].Controllers) > 1 {
			tl[i].Controllers[0].State, tl[i].Controllers[1].State = "frozen", "weird"
		}
	}
	c := Cutovers(sum, tl)[0]
	first, err := SwimlaneBytes(plan, c, "svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(first, []byte("frozen (unknown state)")) || !bytes.Contains(first, []byte("weird (unknown state)")) {
		t.Error("the legend does not name both unknown states")
	}
	for range 50 {
		if b, _ := SwimlaneBytes(plan, c, "svg"); !bytes.Equal(b, first) {
			t.Fatal("two renders of the same cutover differ")
		}
	}
}

// TestSwimlaneBound: WriteRun draws DefaultSwimlanes swimlanes by default,
// the worst cutovers (those not passing, then the longest pauses), and
// names how many it left out and how to draw them; Input.Swimlanes < 0
// draws every one, n draws n.
func TestSwimlaneBound(t *testing.T) {
	plan, one, tl := swimlaneFixture()
	sum := one
	sum.Migrations = nil
	n := DefaultSwimlanes + 2
	for i := range n {
		m := one.Migrations[0]
		m.ID = fmt.Sprintf("m%02d", i)
		hosts := map[string]record.HostPauses{}
		for h, hp := range m.Hosts {
			hp.LongestPauseS = float64(i%7) / 2 // m06 and m13 are the longest, then m05, m12, ...
			hosts[h] = hp
		}
		m.Hosts = hosts
		sum.Migrations = append(sum.Migrations, m)
	}
	drawn := func(dir string) []string {
		var ids []string
		for _, m := range sum.Migrations {
			if _, err := os.Stat(filepath.Join(dir, SwimlaneFile(m.ID, "png"))); err == nil {
				ids = append(ids, m.ID)
			}
		}
		return ids
	}
	for _, tc := range []struct {
		lanes   int
		want    int
		omitted string
	}{
		{0, DefaultSwimlanes, "2 swimlane(s) of the other migrations are not drawn (the 10 worst are; `fiomig report <run-dir> --swimlanes all` draws them)."},
		{-1, n, ""},
		{3, 3, "9 swimlane(s) of the other migrations are not drawn (the 3 worst are;"},
	} {
		dir := t.TempDir()
		if err := WriteRun(dir, Input{Plan: plan, Summary: sum, Timeline: tl, Swimlanes: tc.lanes}); err != nil {
			t.Fatal(err)
		}
		ids := drawn(dir)
		if len(ids) != tc.want {
			t.Errorf("Swimlanes %d: drew %v, want %d", tc.lanes, ids, tc.want)
		}
		// The left-out ones are the shortest pauses (0 s: m00 and m07).
		if tc.lanes == 0 && (slices.Contains(ids, "m00") || slices.Contains(ids, "m07")) {
			t.Errorf("the default drew %v: not the worst", ids)
		}
		md, err := os.ReadFile(filepath.Join(dir, ReportFile))
		if err != nil {
			t.Fatal(err)
		}
		if tc.omitted == "" && bytes.Contains(md, []byte("not drawn")) || tc.omitted != "" && !bytes.Contains(md, []byte(tc.omitted)) {
			t.Errorf("Swimlanes %d: report.md does not say %q:\n%s", tc.lanes, tc.omitted, md)
		}
		// report.html says it with the command as code, no literal
		// backticks (issue 27 item 9).
		page, err := os.ReadFile(filepath.Join(dir, HTMLReportFile))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(page, []byte("`")) || tc.lanes == 0 && !bytes.Contains(page, []byte("<code>fiomig report &lt;run-dir&gt; --swimlanes all</code> draws them")) {
			t.Errorf("Swimlanes %d: report.html has a literal backtick or lacks the command as code", tc.lanes)
		}
	}
}
