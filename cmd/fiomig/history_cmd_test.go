package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/ci"
	"github.com/fiomig/fiomig/history"
	"github.com/fiomig/fiomig/internal/pgtest"
)

// runOnce runs fiomig run with args into a fresh directory under out and
// returns the run directory.
func runOnce(t *testing.T, out string, args ...string) string {
	t.Helper()
	before, _ := filepath.Glob(filepath.Join(out, "fio-mig-*"))
	var stdout, stderr bytes.Buffer
	code := dispatch(append([]string{"run", "--release-sources", "--faults", "none", "--migrations", "3", "--out", out}, args...), &stdout, &stderr)
	if code != exitPass && code != exitCheckFailed {
		t.Fatalf("fiomig run %v: exit %d\n%s\n%s", args, code, stdout.String(), stderr.String())
	}
	after, _ := filepath.Glob(filepath.Join(out, "fio-mig-*"))
	for _, d := range after {
		if !slices.Contains(before, d) {
			return d
		}
	}
	t.Fatalf("fiomig run %v left no run directory", args)
	return ""
}

// series runs 30 runs, run i (1-based) with seed (i mod 3) + 1 so that
// seeds repeat, the cutover pause 2 s and, from run shiftAt on (0: never),
// 7 s (every window 7 s ± 25 %: over the 5 s bound), returning the run
// directories in order and their commit labels (c1, then c2 from the
// shift on).
func series(t *testing.T, shiftAt int) (dirs, commits []string) {
	out := t.TempDir()
	for i := 1; i <= 30; i++ {
		pause, commit := "2", "c1"
		if shiftAt > 0 && i >= shiftAt {
			pause, commit = "7", "c2"
		}
		dirs = append(dirs, runOnce(t, out, "--seed", strconv.Itoa(i%3+1), "--cutover-pause", pause))
		commits = append(commits, commit)
	}
	return dirs, commits
}

// TestHistoryPlantedShift is the acceptance of fiomig history: 30 runs
// whose cutover pause steps from 2 s to 7 s at run 20, and 30 runs that
// stay at 2 s, added with `fiomig history add` to SQLite and to a real
// PostgreSQL server; `changes` flags the shifted series at run 20 ± 1 on
// every pause figure and the over-bound fraction, and the flat one on no
// figure; `trend` writes a plot per figure naming the change; `flakes`
// finds no flake among repeats of one commit and seed (the simulator is
// deterministic) and, grouping by seed across commits, exactly the three
// flips of pause-bound the shift makes (one per seed); and `compare
// --history` finds the regression of a 7 s run against the last 5 runs.
func TestHistoryPlantedShift(t *testing.T) {
	shifted, shiftedCommits := series(t, 20)
	flat, flatCommits := series(t, 0)
	stores := map[string]func(t *testing.T, name string) string{
		"sqlite": func(t *testing.T, name string) string { return filepath.Join(t.TempDir(), name+".db") },
		"postgres": func(t *testing.T, name string) string {
			return pgtest.Start(t).Database(t, name)
		},
	}
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			for _, c := range []struct {
				name    string
				dirs    []string
				commits []string
				shift   bool
			}{{"shifted", shifted, shiftedCommits, true}, {"flat", flat, flatCommits, false}} {
				db := stores[kind](t, c.name)
				for i, d := range c.dirs {
					historyCLI(t, exitPass, "add", "--db", db, "--commit", c.commits[i], "--branch", "main", d)
				}
				// A second add of the same directories changes nothing.
				out := historyCLI(t, exitPass, append([]string{"add", "--db", db, "--commit", "c1"}, c.dirs[:3]...)...)
				if strings.Count(out, "already in the history") != 3 {
					t.Errorf("%s: re-adding 3 runs:\n%s", c.name, out)
				}
				ctx := context.Background()
				st, err := history.Open(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				entries, err := st.Entries(ctx, history.Filter{Branch: "main"})
				st.Close()
				if err != nil || len(entries) != 30 {
					t.Fatalf("%s: %d entries, %v", c.name, len(entries), err)
				}
				for i, e := range entries {
					if e.ID != filepath.Base(c.dirs[i]) {
						t.Fatalf("%s: entry %d is %s, want %s (series order)", c.name, i+1, e.ID, filepath.Base(c.dirs[i]))
					}
				}
				for _, fig := range []string{ci.FigPauseP50, ci.FigPauseP95, ci.FigPauseMax, ci.FigOverBound, ci.FigLeaked, ci.FigFailedRuns} {
					rep, err := history.Changes(entries, fig, history.DefaultChangeOptions)
					if err != nil {
						t.Fatal(err)
					}
					var at []int
					for _, ch := range rep.Changes {
						at = append(at, ch.Position)
					}
					stepped := c.shift && fig != ci.FigLeaked
					switch {
					case stepped && (len(at) != 1 || at[0] < 19 || at[0] > 21):
						t.Errorf("%s %s: change points at runs %v, want one at 20 ± 1 (values %v)", c.name, fig, at, rep.Points)
					case !stepped && len(at) != 0:
						t.Errorf("%s %s: change points at runs %v on a series with no shift (values %v)", c.name, fig, at, rep.Points)
					}
				}
				out = historyCLI(t, exitPass, "changes", "--db", db, "--figure", ci.FigPauseP50)
				if want := filepath.Base(c.dirs[19]); c.shift && !strings.Contains(out, "| "+want+" | 20 |") {
					t.Errorf("%s: fiomig history changes does not name run 20 (%s):\n%s", c.name, want, out)
				}
				t.Logf("%s on %s:\n%s", c.name, kind, out)
				if !c.shift && !strings.Contains(out, "No change point over 30 runs.") {
					t.Errorf("%s: fiomig history changes:\n%s", c.name, out)
				}

				trendDir := t.TempDir()
				out = historyCLI(t, exitPass, "trend", "--db", db, "--out", trendDir)
				for _, fig := range history.DefaultFigures {
					for _, ext := range []string{".png", ".svg"} {
						if st, err := os.Stat(filepath.Join(trendDir, "trend-"+fig+ext)); err != nil || st.Size() < 1000 {
							t.Errorf("%s: trend-%s%s: %v", c.name, fig, ext, err)
						}
					}
				}
				if c.shift && !strings.Contains(out, filepath.Base(c.dirs[19])+" (#20: ") {
					t.Errorf("%s: trend table does not name the change:\n%s", c.name, out)
				}

				fl, err := history.Flakes(entries, history.ByCommitSeeds)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fl {
					if f.Flips != 0 {
						t.Errorf("%s: %s flipped %d times among runs of one commit and seed: %+v", c.name, f.Check, f.Flips, f)
					}
				}
				bySeeds, _ := history.Flakes(entries, history.BySeeds)
				for _, f := range bySeeds {
					want := 0
					if c.shift && (f.Check == checks.CheckPauseBound) {
						want = 3
					}
					if f.Transitions != 27 || (f.Flips != want && f.Check == checks.CheckPauseBound) {
						t.Errorf("%s: by seeds %s: %d flips of %d transitions, want %d of 27", c.name, f.Check, f.Flips, f.Transitions, want)
					}
				}
				out = historyCLI(t, exitPass, "flakes", "--db", db, "--by", "seeds")
				t.Logf("%s on %s:\n%s", c.name, kind, out)
				if c.shift && !strings.Contains(out, "| pause-bound | 3 | 27 | 0.111 | [0.039, 0.281] |") {
					t.Errorf("%s: flakes table:\n%s", c.name, out)
				}

				// compare --history: a 7 s run against the last 5 of the
				// flat series is a regression; the flat series' own last
				// run against the 5 before it is not.
				if !c.shift {
					var stdout, stderr bytes.Buffer
					newRun := runOnce(t, t.TempDir(), "--seed", "2", "--cutover-pause", "7")
					if code := dispatch([]string{"compare", "--history", db, "--last", "5", newRun}, &stdout, &stderr); code != exitCheckFailed ||
						!strings.Contains(stdout.String(), "REGRESSION") || !strings.Contains(stdout.String(), "last 5 run(s)") {
						t.Errorf("compare --history of a 7 s run: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
					}
					stdout.Reset()
					if code := dispatch([]string{"compare", "--history", db, "--last", "5", c.dirs[29]}, &stdout, &stderr); code != exitPass {
						t.Errorf("compare --history of the last flat run against the 5 before it: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
					}
				}
			}
		})
	}
}

// historyCLI runs fiomig history args and wants exit code want.
func historyCLI(t *testing.T, want int, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := dispatch(append([]string{"history"}, args...), &stdout, &stderr); code != want {
		t.Fatalf("fiomig history %v: exit %d, want %d\n%s\n%s", args, code, want, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestRunArtifacts is the acceptance of the CI outputs: fiomig run with
// ARTIFACTS=DIR for two seeds writes started.json, finished.json and
// artifacts/junit_*.xml whose testcase names are identical, with the
// pause properties parsing as numbers; GITHUB_STEP_SUMMARY gets appended.
func TestRunArtifacts(t *testing.T) {
	var names [2][]string
	for i, seed := range []string{"1", "2"} {
		art, step := t.TempDir(), filepath.Join(t.TempDir(), "summary.md")
		t.Setenv("ARTIFACTS", art)
		t.Setenv("GITHUB_STEP_SUMMARY", step)
		runOnce(t, t.TempDir(), "--seed", seed, "--faults", "default", "--migrations", "5")
		for _, f := range []string{"started.json", "finished.json", "metrics.txt"} {
			if _, err := os.Stat(filepath.Join(art, f)); err != nil {
				t.Errorf("seed %s: %v", seed, err)
			}
		}
		junits, _ := filepath.Glob(filepath.Join(art, "artifacts", "junit_*.xml"))
		if len(junits) != 1 {
			t.Fatalf("seed %s: junit files %v", seed, junits)
		}
		b, _ := os.ReadFile(junits[0])
		var doc struct {
			Cases []struct {
				Name  string `xml:"name,attr"`
				Props []struct {
					Name  string `xml:"name,attr"`
					Value string `xml:"value,attr"`
				} `xml:"properties>property"`
			} `xml:"testsuite>testcase"`
		}
		if err := xml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		pauseProps := 0
		for _, c := range doc.Cases {
			names[i] = append(names[i], c.Name)
			for _, p := range c.Props {
				if strings.HasPrefix(p.Name, "pause_") || p.Name == "longest_pause_seconds" {
					pauseProps++
					if _, err := strconv.ParseFloat(p.Value, 64); err != nil {
						t.Errorf("seed %s: %s %s = %q: %v", seed, c.Name, p.Name, p.Value, err)
					}
				}
			}
		}
		if pauseProps < 4 {
			t.Errorf("seed %s: %d pause properties", seed, pauseProps)
		}
		if s, err := os.ReadFile(step); err != nil || !bytes.HasPrefix(s, []byte("### fiomig run `fio-mig-")) {
			t.Errorf("seed %s: step summary %q, %v", seed, s, err)
		}
	}
	if !slices.Equal(names[0], names[1]) || len(names[0]) == 0 {
		t.Errorf("testcase names differ between seeds:\n%v\n%v", names[0], names[1])
	}
}

// TestInterruptedRunArtifacts: a run stopped by SIGTERM with ARTIFACTS
// set still writes the CI outputs of what it recorded, finished.json
// saying ABORTED.
func TestInterruptedRunArtifacts(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: runs a fiomig process in wall time (-short)")
	}
	out, art := t.TempDir(), t.TempDir()
	t.Setenv("ARTIFACTS", art)
	cmd, log := fiomigProcess(t, out, "run", "--out", out, "--migrations", "23", "--sample-interval", "0.001")
	waitTimelineLines(t, out, 2000, 60*time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd, 60*time.Second); code != exitInterrupted {
		t.Fatalf("exit %d, want 130:\n%s", code, log)
	}
	b, err := os.ReadFile(filepath.Join(art, "finished.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !strings.Contains(string(b), `"result": "ABORTED"`) || !strings.Contains(string(b), `"passed": false`) {
		t.Errorf("finished.json of an interrupted run:\n%s", b)
	}
	if junits, _ := filepath.Glob(filepath.Join(art, "artifacts", "junit_*.xml")); len(junits) != 1 {
		t.Errorf("junit files %v", junits)
	}
}

// TestHistoryReadersNeedAStore: the read-only verbs and compare --history
// given a store that does not exist (a mistyped --db) exit 2 naming the
// path and leave no file behind, instead of creating an empty store and
// printing nothing; history add creates it.
func TestHistoryReadersNeedAStore(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "nightly", "histroy.db")
	for _, verb := range []string{"runs", "trend", "flakes", "changes"} {
		code, stdout, stderr := runCLI("history", verb, "--db", typo, "--out", filepath.Join(dir, "trend"))
		if code != exitUsage || !strings.Contains(stderr, "no history store at "+typo) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("history %s --db %s: exit %d, stderr %q, stdout %q; want %d, one line naming the path", verb, typo, code, stderr, stdout, exitUsage)
		}
	}
	run := runOnce(t, filepath.Join(dir, "out"))
	if code, _, stderr := runCLI("compare", "--history", typo, run); code != exitUsage || !strings.Contains(stderr, "no history store at "+typo) {
		t.Errorf("compare --history %s: exit %d, stderr %q", typo, code, stderr)
	}
	if _, err := os.Stat(filepath.Dir(typo)); !os.IsNotExist(err) {
		t.Errorf("a reader created %s (%v)", filepath.Dir(typo), err)
	}
	if code, _, stderr := runCLI("history", "add", "--db", typo, run); code != exitPass {
		t.Fatalf("history add: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := runCLI("history", "runs", "--db", typo); code != exitPass || !strings.Contains(stdout, "1 run(s)") {
		t.Errorf("history runs after add: exit %d, %q, %q", code, stdout, stderr)
	}
}

// TestHistoryMessagesSayItOnce: an error names the verb once, with no
// stray space when there is none: "fiomig history add: stat X: ...", not
// "fiomig history add: history add: ..."; "fiomig history: name a verb".
func TestHistoryMessagesSayItOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	db := filepath.Join(t.TempDir(), "h.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"history", "add", "--db", db, missing}, "fiomig history add: stat " + missing + ": "},
		{[]string{"history", "add", "--db", db}, "fiomig history add: name the run or sweep directories to add"},
		{[]string{"history", "add", "--db", db, "--run-id", "x", missing, missing}, "fiomig history add: --run-id names one directory, got 2"},
		{[]string{"history"}, "fiomig history: name a verb: add, runs"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != exitUsage || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d starting %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

// TestHistoryRefusesBadTuning: a flag value history would otherwise
// replace with its default without a word (--alpha -5 ran at 0.01 and
// the Method line said 0.01) or read as "all" (--last -1) is exit 2, one
// line naming the flag and its range — before the store is opened.
func TestHistoryRefusesBadTuning(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"changes", "--alpha", "-5"}, "--alpha must be a significance level in (0, 1), got -5"},
		{[]string{"changes", "--alpha", "2"}, "--alpha must be a significance level in (0, 1), got 2"},
		{[]string{"changes", "--alpha", "0"}, "--alpha must be"},
		{[]string{"changes", "--permutations", "-3"}, "--permutations must be >= 1, got -3"},
		{[]string{"changes", "--permutations", "0"}, "--permutations must be >= 1, got 0"},
		{[]string{"changes", "--min-segment", "1"}, "--min-segment must be >= 2 runs, got 1"},
		{[]string{"runs", "--last", "-1"}, "--last must be >= 0 (0 = all runs), got -1"},
	} {
		code, _, stderr := runCLI(append([]string{"history"}, append(tc.args, "--db", db)...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("history %v: exit %d, stderr %q; want %d, one line with %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}
