package ci

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// Environment variables Publish reads (OptionsFromEnv).
const (
	// EnvArtifacts is Prow's: the directory a job's artifacts go to.
	EnvArtifacts = "ARTIFACTS"
	// EnvStepSummary is GitHub Actions': the file a step appends its
	// markdown summary to.
	EnvStepSummary = "GITHUB_STEP_SUMMARY"
)

// Options say where Publish writes.
type Options struct {
	// Dir receives Prow's layout (started.json, finished.json,
	// artifacts/junit_<Context>_01.xml, artifacts/<run>/ with the
	// reports) and metrics.txt; "" writes none of them.
	Dir string
	// StepSummary is the file the step summary is appended to; "" none.
	StepSummary string
	// Context names the JUnit file and suite (default "fiomig").
	Context string
	// Metadata is added to started.json's and finished.json's metadata
	// (TestGrid shows finished.json's as column headers): commit, branch…
	Metadata map[string]string
	// Now is the finish time (default the wall clock); the start time is
	// the run's (the unix seconds in its directory name, else plan.json's
	// modification time).
	Now func() time.Time
}

// OptionsFromEnv returns the options of a CI environment: Dir = flagDir,
// else $ARTIFACTS; StepSummary = $GITHUB_STEP_SUMMARY; metadata commit
// and branch from Prow's PULL_BASE_SHA / PULL_PULL_SHA / PULL_BASE_REF,
// GitHub's GITHUB_SHA / GITHUB_REF_NAME or GitLab's CI_COMMIT_SHA /
// CI_COMMIT_REF_NAME, and job from JOB_NAME / GITHUB_JOB / CI_JOB_NAME.
func OptionsFromEnv(getenv func(string) string, flagDir string) Options {
	first := func(names ...string) string {
		for _, n := range names {
			if v := getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	o := Options{Dir: flagDir, StepSummary: getenv(EnvStepSummary), Metadata: map[string]string{}}
	if o.Dir == "" {
		o.Dir = getenv(EnvArtifacts)
	}
	for k, v := range map[string]string{
		"commit": first("PULL_PULL_SHA", "PULL_BASE_SHA", "GITHUB_SHA", "CI_COMMIT_SHA"),
		"branch": first("PULL_BASE_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"),
		"job":    first("JOB_NAME", "GITHUB_JOB", "CI_JOB_NAME"),
	} {
		if v != "" {
			o.Metadata[k] = v
		}
	}
	return o
}

// PublishEnv is Publish of dir with OptionsFromEnv(getenv, flagDir), and
// nothing at all when those options write nothing: what fiomig run and
// fiomig sweep call with their --artifacts.
func PublishEnv(dir, flagDir string, getenv func(string) string) error {
	o := OptionsFromEnv(getenv, flagDir)
	if !o.Enabled() {
		return nil
	}
	_, err := Publish(dir, o)
	return err
}

// Enabled reports whether o writes anything.
func (o Options) Enabled() bool { return o.Dir != "" || o.StepSummary != "" }

// prowStarted and prowFinished are the fields of Prow's started.json and
// finished.json that fiomig fills (test-infra's prow/metadata: timestamp
// in unix seconds; finished's passed and result; metadata free-form).
type prowStarted struct {
	Timestamp int64             `json:"timestamp"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

type prowFinished struct {
	Timestamp int64             `json:"timestamp"`
	Passed    bool              `json:"passed"`
	Result    string            `json:"result"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

var startedInName = regexp.MustCompile(`^(?:fio-mig|sweep)-(\d{9,11})(?:-\d+)?$`)

// Publish writes the CI outputs of dir, a run directory or a sweep
// directory (reports.LoadRunSet reads it), as o says, and returns the
// files it wrote:
//   - o.Dir/started.json and o.Dir/finished.json: timestamps, passed
//     (verdict pass), result ("SUCCESS", "FAILURE", or "ABORTED" for an
//     interrupted run) and metadata — verdict, run, seeds, backend,
//     pause_p95_seconds, over_bound_fraction and o.Metadata;
//   - o.Dir/artifacts/junit_<context>_01.xml: RunJUnit or SweepJUnit;
//   - o.Dir/artifacts/<run>/: the run's report.html (one self-contained
//     page: Spyglass renders it), report.md, summary.json and plan.json,
//     or the sweep's sweep.md and sweep.json, copied;
//   - o.Dir/metrics.txt: Metrics;
//   - o.StepSummary: StepSummary, appended.
//
// Errors name the file.
func Publish(dir string, o Options) ([]string, error) {
	set, err := reports.LoadRunSet(dir)
	if err != nil {
		return nil, err
	}
	if o.Context == "" {
		o.Context = "fiomig"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	name := filepath.Base(abs)
	var written []string
	if o.Dir != "" {
		art := filepath.Join(o.Dir, "artifacts")
		copyDir := filepath.Join(art, name)
		if err := os.MkdirAll(copyDir, 0o755); err != nil {
			return written, fmt.Errorf("artifacts: %w", err)
		}
		var junit []byte
		if set.Sweep {
			junit, err = SweepJUnit(o.Context, seedsOf(set.Runs), set.Runs)
		} else {
			attach := map[string]string{}
			for _, m := range set.Runs[0].Summary.Migrations {
				png := reports.SwimlaneFile(m.ID, "png")
				if _, err := os.Stat(filepath.Join(dir, png)); err == nil {
					attach[m.ID] = filepath.Join(dir, png)
				}
			}
			junit, err = RunJUnit(o.Context, set.Runs[0], attach)
		}
		if err != nil {
			return written, err
		}
		files := map[string][]byte{filepath.Join(art, "junit_"+o.Context+"_01.xml"): junit}
		metrics, err := Metrics(set.Runs)
		if err != nil {
			return written, err
		}
		files[filepath.Join(o.Dir, MetricsFile)] = metrics
		copies := []string{reports.HTMLReportFile, reports.ReportFile, record.SummaryFile, record.PlanFile}
		if set.Sweep {
			copies = []string{record.SweepFile, record.SweepReportFile}
		}
		for _, f := range copies {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return written, fmt.Errorf("artifacts: %w", err)
			}
			files[filepath.Join(copyDir, f)] = b
		}
		verdict := ""
		interrupted := false
		for _, r := range set.Runs {
			verdict = worst(verdict, r.Summary.Verdict)
			interrupted = interrupted || r.Summary.Interrupted
		}
		meta := map[string]string{"verdict": verdict, "run": name, "seeds": seedsOf(set.Runs), "backend": set.Runs[0].Plan.Backend}
		figs := Figures(set.Runs)
		for _, f := range []string{FigPauseP95, FigOverBound} {
			if v, ok := FigureValue(figs, f); ok {
				meta[f] = num(v)
			}
		}
		for k, v := range o.Metadata {
			meta[k] = v
		}
		started := o.Now().Unix()
		if m := startedInName.FindStringSubmatch(name); m != nil {
			started, _ = strconv.ParseInt(m[1], 10, 64)
		} else if st, err := os.Stat(filepath.Join(set.Runs[0].Dir, record.PlanFile)); err == nil {
			started = st.ModTime().Unix()
		}
		result := "SUCCESS"
		switch {
		case interrupted:
			result = "ABORTED"
		case verdict != record.Pass:
			result = "FAILURE"
		}
		sj, _ := json.MarshalIndent(prowStarted{Timestamp: started, Metadata: meta}, "", "  ")
		fj, _ := json.MarshalIndent(prowFinished{Timestamp: o.Now().Unix(), Passed: verdict == record.Pass, Result: result, Metadata: meta}, "", "  ")
		files[filepath.Join(o.Dir, "started.json")] = append(sj, '\n')
		files[filepath.Join(o.Dir, "finished.json")] = append(fj, '\n')
		for _, path := range slices.Sorted(maps.Keys(files)) {
			if err := os.WriteFile(path, files[path], 0o644); err != nil {
				return written, fmt.Errorf("artifacts: %w", err)
			}
			written = append(written, path)
		}
	}
	if o.StepSummary != "" {
		f, err := os.OpenFile(o.StepSummary, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return written, fmt.Errorf("step summary: %w", err)
		}
		_, err = f.Write(append(StepSummary(name, set.Sweep, set.Runs), '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, fmt.Errorf("step summary %s: %w", o.StepSummary, err)
		}
		written = append(written, o.StepSummary)
	}
	return written, nil
}

func seedsOf(runs []reports.StoredRun) string {
	var seeds []int64
	for _, r := range runs {
		seeds = append(seeds, r.Summary.Seed)
	}
	return SeedSet(seeds)
}

// SeedSet writes seeds as sorted, deduplicated ranges: "1-3,7,9-12".
func SeedSet(seeds []int64) string {
	s := slices.Clone(seeds)
	slices.Sort(s)
	s = slices.Compact(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		} else {
			parts = append(parts, strconv.FormatInt(s[i], 10))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
