package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/scenario"
)

func init() {
	register(command{name: "sweep", summary: "run many seeds in parallel and summarize their verdicts and pauses", run: sweepCmd})
}

// Timeline policies of fiomig sweep --timelines.
const (
	keepFailing = "failing" // keep the timeline of seeds that did not pass
	keepAll     = "all"
	keepNone    = "none"
)

// maxSweepSeeds bounds --seeds, so that a mistyped range cannot run for days.
const maxSweepSeeds = 100000

// sweepFlags are fiomig sweep's own flags; every fiomig run flag is
// accepted besides (runFlags).
type sweepFlags struct {
	run          runFlags
	seeds        string
	jobs         int
	timelines    string
	maxTimelines int
}

// sweepOnly are the flags fiomig sweep does not pass on to each run.
var sweepOnly = map[string]bool{"seeds": true, "jobs": true, "timelines": true, "max-timelines": true, "out": true, "seed": true}

func newSweepFlagSet(f *sweepFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("fiomig sweep", flag.ContinueOnError)
	f.run.register(fs)
	fs.StringVar(&f.seeds, "seeds", "", "the `seeds` to run: seeds (any int64, as --seed) and ranges A-B, comma-separated, e.g. 1-100 or 1,5,9-12 or -3--1 (required)")
	fs.IntVar(&f.jobs, "jobs", runtime.GOMAXPROCS(0), "seeds run at once (default GOMAXPROCS: one per core)")
	fs.StringVar(&f.timelines, "timelines", keepFailing, "which seeds keep timeline.jsonl (about 40 MB each with the default flags): `failing` (seeds that did not pass, at most --max-timelines of them), all or none; the rest of each run directory is always kept, and every seed's command reruns it byte for byte")
	fs.IntVar(&f.maxTimelines, "max-timelines", 10, "with --timelines failing: keep the timelines of the first `N` seeds that did not pass, in --seeds order (0 = no limit)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: fiomig sweep --seeds 1-100 [run flags]

Runs "fiomig run" once per seed, several seeds at once (--jobs, default one
per core), each with the same run flags, and summarizes them. Each seed's run
is exactly its single "fiomig run --seed=N" with the same flags: the same
code, the same byte-identical timeline.jsonl and summary.json.

It writes <out>/sweep-<unix seconds>/ with
  seed-<N>/   each seed's run directory (plan.json, summary.json, report.md,
              ...); timeline.jsonl only as --timelines says (by default
              for the first 10 seeds that did not pass: 100 failing seeds
              would otherwise keep about 4 GB; a dropped timeline comes
              back byte for byte from the seed's rerun command)
  sweep.json  per seed its verdict, failed checks, rerun command and each
              migration's longest pause; counts per verdict; the
              distribution of the longest pause per migration (p50, p90,
              p99, max; percentile method named); the fraction of
              migrations over --pause-crit with its 95 % Wilson score
              interval (record.Sweep documents every field)
  sweep.md    the same for people, with each failing seed's rerun command
and prints progress (seeds done, failing so far, ETA) on stderr.

A migration's longest pause is the longest pause window any of its consumer
hosts saw; every migration of every seed that ran counts.

Every "fiomig run" flag is accepted (see fiomig run --help) except --seed
(use --seeds) and --workload=fio (real fio runs on the wall clock and is not
reproducible per seed).

Exit codes: 0 every seed passed; 1 some seed failed a check; 3 none failed
but some were inconclusive; 2 bad usage, or a seed's run ended without a
verdict (named on stderr); 130 interrupted (sweep.json then covers the
seeds that finished and says so).

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// parseSeeds parses a --seeds list: comma-separated seeds and inclusive
// ranges A-B (A <= B), no seed twice, at most maxSweepSeeds. A seed is any
// int64, as --seed and plan.json's seed take it; a '-' leading a number is
// its sign, so -3, -5--1 (-5 to -1) and -2-2 are seeds and ranges. It is
// the one seed-list parser (sweep, reproduce). Errors name the offending
// item.
func parseSeeds(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--seeds is required, e.g. --seeds 1-100 or --seeds 1,5,9-12")
	}
	var out []int64
	seen := map[int64]bool{}
	add := func(v int64, item string) error {
		if seen[v] {
			return fmt.Errorf("--seeds %q: seed %d is listed twice (in %q)", s, v, item)
		}
		if len(out) >= maxSweepSeeds {
			return fmt.Errorf("--seeds %q: more than %d seeds", s, maxSweepSeeds)
		}
		seen[v] = true
		out = append(out, v)
		return nil
	}
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
		if width >= maxSweepSeeds {
			return nil, fmt.Errorf("--seeds %q: range %q is more than %d seeds", s, item, maxSweepSeeds)
		}
		for i := uint64(0); i <= width; i++ {
			if err := add(a+int64(i), item); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// seedRange parses one --seeds item: a seed N (the range N-N) or a range
// A-B, split at the first '-' after the item's first character (a leading
// '-' is A's sign).
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

// createSweepDir creates parent/sweep-<unixSeconds>, or the first free
// sweep-<unixSeconds>-2, -3, ...
func createSweepDir(parent string, unixSeconds int64) (string, error) {
	return record.CreateUniqueDir(parent, "sweep-"+strconv.FormatInt(unixSeconds, 10), "sweep")
}

func sweepCmd(args []string, stdout, stderr io.Writer) int {
	var f sweepFlags
	fs := newSweepFlagSet(&f)
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fiomig sweep: "+format+"\n", a...)
		return exitUsage
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if given["seed"] {
		return usage("--seed is one run's; a sweep takes --seeds (e.g. --seeds %s)", fs.Lookup("seed").Value)
	}
	seeds, err := parseSeeds(f.seeds)
	if err != nil {
		return usage("%v", err)
	}
	switch {
	case f.jobs < 1:
		return usage("--jobs must be >= 1, got %d", f.jobs)
	case f.timelines != keepFailing && f.timelines != keepAll && f.timelines != keepNone:
		return usage("--timelines must be failing, all or none, got %q", f.timelines)
	case f.maxTimelines < 0:
		return usage("--max-timelines must be >= 0 (0 = no limit), got %d", f.maxTimelines)
	case f.run.p.Workload != scenario.WorkloadSim:
		return usage("--workload=%s: a sweep runs the simulator on virtual time (--workload=sim); real fio runs on the wall clock, so a seed would not rerun the same", f.run.p.Workload)
	}
	if err := envDefaults(fs, os.Getenv); err != nil {
		return usage("%v", err)
	}
	if err := f.run.validate(); err != nil {
		return usage("%v", err)
	}

	// The flags every run gets (besides --seed and --out), and the sweep's
	// own command line; both in the flag set's (sorted) order.
	var runArgs []string
	cmd := []string{"fiomig sweep", "--seeds=" + f.seeds}
	fs.Visit(func(fl *flag.Flag) {
		a := "--" + fl.Name + "=" + fl.Value.String()
		if !sweepOnly[fl.Name] {
			runArgs = append(runArgs, a)
		}
		if fl.Name != "seeds" && fl.Name != "out" {
			cmd = append(cmd, a)
		}
	})
	jobs := min(f.jobs, len(seeds))
	dir, err := createSweepDir(f.run.out, time.Now().Unix())
	if err != nil {
		fmt.Fprintf(stderr, "fiomig sweep: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "fiomig sweep: %d seeds (%s), %d at a time, into %s\n", len(seeds), f.seeds, jobs, dir)
	if len(runArgs) > 0 {
		fmt.Fprintf(stdout, "  each seed runs: fiomig run --seed=N %s\n", strings.Join(runArgs, " "))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	results := runSeeds(ctx, dir, seeds, runArgs, jobs, f.timelines, func(done int, r seedResult, tally record.SweepCounts) {
		elapsed := time.Since(start)
		eta := time.Duration(float64(elapsed) / float64(done) * float64(len(seeds)-done))
		what := r.seed.Verdict
		if checks := r.seed.FailedChecks; r.seed.Verdict == record.Fail {
			what += " (" + strings.Join(checks, ", ") + ")"
		}
		if r.interrupted {
			what = "interrupted"
		}
		fmt.Fprintf(stderr, "sweep: seed %d %s — %d/%d done, %d failing, %d inconclusive, %d error, %s elapsed, ETA %s\n",
			r.seed.Seed, what, done, len(seeds), tally.Fail, tally.Inconclusive, tally.Error,
			elapsed.Round(time.Second), eta.Round(time.Second))
	})

	sw := record.Sweep{Format: record.SweepFormat, Tool: "fiomig", Command: strings.Join(cmd, " "), SeedsArg: f.seeds,
		RunArgs: runArgs, Seeds: []record.SweepSeed{}, SeedsListed: len(seeds)}
	if sw.RunArgs == nil {
		sw.RunArgs = []string{}
	}
	kept := 0
	for _, r := range results {
		if r.interrupted || r.seed.Verdict == "" {
			sw.Interrupted = true
			continue
		}
		s := r.seed
		// --max-timelines, in --seeds order (so the same seeds keep theirs
		// whatever order the runs finished in).
		if s.TimelineKept && f.timelines == keepFailing {
			if kept++; f.maxTimelines > 0 && kept > f.maxTimelines {
				if err := os.Remove(filepath.Join(dir, s.Dir, record.TimelineFile)); err != nil {
					fmt.Fprintf(stderr, "fiomig sweep: seed %d: drop timeline: %v\n", s.Seed, err)
				} else {
					s.TimelineKept = false
				}
			}
		}
		sw.Seeds = append(sw.Seeds, s)
		sw.Counts = tallySeed(sw.Counts, s)
	}
	crit := f.run.p.PauseCritS
	if len(sw.Seeds) > 0 && sw.Seeds[0].PauseCritS > 0 {
		crit = sw.Seeds[0].PauseCritS
	}
	sw.Pauses, sw.OverBound = reports.SweepFigures(sw.Seeds, crit)
	if err := reports.WriteSweep(dir, sw); err != nil {
		fmt.Fprintf(stderr, "fiomig sweep: %v\n", err)
		return exitUsage
	}
	printSweep(stdout, dir, sw, time.Since(start), jobs)
	printErrors := func() {
		shown := 0
		for _, s := range sw.Seeds {
			if s.Verdict == "error" {
				if shown++; shown > 3 {
					fmt.Fprintf(stderr, "fiomig sweep: %d more seeds without a verdict (sweep.md names them)\n", sw.Counts.Error-3)
					break
				}
				fmt.Fprintf(stderr, "fiomig sweep: seed %d: %s\n", s.Seed, s.Error)
			}
		}
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "fiomig sweep: interrupted; %s covers the %d seed(s) that finished\n", filepath.Join(dir, record.SweepFile), len(sw.Seeds))
		return exitInterrupted
	case sw.Interrupted:
		// runSeeds stopped: every seed so far was refused as bad usage.
		printErrors()
		fmt.Fprintf(stderr, "fiomig sweep: stopped after %d seed(s) without a verdict; the other %d were not run\n", len(sw.Seeds), sw.SeedsListed-len(sw.Seeds))
		return exitUsage
	case sw.Counts.Fail > 0:
		return exitCheckFailed
	case sw.Counts.Error > 0:
		printErrors()
		return exitUsage
	case sw.Counts.Inconclusive > 0:
		return exitInconclusive
	}
	return exitPass
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

// seedResult is one seed's outcome; interrupted seeds are not in sweep.json.
type seedResult struct {
	seed        record.SweepSeed
	interrupted bool
}

// runSeeds runs every seed on jobs workers and returns their results in
// the order of seeds; progress is called after each seed, in the order they
// finish, from one goroutine. Once ctx is done no further seed starts (the
// runs under way end themselves: each fiomig run watches SIGINT/SIGTERM
// too) and the seeds that did not run are marked interrupted. So too when
// the seeds finished so far all ended without a verdict and one of them was
// refused as bad usage (exit 2): flags that fiomig run refuses (a fault file
// that does not parse, say) would make every seed fail the same way; a
// seed-specific error after some verdict lets the sweep go on.
func runSeeds(ctx context.Context, dir string, seeds []int64, runArgs []string, jobs int, timelines string,
	progress func(done int, r seedResult, tally record.SweepCounts)) []seedResult {
	results := make([]seedResult, len(seeds))
	feed, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	idx := make(chan int)
	type finished struct {
		i int
		r seedResult
	}
	fin := make(chan finished)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				fin <- finished{i, runSeed(dir, seeds[i], runArgs, timelines)}
			}
		}()
	}
	go func() {
		defer close(idx)
		for i := range seeds {
			if feed.Err() != nil {
				for j := i; j < len(seeds); j++ {
					results[j] = seedResult{seed: record.SweepSeed{Seed: seeds[j]}, interrupted: true}
				}
				return
			}
			select {
			case idx <- i:
			case <-feed.Done():
				for j := i; j < len(seeds); j++ {
					results[j] = seedResult{seed: record.SweepSeed{Seed: seeds[j]}, interrupted: true}
				}
				return
			}
		}
	}()
	go func() { wg.Wait(); close(fin) }()
	var tally record.SweepCounts
	done := 0
	for x := range fin {
		results[x.i] = x.r
		done++
		if !x.r.interrupted {
			tally = tallySeed(tally, x.r.seed)
		}
		if x.r.seed.ExitCode == exitUsage && tally.Error == done {
			stopFeed()
		}
		progress(done, x.r, tally)
	}
	return results
}

// runSeed runs `fiomig run --seed=seed runArgs...` in this process (the
// very code of the run command, so the run is byte-identical to the single
// one), moves its run directory to dir/seed-<seed>, drops its timeline as
// timelines says, and reads its verdict back from summary.json.
func runSeed(dir string, seed int64, runArgs []string, timelines string) seedResult {
	name := "seed-" + strconv.FormatInt(seed, 10)
	s := record.SweepSeed{Seed: seed, FailedChecks: []string{}, InconclusiveChecks: []string{}, Migrations: []record.SweepMigration{}}
	fail := func(err error) seedResult {
		s.Verdict, s.Error = "error", err.Error()
		return seedResult{seed: s}
	}
	tmp := filepath.Join(dir, ".run-"+name)
	defer os.RemoveAll(tmp)
	var out, errOut bytes.Buffer
	args := append([]string{"--seed=" + strconv.FormatInt(seed, 10), "--out=" + tmp}, runArgs...)
	s.ExitCode = runCmd(args, &out, &errOut)
	runDirs, _ := filepath.Glob(filepath.Join(tmp, "fio-mig-*"))
	if len(runDirs) == 1 {
		if err := os.Rename(runDirs[0], filepath.Join(dir, name)); err != nil {
			return fail(fmt.Errorf("keep run directory: %w", err))
		}
		s.Dir = name
	}
	switch s.ExitCode {
	case exitInterrupted:
		return seedResult{seed: s, interrupted: true}
	case exitPass, exitCheckFailed, exitInconclusive:
	default:
		return fail(fmt.Errorf("fiomig run exited %d: %s", s.ExitCode, strings.TrimSpace(errOut.String())))
	}
	if s.Dir == "" {
		return fail(fmt.Errorf("fiomig run left %d run directories under %s, want 1", len(runDirs), tmp))
	}
	runDir := filepath.Join(dir, name)
	plan, err := record.ReadPlan(filepath.Join(runDir, record.PlanFile))
	if err != nil {
		return fail(err)
	}
	var sum record.Summary
	b, err := os.ReadFile(filepath.Join(runDir, record.SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		return fail(fmt.Errorf("%s: %w", record.SummaryFile, err))
	}
	s.Command, s.Verdict, s.PauseCritS = plan.Command, sum.Verdict, plan.Params.PauseCritS
	for _, c := range sum.Checks {
		switch c.Verdict {
		case record.Fail:
			s.FailedChecks = append(s.FailedChecks, c.Name)
		case record.Inconclusive:
			s.InconclusiveChecks = append(s.InconclusiveChecks, c.Name)
		}
	}
	s.Migrations = reports.SweepMigrations(sum, plan.Params.PauseCritS)
	s.TimelineKept = timelines == keepAll || (timelines == keepFailing && s.Verdict != record.Pass)
	if !s.TimelineKept {
		if err := os.Remove(filepath.Join(runDir, record.TimelineFile)); err != nil {
			return fail(fmt.Errorf("drop timeline: %w", err))
		}
	}
	return seedResult{seed: s}
}

// maxFailingShown is how many failing seeds printSweep names on stdout;
// sweep.md names them all.
const maxFailingShown = 10

// printSweep prints the sweep's figures and the first failing seeds' rerun
// commands.
func printSweep(w io.Writer, dir string, sw record.Sweep, wall time.Duration, jobs int) {
	c, p, o := sw.Counts, sw.Pauses, sw.OverBound
	fmt.Fprintf(w, "seeds:   %d of %d ran: %d pass, %d fail, %d inconclusive, %d error (%s wall, %d at a time)\n",
		len(sw.Seeds), sw.SeedsListed, c.Pass, c.Fail, c.Inconclusive, c.Error, wall.Round(time.Millisecond), jobs)
	fmt.Fprintf(w, "pauses:  longest pause per migration over %d migrations that cut over%s: p50 %s s, p90 %s s, p99 %s s, max %s s\n",
		p.Migrations, reports.NoCutoverNote(p.NoCutover), record.FormatT(p.P50S), record.FormatT(p.P90S), record.FormatT(p.P99S), record.FormatT(p.MaxS))
	fmt.Fprintf(w, "bound:   %d of %d migrations over %s s: %.4f, 95 %% interval [%.4f, %.4f] (Wilson score)\n",
		o.Over, o.Migrations, record.FormatT(o.PauseCritS), o.Fraction, o.Low95, o.High95)
	shown := 0
	for _, s := range sw.Seeds {
		if s.Verdict != record.Fail {
			continue
		}
		if shown++; shown > maxFailingShown {
			fmt.Fprintf(w, "failing: %d more seeds, each with its rerun command in %s\n", c.Fail-maxFailingShown, record.SweepReportFile)
			break
		}
		fmt.Fprintf(w, "failing: seed %d (%s): %s\n", s.Seed, strings.Join(s.FailedChecks, ", "), s.Command)
	}
	fmt.Fprintf(w, "summary: %s\n", filepath.Join(dir, record.SweepReportFile))
}
