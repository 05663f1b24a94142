package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"time"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/reports"
)

func init() {
	register(command{name: "sweep", summary: "run many seeds in parallel and summarize their verdicts and pauses", run: sweepCmd})
}

// coverK is --until-covered: bare it is harness.DefaultCoverK, =false off;
// an explicit 0 is noted in zero (the library's 0 means off: refused).
type coverK struct {
	k    *int
	zero *bool
}

func (c coverK) IsBoolFlag() bool { return true }
func (c coverK) String() string {
	if c.k == nil {
		return "0"
	}
	return strconv.Itoa(*c.k)
}
func (c coverK) Set(v string) (err error) {
	if k, ok := map[string]int{"true": harness.DefaultCoverK, "false": 0}[v]; ok {
		*c.k = k
		return nil
	}
	*c.k, err = strconv.Atoi(v)
	*c.zero = err == nil && *c.k == 0
	return err
}

func sweepCmd(args []string, stdout, stderr io.Writer) int {
	seeds, shard, coverZero := "", 0, false
	o, f := harness.SweepOptions{Log: stdout, Progress: stderr}, harness.FarmOptions{}
	s, fs, code, stop := bindRun("fiomig sweep", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&seeds, "seeds", "", "the `seeds` to run: seeds (any int64, as --seed) and ranges A-B, comma-separated, e.g. 1-100 or 1,5,9-12 or -3--1 (required)")
		fs.IntVar(&o.Jobs, "jobs", runtime.GOMAXPROCS(0), "seeds run at once (default GOMAXPROCS: one per core)")
		fs.StringVar(&o.Timelines, "timelines", harness.KeepFailing, "which seeds keep timeline.jsonl (about 1 MB each with the default flags): `failing` (seeds that did not pass, at most --max-timelines of them), all or none; the rest of each run directory is always kept, and every seed's command reruns it byte for byte")
		fs.IntVar(&o.MaxTimelines, "max-timelines", 10, "with --timelines failing: keep the timelines of the first `N` seeds that did not pass, in --seeds order (0 = no limit)")
		fs.Float64Var(&o.SelfCheck, "self-check", harness.DefaultSelfCheck, "`share` of the seeds (one every 1/share of the list, the first included) run a second time and their summary.json compared; a seed whose two runs differ fails the sweep (0 = off)")
		fs.Var(coverK{&o.UntilCovered, &coverZero}, "until-covered", "stop after the shortest prefix of --seeds in which every fault kind × stage cell the seeds' schedules place a fault in has landed `K` times (bare: 3); cells that never landed are named")
		harness.RegisterFarmFlags(fs, &f, "the seeds", "sweep.json", false)
		fs.IntVar(&shard, "shard", 0, "internal, what a farm's pods run: index $JOB_COMPLETION_INDEX of `N` shards, each seed's result a JSON line on stdout")
		fs.Usage = func() {
			fmt.Fprintln(fs.Output(), helpText("sweep"))
			fs.PrintDefaults()
		}
	})
	if stop {
		return code
	}
	if harness.Given(fs)["seed"] {
		fmt.Fprintf(stderr, "fiomig sweep: --seed is one run's; a sweep takes --seeds (e.g. --seeds %d)\n", s.Seed)
		return exitUsage
	}
	if coverZero {
		return fail(stderr, "sweep", usagef("--until-covered must be >= 1 (or bare: %d), got 0", harness.DefaultCoverK))
	}
	var err error
	if o.Seeds, err = harness.ParseSeeds(seeds); err != nil && f.Attach == "" {
		return fail(stderr, "sweep", usagef("%v", err))
	}
	o.SeedsArg, o.Jobs = seeds, min(o.Jobs, max(1, len(o.Seeds)))
	o.Command = harness.CommandLine("fiomig sweep --seeds="+seeds, harness.ChangedFlags(fs, "seeds", "seed", "out"))
	if shard > 0 {
		return shardMain(stderr, "sweep", func(ctx context.Context, index int) error { return harness.Shard(ctx, s, o, shard, index, stdout) })
	}
	ctx, stopSignals := interruptContext(stderr, "fiomig sweep")
	defer stopSignals()
	run := harness.Sweep
	local, err := f.Local()
	switch {
	case err != nil:
		return fail(stderr, "sweep", err)
	case !local:
		f.Kubeconfig, f.Namespace, f.Image, f.Command = s.Kubeconfig, s.Kube.Namespace, s.Kube.HelperImage, o.Command
		o.Command = harness.CommandLine("fiomig sweep --seeds="+seeds, harness.ChangedFlags(fs, append(harness.FarmFlags, "seeds", "seed", "out")...))
		s.Kubeconfig, s.Kube = harness.DefaultSpec().Kubeconfig, harness.DefaultSpec().Kube
		run = func(ctx context.Context, s harness.Spec, o harness.SweepOptions) (harness.SweepResult, error) {
			return harness.Farm(ctx, s, o, f)
		}
	}
	start := time.Now()
	res, err := run(ctx, s, o)
	if err != nil {
		fmt.Fprintf(stderr, "fiomig sweep: %s\n", oneLine(err))
		if res.Dir == "" || harness.IsUsage(err) {
			return exitUsage
		}
	}
	reports.SweepText(stdout, res.Dir, res.Sweep, time.Since(start), o.Jobs)
	code = harness.Worse(res.ExitCode(ctx.Err() != nil), publishCI(fs, res.Dir, stderr))
	if err != nil && ctx.Err() == nil {
		code = exitUsage // the farm failed: sweep.json covers what arrived
	}
	res.Explain(stderr, code, ctx.Err() != nil)
	return code
}

// shardMain is what a farm's pod runs (fiomig sweep or reproduce
// --shard): shard $JOB_COMPLETION_INDEX, exit 130 when a signal ended it.
func shardMain(stderr io.Writer, name string, run func(ctx context.Context, index int) error) int {
	ctx, stop := interruptContext(stderr, "fiomig "+name)
	defer stop()
	if err := run(ctx, harness.CompletionIndex()); ctx.Err() != nil {
		return exitInterrupted
	} else if err != nil {
		return fail(stderr, name, err)
	}
	return exitPass
}
