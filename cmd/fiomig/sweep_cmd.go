package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

func init() {
	register(command{name: "sweep", summary: "run many seeds in parallel and summarize their verdicts and pauses", run: sweepCmd})
}

// sweepFlags are fiomig sweep's own flags; every fiomig run flag but
// --seed is accepted besides.
type sweepFlags struct {
	seeds        string
	jobs         int
	timelines    string
	maxTimelines int
}

func (f *sweepFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.seeds, "seeds", "", "the `seeds` to run: seeds (any int64, as --seed) and ranges A-B, comma-separated, e.g. 1-100 or 1,5,9-12 or -3--1 (required)")
	fs.IntVar(&f.jobs, "jobs", runtime.GOMAXPROCS(0), "seeds run at once (default GOMAXPROCS: one per core)")
	fs.StringVar(&f.timelines, "timelines", harness.KeepFailing, "which seeds keep timeline.jsonl (about 1 MB each with the default flags): `failing` (seeds that did not pass, at most --max-timelines of them), all or none; the rest of each run directory is always kept, and every seed's command reruns it byte for byte")
	fs.IntVar(&f.maxTimelines, "max-timelines", 10, "with --timelines failing: keep the timelines of the first `N` seeds that did not pass, in --seeds order (0 = no limit)")
}

func sweepCmd(args []string, stdout, stderr io.Writer) int {
	var f sweepFlags
	s, fs, code, stop := bindRun("fiomig sweep", args, stdout, stderr, func(fs *flag.FlagSet) {
		f.register(fs)
		fs.Usage = func() {
			fmt.Fprintln(fs.Output(), helpText("sweep"))
			fs.PrintDefaults()
		}
	})
	if stop {
		return code
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fiomig sweep: "+format+"\n", a...)
		return exitUsage
	}
	if harness.Given(fs)["seed"] {
		return usage("--seed is one run's; a sweep takes --seeds (e.g. --seeds %d)", s.Seed)
	}
	seeds, err := harness.ParseSeeds(f.seeds)
	switch {
	case err != nil:
		return usage("%v", err)
	case f.jobs < 1:
		return usage("--jobs must be >= 1, got %d", f.jobs)
	case f.timelines != harness.KeepFailing && f.timelines != harness.KeepAll && f.timelines != harness.KeepNone:
		return usage("--timelines must be failing, all or none, got %q", f.timelines)
	case f.maxTimelines < 0:
		return usage("--max-timelines must be >= 0 (0 = no limit), got %d", f.maxTimelines)
	}
	jobs := min(f.jobs, len(seeds))
	cmd := harness.CommandLine("fiomig sweep --seeds="+f.seeds, harness.ChangedFlags(fs, "seeds", "seed", "out"))
	ctx, stopSignals := interruptContext(stderr, "fiomig sweep")
	defer stopSignals()
	start := time.Now()
	res, err := harness.Sweep(ctx, s, harness.SweepOptions{Seeds: seeds, SeedsArg: f.seeds, Jobs: jobs, Timelines: f.timelines,
		MaxTimelines: f.maxTimelines, Command: cmd,
		Started: func(dir string) {
			fmt.Fprintf(stdout, "fiomig sweep: %d seeds (%s), %d at a time, into %s\n", len(seeds), f.seeds, jobs, dir)
			if runFlags := s.Flags("seed"); len(runFlags) > 0 {
				fmt.Fprintf(stdout, "  each seed runs: %s\n", harness.CommandLine("fiomig run --seed=N", runFlags))
			}
		},
		Progress: func(done int, x record.SweepSeed, interrupted bool, tally record.SweepCounts) {
			elapsed := time.Since(start)
			eta := time.Duration(float64(elapsed) / float64(done) * float64(len(seeds)-done))
			what := x.Verdict
			if x.Verdict == record.Fail {
				what += " (" + strings.Join(x.FailedChecks, ", ") + ")"
			}
			if interrupted {
				what = "interrupted"
			}
			fmt.Fprintf(stderr, "sweep: seed %d %s — %d/%d done, %d failing, %d inconclusive, %d error, %s elapsed, ETA %s\n",
				x.Seed, what, done, len(seeds), tally.Fail, tally.Inconclusive, tally.Error, elapsed.Round(time.Second), eta.Round(time.Second))
		}})
	if err != nil {
		fmt.Fprintf(stderr, "fiomig sweep: %v\n", err)
		return exitUsage
	}
	sw := res.Sweep
	reports.SweepText(stdout, res.Dir, sw, time.Since(start), jobs)
	code = harness.Worse(res.ExitCode(ctx.Err() != nil), publishCI(fs, res.Dir, stderr))
	shown := 0
	for _, x := range sw.Seeds {
		if x.Verdict != "error" || (code != exitUsage) {
			continue
		}
		if shown++; shown > 3 {
			fmt.Fprintf(stderr, "fiomig sweep: %d more seeds without a verdict (sweep.md names them)\n", sw.Counts.Error-3)
			break
		}
		fmt.Fprintf(stderr, "fiomig sweep: seed %d: %s\n", x.Seed, x.Error)
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "fiomig sweep: interrupted; %s covers the %d seed(s) that finished\n", filepath.Join(res.Dir, record.SweepFile), len(sw.Seeds))
	case res.Stopped:
		fmt.Fprintf(stderr, "fiomig sweep: stopped after %d seed(s) without a verdict; the other %d were not run\n", len(sw.Seeds), sw.SeedsListed-len(sw.Seeds))
	}
	return code
}
