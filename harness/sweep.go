package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// Timeline policies of a sweep (SweepOptions.Timelines).
const (
	KeepFailing = "failing" // keep the timeline of seeds that did not pass
	KeepAll     = "all"
	KeepNone    = "none"
)

// MaxSeeds bounds a seed list, so that a mistyped range cannot run for days.
const MaxSeeds = 100000

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
	// Command is the sweep's own command line, for sweep.json.
	Command string
	// StartUnix names the sweep directory sweep-<StartUnix>; 0 = now.
	// Started, when set, is told the directory once it exists.
	StartUnix int64
	Started   func(dir string)
	// Progress, when set, is called after each seed, in the order they
	// finish, one call at a time: how many are done, the seed, whether a
	// signal ended it, and the tally so far.
	Progress func(done int, seed record.SweepSeed, interrupted bool, tally record.SweepCounts)
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

// ExitCode is the sweep's: 1 when a seed failed, else 2 when a seed ended
// without a verdict, else 3 when one was inconclusive, else 0; 2 when it
// stopped on bad usage, 130 when a signal ended it (interrupted).
func (r SweepResult) ExitCode(interrupted bool) int {
	c := r.Sweep.Counts
	switch {
	case interrupted:
		return ExitInterrupted
	case r.Stopped:
		return ExitUsage
	case c.Fail > 0:
		return ExitFail
	case c.Error > 0:
		return ExitUsage
	case c.Inconclusive > 0:
		return ExitInconclusive
	}
	return ExitPass
}

// Sweep runs s once per seed, o.Jobs seeds at once, each exactly its
// single run (Run with that seed: the same byte-identical timeline.jsonl
// and summary.json), into <s.Out>/sweep-<unix>/seed-<N>/, and writes
// sweep.json and sweep.md there (reports.WriteSweep): per seed its verdict,
// failed checks, rerun command and each migration's longest pause; the
// counts; the distribution of the longest pause per migration and the
// fraction over the bound with its Wilson interval. Once ctx is done no
// further seed starts and the sweep covers those that finished; so too
// when the seeds finished so far all ended without a verdict and one was
// refused as bad usage (every seed would be).
func Sweep(ctx context.Context, s Spec, o SweepOptions) (SweepResult, error) {
	if s.Params.IsFio() {
		return SweepResult{}, Usagef("--workload=%s: a sweep runs the simulator on virtual time (--workload=sim); real fio runs on the wall clock, so a seed would not rerun the same", s.Params.Workload)
	}
	if err := s.Validate(); err != nil {
		return SweepResult{}, err
	}
	start := o.StartUnix
	if start == 0 {
		start = time.Now().Unix()
	}
	dir, err := record.CreateUniqueDir(s.Out, "sweep-"+strconv.FormatInt(start, 10), "sweep")
	if err != nil {
		return SweepResult{}, err
	}
	if o.Started != nil {
		o.Started(dir)
	}
	type outcome struct {
		seed             record.SweepSeed
		ran, interrupted bool
	}
	results := make([]outcome, len(o.Seeds))
	var mu sync.Mutex
	var tally record.SweepCounts
	done := 0
	forEach(ctx, len(o.Seeds), o.Jobs, func(i int) bool {
		seed, interrupted := runSeed(ctx, dir, s, o.Seeds[i], o.Timelines)
		mu.Lock()
		defer mu.Unlock()
		results[i] = outcome{seed, true, interrupted}
		done++
		if !interrupted {
			tally = tallySeed(tally, seed)
		}
		if o.Progress != nil {
			o.Progress(done, seed, interrupted, tally)
		}
		return seed.ExitCode == ExitUsage && tally.Error == done
	})
	res := SweepResult{Dir: dir}
	sw := record.Sweep{Format: record.SweepFormat, Tool: "fiomig", Command: o.Command, SeedsArg: o.SeedsArg,
		RunArgs: s.Flags("seed"), Seeds: []record.SweepSeed{}, SeedsListed: len(o.Seeds)}
	kept := 0
	for _, r := range results {
		if !r.ran || r.interrupted || r.seed.Verdict == "" {
			sw.Interrupted = true
			continue
		}
		x := r.seed
		// MaxTimelines, in Seeds order (so the same seeds keep theirs
		// whatever order the runs finished in).
		if x.TimelineKept && o.Timelines == KeepFailing {
			if kept++; o.MaxTimelines > 0 && kept > o.MaxTimelines {
				if err := os.Remove(filepath.Join(dir, x.Dir, record.TimelineFile)); err != nil {
					return res, fmt.Errorf("seed %d: drop timeline: %w", x.Seed, err)
				}
				x.TimelineKept = false
			}
		}
		sw.Seeds = append(sw.Seeds, x)
		sw.Counts = tallySeed(sw.Counts, x)
	}
	res.Stopped = sw.Interrupted && ctx.Err() == nil
	crit := s.Params.PauseCritS
	if len(sw.Seeds) > 0 && sw.Seeds[0].PauseCritS > 0 {
		crit = sw.Seeds[0].PauseCritS
	}
	sw.Pauses, sw.OverBound = reports.SweepFigures(sw.Seeds, crit)
	res.Sweep = sw
	return res, reports.WriteSweep(dir, sw)
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
