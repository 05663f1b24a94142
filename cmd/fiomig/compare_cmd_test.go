package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// anyVerdict accepts any exit code of a run that reached a verdict (0, 1,
// 3): what these tests need is the verdict of one check, read with
// checkVerdict, not the run's overall verdict, which other checks (faults
// injected by default) may move.
const anyVerdict = -1

// runInto runs `fiomig run` with args into a fresh directory below parent
// (named name) and returns the run directory; want is the exit code, or
// anyVerdict.
func runInto(t *testing.T, parent, name string, want int, args ...string) string {
	t.Helper()
	out := filepath.Join(parent, name)
	var stdout, stderr bytes.Buffer
	code := dispatch(append([]string{"run", "--out", out}, args...), &stdout, &stderr)
	if (want == anyVerdict && code != exitPass && code != exitCheckFailed && code != exitInconclusive) || (want != anyVerdict && code != want) {
		t.Fatalf("fiomig run %v: exit %d, want %d\n%s\n%s", args, code, want, stdout.String(), stderr.String())
	}
	return runDirOf(t, out)
}

// readSummary reads dir's summary.json.
func readSummary(t *testing.T, dir string) record.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum record.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

// checkVerdict returns the verdict of check name in dir's summary.json.
func checkVerdict(t *testing.T, dir, name string) string {
	t.Helper()
	sum := readSummary(t, dir)
	for _, c := range sum.Checks {
		if c.Name == name {
			return c.Verdict
		}
	}
	t.Fatalf("%s: no check %s", dir, name)
	return ""
}

func compare(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := dispatch(append([]string{"compare"}, args...), &stdout, &stderr)
	if stderr.Len() > 0 {
		t.Logf("stderr: %s", stderr.String())
	}
	return code, stdout.String()
}

// small runs are enough for the gate: 6 migrations, short settle.
// smallRun is a short run on a clean system: --release-sources (fiomig's
// extra) releases each completed migration's source paths, which the fixed
// operator as sourced leaves reconnecting into "does not allow host" for
// ctrl_loss_tmo (target-log-pattern, short-settle leaks).
var smallRun = []string{"--migrations", "6", "--settle", "35", "--release-sources"}

// TestCompareGate: a run compared with itself exits 0 and says "no
// change"; a default run against one whose cutovers pause 7 s exits 1 and
// names pause-bound as the regressed check and the p95 interval; the
// output fits a pull request comment and ends with the rerun command.
func TestCompareGate(t *testing.T) {
	parent := t.TempDir()
	base := runInto(t, parent, "base", anyVerdict, smallRun...)
	slow := runInto(t, parent, "slow", exitCheckFailed, append(smallRun, "--cutover-pause", "7")...)
	if b, s := checkVerdict(t, base, "pause-bound"), checkVerdict(t, slow, "pause-bound"); b != record.Pass || s != record.Fail {
		t.Fatalf("pause-bound: base %s, slow %s; want pass and fail", b, s)
	}

	code, md := compare(t, base, base)
	if code != exitPass {
		t.Fatalf("compare of a run with itself: exit %d, want 0\n%s", code, md)
	}
	if !strings.Contains(md, "# fiomig compare — no change") || strings.Contains(md, "regressed") {
		t.Errorf("compare of a run with itself does not say no change:\n%s", md)
	}

	code, md = compare(t, base, slow)
	if code != exitCheckFailed {
		t.Fatalf("compare default vs --cutover-pause 7: exit %d, want 1\n%s", code, md)
	}
	for _, want := range []string{"# fiomig compare — REGRESSION", "- check pause-bound: pass → fail",
		"| pause-bound | 1 pass | 1 fail | **regressed** |", "wholly above --pause-threshold 0.5 s"} {
		if !strings.Contains(md, want) {
			t.Errorf("compare output lacks %q:\n%s", want, md)
		}
	}
	if len(md) >= 60000 {
		t.Errorf("compare output is %d characters, want < 60,000", len(md))
	}
	if last := md[strings.LastIndex(strings.TrimRight(md, "\n"), "\n")+1:]; !strings.HasPrefix(last, "`fiomig compare "+base+" "+slow) {
		t.Errorf("last line is %q, want the rerun command", last)
	}
	// The reverse direction improves the pauses: neither pause-bound nor
	// the p95 is a regression (other checks may differ between the runs).
	if _, md := compare(t, slow, base); strings.Contains(md, "check pause-bound") || strings.Contains(md, "- pause p95") {
		t.Errorf("compare --cutover-pause 7 vs default names a pause regression:\n%s", md)
	}
	// A threshold above the difference lets the pause figures pass, but the
	// check still regressed.
	if code, md := compare(t, "--pause-threshold", "100", base, slow); code != exitCheckFailed || strings.Contains(md, "- pause p95") {
		t.Errorf("--pause-threshold 100: exit %d, want 1 from the check alone\n%s", code, md)
	}
}

// TestCompareSweeps: directories holding several run directories are
// compared as sweeps: verdict counts per check, pooled quantiles, and the
// seeds whose verdict changed.
func TestCompareSweeps(t *testing.T) {
	parent := t.TempDir()
	sweepA, sweepB := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	for _, seed := range []string{"1", "2", "3"} {
		runInto(t, sweepA, "seed-"+seed, anyVerdict, append(smallRun, "--seed", seed)...)
		want, args := anyVerdict, append(smallRun, "--seed", seed)
		if seed == "2" {
			want, args = exitCheckFailed, append(args, "--cutover-pause", "7")
		}
		runInto(t, sweepB, "seed-"+seed, want, args...)
	}
	code, md := compare(t, sweepA, sweepA)
	if code != exitPass || !strings.Contains(md, "no change") || !strings.Contains(md, "sweep `"+sweepA+"` (3 runs: ") {
		t.Errorf("sweep with itself: exit %d\n%s", code, md)
	}
	code, md = compare(t, sweepA, sweepB)
	if code != exitCheckFailed {
		t.Fatalf("sweep vs sweep with one slow seed: exit %d, want 1\n%s", code, md)
	}
	for _, want := range []string{"| pause-bound | 3 pass | 2 pass, 1 fail | **regressed** |", "check pause-bound: fails in 1 of 3 runs, was 0 of 3 runs"} {
		if !strings.Contains(md, want) {
			t.Errorf("sweep compare lacks %q:\n%s", want, md)
		}
	}
	// Pooled over the 3 seeds' 6 migrations of one consumer host each: the
	// cutovers, and the migrations that never cut over left out.
	m := regexp.MustCompile(`base n = (\d+), new n = (\d+) \(migrations without a cutover left out: base (\d+), new (\d+)\)`).FindStringSubmatch(md)
	if m == nil {
		t.Fatalf("sweep compare does not give n and the migrations left out:\n%s", md)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	if n(1)+n(3) != 18 || n(2)+n(4) != 18 {
		t.Errorf("sweep compare: %s; want each side's cutovers and left-out migrations to make 18", m[0])
	}
}

// TestCompareSweepJSON: a sweep directory with sweep.json (fiomig sweep's
// layout: seed-<N>/ run directories) is read from the seeds it lists; an
// unfinished hidden .run-seed-N directory and a seed without a directory
// are not runs.
func TestCompareSweepJSON(t *testing.T) {
	parent := t.TempDir()
	sweep := filepath.Join(parent, "sweep-1")
	for _, seed := range []string{"1", "2"} {
		d := runInto(t, parent, "tmp-"+seed, anyVerdict, append(smallRun, "--seed", seed)...)
		if err := os.MkdirAll(sweep, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(d, filepath.Join(sweep, "seed-"+seed)); err != nil {
			t.Fatal(err)
		}
	}
	// A leftover of an interrupted seed: would be a third run if read.
	runInto(t, filepath.Join(sweep, ".run-seed-3"), "x", exitCheckFailed, append(smallRun, "--seed", "3", "--cutover-pause", "7")...)
	sw := `{"format": 1, "seeds": [{"seed": 1, "verdict": "pass", "dir": "seed-1"}, {"seed": 2, "verdict": "pass", "dir": "seed-2"}, {"seed": 4, "verdict": "error", "dir": ""}]}`
	if err := os.WriteFile(filepath.Join(sweep, "sweep.json"), []byte(sw), 0o644); err != nil {
		t.Fatal(err)
	}
	code, md := compare(t, sweep, sweep)
	if code != exitPass || !strings.Contains(md, "(2 runs: ") || strings.Contains(md, "(3 runs") {
		t.Errorf("sweep.json sweep with itself: exit %d, want 0 over 2 runs\n%s", code, md)
	}
	if err := os.WriteFile(filepath.Join(sweep, "sweep.json"), []byte("{nope"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := compare(t, sweep, sweep); code != exitUsage {
		t.Errorf("malformed sweep.json: exit %d, want 2", code)
	}
}

func TestCompareUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{}, {dir}, {dir, dir}, {"--resamples", "5", dir, dir}, {"--pause-threshold", "-1", dir, dir}} {
		if code, _ := compare(t, args...); code != exitUsage {
			t.Errorf("compare %v: exit %d, want 2", args, code)
		}
	}
}

// seedWindow is a freeze window as the seed harness's rules compute it.
type seedWindow struct{ start, end float64 }

// judgeSeedCSV applies the seed harness's ANA rules as docs/sources.md §8
// states them to one ana/<migration>.csv, written here from that text
// alone: group rows by node and ts; a node's expected NSIDs are those its
// rows name; a sample is frozen when some expected NSID has no row whose
// controller is live and whose ana_state is optimized, non-optimized or
// nonoptimized; a window runs from the first frozen sample to the first
// recovered one, zero-length windows dropped; per migration the longest
// window (ana_stall_s) and the window count (ana_freezes) are the max over
// nodes. A window still frozen at a node's last sample is closed there
// (the seed's text does not say; fiomig does the same and flags it open).
func judgeSeedCSV(t *testing.T, path string) (stall float64, freezes int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if strings.Join(rows[0], ",") != "ts,node,phase,address,role,ctrl_state,nsid,ana_state" {
		t.Fatalf("%s: header %v", path, rows[0])
	}
	type sample struct {
		ts     float64
		served map[string]bool
	}
	nodes := map[string][]*sample{}
	expected := map[string]map[string]bool{}
	for _, r := range rows[1:] {
		ts, err := strconv.ParseFloat(r[0], 64)
		if err != nil {
			t.Fatalf("%s: ts %q: %v", path, r[0], err)
		}
		node := r[1]
		ss := nodes[node]
		if len(ss) == 0 || ss[len(ss)-1].ts != ts {
			ss = append(ss, &sample{ts: ts, served: map[string]bool{}})
			nodes[node] = ss
		}
		if expected[node] == nil {
			expected[node] = map[string]bool{}
		}
		nsid, state, ana := r[6], r[5], r[7]
		if nsid == "" {
			continue
		}
		expected[node][nsid] = true
		if state == "live" && (ana == "optimized" || ana == "non-optimized" || ana == "nonoptimized") {
			ss[len(ss)-1].served[nsid] = true
		}
	}
	for node, ss := range nodes {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].ts < ss[j].ts })
		var ws []seedWindow
		frozenFrom := math.NaN()
		for _, s := range ss {
			frozen := len(expected[node]) == 0
			for n := range expected[node] {
				if !s.served[n] {
					frozen = true
				}
			}
			switch {
			case frozen && math.IsNaN(frozenFrom):
				frozenFrom = s.ts
			case !frozen && !math.IsNaN(frozenFrom):
				ws = append(ws, seedWindow{frozenFrom, s.ts})
				frozenFrom = math.NaN()
			}
		}
		if !math.IsNaN(frozenFrom) {
			ws = append(ws, seedWindow{frozenFrom, ss[len(ss)-1].ts})
		}
		n := 0
		for _, w := range ws {
			if w.end-w.start <= 0 {
				continue
			}
			n++
			stall = math.Max(stall, w.end-w.start)
		}
		freezes = max(freezes, n)
	}
	return stall, freezes
}

// TestExportSeedCSVJudgedBySeedRules: fiomig export --format seed-csv
// writes ana/<migration>.csv for every migration, and the seed harness's
// rules (judgeSeedCSV) give each migration the same longest pause and
// freeze count as fiomig's summary.json for every migration that cut over
// — on a default-shaped run, one
// whose cutovers pause 7 s, and one with two consumer hosts per volume
// sampled every 0.3 s.
func TestExportSeedCSVJudgedBySeedRules(t *testing.T) {
	parent := t.TempDir()
	for i, args := range [][]string{
		smallRun,
		append(smallRun, "--cutover-pause", "7", "--seed", "3"),
		append(smallRun, "--consumers-per-volume", "2", "--seed", "5", "--sample-interval", "0.3"),
	} {
		dir := runInto(t, parent, fmt.Sprint("run", i), anyVerdict, args...)
		out := filepath.Join(parent, fmt.Sprint("export", i))
		var stdout, stderr bytes.Buffer
		args := []string{"export", dir, "--out", out} // seed-csv, the only format, is the default (issue 27 item 9)
		if i%2 == 1 {
			args = append(args, "--format", "seed-csv")
		}
		if code := dispatch(args, &stdout, &stderr); code != exitPass {
			t.Fatalf("export: exit %d\n%s", code, stderr.String())
		}
		sum := readSummary(t, dir)
		if len(sum.Migrations) != 6 {
			t.Fatalf("run %d: %d migrations, want 6", i, len(sum.Migrations))
		}
		for _, m := range sum.Migrations {
			if m.NoCutover {
				// fiomig charges no pause to a migration that never cut
				// over (issue 27.2); the seed harness's rules charge every
				// window in its span.
				continue
			}
			if stalled(sum, m.NQN) {
				// fiomig counts a silent stall of the volume's path as
				// paused (docs/host-model.md "Silent stalls"); the seed
				// harness's rules read the samples only, which show the
				// stalled path live and optimized.
				continue
			}
			stall, freezes := judgeSeedCSV(t, filepath.Join(out, reports.SeedCSVDir, m.ID+".csv"))
			longest := 0.0
			for _, hp := range m.Hosts {
				longest = math.Max(longest, hp.LongestPauseS)
			}
			if math.Abs(stall-longest) > 1e-9 || freezes != m.Freezes {
				t.Errorf("run %d %s: seed rules give longest %v s, %d freeze(s); fiomig's summary %v s, %d", i, m.ID, stall, freezes, longest, m.Freezes)
			}
		}
	}
}

// stalled reports whether the run saw a silent stall of a path of nqn.
func stalled(sum record.Summary, nqn string) bool {
	for _, st := range sum.Stalls {
		if st.NQN == nqn {
			return true
		}
	}
	return false
}

func TestExportUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"export"}, {"export", dir}, {"export", dir, "--format", "json", "--out", dir}, {"export", dir, "--format", "seed-csv"}, {"export", dir, "--out", dir}} {
		var stdout, stderr bytes.Buffer
		if code := dispatch(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestReportRejudges: fiomig report --pause-crit 3 --freezes-allowed 2
// re-judges a stored default run without rerunning it: the ~2 s cutovers
// that passed a 5 s bound fail a 1.5 s one, report.md says which bounds
// judged and how to re-judge, plan.json is unchanged, and judging again
// with the run's own bounds passes.
func TestReportRejudges(t *testing.T) {
	dir := runInto(t, t.TempDir(), "run", anyVerdict, smallRun...)
	if v := checkVerdict(t, dir, "pause-bound"); v != record.Pass {
		t.Fatalf("pause-bound %s before re-judging, want pass", v)
	}
	planBefore, err := os.ReadFile(filepath.Join(dir, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"report", dir, "--pause-crit", "1.5", "--freezes-allowed", "2"}, &stdout, &stderr); code != exitCheckFailed || checkVerdict(t, dir, "pause-bound") != record.Fail {
		t.Fatalf("report --pause-crit 1.5: exit %d, pause-bound %s; want 1 and fail\n%s\n%s", code, checkVerdict(t, dir, "pause-bound"), stdout.String(), stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(dir, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CUTOVER_PAUSE_CRIT_S = 1.5 s", "CUTOVER_FREEZES_ALLOWED = 2 (the run used 5 s and 1)",
		"Re-judge: `fiomig report " + dir + " --pause-crit 1.5 --freezes-allowed 2`"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, record.PlanFile)); !bytes.Equal(after, planBefore) {
		t.Error("report --pause-crit rewrote plan.json")
	}
	stdout.Reset()
	if dispatch([]string{"report", dir, "--pause-crit", "3", "--freezes-allowed", "2", "--quiet"}, &stdout, &stderr); checkVerdict(t, dir, "pause-bound") != record.Pass {
		t.Errorf("report --pause-crit 3 --freezes-allowed 2: pause-bound %s, want pass\n%s", checkVerdict(t, dir, "pause-bound"), stdout.String())
	}
	stdout.Reset()
	if dispatch([]string{"report", dir, "--quiet"}, &stdout, &stderr); checkVerdict(t, dir, "pause-bound") != record.Pass {
		t.Errorf("report with the run's bounds: pause-bound %s, want pass\n%s", checkVerdict(t, dir, "pause-bound"), stdout.String())
	}
	for _, args := range [][]string{{"report", dir, "--pause-crit", "0"}, {"report", dir, "--freezes-allowed", "-1"}, {"report", dir, "--pause-crit", "Inf"}} {
		if code := dispatch(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestRejudgedRunComparesAndShrinks (issue 27 item 4): re-judged bounds
// travel with the run. A run re-judged into --out by a stricter
// --pause-crit is a run directory compare takes; compare says the bounds
// differ and names the single runs' verdicts (not "fails in the run, was
// no run"); shrink reruns it by the re-judged bound and its command names
// it; a run whose record was lost (an empty timeline, re-judged) against a
// good one is inconclusive (exit 3), never "no regression"; and an error
// is prefixed once ("compare: base: ...", not "compare: base: compare:").
func TestRejudgedRunComparesAndShrinks(t *testing.T) {
	parent := t.TempDir()
	base := runInto(t, parent, "base", anyVerdict, "--migrations", "2", "--settle", "35", "--faults", "none")
	if v := checkVerdict(t, base, "pause-bound"); v != record.Pass {
		t.Fatalf("pause-bound %s in the base run, want pass", v)
	}
	strict := filepath.Join(parent, "strict")
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"report", base, "--pause-crit", "1", "--out", strict, "--quiet"}, &stdout, &stderr); code != exitCheckFailed {
		t.Fatalf("report --pause-crit 1 --out: exit %d, want 1\n%s\n%s", code, stdout.String(), stderr.String())
	}

	code, md := compare(t, base, strict)
	if code != exitCheckFailed {
		t.Fatalf("compare base vs its re-judged --out directory: exit %d, want 1\n%s", code, md)
	}
	for _, want := range []string{"- check pause-bound: pass → fail (the sides were judged by different bounds",
		"- **Bounds differ**: base judged by --pause-crit 5 s --freezes-allowed 1, new by --pause-crit 1 s --freezes-allowed 1 (re-judged: fiomig report " + base + " --pause-crit 1 --freezes-allowed 1)"} {
		if !strings.Contains(md, want) {
			t.Errorf("compare output lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "was no run") {
		t.Errorf("compare of two single runs speaks of runs as fractions:\n%s", md)
	}

	stdout.Reset()
	stderr.Reset()
	shrinkOut := t.TempDir()
	if code := dispatch([]string{"shrink", strict, "--out", shrinkOut}, &stdout, &stderr); code != exitPass {
		t.Fatalf("shrink of the re-judged run: exit %d, want 0\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "--pause-crit=1") || !strings.Contains(stderr.String(), "judged by the bounds it was re-judged by: --pause-crit 1") {
		t.Errorf("shrink does not rerun by the re-judged bound:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}

	lost := filepath.Join(parent, "lost")
	if err := os.MkdirAll(lost, 0o755); err != nil {
		t.Fatal(err)
	}
	// The plan of a run whose record was lost before it was judged (a
	// finished run's summary.json is not rewritten from a lost record:
	// TestReportKeepsAFinishedRunsSummary).
	b, err := os.ReadFile(filepath.Join(base, record.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, lost, record.PlanFile, string(b))
	writeFile(t, lost, record.TimelineFile, "")
	if code := dispatch([]string{"report", lost, "--quiet"}, &stdout, &stderr); code != exitInconclusive {
		t.Fatalf("report of an empty timeline: exit %d, want 3", code)
	}
	code, md = compare(t, base, lost)
	if code != exitInconclusive || !strings.HasPrefix(md, "# fiomig compare — INCONCLUSIVE") || !strings.Contains(md, "- check pause-bound: inconclusive, was pass") {
		t.Errorf("compare of a good run with an empty record: exit %d, want 3 and INCONCLUSIVE\n%s", code, md)
	}

	stderr.Reset()
	if code := dispatch([]string{"compare", filepath.Join(parent, "nonexistent"), base}, &stdout, &stderr); code != exitUsage ||
		!strings.HasPrefix(stderr.String(), "fiomig compare: base: stat ") {
		t.Errorf("compare of a missing directory: exit %d, stderr %q; want 2 and one prefix", code, stderr.String())
	}
}
