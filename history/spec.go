package history

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/ci"
	"github.com/fiomig/fiomig/reports"
)

// Verbs of fiomig history.
const (
	VerbAdd     = "add"
	VerbRuns    = "runs"
	VerbTrend   = "trend"
	VerbFlakes  = "flakes"
	VerbChanges = "changes"
)

// Verbs are fiomig history's verbs in help order.
var Verbs = []string{VerbAdd, VerbRuns, VerbTrend, VerbFlakes, VerbChanges}

// EnvDB names the history store when --db is not given.
const EnvDB = "FIOMIG_HISTORY_DB"

// Spec is one fiomig history command, typed: what its flags bind to
// (RegisterFlags) and Run does.
type Spec struct {
	// Verb is one of Verbs; Dirs are add's run or sweep directories.
	Verb string
	Dirs []string
	// DB is the store (Open's dsn).
	DB string
	// Labels label what add files; their Commit, Branch and Cluster also
	// select the entries the other verbs read (Filter).
	Labels Labels
	// Last keeps the last N entries of the series (0: all).
	Last int
	// Figures are the figures trend plots and changes searches (default
	// DefaultFigures).
	Figures []string
	// Out is the directory trend writes its plots into.
	Out string
	// By groups flakes (ByCommitSeeds, ByCommit, BySeeds).
	By string
	// Change tunes changes.
	Change ChangeOptions
}

// DefaultFigures are the figures trend and changes look at unless told.
var DefaultFigures = []string{ci.FigPauseP50, ci.FigPauseP95, ci.FigPauseMax, ci.FigOverBound, ci.FigLeaked, ci.FigFailedRuns}

// figureList is a flag of comma-separated figure names.
type figureList struct{ v *[]string }

func (f figureList) String() string {
	if f.v == nil {
		return ""
	}
	return strings.Join(*f.v, ",")
}

func (f figureList) Set(s string) error {
	*f.v = nil
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if n == "all" {
			*f.v = slices.Clone(ci.FigureNames)
			return nil
		}
		if !slices.Contains(ci.FigureNames, n) {
			return fmt.Errorf("unknown figure %q (figures: %s, or all)", n, strings.Join(ci.FigureNames, ", "))
		}
		*f.v = append(*f.v, n)
	}
	return nil
}

// RegisterFlags binds every fiomig history flag to s, with its defaults
// (DefaultSpec's).
func RegisterFlags(fs *flag.FlagSet, s *Spec) {
	fs.StringVar(&s.DB, "db", s.DB, "the history store: an SQLite `file` (created when missing), or postgres://user:password@host:port/database?sslmode=… for a team's PostgreSQL (default $"+EnvDB+", else "+DefaultDB+")")
	fs.StringVar(&s.Labels.RunID, "run-id", "", "add: file the directory under this `id` (default: the kube run id, else the directory's name)")
	fs.StringVar(&s.Labels.Commit, "commit", "", "add: the `commit` under test (default from the CI: FIOMIG_COMMIT, PULL_PULL_SHA, PULL_BASE_SHA, GITHUB_SHA, CI_COMMIT_SHA); other verbs: only runs of it")
	fs.StringVar(&s.Labels.Branch, "branch", "", "add: the `branch` (default from the CI: FIOMIG_BRANCH, PULL_BASE_REF, GITHUB_HEAD_REF, GITHUB_REF_NAME, CI_COMMIT_REF_NAME); other verbs: only runs of it")
	fs.StringVar(&s.Labels.Cluster, "cluster", "", "add: the `cluster` it ran on (default $FIOMIG_CLUSTER, else sim or kube); other verbs: only runs of it")
	fs.StringVar(&s.Labels.Image, "image", "", "add: the `images` it ran (default $FIOMIG_IMAGE, else a kube run's fio and helper images)")
	fs.IntVar(&s.Last, "last", 0, "trend, flakes, changes, runs: only the last `N` runs of the series (0 = all)")
	fs.Var(figureList{&s.Figures}, "figure", "trend, changes: comma-separated `figures` ("+strings.Join(ci.FigureNames, ", ")+", or all; default "+strings.Join(DefaultFigures, ",")+")")
	fs.StringVar(&s.Out, "out", s.Out, "trend: `directory` for trend-<figure>.png and .svg")
	fs.StringVar(&s.By, "by", ByCommitSeeds, "flakes: which runs repeat one another: `commit+seeds` (same commit, seed and parameters: a flip is a flake), commit, or seeds (a flip may be a real change)")
	fs.Float64Var(&s.Change.Alpha, "alpha", DefaultChangeOptions.Alpha, "changes: significance `level` of each permutation test")
	fs.IntVar(&s.Change.Permutations, "permutations", DefaultChangeOptions.Permutations, "changes: permutations per `test`")
	fs.IntVar(&s.Change.MinSegment, "min-segment", DefaultChangeOptions.MinSegment, "changes: fewest `runs` on each side of a change")
}

// SplitVerb splits fiomig history's arguments into the verb (the first
// argument, unless it is a flag) and the rest.
func SplitVerb(args []string) (string, []string) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", args
	}
	return args[0], args[1:]
}

// validate refuses a flag value the verbs would otherwise replace or
// misread: --last below 0, and for changes an --alpha outside (0, 1), a
// --permutations below 1 or a --min-segment below 2 (ChangeOptions'
// zero values stay the library's defaults; a flag given is taken as
// said). Errors name the flag and its range.
func (s Spec) validate() error {
	c := s.Change
	switch {
	case s.Last < 0:
		return fmt.Errorf("--last must be >= 0 (0 = all runs), got %d", s.Last)
	case !(c.Alpha > 0 && c.Alpha < 1):
		return fmt.Errorf("--alpha must be a significance level in (0, 1), got %v", c.Alpha)
	case c.Permutations < 1:
		return fmt.Errorf("--permutations must be >= 1, got %d", c.Permutations)
	case c.MinSegment < 2:
		return fmt.Errorf("--min-segment must be >= 2 runs, got %d", c.MinSegment)
	}
	return nil
}

// DefaultSpec is fiomig history with no flag.
func DefaultSpec(getenv func(string) string) Spec {
	s := Spec{DB: getenv(EnvDB), Out: filepath.Join("out", "history-trend"), Change: DefaultChangeOptions}
	if s.DB == "" {
		s.DB = DefaultDB
	}
	return s
}

// Run does s and prints its result to w as markdown: add prints one line
// per directory (added, or already there), runs the series, trend the
// figures' table (and writes the plots), flakes and changes their tables
// with the method named. getenv supplies add's CI labels. Errors name the
// store, the directory or the flag.
func Run(ctx context.Context, s Spec, w io.Writer, getenv func(string) string) error {
	if s.Verb == "" {
		return fmt.Errorf("name a verb: %s (fiomig history --help)", strings.Join(Verbs, ", "))
	}
	if !slices.Contains(Verbs, s.Verb) {
		return fmt.Errorf("unknown verb %q (verbs: %s)", s.Verb, strings.Join(Verbs, ", "))
	}
	if s.Verb == VerbAdd && len(s.Dirs) == 0 {
		return fmt.Errorf("name the run or sweep directories to add")
	}
	if s.Verb != VerbAdd && len(s.Dirs) > 0 {
		return fmt.Errorf("%s takes no directory (got %q)", s.Verb, s.Dirs[0])
	}
	if err := s.validate(); err != nil {
		return err
	}
	if len(s.Figures) == 0 {
		s.Figures = DefaultFigures
	}
	open := OpenExisting
	if s.Verb == VerbAdd {
		open = Open
	}
	st, err := open(ctx, s.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	if s.Verb == VerbAdd {
		env := LabelsFromEnv(getenv)
		l := s.Labels
		l.Commit, l.Branch, l.Cluster, l.Image = or(l.Commit, env.Commit), or(l.Branch, env.Branch), or(l.Cluster, env.Cluster), or(l.Image, env.Image)
		if l.RunID != "" && len(s.Dirs) > 1 {
			return fmt.Errorf("--run-id names one directory, got %d", len(s.Dirs))
		}
		for _, d := range s.Dirs {
			r, err := st.Add(ctx, d, l)
			if err != nil {
				return err
			}
			what := "added"
			if !r.Added {
				what = "already in the history (unchanged)"
			}
			e := r.Entry
			fmt.Fprintf(w, "%s %s: %s #%d, seeds %s, verdict %s, commit %q, branch %q, cluster %q (%s)\n", what, d, e.ID, e.Seq, e.Seeds, e.Verdict, e.Commit, e.Branch, e.Cluster, st.Where())
		}
		return nil
	}
	entries, err := st.Entries(ctx, Filter{Branch: s.Labels.Branch, Cluster: s.Labels.Cluster, Commit: s.Labels.Commit, Last: s.Last})
	if err != nil {
		return err
	}
	switch s.Verb {
	case VerbRuns:
		fmt.Fprintf(w, "# fiomig history: %d run(s) in %s\n\n| # | Run | Kind | Seeds | Verdict | Commit | Branch | Cluster | pause p95 |\n|---|---|---|---|---|---|---|---|---|\n", len(entries), st.Where())
		for i, e := range entries {
			p95 := "—"
			if v, ok := e.Figures[ci.FigPauseP95]; ok {
				p95 = fmt.Sprintf("%g s", v)
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", i+1, e.ID, e.Kind, e.Seeds, e.Verdict, e.Commit, e.Branch, e.Cluster, p95)
		}
	case VerbTrend:
		files, err := WriteTrends(s.Out, entries, s.Figures, s.Change)
		if err != nil {
			return err
		}
		w.Write(TrendMarkdown(files))
	case VerbFlakes:
		fl, err := Flakes(entries, s.By)
		if err != nil {
			return err
		}
		w.Write(FlakesMarkdown(fl, s.By, len(entries)))
	case VerbChanges:
		var reps []ChangeReport
		for _, f := range s.Figures {
			r, err := Changes(entries, f, s.Change)
			if err != nil {
				return err
			}
			reps = append(reps, r)
		}
		w.Write(ChangesMarkdown(reps))
	}
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// CompareBase is the base side of fiomig compare --history: the last k
// runs of the store dsn (f selects which) that precede newDir's run — all
// of them when newDir is not in the history yet, those before it when it
// is — as one reports.RunSet (every member run: a sweep's seeds). Errors:
// a store without such runs, or k < 1.
func CompareBase(ctx context.Context, dsn string, k int, f Filter, newDir string) (reports.RunSet, error) {
	if k < 1 {
		return reports.RunSet{}, fmt.Errorf("compare --history: --last must be >= 1, got %d", k)
	}
	st, err := OpenExisting(ctx, dsn)
	if err != nil {
		return reports.RunSet{}, err
	}
	defer st.Close()
	newID := ""
	if ld, err := Load(newDir, Labels{}); err == nil {
		newID = ld.ID
	}
	f.Last = 0
	entries, err := st.Entries(ctx, f)
	if err != nil {
		return reports.RunSet{}, err
	}
	for i, e := range entries {
		if e.ID == newID {
			entries = entries[:i]
			break
		}
	}
	if len(entries) == 0 {
		return reports.RunSet{}, fmt.Errorf("compare --history: %s holds no run before %s to compare with (fiomig history add some)", st.Where(), newDir)
	}
	entries = entries[max(0, len(entries)-k):]
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	name := fmt.Sprintf("history %s: last %d run(s), %s … %s", st.Where(), len(ids), ids[0], ids[len(ids)-1])
	return st.RunSet(ctx, name, ids)
}
