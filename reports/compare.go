package reports

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/montanaflynn/stats"

	"github.com/fiomig/fiomig/record"
)

// StoredRun is one run directory's plan.json and summary.json.
type StoredRun struct {
	Dir     string
	Plan    record.Plan
	Summary record.Summary
}

// RunSet is what one side of a comparison holds: one run, or the runs of a
// sweep (every run directory below the sweep directory), sorted by seed
// then directory.
type RunSet struct {
	Dir   string
	Sweep bool
	Runs  []StoredRun
	// Interrupted and Listed are sweep.json's: the sweep stopped before
	// every seed of its --seeds ran, and how many --seeds lists (0 for a
	// run, or a directory of runs without sweep.json).
	Interrupted bool
	Listed      int
}

// isRunDir reports whether dir holds plan.json.
func isRunDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, record.PlanFile))
	return err == nil && !st.IsDir()
}

func readRun(dir string) (StoredRun, error) {
	r := StoredRun{Dir: dir}
	var err error
	if r.Plan, err = record.ReadPlan(filepath.Join(dir, record.PlanFile)); err != nil {
		return r, err
	}
	path := filepath.Join(dir, record.SummaryFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("read summary: %w (judge the run first: fiomig report %s)", err, dir)
	}
	if r.Summary, err = decodeSummary(b); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// LoadRunSet reads dir as a run directory (it holds plan.json; its
// summary.json must exist) or else as a sweep directory: the run
// directories its sweep.json lists (`fiomig sweep` writes seed-<N>/ per
// seed), or without sweep.json every directory below it, at most two
// levels down and not hidden, that holds plan.json. Errors name the file;
// a directory with neither is an error naming both forms.
func LoadRunSet(dir string) (RunSet, error) {
	set := RunSet{Dir: dir}
	st, err := os.Stat(dir)
	if err != nil {
		return set, err
	}
	if !st.IsDir() {
		return set, fmt.Errorf("%s is not a directory", dir)
	}
	if isRunDir(dir) {
		r, err := readRun(dir)
		if err != nil {
			return set, err
		}
		set.Runs = []StoredRun{r}
		return set, nil
	}
	set.Sweep = true
	if dirs, ok, err := sweepSeedDirs(dir, &set); err != nil {
		return set, err
	} else if ok {
		for _, d := range dirs {
			r, err := readRun(filepath.Join(dir, filepath.FromSlash(d)))
			if err != nil {
				return set, err
			}
			set.Runs = append(set.Runs, r)
		}
		if len(set.Runs) == 0 {
			return set, fmt.Errorf("%s: no seed with a run directory", filepath.Join(dir, sweepFile))
		}
		sortRuns(set.Runs)
		return set, nil
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || path == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") { // a sweep's unfinished .run-seed-N
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(dir, path)
		depth := strings.Count(filepath.ToSlash(rel), "/") + 1
		if isRunDir(path) {
			r, err := readRun(path)
			if err != nil {
				return err
			}
			set.Runs = append(set.Runs, r)
			return filepath.SkipDir
		}
		if depth >= 2 {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return set, err
	}
	if len(set.Runs) == 0 {
		return set, fmt.Errorf("%s is neither a run directory (with %s and %s) nor a sweep directory (run directories below it)",
			dir, record.PlanFile, record.SummaryFile)
	}
	sortRuns(set.Runs)
	return set, nil
}

func sortRuns(runs []StoredRun) {
	sort.SliceStable(runs, func(i, j int) bool {
		a, b := runs[i], runs[j]
		if a.Summary.Seed != b.Summary.Seed {
			return a.Summary.Seed < b.Summary.Seed
		}
		return a.Dir < b.Dir
	})
}

// sweepFile is fiomig sweep's summary (record.SweepFile on the sweep
// branch): {"seeds": [{"seed", "verdict", "dir", ...}]}, dir relative to
// the sweep directory, "" for a seed that left no run directory.
const sweepFile = "sweep.json"

// sweepSeedDirs returns the run directories sweep.json lists (ok false
// without sweep.json) and sets set's Interrupted and Listed from it.
// Seeds without a directory are skipped: sweep.md names them and why.
func sweepSeedDirs(dir string, set *RunSet) ([]string, bool, error) {
	path := filepath.Join(dir, sweepFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var sw struct {
		Seeds []struct {
			Seed int64  `json:"seed"`
			Dir  string `json:"dir"`
		} `json:"seeds"`
		SeedsListed int  `json:"seeds_listed"`
		Interrupted bool `json:"interrupted"`
	}
	if err := json.Unmarshal(b, &sw); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	set.Interrupted, set.Listed = sw.Interrupted, sw.SeedsListed
	var dirs []string
	for _, s := range sw.Seeds {
		if s.Dir != "" {
			dirs = append(dirs, s.Dir)
		}
	}
	return dirs, true, nil
}

// Summaries returns the runs' summaries, in the set's order.
func (s RunSet) Summaries() []record.Summary {
	out := make([]record.Summary, len(s.Runs))
	for i, r := range s.Runs {
		out[i] = r.Summary
	}
	return out
}

// CompareOptions are the gate's thresholds and the bootstrap's settings.
type CompareOptions struct {
	// PauseThresholdS: a regression when the whole 95 % bootstrap interval
	// of the p95 difference (new − base) of the longest pause per
	// (migration, host) lies above it, in seconds.
	PauseThresholdS float64
	// LeakThreshold: a regression when leaked controllers per run grow by
	// more than this (mean over the set's runs).
	LeakThreshold float64
	// ChurnThreshold: a regression when controllers created per run grow by
	// more than this (mean over runs); negative = reported, never gated.
	ChurnThreshold float64
	// Resamples and Seed drive the bootstrap (deterministic for a seed).
	Resamples int
	Seed      uint64
}

// DefaultCompareOptions are fiomig compare's defaults.
var DefaultCompareOptions = CompareOptions{PauseThresholdS: 0.5, LeakThreshold: 0, ChurnThreshold: -1, Resamples: 2000, Seed: 1}

// CheckChange is one check over both sets: verdict counts per side.
type CheckChange struct {
	Name      string
	Base, New map[string]int // verdict -> runs
	// Regressed: the fraction of runs failing the check grew. Changed: the
	// share of some verdict differs (a sweep of 10 passing runs against one
	// passing run is unchanged).
	Regressed, Changed bool
}

// QuantileRow is one quantile of the longest pause per (migration, host)
// on both sides, with the bootstrap interval of the difference.
type QuantileRow struct {
	Name               string
	Base, New, Diff    float64
	DiffLow, DiffHigh  float64
	BaseN, NewN        int
	HasBase, HasNew    bool
	IntervalComputable bool
}

// Tally is a per-run mean of a count on one side.
type Tally struct {
	Name      string
	Base, New float64
	// Known: every run of the side recorded it (churn needs a summary
	// written with the timeline).
	BaseKnown, NewKnown bool
	Regressed           bool
	Gate                string
}

// Comparison is fiomig compare's result.
type Comparison struct {
	Base, New   RunSet
	Opts        CompareOptions
	Checks      []CheckChange
	Quantiles   []QuantileRow
	Tallies     []Tally
	SeedChanges []string
	Regressions []string
	// Inconclusive names the checks the new side judged in fewer runs
	// than the base (inconclusive or absent where the base had a verdict):
	// the comparison cannot tell whether they regressed.
	Inconclusive []string
	// Interrupted, when set, says which side's sweep stopped before all
	// its seeds ran (sweep.json "interrupted") and how far it got. A check
	// failing in a larger fraction of runs is then judged over the seeds
	// both sides ran: a regression only if it fails more often there;
	// otherwise, and for the interrupted sweep itself, inconclusive.
	Interrupted string
	// BoundsDiffer, when set, says that the sides were judged by different
	// pause bounds (CUTOVER_PAUSE_CRIT_S, CUTOVER_FREEZES_ALLOWED: the
	// run's, or those fiomig report re-judged it by), and which.
	BoundsDiffer string
	// RunsDiffer, when set, says that the sides ran different experiments:
	// another number of migrations, fault selection (params.faults: default,
	// none, kinds, a fault file) or incident, and which.
	RunsDiffer string
	// BaseNoCutover and NewNoCutover count each side's migrations left out
	// of the quantiles for never cutting over (MigrationSummary.NoCutover);
	// BaseMasked and NewMasked the (migration, host) pairs left out for a
	// cutover inside a fault window (HostPauses.MaskedBy).
	BaseNoCutover, NewNoCutover int
	BaseMasked, NewMasked       int
	// Changed: any verdict count, quantile or tally differs.
	Changed bool
}

// CompareQuantiles are the pause quantiles compared (percent).
var CompareQuantiles = []float64{50, 90, 95, 99}

// Compare compares two run sets: per-check verdict counts, the quantiles
// of the longest pause per (migration, host) over every cutover of each
// side (montanaflynn/stats Percentile, PercentileMethod) with a seeded
// percentile-bootstrap 95 % interval of each difference (both sides
// resampled independently, cutovers as the unit, opts.Resamples times),
// and leak, missing-endpoint and churn means per run. Regressions name
// what crossed a threshold: a check failing in a larger fraction of runs,
// the p95 interval wholly above opts.PauseThresholdS, leaks or churn per
// run grown past theirs. Equal inputs give equal results.
func Compare(base, nw RunSet, opts CompareOptions) Comparison {
	c := Comparison{Base: base, New: nw, Opts: opts}
	// Checks, in the order they first appear (base, then new).
	var names []string
	seen := map[string]bool{}
	count := func(set RunSet) map[string]map[string]int {
		m := map[string]map[string]int{}
		for _, r := range set.Runs {
			for _, ch := range r.Summary.Checks {
				if !seen[ch.Name] {
					seen[ch.Name] = true
					names = append(names, ch.Name)
				}
				if m[ch.Name] == nil {
					m[ch.Name] = map[string]int{}
				}
				m[ch.Name][ch.Verdict]++
			}
		}
		return m
	}
	bc, nc := count(base), count(nw)
	nb, nn := float64(len(base.Runs)), float64(len(nw.Runs))
	var partial []string
	for _, side := range []struct {
		name string
		set  RunSet
	}{{"base", base}, {"new", nw}} {
		if side.set.Interrupted {
			partial = append(partial, fmt.Sprintf("the %s sweep was interrupted after %d of its %d seeds", side.name, len(side.set.Runs), side.set.Listed))
		}
	}
	c.Interrupted = strings.Join(partial, "; ")
	// With an interrupted side, a check's failing fraction is compared
	// over the seeds both sides ran (sharedFails).
	sharedBase, sharedNew := sharedSeedRuns(base, nw)
	for _, n := range names {
		cc := CheckChange{Name: n, Base: bc[n], New: nc[n]}
		if cc.Base == nil {
			cc.Base = map[string]int{}
		}
		if cc.New == nil {
			cc.New = map[string]int{}
		}
		cc.Changed = sharesDiffer(cc.Base, cc.New, len(base.Runs), len(nw.Runs))
		cc.Regressed = float64(cc.New[record.Fail])/nn > float64(cc.Base[record.Fail])/nb
		unjudged := func(m map[string]int, runs int) int { return runs - m[record.Pass] - m[record.Fail] - m[record.Warn] }
		single := !base.Sweep && !nw.Sweep && len(base.Runs) == 1 && len(nw.Runs) == 1
		if cc.Regressed && c.Interrupted != "" && !single {
			bf, nf := failsOf(sharedBase, n), failsOf(sharedNew, n)
			if len(sharedNew) > 0 && nf*len(sharedBase) > bf*len(sharedNew) {
				c.Regressions = append(c.Regressions, fmt.Sprintf("check %s: fails in %s of the seeds both sides ran, was %s (%s)", n,
					fracRuns(nf, len(sharedNew)), fracRuns(bf, len(sharedBase)), c.Interrupted))
			} else {
				c.Inconclusive = append(c.Inconclusive, fmt.Sprintf("check %s: fails in %s, was %s, but %s: on the %d seed(s) both sides ran it fails in %d, was %d",
					n, fracRuns(cc.New[record.Fail], len(nw.Runs)), fracRuns(cc.Base[record.Fail], len(base.Runs)), c.Interrupted, len(sharedNew), nf, bf))
			}
			c.Changed = true
			c.Checks = append(c.Checks, cc)
			continue
		}
		switch {
		case cc.Regressed && single:
			c.Regressions = append(c.Regressions, fmt.Sprintf("check %s: %s → %s", n, orNotJudged(cc.Base), orNotJudged(cc.New)))
		case cc.Regressed:
			c.Regressions = append(c.Regressions, fmt.Sprintf("check %s: fails in %s, was %s", n, fracRuns(cc.New[record.Fail], len(nw.Runs)), fracRuns(cc.Base[record.Fail], len(base.Runs))))
		case float64(unjudged(cc.New, len(nw.Runs)))/nn > float64(unjudged(cc.Base, len(base.Runs)))/nb && single:
			c.Inconclusive = append(c.Inconclusive, fmt.Sprintf("check %s: %s, was %s", n, orNotJudged(cc.New), orNotJudged(cc.Base)))
		case float64(unjudged(cc.New, len(nw.Runs)))/nn > float64(unjudged(cc.Base, len(base.Runs)))/nb:
			c.Inconclusive = append(c.Inconclusive, fmt.Sprintf("check %s: not judged (inconclusive or absent) in %s, was %s", n,
				fracRuns(unjudged(cc.New, len(nw.Runs)), len(nw.Runs)), fracRuns(unjudged(cc.Base, len(base.Runs)), len(base.Runs))))
		}
		c.Changed = c.Changed || cc.Changed
		c.Checks = append(c.Checks, cc)
	}

	if c.Interrupted != "" {
		c.Inconclusive = append(c.Inconclusive, c.Interrupted+": whatever the seeds not run would have shown is unknown")
	}

	if bb, nb := judgedBounds(base), judgedBounds(nw); bb != nb {
		c.BoundsDiffer = "base judged by " + bb + ", new by " + nb
		for i, r := range c.Regressions {
			if strings.HasPrefix(r, "check pause-bound:") || strings.HasPrefix(r, "check freezes:") {
				c.Regressions[i] = r + " (the sides were judged by different bounds: see Bounds differ)"
			}
		}
	}

	if br, nr := ranWith(base), ranWith(nw); br != nr {
		c.RunsDiffer = "base ran " + br + "; new ran " + nr
	}

	bp, np := longestAll(base), longestAll(nw)
	for _, r := range base.Runs {
		st := Stats(r.Summary)
		c.BaseNoCutover += st.NoCutover
		c.BaseMasked += st.Masked
	}
	for _, r := range nw.Runs {
		st := Stats(r.Summary)
		c.NewNoCutover += st.NoCutover
		c.NewMasked += st.Masked
	}
	c.Quantiles = quantileRows(bp, np, opts)
	for _, q := range c.Quantiles {
		if q.HasBase != q.HasNew || (q.HasBase && q.Diff != 0) {
			c.Changed = true
		}
		if q.Name == "p95" && q.IntervalComputable && q.DiffLow > opts.PauseThresholdS {
			c.Regressions = append(c.Regressions, fmt.Sprintf("pause p95 %s → %s: difference %s, 95 %% interval [%s, %s] wholly above --pause-threshold %s",
				secs(q.Base), secs(q.New), signedSecs(q.Diff), signedSecs(q.DiffLow), signedSecs(q.DiffHigh), secs(opts.PauseThresholdS)))
		}
	}

	mean := func(set RunSet, f func(record.Summary) (float64, bool)) (float64, bool) {
		total, known := 0.0, true
		for _, r := range set.Runs {
			v, ok := f(r.Summary)
			known = known && ok
			total += v
		}
		return total / float64(len(set.Runs)), known
	}
	tally := func(name string, f func(record.Summary) (float64, bool), threshold float64, gate string) {
		t := Tally{Name: name, Gate: gate}
		t.Base, t.BaseKnown = mean(base, f)
		t.New, t.NewKnown = mean(nw, f)
		if t.Base != t.New || t.BaseKnown != t.NewKnown {
			c.Changed = true
		}
		if threshold >= 0 && t.BaseKnown && t.NewKnown && t.New-t.Base > threshold {
			t.Regressed = true
			c.Regressions = append(c.Regressions, fmt.Sprintf("%s per run %s → %s, more than %s (%s)", name, fmtMean(t.Base), fmtMean(t.New), fmtMean(threshold), gate))
		}
		c.Tallies = append(c.Tallies, t)
	}
	tally("leaked controllers", func(s record.Summary) (float64, bool) { return float64(len(s.LeakedControllers)), true }, opts.LeakThreshold, "--leak-threshold")
	tally("missing endpoints", func(s record.Summary) (float64, bool) { return float64(len(s.MissingEndpoints)), true }, -1, "")
	churn := func(f func(record.Churn) int) func(record.Summary) (float64, bool) {
		return func(s record.Summary) (float64, bool) {
			if s.Churn == nil {
				return 0, false
			}
			return float64(f(*s.Churn)), true
		}
	}
	tally("controllers created", churn(func(c record.Churn) int { return c.Created }), opts.ChurnThreshold, "--churn-threshold")
	tally("controllers removed", churn(func(c record.Churn) int { return c.Removed }), -1, "")
	tally("reconnects", churn(func(c record.Churn) int { return c.Reconnects }), -1, "")

	// Runs of the same seed on both sides whose verdict differs.
	bySeed := map[int64]string{}
	for _, r := range base.Runs {
		bySeed[r.Summary.Seed] = r.Summary.Verdict
	}
	for _, r := range nw.Runs {
		if v, ok := bySeed[r.Summary.Seed]; ok && v != r.Summary.Verdict {
			c.SeedChanges = append(c.SeedChanges, fmt.Sprintf("seed %d: %s → %s (%s)", r.Summary.Seed, v, r.Summary.Verdict, r.Plan.Command))
		}
	}
	return c
}

// sharedSeedRuns returns the runs of base and of nw whose seed both sides
// ran, each in its side's order.
func sharedSeedRuns(base, nw RunSet) (b, n []StoredRun) {
	in := func(set RunSet) map[int64]bool {
		m := map[int64]bool{}
		for _, r := range set.Runs {
			m[r.Summary.Seed] = true
		}
		return m
	}
	bs, ns := in(base), in(nw)
	for _, r := range base.Runs {
		if ns[r.Summary.Seed] {
			b = append(b, r)
		}
	}
	for _, r := range nw.Runs {
		if bs[r.Summary.Seed] {
			n = append(n, r)
		}
	}
	return b, n
}

// failsOf counts the runs in which check name failed.
func failsOf(runs []StoredRun, name string) int {
	k := 0
	for _, r := range runs {
		for _, ch := range r.Summary.Checks {
			if ch.Name == name && ch.Verdict == record.Fail {
				k++
			}
		}
	}
	return k
}

// Verdict is the comparison's verdict for the exit code: fail on a
// regression, else inconclusive when the new side judged less than the
// base, else pass.
func (c Comparison) Verdict() string {
	switch {
	case len(c.Regressions) > 0:
		return record.Fail
	case len(c.Inconclusive) > 0:
		return record.Inconclusive
	}
	return record.Pass
}

// judgedBounds names the pause bounds that judged the set's runs: each
// run's --pause-crit and --freezes-allowed, or those fiomig report
// re-judged it by (summary.json "rejudged"); distinct ones joined by " or ".
func judgedBounds(set RunSet) string {
	var out []string
	for _, r := range set.Runs {
		crit, freezes := r.Plan.Params.PauseCritS, r.Plan.Params.FreezesAllowed
		via := ""
		if rj := r.Summary.Rejudged; rj != nil {
			crit, freezes, via = rj.PauseCritS, rj.FreezesAllowed, " (re-judged: "+rj.Command+")"
		}
		b := fmt.Sprintf("--pause-crit %s --freezes-allowed %d%s", secs(crit), freezes, via)
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " or ")
}

// ranWith names the experiments the set's runs ran: each run's migrations
// and fault selection ("" is default), or its incident; distinct ones
// joined by " or ".
func ranWith(set RunSet) string {
	var out []string
	for _, r := range set.Runs {
		p := r.Plan.Params
		d := fmt.Sprintf("%d migrations, faults %s", p.Migrations, cmp.Or(p.Faults, record.FaultsDefault))
		if p.Incident != "" {
			d = fmt.Sprintf("%d migrations of incident %s (faults: %s)", p.Migrations, p.Incident, cmp.Or(p.FaultSchedule, "incident"))
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " or ")
}

// orNotJudged is a single run's verdict of a check, "not judged" when it
// has none.
func orNotJudged(m map[string]int) string {
	if v := verdictCounts(m); v != "—" {
		return v[2:]
	}
	return "not judged"
}

// verdictCounts prints verdict counts in a fixed order: "1 pass, 2 fail".
// sharesDiffer reports whether some verdict's share of the runs differs
// between base (nb runs) and nw (nn runs): base[v]/nb != nw[v]/nn,
// compared as base[v]·nn != nw[v]·nb.
func sharesDiffer(base, nw map[string]int, nb, nn int) bool {
	for _, m := range []map[string]int{base, nw} {
		for v := range m {
			if base[v]*nn != nw[v]*nb {
				return true
			}
		}
	}
	return false
}

func verdictCounts(m map[string]int) string {
	var parts []string
	order := []string{record.Pass, record.Fail, record.Inconclusive}
	for _, v := range order {
		if m[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[v], v))
		}
	}
	var other []string
	for v, n := range m {
		if !slices.Contains(order, v) && n > 0 {
			other = append(other, fmt.Sprintf("%d %s", n, v))
		}
	}
	slices.Sort(other)
	parts = append(parts, other...)
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

func fracRuns(n, of int) string {
	if of == 1 {
		if n == 1 {
			return "the run"
		}
		return "no run"
	}
	return fmt.Sprintf("%d of %d runs", n, of)
}

func fmtMean(v float64) string { return record.FormatT(math.Round(v*1000) / 1000) }

// longestAll pools the longest pause per (migration, host) of every run of
// set (only Counted migrations, as in Stats).
func longestAll(set RunSet) []float64 {
	var out []float64
	for _, r := range set.Runs {
		out = append(out, Pauses(r.Summary).Longest...)
	}
	return out
}

// quantileRows computes CompareQuantiles and max on both sides and the
// bootstrap interval of each difference.
func quantileRows(base, nw []float64, opts CompareOptions) []QuantileRow {
	names := []string{}
	for _, q := range CompareQuantiles {
		names = append(names, "p"+record.FormatT(q))
	}
	names = append(names, "max")
	qs := append(slices.Clone(CompareQuantiles), 100)
	rows := make([]QuantileRow, len(qs))
	bq, nq := quantiles(base, qs), quantiles(nw, qs)
	for i := range qs {
		rows[i] = QuantileRow{Name: names[i], BaseN: len(base), NewN: len(nw), HasBase: len(base) > 0, HasNew: len(nw) > 0}
		if rows[i].HasBase {
			rows[i].Base = bq[i]
		}
		if rows[i].HasNew {
			rows[i].New = nq[i]
		}
		if rows[i].HasBase && rows[i].HasNew {
			rows[i].Diff = record.RoundT(rows[i].New - rows[i].Base)
		}
	}
	if len(base) == 0 || len(nw) == 0 || opts.Resamples < 100 {
		return rows
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6669_6f6d_6967)) // "fiomig"
	diffs := make([][]float64, len(qs))
	rb, rn := make([]float64, len(base)), make([]float64, len(nw))
	for range opts.Resamples {
		for i := range rb {
			rb[i] = base[rng.IntN(len(base))]
		}
		for i := range rn {
			rn[i] = nw[rng.IntN(len(nw))]
		}
		// Sorted once here, the sorts inside stats.Percentile meet sorted
		// data and run in linear time.
		slices.Sort(rb)
		slices.Sort(rn)
		a, b := quantiles(rb, qs), quantiles(rn, qs)
		for i := range qs {
			diffs[i] = append(diffs[i], b[i]-a[i])
		}
	}
	for i := range qs {
		lo, _ := stats.Percentile(diffs[i], 2.5)
		hi, _ := stats.Percentile(diffs[i], 97.5)
		rows[i].DiffLow, rows[i].DiffHigh = record.RoundT(lo), record.RoundT(hi)
		rows[i].IntervalComputable = true
	}
	return rows
}

// quantiles returns the percentiles qs (in (0, 100]) of vs by
// PercentileMethod; zeros for an empty vs.
func quantiles(vs []float64, qs []float64) []float64 {
	out := make([]float64, len(qs))
	if len(vs) == 0 {
		return out
	}
	for i, q := range qs {
		v, err := stats.Percentile(vs, q)
		if err == nil {
			out[i] = v
		}
	}
	return out
}

// CompareMarkdown renders c for a pull request comment (< 60,000
// characters): the gate's verdict with every regression named first, the
// check verdicts side by side, the pause quantiles with the bootstrap
// intervals and the method, the leak and churn means; per-seed verdict
// changes folded; the command that reruns the comparison (rerun) last.
func CompareMarkdown(c Comparison, rerun string) []byte {
	var b bytes.Buffer
	side := func(s RunSet) string {
		if !s.Sweep {
			r := s.Runs[0]
			return fmt.Sprintf("run `%s` (seed %d, %s)", s.Dir, r.Summary.Seed, r.Summary.Verdict)
		}
		v := map[string]int{}
		for _, r := range s.Runs {
			v[r.Summary.Verdict]++
		}
		return fmt.Sprintf("sweep `%s` (%d runs: %s)", s.Dir, len(s.Runs), verdictCounts(v))
	}
	switch {
	case len(c.Regressions) > 0:
		b.WriteString("# fiomig compare — REGRESSION\n\n")
		fmt.Fprintf(&b, "**Regression** (%d):\n\n", len(c.Regressions))
		for i, r := range c.Regressions {
			if i == mdMaxOver {
				fmt.Fprintf(&b, "- … and %d more\n", len(c.Regressions)-mdMaxOver)
				break
			}
			b.WriteString("- " + clip(r) + "\n")
		}
		for _, r := range c.Inconclusive {
			b.WriteString("- inconclusive: " + clip(r) + "\n")
		}
	case len(c.Inconclusive) > 0:
		b.WriteString("# fiomig compare — INCONCLUSIVE\n\n")
		fmt.Fprintf(&b, "**Inconclusive** (%d): whether the new side regressed is unknown (it judged less than the base, or a sweep was interrupted):\n\n", len(c.Inconclusive))
		for _, r := range c.Inconclusive {
			b.WriteString("- " + clip(r) + "\n")
		}
	case c.Changed:
		b.WriteString("# fiomig compare — changed, no regression\n\n**No regression** beyond the thresholds; figures changed (below).\n")
	default:
		b.WriteString("# fiomig compare — no change\n\n**No change**: the same check verdicts, pause quantiles, leaks and churn.\n")
	}
	fmt.Fprintf(&b, "\n- Base: %s\n- New: %s\n", side(c.Base), side(c.New))
	if c.Interrupted != "" {
		fmt.Fprintf(&b, "- **Interrupted**: %s; check verdicts are compared over the seeds both sides ran\n", c.Interrupted)
	}
	if c.BoundsDiffer != "" {
		fmt.Fprintf(&b, "- **Bounds differ**: %s; pause-bound and freezes verdicts compare different bounds\n", clip(c.BoundsDiffer))
	}
	if c.RunsDiffer != "" {
		fmt.Fprintf(&b, "- **Runs differ**: %s; the verdicts compare different experiments\n", clip(c.RunsDiffer))
	}

	b.WriteString("\n## Check verdicts\n\n| Check | Base | New | Change |\n|---|---|---|---|\n")
	for _, ch := range c.Checks {
		change := "—"
		switch {
		case ch.Regressed:
			change = "**regressed**"
		case ch.Changed:
			change = "changed"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", ch.Name, verdictCounts(ch.Base), verdictCounts(ch.New), change)
	}

	b.WriteString("\n## Pause quantiles\n\n")
	if len(c.Quantiles) > 0 {
		fmt.Fprintf(&b, "Longest pause per (migration, host) over every cutover: base n = %d, new n = %d", c.Quantiles[0].BaseN, c.Quantiles[0].NewN)
		if c.BaseNoCutover+c.NewNoCutover > 0 {
			fmt.Fprintf(&b, " (migrations without a cutover left out: base %d, new %d)", c.BaseNoCutover, c.NewNoCutover)
		}
		if c.BaseMasked+c.NewMasked > 0 {
			fmt.Fprintf(&b, " (pairs whose cutover lies inside a fault window left out: base %d, new %d)", c.BaseMasked, c.NewMasked)
		}
		b.WriteString(".\n\n")
	}
	b.WriteString("| Quantile | Base | New | New − base | 95 % bootstrap interval |\n|---|---|---|---|---|\n")
	for _, q := range c.Quantiles {
		bv, nv, d, ci := "—", "—", "—", "—"
		if q.HasBase {
			bv = secs(q.Base)
		}
		if q.HasNew {
			nv = secs(q.New)
		}
		if q.HasBase && q.HasNew {
			d = signedSecs(q.Diff)
		}
		if q.IntervalComputable {
			ci = "[" + signedSecs(q.DiffLow) + ", " + signedSecs(q.DiffHigh) + "]"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", q.Name, bv, nv, d, ci)
	}
	fmt.Fprintf(&b, "\nMethod: quantiles by %s. Interval: percentile bootstrap of the difference, %d resamples of each side's cutovers drawn independently with replacement (PCG seeded with %d: the same inputs give the same interval), 2.5th to 97.5th percentile. Cutovers of one run are treated as independent, which narrows the interval when runs differ more than cutovers do. The gate: p95's interval wholly above --pause-threshold %s.\n",
		PercentileMethod, c.Opts.Resamples, c.Opts.Seed, secs(c.Opts.PauseThresholdS))

	b.WriteString("\n## Leaks and churn (mean per run)\n\n| Figure | Base | New | Change | Gate |\n|---|---|---|---|---|\n")
	for _, t := range c.Tallies {
		bv, nv, d := fmtMean(t.Base), fmtMean(t.New), "—"
		if !t.BaseKnown {
			bv = "not recorded"
		}
		if !t.NewKnown {
			nv = "not recorded"
		}
		if t.BaseKnown && t.NewKnown && t.New != t.Base {
			d = fmtMean(t.New - t.Base)
			if t.New > t.Base {
				d = "+" + d
			}
			if t.Regressed {
				d = "**" + d + "**"
			}
		}
		gate := "reported"
		if t.Gate != "" {
			gate = t.Gate
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.Name, bv, nv, d, gate)
	}
	b.WriteString("\nChurn counts come from the hosts' samples (summary.json \"churn\"); a summary written before it existed says \"not recorded\": run `fiomig report` on that run directory.\n")

	fmt.Fprintf(&b, "\n<details><summary>Runs whose verdict changed, by seed (%d)</summary>\n\n", len(c.SeedChanges))
	if len(c.SeedChanges) == 0 {
		b.WriteString("None: no seed on both sides changed its verdict.\n")
	}
	for i, s := range c.SeedChanges {
		if i == mdMaxRows {
			fmt.Fprintf(&b, "- … and %d more\n", len(c.SeedChanges)-mdMaxRows)
			break
		}
		b.WriteString("- " + clip(s) + "\n")
	}
	b.WriteString("\n</details>\n")
	fmt.Fprintf(&b, "\n## Rerun\n\n`%s`\n", rerun)
	return b.Bytes()
}

// decodeSummary parses summary.json.
func decodeSummary(b []byte) (record.Summary, error) {
	var s record.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("not a summary: %w", err)
	}
	if s.Verdict == "" {
		return s, errors.New(`not a summary: no "verdict"`)
	}
	return s, nil
}
