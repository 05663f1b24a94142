package reports

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"flag"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func fptr(v float64) *float64 { return &v }

// fixture is a small failing run: m1 within the bound on both hosts
// (Completed at 22.461937 s by the control plane), m2 over it on host-b
// (7.25 s) with a second freeze, a leaked controller, a missing endpoint
// (its check detail naming the full NQN), an unattributed pause; the record
// covers the settle period.
func fixture() (record.Plan, record.Summary) {
	plan := record.Plan{
		Tool: "fiomig", Scenario: "migrations", Backend: "sim", Seed: 42,
		Command: "fiomig run --seed 42 --migrations 2 --cutover-pause 7",
		Params: record.Params{Migrations: 2, SampleIntervalS: 0.25, PauseCritS: 5, FreezesAllowed: 1, SettleS: 60, AttributionMarginS: 30,
			Model: record.Model{Volumes: 2, Hosts: 2, ConsumersPerVolume: 2}},
		Topology: record.Topology{
			Nodes: []record.Node{{Name: "node-1", IP: "10.0.0.1"}, {Name: "node-2", IP: "10.0.0.2"}, {Name: "node-3", IP: "10.0.0.3"}},
			Hosts: []record.HostInfo{{Name: "host-a", HostNQN: "nqn.host-a"}, {Name: "host-b", HostNQN: "nqn.host-b"}},
			Volumes: []record.VolumeInfo{
				{Name: "vol1", NQN: "nqn.2023-02.io.simplyblock:vol1", NSIDs: []int{1}, Consumers: []string{"host-a", "host-b"}},
				{Name: "vol2", NQN: "nqn.2023-02.io.simplyblock:vol2", NSIDs: []int{1}, Consumers: []string{"host-a", "host-b"}},
			},
		},
	}
	sum := record.Summary{
		Seed: 42, Verdict: record.Fail,
		Checks: []record.CheckResult{
			{Name: "pause-bound", Verdict: record.Fail, Detail: "1 migration/host pair(s) over CUTOVER_PAUSE_CRIT_S: m2 on host-b paused 7.25 s > 5 s"},
			{Name: "freezes", Verdict: record.Fail, Detail: "m2: 2 freezes"},
			{Name: "leaked-controllers", Verdict: record.Fail, Detail: "1 leaked controller(s)"},
			{Name: "path-completeness", Verdict: record.Fail, Detail: "1 published endpoint(s) without a controller: host-b nqn.2023-02.io.simplyblock:vol2 10.0.0.3:4428"},
			{Name: "split-brain", Verdict: record.Pass, Detail: "none"},
			{Name: "served-after-cutover", Verdict: record.Pass, Detail: "ok"},
			{Name: "unattributed-pauses", Verdict: record.Fail, Detail: "1 pause window | outside"},
			{Name: "faults-landed", Verdict: record.Pass, Detail: "no fault injected"},
		},
		Migrations: []record.MigrationSummary{
			{ID: "m1", NQN: "nqn.2023-02.io.simplyblock:vol1", Outcome: "Completed", StartS: 10, EndS: 22.461937, CompletedS: fptr(22.461937), Freezes: 1,
				Hosts: map[string]record.HostPauses{
					"host-b": {LongestPauseS: 2.25, Freezes: 1, Windows: [][2]float64{{20, 22.25}}, CutoverS: fptr(22.25), CutoverLagS: fptr(-0.211937)},
					"host-a": {LongestPauseS: 2, Freezes: 1, Windows: [][2]float64{{20, 22}}, CutoverS: fptr(22), CutoverLagS: fptr(-0.461937)},
				}},
			{ID: "m2", NQN: "nqn.2023-02.io.simplyblock:vol2", Outcome: "Completed", StartS: 60, EndS: 80, CompletedS: fptr(80), Freezes: 2,
				Hosts: map[string]record.HostPauses{
					"host-a": {LongestPauseS: 3, Freezes: 1, Windows: [][2]float64{{70, 73}}, CutoverS: fptr(73)},
					"host-b": {LongestPauseS: 7.25, Freezes: 2, Windows: [][2]float64{{70, 77.25}, {78, 79}}},
				}},
		},
		Unattributed:      []record.HostWindow{{Host: "host-a", NQN: "nqn.2023-02.io.simplyblock:vol1", Window: [2]float64{130, 131.5}}},
		LeakedControllers: []record.Leak{{Host: "host-a", Controller: "nvme4", NQN: "nqn.2023-02.io.simplyblock:vol2", Address: "10.0.0.1:4420", State: "connecting", Kind: "not-live"}},
		MissingEndpoints:  []record.MissingEndpoint{{Host: "host-b", NQN: "nqn.2023-02.io.simplyblock:vol2", Endpoint: "10.0.0.3:4428"}},
		Coverage: &record.Coverage{LastSampleS: 140, SettleEndS: 140,
			Note: "the last sample at 140 s reaches the end of the settle period at 140 s (last terminal phase at 80 s + settle 60 s)"},
	}
	return plan, sum
}

// TestStats checks p50/p95/max against the Hyndman & Fan type 7 definition
// worked by hand: longest pauses 2, 2.25, 3, 7.25 (n = 4);
// p50 rank 0.5·3 = 1.5 → 2.25 + 0.5·(3 − 2.25) = 2.625;
// p95 rank 0.95·3 = 2.85 → 3 + 0.85·(7.25 − 3) = 6.6125.
func TestStats(t *testing.T) {
	_, sum := fixture()
	want := record.Stats{PercentileMethod: PercentileMethod, Pauses: 4, P50PauseS: 2.625, P95PauseS: 6.6125, MaxPauseS: 7.25}
	if d := cmp.Diff(want, Stats(sum)); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}
	empty := Stats(record.Summary{})
	if empty.Pauses != 0 || empty.MaxPauseS != 0 || empty.PercentileMethod == "" {
		t.Errorf("empty stats = %+v", empty)
	}
}

func TestMigrationVerdict(t *testing.T) {
	plan, sum := fixture()
	if v := MigrationVerdict(plan, sum.Migrations[0]); v != record.Pass {
		t.Errorf("m1 verdict %q, want pass", v)
	}
	if v := MigrationVerdict(plan, sum.Migrations[1]); v != record.Fail {
		t.Errorf("m2 verdict %q, want fail", v)
	}
	m := sum.Migrations[0]
	m.Freezes = 2
	if v := MigrationVerdict(plan, m); v != record.Fail {
		t.Errorf("m1 with 2 freezes: verdict %q, want fail", v)
	}
	// A window measured across a hole in host-b's samples (issue 24): 7.25 s
	// measured, of which 2 s seen paused, is not known to be over the bound;
	// 5.5 s seen is over it.
	m = sum.Migrations[1]
	m.Freezes = 1
	m.Hosts = map[string]record.HostPauses{"host-b": {LongestPauseS: 7.25, LongestSeenPauseS: fptr(2), Freezes: 1, Windows: [][2]float64{{70, 77.25}}}}
	if v := MigrationVerdict(plan, m); v != record.Inconclusive {
		t.Errorf("m2 with a window across a hole, 2 s seen: verdict %q, want inconclusive", v)
	}
	if over := OverBound(plan, record.Summary{Migrations: []record.MigrationSummary{m}}); len(over) != 0 {
		t.Errorf("over the bound: %q, want none", over)
	}
	m.Hosts["host-b"] = record.HostPauses{LongestPauseS: 7.25, LongestSeenPauseS: fptr(5.5), Freezes: 1, Windows: [][2]float64{{70, 77.25}}}
	if v := MigrationVerdict(plan, m); v != record.Fail {
		t.Errorf("m2 with a window across a hole, 5.5 s seen: verdict %q, want fail", v)
	}
}

// TestMarkdownGolden compares report.md with testdata/report.golden.md;
// regenerate with `go test ./reports -run Golden -update`.
func TestMarkdownGolden(t *testing.T) {
	plan, sum := fixture()
	checkGolden(t, "report.golden.md", Markdown(plan, WithStats(sum)))
}

// checkGolden compares got with testdata/<name>, first rewriting the file
// from got when -update is set.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", golden, d)
	}
}

// TestMarkdownNamesOverBound: the report names the migration and host over
// the bound with the measured seconds, the leaked controller and the
// missing endpoint, the seed, the command and the percentile method.
func TestMarkdownNamesOverBound(t *testing.T) {
	plan, sum := fixture()
	md := Markdown(plan, WithStats(sum))
	for _, want := range []string{
		"m2 (vol2) on host-b: longest pause 7.25 s > 5 s; windows [70, 77.25] [78, 79] s",
		"m2 (vol2): 2 freezes > 1 allowed; windows on host-b [70, 77.25] [78, 79] s",
		"| host-a | nvme4 | vol2 | 10.0.0.1:4420 | connecting | not-live |",
		"| host-b | vol2 | 10.0.0.3:4428 |",
		"| vol2 | vol2 | `nqn.2023-02.io.simplyblock:vol2` | 1 | host-a, host-b |",
		"- Seed: 42",
		"`fiomig run --seed 42 --migrations 2 --cutover-pause 7`",
		"Hyndman & Fan type 7",
		`1 pause window \| outside`,
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if bytes.Contains(md, []byte("m1 (vol1) on host-")) {
		t.Errorf("report.md names m1 over the bound; it is within")
	}
}

// TestWriteDeterministic: Write produces every file; the same input twice
// gives byte-identical files; the plot is a PNG and an SVG, and report.html
// embeds exactly the PNG written beside it.
func TestWriteDeterministic(t *testing.T) {
	plan, sum := fixture()
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := WriteRun(d, Input{Plan: plan, Summary: sum}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{record.SummaryFile, ReportFile, HTMLReportFile, JUnitFile, PauseSVGFile, PausePlotFile, ECDFPlotFile, ECDFSVGFile} {
		if !bytes.Equal(read(a, f), read(b, f)) {
			t.Errorf("%s differs between two writes of the same input", f)
		}
	}
	js := read(a, record.SummaryFile)
	for _, want := range []string{`"p95_pause_s": 6.6125`, `"verdict": "fail"`, "\n  \"seed\": 42,"} {
		if !bytes.Contains(js, []byte(want)) {
			t.Errorf("summary.json lacks %q", want)
		}
	}
	f, err := os.Open(filepath.Join(a, PausePlotFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("pause.png: %v", err)
	}
	if bnd := img.Bounds(); bnd.Dx() < 400 || bnd.Dy() < 200 {
		t.Errorf("pause.png is %v, want at least 400x200", bnd)
	}

	svg := read(a, PauseSVGFile)
	var root struct {
		XMLName xml.Name
		Width   string `xml:"width,attr"`
	}
	if err := xml.Unmarshal(svg, &root); err != nil || root.XMLName.Local != "svg" || root.Width != "576pt" {
		t.Errorf("pause.svg: root %v width %q err %v, want <svg width=\"576pt\"> (8 in)", root.XMLName, root.Width, err)
	}
	for _, want := range []string{"Longest pause per migration (seed 42)", "CUTOVER_PAUSE_CRIT_S = 5 s", ">m2<"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("pause.svg lacks %q", want)
		}
	}
	// report.html embeds the PNG written beside it (its text drawn with
	// gonum/plot's own fonts). html/template writes the attribute with "+"
	// as "&#43;": compare the value an HTML parser sees.
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(read(a, PausePlotFile))
	page := string(read(a, HTMLReportFile))
	_, src, ok := strings.Cut(page, `<img src="`)
	src, _, _ = strings.Cut(src, `"`)
	if !ok || html.UnescapeString(src) != uri {
		t.Errorf("report.html does not embed plots/pause.png as a data: URI image (src %.60q…)", src)
	}
	var suites junitSuites
	if err := xml.Unmarshal(read(a, JUnitFile), &suites); err != nil {
		t.Errorf("junit.xml: %v", err)
	} else if len(suites.Suites) != 1 || len(suites.Suites[0].Cases) != len(sum.Checks) {
		t.Errorf("junit.xml: %d suites, want 1 with %d testcases", len(suites.Suites), len(sum.Checks))
	}
}

func TestWriteEmptySummary(t *testing.T) {
	plan, _ := fixture()
	if err := Write(t.TempDir(), plan, record.Summary{Verdict: record.Inconclusive}); err != nil {
		t.Fatal(err)
	}
}

func TestWriteMissingDir(t *testing.T) {
	plan, sum := fixture()
	err := WriteRun(filepath.Join(t.TempDir(), "nope"), Input{Plan: plan, Summary: sum})
	if err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
}

func TestLongestPerMigration(t *testing.T) {
	_, sum := fixture()
	if d := cmp.Diff([]float64{2.25, 7.25}, LongestPerMigration(sum)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestMarkdownShortAndTruncatedRecord: report.md says in its header that the
// record is short (and truncated), not only stderr, and the leak and
// completeness sections do not claim clean hosts they did not judge.
func TestMarkdownShortAndTruncatedRecord(t *testing.T) {
	plan, sum := fixture()
	sum.LeakedControllers, sum.MissingEndpoints = nil, nil
	note := "the record is short: it ends with its last sample at 384.1 s, before the end of the settle period at 100080 s (last terminal phase at 80 s + settle 100000 s)"
	for i, c := range sum.Checks {
		if c.Name == "leaked-controllers" || c.Name == "path-completeness" {
			sum.Checks[i].Verdict, sum.Checks[i].Detail = record.Inconclusive, "not judged: "+note
		}
	}
	sum.Coverage = &record.Coverage{LastSampleS: 384.1, SettleEndS: 100080, Short: true, Note: note, TruncatedLine: true}
	md := string(Markdown(plan, WithStats(sum)))
	page, err := HTML(plan, WithStats(sum), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- Record: **SHORT** — " + note + "; leaked-controllers and path-completeness are not judged\n",
		"- Timeline: **TRUNCATED** — the last line of timeline.jsonl was cut off",
		"## Leaked controllers — inconclusive\n\nNothing listed; the check is inconclusive: not judged: the record is short",
		"## Path completeness — inconclusive\n\nNothing listed; the check is inconclusive: not judged: the record is short",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md, "None after the settle period.") || strings.Contains(md, "Every consumer host has a controller") {
		t.Errorf("report.md of a short record claims clean hosts:\n%s", md)
	}
	for _, want := range []string{
		`<li><b>Record</b> <span class="inconclusive">short</span> — ` + note,
		`<li><b>Timeline</b> <span class="inconclusive">truncated</span> — the last line of timeline.jsonl was cut off`,
		"<p>Nothing listed; the check is inconclusive: not judged: the record is short",
	} {
		if !strings.Contains(html.UnescapeString(string(page)), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestNQNLegend: tables show the part after the last ':'; NQNs sharing it,
// or without a ':', stay whole; replacing full NQNs in free text never
// takes a prefix of a longer NQN for the NQN itself.
func TestNQNLegend(t *testing.T) {
	plan := record.Plan{Topology: record.Topology{Volumes: []record.VolumeInfo{
		{Name: "v1", NQN: "nqn.2023-02.io.simplyblock:c1:lvol:aaaa", NSIDs: []int{1, 2}, Consumers: []string{"w1"}},
		{Name: "v2", NQN: "nqn.2023-02.io.simplyblock:c1:lvol:aaaa1"},
		{Name: "v3", NQN: "nqn.2023-02.io.simplyblock:c1:lvol:dup"},
		{Name: "v4", NQN: "nqn.2023-02.io.simplyblock:c2:lvol:dup"},
		{Name: "v5", NQN: "nocolon"},
	}}}
	sum := record.Summary{LeakedControllers: []record.Leak{{NQN: "nqn.other:zzz"}}}
	l := newNQNLegend(plan, sum)
	want := []LegendRow{
		{Volume: "v1", Short: "aaaa", NQN: "nqn.2023-02.io.simplyblock:c1:lvol:aaaa", NSIDs: "1, 2", Consumers: "w1"},
		{Volume: "v2", Short: "aaaa1", NQN: "nqn.2023-02.io.simplyblock:c1:lvol:aaaa1", NSIDs: "—", Consumers: "—"},
		{Volume: "v3", Short: "nqn.2023-02.io.simplyblock:c1:lvol:dup", NQN: "nqn.2023-02.io.simplyblock:c1:lvol:dup", NSIDs: "—", Consumers: "—"},
		{Volume: "v4", Short: "nqn.2023-02.io.simplyblock:c2:lvol:dup", NQN: "nqn.2023-02.io.simplyblock:c2:lvol:dup", NSIDs: "—", Consumers: "—"},
		{Volume: "v5", Short: "nocolon", NQN: "nocolon", NSIDs: "—", Consumers: "—"},
		{Volume: "—", Short: "zzz", NQN: "nqn.other:zzz", NSIDs: "—", Consumers: "—"},
	}
	if d := cmp.Diff(want, l.rows); d != "" {
		t.Errorf("legend (-want +got):\n%s", d)
	}
	got := l.text("h1 nqn.2023-02.io.simplyblock:c1:lvol:aaaa1 10.0.0.1:4420; h2 nqn.2023-02.io.simplyblock:c1:lvol:aaaa 10.0.0.2:4420")
	if w := "h1 aaaa1 10.0.0.1:4420; h2 aaaa 10.0.0.2:4420"; got != w {
		t.Errorf("text = %q, want %q", got, w)
	}
}

// TestCutoverTableRoundsControlPlaneTimes: the control plane's Completed
// time (microseconds) shows rounded to 0.1 s, and the lag is the host
// instant minus that shown value.
func TestCutoverTableRoundsControlPlaneTimes(t *testing.T) {
	plan, sum := fixture()
	md := string(Markdown(plan, WithStats(sum)))
	for _, want := range []string{"| m1 | host-a | 22.5 s | 22 s | -0.5 s |", "| m1 | host-b | 22.5 s | 22.25 s | -0.25 s |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md, "22.461937") {
		t.Errorf("report.md shows the control plane's microseconds")
	}
}
