package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/record"
)

// syntheticIncident is cmd/fiomig's synthetic incident whose symptoms one
// declared combination (H2) made: 4 combinations, both operators, about
// 0.2 CPU-s a run.
const syntheticIncident = "../cmd/fiomig/testdata/incidents/synthetic-one-combination.yaml"

// TestFarmHypothesesMergeIsTheLocalRun: the lines of three shards of a
// farm of fiomig reproduce --hypotheses (as its pods print them, from the
// settings its Job holds, one index's arriving twice as when it is
// retried), fed to the farm's merge, give the same reproduce.md, the same
// ranking and exit code, and every run's plan.json and summary.json at the
// same path, byte for byte, as the local --hypotheses of the same seeds;
// a retried run whose summary differs is named, exit 2.
func TestFarmHypothesesMergeIsTheLocalRun(t *testing.T) {
	inc, err := analysis.LoadIncident(syntheticIncident)
	if err != nil {
		t.Fatal(err)
	}
	seeds := []int64{1, 2}
	command := "fiomig reproduce " + syntheticIncident + " --hypotheses=true --operator=prefix --seeds=1-2"
	r := Reproduction{Incident: inc, Name: syntheticIncident, Operators: []string{"prefix", "fixed"}, Out: t.TempDir(), StartUnix: 1700000000}
	local, err := Hypotheses(context.Background(), r, seeds, 2, command, io.Discard)
	if err != nil {
		t.Fatal(err)
	}

	x := r
	x.Out = t.TempDir()
	set, err := hypFarmSettings(&x, seeds, command, FarmOptions{Parallelism: 1, Shards: 3, Image: "fiomig:test"})
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(set) // as the pods' --shard and the Job's annotation carry them
	var lines, retried []farmLine
	for i := range set.Shards {
		var buf bytes.Buffer
		out := t.TempDir()
		if err := ReproduceShard(context.Background(), string(settings), i, out, &buf); err != nil {
			t.Fatal(err)
		}
		if left, _ := os.ReadDir(out); len(left) != 0 {
			t.Errorf("shard %d left %d entries in its --out", i, len(left))
		}
		sc := bufio.NewScanner(&buf)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var l farmLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			if l.Figures != nil && (l.Plan == nil || l.Summary == nil || l.Sum == "") {
				t.Errorf("position %d: a run's line without its plan.json, summary.json or hash", l.Pos)
			}
			l.index = i
			lines = append(lines, l)
			if i == 1 {
				retried = append(retried, l)
			}
		}
	}
	if n := len(inc.Combinations()) * len(seeds) * 2; len(lines) != n+set.Shards {
		t.Fatalf("%d lines, want a line per run (%d) and an end line per shard", len(lines), n)
	}
	merge := func(lines []farmLine) (HypothesesResult, *hypMerge) {
		t.Helper()
		y := x
		y.Out = t.TempDir()
		h, err := newHypotheses(y, seeds, io.Discard, false)
		if err != nil {
			t.Fatal(err)
		}
		m := &hypMerge{h: h, got: map[int][]*farmLine{}}
		ends, rep := map[int]farmLine{}, &farmRecord{}
		for _, l := range lines {
			if _, err := farmTake(l, ends, rep, m.take); err != nil {
				t.Fatal(err)
			}
		}
		if len(ends) != set.Shards {
			t.Fatalf("%d end lines, want %d", len(ends), set.Shards)
		}
		res, err := h.finish(command)
		if err != nil {
			t.Fatal(err)
		}
		return res, m
	}
	farm, m := merge(append(lines, retried...))
	if len(m.twice) != 0 {
		t.Errorf("a retried index's runs named as differing: %v", m.twice)
	}
	if !bytes.Equal(local.Markdown, farm.Markdown) || farm.ExitCode != local.ExitCode || len(local.Ranked) != len(inc.Combinations()) {
		t.Errorf("the farm's reproduce.md (exit %d) differs from the local run's (exit %d, %d combinations ranked)", farm.ExitCode, local.ExitCode, len(local.Ranked))
	}
	a, b := runFiles(t, local.Dir), runFiles(t, farm.Dir)
	if !equalFiles(a, b) {
		t.Errorf("the farm's run files differ from the local run's: local %d files, farm %d", len(a), len(b))
	}
	if n := len(inc.Combinations()) * len(seeds) * 2; len(a) != 2*n || a[filepath.Join("H2", "seed-2", "fio-mig-1700000000-2", record.SummaryFile)] == nil {
		t.Errorf("the local run's files: %d, want plan.json and summary.json of each of %d runs", len(a), n)
	}

	bad := append([]farmLine(nil), lines...)
	for _, l := range retried {
		if l.Figures != nil {
			l.Sum = "0000"
			bad = append(bad, l)
			break
		}
	}
	if _, m := merge(bad); len(m.twice) != 1 || !strings.Contains(m.twice[0].Error(), `"0000"`) {
		t.Errorf("a retried run with another summary: %v, want it named", m.twice)
	}
}

// runFiles are the files under dir but reproduce.md and farm.json, by
// path relative to dir.
func runFiles(t *testing.T, dir string) map[string][]byte {
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "reproduce.md" || rel == FarmFile {
			return nil
		}
		out[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equalFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
