package history

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/ci"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// Labels are what a run is filed under besides its figures. Empty fields
// are filled by Load (LabelsFromEnv gives the CI's).
type Labels struct {
	// RunID keys the run: adding the same id twice is a no-op. Default: the
	// kube run id of plan.json, else the directory's base name
	// (fio-mig-<unix seconds>, sweep-<unix seconds>).
	RunID string
	// Commit, Branch: of the code under test. Cluster: where it ran
	// (default "sim" on the simulator, "kube" on a cluster). Image: the
	// images a kube run used (default the fio and helper images of
	// plan.json; "" on the simulator).
	Commit, Branch, Cluster, Image string
	// StartedUnixS orders the series. Default: the unix seconds in the
	// directory's name (fio-mig-<s>, sweep-<s>; a -N suffix, the Nth run
	// started in that second, adds (N−1) ms), else plan.json's
	// modification time.
	StartedUnixS float64
}

// LabelsFromEnv reads the commit and branch CI systems set: Prow
// (PULL_PULL_SHA, PULL_BASE_SHA, PULL_BASE_REF), GitHub Actions
// (GITHUB_SHA, GITHUB_HEAD_REF, GITHUB_REF_NAME) and GitLab CI
// (CI_COMMIT_SHA, CI_COMMIT_REF_NAME), after fiomig's own FIOMIG_COMMIT,
// FIOMIG_BRANCH, FIOMIG_CLUSTER and FIOMIG_IMAGE; the first one set wins.
func LabelsFromEnv(getenv func(string) string) Labels {
	first := func(names ...string) string {
		for _, n := range names {
			if v := getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	return Labels{
		Commit:  first("FIOMIG_COMMIT", "PULL_PULL_SHA", "PULL_BASE_SHA", "GITHUB_SHA", "CI_COMMIT_SHA"),
		Branch:  first("FIOMIG_BRANCH", "PULL_BASE_REF", "GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"),
		Cluster: first("FIOMIG_CLUSTER"),
		Image:   first("FIOMIG_IMAGE"),
	}
}

// Run kinds.
const (
	KindRun   = "run"
	KindSweep = "sweep"
)

// Entry is one point of the history: a run directory, or a sweep directory
// with its seeds as members.
type Entry struct {
	ID   string
	Seq  int64
	Kind string
	Dir  string
	Labels
	// Seeds is the seed set ("7", "1-30", "1,5,9-12"); Config is a digest of
	// the run parameters but the seed (plan.json params, the kube run id
	// left out), equal for runs of the same flags.
	Seeds, Config string
	// Verdict is the run's, or the worst over a sweep's seeds (fail, then
	// inconclusive, then pass).
	Verdict string
	// Figures are ci.Figures of the members (the known ones).
	Figures map[string]float64
	// Checks maps member index → check name → verdict.
	Checks []map[string]string
	// MemberSeeds are the members' seeds, by member index.
	MemberSeeds []int64
}

// Loaded is a directory read for the history: its entry and its member
// runs (plan.json and summary.json of each).
type Loaded struct {
	Entry
	Runs []reports.StoredRun
	// digest identifies the content (every member's summary.json as
	// stored) to tell a repeated add from a clash of run ids.
	digest string
}

var startedInName = regexp.MustCompile(`^(?:fio-mig|sweep)-(\d{9,11})(?:-(\d+))?$`)

// Load reads dir — a run directory (plan.json and summary.json) or a sweep
// directory (the runs sweep.json lists, or those below it) — into an entry
// with labels l, filling the defaults Labels names. Errors name the file.
func Load(dir string, l Labels) (Loaded, error) {
	set, err := reports.LoadRunSet(dir)
	if err != nil {
		return Loaded{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	e := Entry{Kind: KindRun, Dir: abs, Labels: l}
	if set.Sweep {
		e.Kind = KindSweep
	}
	first := set.Runs[0].Plan
	if e.RunID == "" {
		e.RunID = filepath.Base(abs)
		if k := first.Params.Kube; k != nil && k.RunID != "" && !set.Sweep {
			e.RunID = k.RunID
		}
	}
	e.ID = e.RunID
	if e.Cluster == "" {
		e.Cluster = first.Backend
		if e.Cluster == "" {
			e.Cluster = "sim"
		}
	}
	if e.Image == "" && first.Params.Kube != nil {
		e.Image = strings.Trim(first.Params.Kube.FioImage+" "+first.Params.Kube.HelperImage, " ")
	}
	if e.StartedUnixS == 0 {
		if m := startedInName.FindStringSubmatch(filepath.Base(abs)); m != nil {
			v, _ := strconv.ParseInt(m[1], 10, 64)
			n, _ := strconv.Atoi(m[2]) // fiomig's -N suffix: the Nth run that second
			e.StartedUnixS = float64(v) + float64(max(n-1, 0))/1000
		} else if st, err := os.Stat(filepath.Join(set.Runs[0].Dir, record.PlanFile)); err == nil {
			e.StartedUnixS = float64(st.ModTime().UnixMicro()) / 1e6
		}
	}
	params := first.Params
	if params.Kube != nil {
		k := *params.Kube
		k.RunID = ""
		params.Kube = &k
	}
	pj, err := json.Marshal(params)
	if err != nil {
		return Loaded{}, fmt.Errorf("%s: %w", dir, err)
	}
	sum := sha256.Sum256(pj)
	e.Config = hex.EncodeToString(sum[:8])
	h := sha256.New()
	var seeds []int64
	for _, r := range set.Runs {
		seeds = append(seeds, r.Summary.Seed)
		e.MemberSeeds = append(e.MemberSeeds, r.Summary.Seed)
		checks := map[string]string{}
		for _, c := range r.Summary.Checks {
			checks[c.Name] = c.Verdict
		}
		e.Checks = append(e.Checks, checks)
		e.Verdict = worse(e.Verdict, r.Summary.Verdict)
		b, _ := json.Marshal(r.Summary)
		h.Write(b)
	}
	e.Seeds = ci.SeedSet(seeds)
	e.Figures = map[string]float64{}
	for _, f := range ci.Figures(set.Runs) {
		if f.Known {
			e.Figures[f.Name] = f.Value
		}
	}
	return Loaded{Entry: e, Runs: set.Runs, digest: hex.EncodeToString(h.Sum(nil))}, nil
}

// worse returns the worse of two verdicts: fail, then inconclusive, then
// anything else.
func worse(a, b string) string {
	rank := func(v string) int {
		switch v {
		case record.Fail:
			return 3
		case record.Inconclusive:
			return 2
		case "":
			return 0
		}
		return 1
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// AddResult says what Add did.
type AddResult struct {
	Entry Entry
	// Added is false when the run id was already in the history with the
	// same content (a repeated add: nothing written, and Entry carries the
	// labels stored then, not those of this add).
	Added bool
}

// Add files dir (see Load) under labels l. It is idempotent, keyed by the
// run id: a run id already stored with the same content (the digest of
// its members' summaries) is left as it was (Added false); with other
// content it is an error naming the id (give another with Labels.RunID).
// The whole add is one transaction under the store's writer lock (begin),
// so two processes adding at once never interleave: each run lands whole,
// with its own seq.
func (s *Store) Add(ctx context.Context, dir string, l Labels) (AddResult, error) {
	ld, err := Load(dir, l)
	if err != nil {
		return AddResult{}, err
	}
	return s.add(ctx, ld)
}

func (s *Store) add(ctx context.Context, ld Loaded) (AddResult, error) {
	e := ld.Entry
	tx, err := s.begin(ctx)
	if err != nil {
		return AddResult{}, err
	}
	defer tx.Rollback()
	var digest string
	var stored Entry
	err = tx.QueryRowContext(ctx, "SELECT digest, seq, commit_sha, branch, cluster, image FROM runs WHERE id = $1", e.ID).
		Scan(&digest, &stored.Seq, &stored.Commit, &stored.Branch, &stored.Cluster, &stored.Image)
	switch {
	case err == nil && digest == ld.digest:
		// Unchanged, labels included: the entry as stored.
		e.Seq, e.Commit, e.Branch, e.Cluster, e.Image = stored.Seq, stored.Commit, stored.Branch, stored.Cluster, stored.Image
		return AddResult{Entry: e}, nil
	case err == nil:
		return AddResult{}, fmt.Errorf("history %s: run id %q is already stored with other content (from %s); give this one another --run-id", s.where, e.ID, e.Dir)
	case !errors.Is(err, sql.ErrNoRows):
		return AddResult{}, fmt.Errorf("history %s: %w", s.where, err)
	}
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT MAX(seq) FROM runs").Scan(&last); err != nil {
		return AddResult{}, fmt.Errorf("history %s: %w", s.where, err)
	}
	e.Seq = last.Int64 + 1
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, seq, kind, dir, started_unix_s, added_unix_s, commit_sha, branch, cluster, image, seeds, config, verdict, digest)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		e.ID, e.Seq, e.Kind, e.Dir, e.StartedUnixS, unixNow(), e.Commit, e.Branch, e.Cluster, e.Image, e.Seeds, e.Config, e.Verdict, ld.digest); err != nil {
		return AddResult{}, fmt.Errorf("history %s: add %s: %w", s.where, e.ID, err)
	}
	for i, r := range ld.Runs {
		plan, err := gz(r.Plan)
		if err != nil {
			return AddResult{}, err
		}
		sum, err := gz(r.Summary)
		if err != nil {
			return AddResult{}, err
		}
		rel, err := filepath.Rel(e.Dir, r.Dir)
		if err != nil || !ld.isSweep() {
			rel = "."
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO members (run_id, member, seed, dir, verdict, plan, summary) VALUES ($1, $2, $3, $4, $5, $6, $7)",
			e.ID, i, r.Summary.Seed, filepath.ToSlash(rel), r.Summary.Verdict, plan, sum); err != nil {
			return AddResult{}, fmt.Errorf("history %s: add %s seed %d: %w", s.where, e.ID, r.Summary.Seed, err)
		}
		for _, c := range r.Summary.Checks {
			if _, err := tx.ExecContext(ctx, "INSERT INTO checks (run_id, member, name, verdict) VALUES ($1, $2, $3, $4)", e.ID, i, c.Name, c.Verdict); err != nil {
				return AddResult{}, fmt.Errorf("history %s: add %s check %s: %w", s.where, e.ID, c.Name, err)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.Figures)) {
		if _, err := tx.ExecContext(ctx, "INSERT INTO figures (run_id, name, value) VALUES ($1, $2, $3)", e.ID, name, e.Figures[name]); err != nil {
			return AddResult{}, fmt.Errorf("history %s: add %s figure %s: %w", s.where, e.ID, name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return AddResult{}, fmt.Errorf("history %s: add %s: %w", s.where, e.ID, err)
	}
	return AddResult{Entry: e, Added: true}, nil
}

func (l Loaded) isSweep() bool { return l.Kind == KindSweep }

// gz is v as gzip-compressed JSON (how members' plan.json and summary.json
// are stored: a summary compresses about tenfold).
func gz(v any) ([]byte, error) {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return nil, fmt.Errorf("history: encode: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("history: compress: %w", err)
	}
	return b.Bytes(), nil
}

// ungz decodes what gz wrote into v.
func ungz(b []byte, v any) error {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	j, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(j, v)
}
