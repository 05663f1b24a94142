package harness

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/scenario"
	"github.com/fiomig/fiomig/sim"
)

// Timeline policies of a sweep (SweepOptions.Timelines).
const (
	KeepFailing = "failing" // keep the timeline of seeds that did not pass
	KeepAll     = "all"
	KeepNone    = "none"
)

// MaxSeeds bounds a seed list, so that a mistyped range cannot run for days.
const MaxSeeds = 100000

// NondeterministicSeedEnv is a test hook, for the determinism self-check's
// tests only (docs/farm.md): every run of the seed it names, in a sweep
// or a farm's pods (Farm passes it on), starts every validation Job
// 0.25–0.75 s later (one draw from crypto/rand per run), so that no two
// runs of that seed are alike. Never set it otherwise.
const NondeterministicSeedEnv = "FIOMIG_TEST_NONDETERMINISTIC_SEED"

// DefaultSelfCheck is the share of a sweep's seeds fiomig sweep reruns to
// check that each gives the same summary twice (--self-check).
const DefaultSelfCheck = 0.05

// DefaultCoverK is the K of a bare --until-covered: every cell of the
// coverage matrix has landed at least three times.
const DefaultCoverK = 3

// SweepOptions are a sweep's own settings; every seed runs the spec.
type SweepOptions struct {
	// Seeds are the seeds to run (ParseSeeds), SeedsArg as given.
	Seeds    []int64
	SeedsArg string
	// Jobs is how many seeds run at once.
	Jobs int
	// Timelines says which seeds keep timeline.jsonl (KeepFailing,
	// KeepAll, KeepNone); with KeepFailing, MaxTimelines bounds how many
	// (0 = no limit), the first in Seeds order.
	Timelines    string
	MaxTimelines int
	// SelfCheck is the share of seeds run a second time, their summaries
	// compared (0 = none; record.SweepDeterminism says which).
	SelfCheck float64
	// UntilCovered, when > 0, stops the sweep after the shortest prefix of
	// Seeds in which every cell of the coverage matrix has landed that
	// many times (record.SweepCoverage).
	UntilCovered int
	// Command is the sweep's own command line, for sweep.json.
	Command string
	// StartUnix names the sweep directory sweep-<StartUnix>; 0 = now.
	StartUnix int64
	// Log, when set, is told the sweep directory and what each seed runs
	// once the directory exists; Progress gets one line per seed as it
	// finishes (seeds done, failing so far, ETA).
	Log, Progress io.Writer
}

// Validate checks o's own settings; errors are UsageErrors naming the flag.
func (o SweepOptions) Validate() error {
	switch {
	case o.Jobs < 1:
		return Usagef("--jobs must be >= 1, got %d", o.Jobs)
	case o.Timelines != KeepFailing && o.Timelines != KeepAll && o.Timelines != KeepNone:
		return Usagef("--timelines must be failing, all or none, got %q", o.Timelines)
	case o.MaxTimelines < 0:
		return Usagef("--max-timelines must be >= 0 (0 = no limit), got %d", o.MaxTimelines)
	case !(o.SelfCheck >= 0 && o.SelfCheck <= 1):
		return Usagef("--self-check must be a share in [0, 1], got %v", o.SelfCheck)
	case o.UntilCovered < 0:
		return Usagef("--until-covered must be >= 1 (or bare: %d), got %d", DefaultCoverK, o.UntilCovered)
	}
	return nil
}

// SweepResult is a finished (or interrupted) sweep: its directory and
// sweep.json.
type SweepResult struct {
	Dir   string
	Sweep record.Sweep
	// Stopped: the first seeds were all refused as bad usage (their
	// errors are in Sweep.Seeds), so the others were not run.
	Stopped bool
}

// ExitCode is the sweep's: 1 when a seed failed or a seed rerun gave
// another summary (Sweep.Determinism), else 2 when a seed ended without a
// verdict, else 3 when one was inconclusive, else 0; 2 when it stopped on
// bad usage, 130 when a signal ended it (interrupted).
func (r SweepResult) ExitCode(interrupted bool) int {
	c := r.Sweep.Counts
	switch {
	case interrupted:
		return ExitInterrupted
	case r.Stopped:
		return ExitUsage
	case c.Fail > 0 || r.Sweep.Determinism != nil && len(r.Sweep.Determinism.Mismatches) > 0:
		return ExitFail
	case c.Error > 0:
		return ExitUsage
	case c.Inconclusive > 0:
		return ExitInconclusive
	}
	return ExitPass
}

// Explain writes what a person must know after the sweep exited code: the
// first seeds without a verdict (when that is why it exits 2), the seeds
// that were not deterministic, and why it stopped early.
func (r SweepResult) Explain(w io.Writer, code int, interrupted bool) {
	sw, shown := r.Sweep, 0
	for _, x := range sw.Seeds {
		if x.Verdict != "error" || code != ExitUsage {
			continue
		}
		if shown++; shown > 3 {
			fmt.Fprintf(w, "fiomig sweep: %d more seeds without a verdict (sweep.md names them)\n", sw.Counts.Error-3)
			break
		}
		fmt.Fprintf(w, "fiomig sweep: seed %d: %s\n", x.Seed, x.Error)
	}
	if d := sw.Determinism; d != nil {
		for _, m := range d.Mismatches {
			fmt.Fprintf(w, "fiomig sweep: seed %d is not deterministic: two runs gave summary.json sha256 %s and %s\n", m.Seed, m.First, m.Second)
		}
	}
	if c := sw.Coverage; c != nil && len(c.NeverLanded) > 0 {
		fmt.Fprintf(w, "fiomig sweep: never landed: %s\n", strings.Join(c.NeverLanded, ", "))
	}
	switch {
	case interrupted:
		fmt.Fprintf(w, "fiomig sweep: interrupted; %s covers the %d seed(s) that finished\n", filepath.Join(r.Dir, record.SweepFile), len(sw.Seeds))
	case r.Stopped:
		fmt.Fprintf(w, "fiomig sweep: stopped after %d seed(s) without a verdict; the other %d were not run\n", len(sw.Seeds), sw.SeedsListed-len(sw.Seeds))
	}
}

// Sweep runs s once per seed, o.Jobs seeds at once, each exactly its
// single run (Run with that seed: the same byte-identical timeline.jsonl
// and summary.json), into <s.Out>/sweep-<unix>/seed-<N>/, and writes
// sweep.json and sweep.md there (reports.WriteSweep): per seed its verdict,
// failed checks, rerun command and each migration's longest pause; the
// counts; the distribution of the longest pause per migration and the
// fraction over the bound with its Wilson interval. o.SelfCheck of the
// seeds run a second time and their summaries are compared;
// o.UntilCovered stops it once the coverage matrix is covered. Once ctx is
// done no further seed starts and the sweep covers those that finished; so
// too when the seeds finished so far all ended without a verdict and one
// was refused as bad usage (every seed would be).
func Sweep(ctx context.Context, s Spec, o SweepOptions) (SweepResult, error) {
	sw, err := newSweep(s, o)
	if err != nil {
		return SweepResult{}, err
	}
	if err := sw.create(); err != nil {
		return SweepResult{}, err
	}
	type task struct {
		i     int
		again bool
	}
	var tasks []task
	for i := range o.Seeds {
		tasks = append(tasks, task{i, false})
		if sw.check[i] {
			tasks = append(tasks, task{i, true})
		}
	}
	forEach(ctx, len(tasks), o.Jobs, func(t int) bool {
		tk := tasks[t]
		if tk.again {
			sw.second(tk.i, sw.rerun(ctx, o.Seeds[tk.i]))
			return false
		}
		return sw.done(tk.i, sw.runLocal(ctx, o.Seeds[tk.i]))
	})
	return sw.finish(ctx, nil)
}

// seedRun is one seed's first run: its line of sweep.json, the SHA-256 of
// its summary.json and the faults that landed per coverage cell.
type seedRun struct {
	seed             record.SweepSeed
	ran, interrupted bool
	sum              string
	landed           map[cell]int
}

// cell is one kind × stage cell of the coverage matrix.
type cell struct{ kind, stage string }

// sweeper is one sweep under way: the runs so far, in Seeds order, the
// second runs of the self-check and the coverage. Local sweeps and farms
// (Farm) feed it and finish it the same way.
type sweeper struct {
	s     Spec
	o     SweepOptions
	dir   string
	start time.Time
	check []bool // which positions the self-check reruns
	cells []cell // the coverage matrix's cells (UntilCovered)
	cover *coverage
	mu    sync.Mutex
	runs  []seedRun
	again map[int]string         // position -> the second run's summary SHA-256
	extra []record.SweepMismatch // a farm's seeds that arrived twice, differing
	// rechecks say on which index a farm's self-check second runs ran.
	rechecks []farmRecheck
	tally    record.SweepCounts
	count    int // seeds done (not interrupted)
}

func newSweep(s Spec, o SweepOptions) (*sweeper, error) {
	if s.Params.IsFio() {
		return nil, Usagef("--workload=%s: a sweep runs the simulator on virtual time (--workload=sim); real fio runs on the wall clock, so a seed would not rerun the same", s.Params.Workload)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	sw := &sweeper{s: s, o: o, start: time.Now(), check: selfCheckAt(len(o.Seeds), o.SelfCheck),
		runs: make([]seedRun, len(o.Seeds)), again: map[int]string{}}
	if o.UntilCovered > 0 {
		cells, err := coverageCells(s, o.Seeds)
		if err != nil {
			return nil, err
		}
		sw.cells, sw.cover = cells, &coverage{cells: cells, k: o.UntilCovered, landed: map[cell]int{}, at: -1}
	}
	return sw, nil
}

// create makes the sweep directory and says so on o.Log.
func (sw *sweeper) create() error {
	start := sw.o.StartUnix
	if start == 0 {
		start = sw.start.Unix()
	}
	dir, err := record.CreateUniqueDir(sw.s.Out, "sweep-"+strconv.FormatInt(start, 10), "sweep")
	if err != nil {
		return err
	}
	sw.dir = dir
	if sw.o.Log != nil {
		fmt.Fprintf(sw.o.Log, "fiomig sweep: %d seeds (%s), %d at a time, into %s\n", len(sw.o.Seeds), sw.o.SeedsArg, sw.o.Jobs, dir)
		if runFlags := sw.s.Flags("seed"); len(runFlags) > 0 {
			fmt.Fprintf(sw.o.Log, "  each seed runs: %s\n", CommandLine("fiomig run --seed=N", runFlags))
		}
	}
	return nil
}

// done records position i's first run, reports progress, and says
// whether the sweep should stop: its first seeds were all refused as bad
// usage, or the coverage is reached.
func (sw *sweeper) done(i int, r seedRun) (stop bool) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	r.ran = true
	sw.runs[i] = r
	if !r.interrupted { // a seed cut short is not done
		sw.count++
		sw.tally = tallySeed(sw.tally, r.seed)
	}
	if w := sw.o.Progress; w != nil {
		x, total := r.seed, len(sw.o.Seeds)
		elapsed := time.Since(sw.start)
		eta := time.Duration(0)
		if sw.count > 0 {
			eta = time.Duration(float64(elapsed) / float64(sw.count) * float64(total-sw.count))
		}
		what := x.Verdict
		if x.Verdict == record.Fail {
			what += " (" + strings.Join(x.FailedChecks, ", ") + ")"
		}
		if r.interrupted {
			what = "interrupted"
		}
		fmt.Fprintf(w, "sweep: seed %d %s — %d/%d done, %d failing, %d inconclusive, %d error, %s elapsed, ETA %s\n",
			x.Seed, what, sw.count, total, sw.tally.Fail, sw.tally.Inconclusive, sw.tally.Error, elapsed.Round(time.Second), eta.Round(time.Second))
	}
	if r.seed.ExitCode == ExitUsage && sw.tally.Error == sw.count {
		return true
	}
	return sw.cover != nil && sw.cover.advance(sw.runs) >= 0
}

// second records the self-check's second run of position i (its summary
// SHA-256, "" when it left none).
func (sw *sweeper) second(i int, sum string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sum != "" {
		sw.again[i] = sum
	}
}

// runLocal runs seed into the sweep directory.
func (sw *sweeper) runLocal(ctx context.Context, seed int64) seedRun {
	x, interrupted := runSeed(ctx, sw.dir, sw.s, seed, sw.o.Timelines)
	r := seedRun{seed: x, interrupted: interrupted}
	if x.Dir != "" && x.Verdict != "error" && !interrupted {
		if b, err := os.ReadFile(filepath.Join(sw.dir, x.Dir, record.SummaryFile)); err == nil {
			r.sum, r.landed = summaryFacts(b)
		}
	}
	return r
}

// rerun runs seed again in a directory of its own, removed afterwards, and
// returns its summary.json's SHA-256 ("" when it ended without one).
func (sw *sweeper) rerun(ctx context.Context, seed int64) string {
	tmp, err := os.MkdirTemp(sw.dir, ".again-")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(tmp)
	x, interrupted := runSeed(ctx, tmp, sw.s, seed, KeepNone)
	if interrupted || x.Verdict == "error" || x.Dir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(tmp, x.Dir, record.SummaryFile))
	if err != nil {
		return ""
	}
	sum, _ := summaryFacts(b)
	return sum
}

// finish ends the sweep: with UntilCovered the seeds after the covering
// prefix are dropped (their run directories removed), the self-check's
// second runs still missing for the seeds kept are run here, timelines are
// kept as o.Timelines says (keep, when set, is asked for each seed that
// keeps one: a farm re-creates it; nil removes those over MaxTimelines),
// and sweep.json, sweep.md and the ECDF are written.
func (sw *sweeper) finish(ctx context.Context, keep func(record.SweepSeed) (*record.SweepMismatch, error)) (SweepResult, error) {
	s, o, dir := sw.s, sw.o, sw.dir
	end := len(sw.runs)
	covered := false
	if sw.cover != nil {
		if at := sw.cover.advance(sw.runs); at >= 0 {
			end, covered = at+1, true
		}
	}
	for _, r := range sw.runs[end:] {
		if r.seed.Dir != "" {
			if err := os.RemoveAll(filepath.Join(dir, r.seed.Dir)); err != nil {
				return SweepResult{Dir: dir}, err
			}
		}
	}
	var missing []int
	for i := range end {
		if _, ok := sw.again[i]; sw.check[i] && !ok && sw.runs[i].sum != "" {
			missing = append(missing, i)
		}
	}
	forEach(ctx, len(missing), o.Jobs, func(j int) bool {
		sw.second(missing[j], sw.rerun(ctx, o.Seeds[missing[j]]))
		return false
	})
	res := SweepResult{Dir: dir}
	out := record.Sweep{Format: record.SweepFormat, Tool: "fiomig", Command: o.Command, SeedsArg: o.SeedsArg,
		RunArgs: s.Flags("seed"), Seeds: []record.SweepSeed{}, SeedsListed: len(o.Seeds)}
	var det *record.SweepDeterminism
	if o.SelfCheck > 0 {
		det = &record.SweepDeterminism{Share: o.SelfCheck, Seeds: []int64{}, Mismatches: []record.SweepMismatch{}}
	}
	kept := 0
	for i, r := range sw.runs[:end] {
		if !r.ran || r.interrupted || r.seed.Verdict == "" {
			out.Interrupted = true
			continue
		}
		x := r.seed
		// MaxTimelines, in Seeds order (so the same seeds keep theirs
		// whatever order the runs finished in).
		if x.TimelineKept && o.Timelines == KeepFailing {
			if kept++; o.MaxTimelines > 0 && kept > o.MaxTimelines {
				x.TimelineKept = false
				if keep == nil {
					if err := os.Remove(filepath.Join(dir, x.Dir, record.TimelineFile)); err != nil {
						return res, fmt.Errorf("seed %d: drop timeline: %w", x.Seed, err)
					}
				}
			}
		}
		if x.TimelineKept && keep != nil {
			m, err := keep(x)
			if err != nil {
				return res, err
			}
			if m != nil && det != nil {
				det.Mismatches = append(det.Mismatches, *m)
			}
		}
		if again, ok := sw.again[i]; ok && det != nil {
			det.Seeds = append(det.Seeds, x.Seed)
			if again != r.sum {
				det.Mismatches = append(det.Mismatches, record.SweepMismatch{Seed: x.Seed, First: r.sum, Second: again})
			}
		}
		out.Seeds = append(out.Seeds, x)
		out.Counts = tallySeed(out.Counts, x)
	}
	if len(sw.extra) > 0 {
		if det == nil {
			det = &record.SweepDeterminism{Seeds: []int64{}, Mismatches: []record.SweepMismatch{}}
		}
		det.Mismatches = append(det.Mismatches, sw.extra...)
	}
	out.Determinism = det
	if sw.cover != nil {
		out.Coverage = sw.cover.record(sw.runs[:end], covered)
	}
	res.Stopped = out.Interrupted && ctx.Err() == nil
	crit := s.Params.PauseCritS
	if len(out.Seeds) > 0 && out.Seeds[0].PauseCritS > 0 {
		crit = out.Seeds[0].PauseCritS
	}
	out.Pauses, out.OverBound = reports.SweepFigures(out.Seeds, crit)
	res.Sweep = out
	return res, reports.WriteSweep(dir, out)
}

// selfCheckAt marks the positions of n seeds the self-check reruns: the
// first, then one every 1/share places (⌊k/share⌋ for k = 0, 1, ...), so
// ⌈n·share⌉ of them, the same whatever runs them.
func selfCheckAt(n int, share float64) []bool {
	at := make([]bool, n)
	if share <= 0 {
		return at
	}
	for k := 0; ; k++ {
		p := int(math.Floor(float64(k)/share + 1e-9))
		if p >= n {
			return at
		}
		at[p] = true
	}
}

// summaryFacts are a summary.json's SHA-256 (hex) and its landed faults
// per cell (summary.json fault_matrix); a summary that cannot be read
// lands nothing.
func summaryFacts(b []byte) (string, map[cell]int) {
	h := sha256.Sum256(b)
	landed := map[cell]int{}
	var sum record.Summary
	if json.Unmarshal(b, &sum) == nil {
		m := sum.FaultMatrix
		for _, row := range m.Kinds {
			for j, c := range row.Cells {
				if j < len(m.Stages) && c.Landed > 0 {
					landed[cell{row.Kind, m.Stages[j]}] += c.Landed
				}
			}
		}
	}
	return hex.EncodeToString(h[:]), landed
}

// coverageCells are the cells of the coverage matrix a sweep of s over
// seeds covers: every kind × stage that the fault schedule of at least
// one of the seeds places a fault at (drawn as each seed's run draws it;
// a fault tied to a time, not a stage, is in no cell), kinds in
// faults.Kinds order, stages in record.Stages order. No cell is a
// UsageError: there is nothing to cover.
func coverageCells(s Spec, seeds []int64) ([]cell, error) {
	if len(seeds) == 0 {
		return nil, nil
	}
	cluster, err := scenario.SimCluster(seeds[0], s.planParams())
	if err != nil {
		return nil, Usagef("simulator: %v", err)
	}
	topo := cluster.Topology()
	cluster.Close()
	seen := map[cell]bool{}
	for _, seed := range seeds {
		x := s
		x.Seed = seed
		sched, err := x.schedule(topo, nil, nil)
		if err != nil {
			return nil, err
		}
		for _, f := range sched {
			if slices.Contains(record.Stages, f.Phase) {
				seen[cell{f.Fault, f.Phase}] = true
			}
		}
	}
	var cells []cell
	for _, k := range faults.Kinds {
		for _, st := range record.Stages {
			if seen[cell{k, st}] {
				cells = append(cells, cell{k, st})
			}
		}
	}
	if len(cells) == 0 {
		return nil, Usagef("--until-covered: the fault schedule of these seeds places no fault at a migration stage (--faults %s): there is nothing to cover", s.Params.Faults)
	}
	return cells, nil
}

// coverage follows the landed faults per cell over the longest prefix of
// a sweep's seeds that all ran.
type coverage struct {
	cells  []cell
	k      int
	landed map[cell]int
	next   int // the first position not yet counted
	at     int // the position after which every cell had k, or -1
}

// advance counts the runs from next on while they ran, and returns the
// position after which every cell had landed k times (-1: not yet).
func (c *coverage) advance(runs []seedRun) int {
	for c.at < 0 && c.next < len(runs) && runs[c.next].ran && !runs[c.next].interrupted {
		for k, n := range runs[c.next].landed {
			c.landed[k] += n
		}
		if c.reached() {
			c.at = c.next
		}
		c.next++
	}
	return c.at
}

func (c *coverage) reached() bool {
	for _, x := range c.cells {
		if c.landed[x] < c.k {
			return false
		}
	}
	return true
}

// record is sweep.json's coverage over runs.
func (c *coverage) record(runs []seedRun, covered bool) *record.SweepCoverage {
	landed := map[cell]int{}
	for _, r := range runs {
		for k, n := range r.landed {
			landed[k] += n
		}
	}
	out := &record.SweepCoverage{K: c.k, Covered: covered, Cells: []record.SweepCell{}, NeverLanded: []string{}}
	for _, x := range c.cells {
		out.Cells = append(out.Cells, record.SweepCell{Kind: x.kind, Stage: x.stage, Landed: landed[x]})
		if landed[x] == 0 {
			out.NeverLanded = append(out.NeverLanded, x.kind+" × "+x.stage)
		}
	}
	return out
}

// runSeed runs s with seed into dir/seed-<seed> and returns its line of
// sweep.json (its verdict read from the run itself), dropping its timeline
// as timelines says. interrupted: a signal ended the run.
func runSeed(ctx context.Context, dir string, s Spec, seed int64, timelines string) (record.SweepSeed, bool) {
	name := "seed-" + strconv.FormatInt(seed, 10)
	x := record.SweepSeed{Seed: seed, FailedChecks: []string{}, InconclusiveChecks: []string{}, Migrations: []record.SweepMigration{}}
	fail := func(code int, err error) (record.SweepSeed, bool) {
		x.Verdict, x.Error, x.ExitCode = "error", err.Error(), code
		return x, false
	}
	tmp := filepath.Join(dir, ".run-"+name)
	defer os.RemoveAll(tmp)
	s.Seed, s.Out = seed, tmp
	if v := os.Getenv(NondeterministicSeedEnv); v != "" && v == strconv.FormatInt(seed, 10) {
		var b [8]byte
		rand.Read(b[:])
		// Every validation Job starts later by a draw from [0.25, 0.75) s:
		// each migration's times (kept to the microsecond in summary.json)
		// move, which a nudged cutover pause, rounded to the sample
		// interval, did not always do.
		u := 0.25 + 0.5*float64(binary.LittleEndian.Uint64(b[:])>>11)/(1<<53)
		m := &s.Params.Model
		if m.JobStartMinS == 0 && m.JobStartMaxS == 0 {
			m.JobStartMinS, m.JobStartMaxS = sim.DefaultJobStartMinS, sim.DefaultJobStartMaxS
		}
		m.JobStartMinS += u
		m.JobStartMaxS += u
	}
	res, err := Run(ctx, s, Options{})
	if res.Dir != "" {
		if rerr := os.Rename(res.Dir, filepath.Join(dir, name)); rerr != nil {
			return fail(ExitUsage, fmt.Errorf("keep run directory: %w", rerr))
		}
		x.Dir = name
	}
	switch {
	case res.Interrupted:
		x.ExitCode = ExitInterrupted
		return x, true
	case err != nil && IsUsage(err):
		return fail(ExitUsage, err)
	case err != nil:
		return fail(ExitUsage, fmt.Errorf("the run ended without a verdict: %w", err))
	}
	sum := res.Summary
	x.Command, x.Verdict, x.PauseCritS, x.ExitCode = res.Plan.Command, sum.Verdict, res.Plan.Params.PauseCritS, ExitCode(sum.Verdict)
	for _, c := range sum.Checks {
		switch c.Verdict {
		case record.Fail:
			x.FailedChecks = append(x.FailedChecks, c.Name)
		case record.Inconclusive:
			x.InconclusiveChecks = append(x.InconclusiveChecks, c.Name)
		}
	}
	x.Migrations = reports.SweepMigrations(sum, res.Plan.Params.PauseCritS)
	x.TimelineKept = timelines == KeepAll || (timelines == KeepFailing && x.Verdict != record.Pass)
	if !x.TimelineKept {
		if err := os.Remove(filepath.Join(dir, name, record.TimelineFile)); err != nil {
			return fail(ExitUsage, fmt.Errorf("drop timeline: %w", err))
		}
	}
	return x, false
}

func tallySeed(c record.SweepCounts, s record.SweepSeed) record.SweepCounts {
	switch s.Verdict {
	case record.Pass:
		c.Pass++
	case record.Fail:
		c.Fail++
	case record.Inconclusive:
		c.Inconclusive++
	default:
		c.Error++
	}
	return c
}

// ParseSeeds parses a seed list: comma-separated seeds and inclusive
// ranges A-B (A <= B), no seed twice, at most MaxSeeds. A seed is any
// int64, as --seed and plan.json's seed take it; a '-' leading a number is
// its sign, so -3, -5--1 (-5 to -1) and -2-2 are seeds and ranges. It is
// the one seed-list parser (sweep, reproduce). Errors name the item.
func ParseSeeds(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--seeds is required, e.g. --seeds 1-100 or --seeds 1,5,9-12")
	}
	var out []int64
	seen := map[int64]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		a, b, ok := seedRange(item)
		if !ok {
			return nil, fmt.Errorf("--seeds %q: %q is not an integer seed (int64, as --seed) or a range A-B", s, item)
		}
		if b < a {
			return nil, fmt.Errorf("--seeds %q: range %q ends before it starts", s, item)
		}
		// b >= a: the width in uint64 is exact even across int64's range.
		width := uint64(b) - uint64(a)
		if width >= MaxSeeds {
			return nil, fmt.Errorf("--seeds %q: range %q is more than %d seeds", s, item, MaxSeeds)
		}
		for i := uint64(0); i <= width; i++ {
			v := a + int64(i)
			if seen[v] {
				return nil, fmt.Errorf("--seeds %q: seed %d is listed twice (in %q)", s, v, item)
			}
			if len(out) >= MaxSeeds {
				return nil, fmt.Errorf("--seeds %q: more than %d seeds", s, MaxSeeds)
			}
			seen[v] = true
			out = append(out, v)
		}
	}
	return out, nil
}

// seedRange parses one seed-list item: a seed N (the range N-N) or a
// range A-B, split at the first '-' after the item's first character (a
// leading '-' is A's sign).
func seedRange(item string) (a, b int64, ok bool) {
	if v, err := strconv.ParseInt(item, 10, 64); err == nil {
		return v, v, true
	}
	if item == "" {
		return 0, 0, false
	}
	i := strings.IndexByte(item[1:], '-')
	if i < 0 {
		return 0, 0, false
	}
	i++
	a, errA := strconv.ParseInt(strings.TrimSpace(item[:i]), 10, 64)
	b, errB := strconv.ParseInt(strings.TrimSpace(item[i+1:]), 10, 64)
	return a, b, errA == nil && errB == nil
}
