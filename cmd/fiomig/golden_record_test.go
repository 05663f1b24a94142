package main

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden-record.sha256 from the current outputs")

// goldenRecordFile holds the sha256 of every file the golden commands
// write (run record, reports, plots), one "hash  case/runN/path" a line.
const goldenRecordFile = "testdata/golden-record.sha256"

// goldenCases are the commands whose every output byte is pinned: the
// incident with both operators on seeds 1-3, the main job (make run) and
// the retried-cutover incident, each with its default parameters.
var goldenCases = []struct {
	name string
	args []string
}{
	{"reproduce-seed1", []string{"reproduce", "fio-mig-1787159565", "--operator", "both", "--seed", "1"}},
	{"reproduce-seed2", []string{"reproduce", "fio-mig-1787159565", "--operator", "both", "--seed", "2"}},
	{"reproduce-seed3", []string{"reproduce", "fio-mig-1787159565", "--operator", "both", "--seed", "3"}},
	{"run", []string{"run"}},
	{"reproduce-retry", []string{"reproduce", "fiomig-1787171993"}},
}

// TestGoldenRecord runs each golden command and compares the sha256 of
// every file it wrote with testdata/golden-record.sha256: a change that
// should not change what fiomig writes (a speed-up, a refactoring) must
// leave every byte as it was. A change meant to alter the output (the
// model, a report) regenerates the hashes with
//
//	go test ./cmd/fiomig -run TestGoldenRecord -update
//
// and the diff of that file shows which outputs it touched. Run
// directories are named by their order (run1, run2: fio-mig-<unix> then
// fio-mig-<unix>-2), since their names carry the wall clock.
func TestGoldenRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("the golden commands take ~20 s of CPU; -short skips them")
	}
	got := make([][]string, len(goldenCases))
	var wg sync.WaitGroup
	for i, c := range goldenCases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = goldenHashes(t, c.name, c.args)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var all []string
	for _, g := range got {
		all = append(all, g...)
	}
	text := strings.Join(all, "\n") + "\n"
	if *update {
		if err := os.WriteFile(goldenRecordFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenRecordFile)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	wantBy := map[string]string{}
	for _, l := range wantLines {
		h, name, _ := strings.Cut(l, "  ")
		wantBy[name] = h
	}
	gotBy := map[string]bool{}
	for _, l := range all {
		h, name, _ := strings.Cut(l, "  ")
		gotBy[name] = true
		switch w, ok := wantBy[name]; {
		case !ok:
			t.Errorf("%s: written now, not in %s", name, goldenRecordFile)
		case w != h:
			t.Errorf("%s: sha256 %s, golden %s", name, h, w)
		}
	}
	for _, l := range wantLines {
		if _, name, _ := strings.Cut(l, "  "); !gotBy[name] {
			t.Errorf("%s: in %s, not written now", name, goldenRecordFile)
		}
	}
	if t.Failed() {
		t.Log("outputs differ from the golden hashes; if the change is meant to alter them: go test ./cmd/fiomig -run TestGoldenRecord -update")
	}
}

// goldenHashes runs fiomig with args (plus --out) and returns
// "sha256  name/runN/path" for every file written, run directories in
// creation order, paths sorted, and a last line with the exit code.
func goldenHashes(t *testing.T, name string, args []string) []string {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := dispatch(append(args, "--out", out), &stdout, &stderr)
	if code != exitPass && code != exitCheckFailed && code != exitInconclusive {
		t.Errorf("%s: fiomig %s: exit %d\n%s", name, strings.Join(args, " "), code, stderr.String())
		return nil
	}
	dirs, err := os.ReadDir(out)
	if err != nil {
		t.Error(err)
		return nil
	}
	var runs []string
	for _, d := range dirs {
		runs = append(runs, d.Name())
	}
	// fio-mig-<unix>, fio-mig-<unix>-2, ...: by suffix number.
	suffix := func(s string) int {
		parts := strings.Split(s, "-")
		if len(parts) < 4 {
			return 1
		}
		n, _ := strconv.Atoi(parts[3])
		return n
	}
	slices.SortFunc(runs, func(a, b string) int { return suffix(a) - suffix(b) })
	var lines []string
	for i, r := range runs {
		root := filepath.Join(out, r)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			lines = append(lines, fmt.Sprintf("%x  %s/run%d/%s", sha256.Sum256(b), name, i+1, filepath.ToSlash(rel)))
			return nil
		})
		if err != nil {
			t.Error(err)
			return nil
		}
	}
	return append(lines, fmt.Sprintf("exit %d  %s/exit", code, name))
}
