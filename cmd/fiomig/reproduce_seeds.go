package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/scenario"
)

// reproduceSeeds runs every seed of seeds (each with every operator, one
// seed per core at a time, in this process) into
// OUT/reproduce-NAME-<unix>/seed-N, then writes the seeds table there
// (reproduce.md) and prints it. With both operators the incident's compare
// expectation is judged once over all the seeds (scenario.JudgeOverSeeds).
// The exit code is the worst of the seeds' bands and the comparison: 1 a
// band or the comparison failed, 3 inconclusive (a fault left no evidence,
// or the comparison's intervals are too wide), 2 a run could not be made,
// 130 interrupted.
func reproduceSeeds(inc incidents.Incident, name string, f *reproduceFlags, targetDNR *bool, seeds []int64, stdout, stderr io.Writer) int {
	start := time.Now().Unix()
	dir, err := record.CreateUniqueDir(f.out, "reproduce-"+inc.Name+"-"+strconv.FormatInt(start, 10), "reproduce")
	if err != nil {
		fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
		return exitUsage
	}
	ops := f.operators(inc)
	jobs := min(runtime.GOMAXPROCS(0), len(seeds))
	fmt.Fprintf(stdout, "fiomig reproduce %s: %d seeds × %v, %d at a time, into %s\n", inc.Name, len(seeds), ops, jobs, dir)
	ctx, stop := interruptContext(stderr, "fiomig reproduce")
	defer stop()

	type outcome struct {
		runs        analysis.SeedRuns
		err         error
		interrupted bool
	}
	results := make([]outcome, len(seeds))
	idx := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				o := outcome{runs: analysis.SeedRuns{Seed: seeds[i]}}
				out := filepath.Join(dir, fmt.Sprintf("seed-%d", seeds[i]))
				var dirs []string
				for _, op := range ops {
					cmdline := f.commandLine(name, op, seeds[i], targetDNR)
					r, err := scenario.Reproduce(ctx, f.options(inc, op, seeds[i], targetDNR, cmdline, out, start, nil))
					if err != nil {
						o.err = fmt.Errorf("seed %d, %s: %w", seeds[i], op, err)
						break
					}
					if r.Interrupted {
						o.interrupted = true
						break
					}
					o.runs.Runs = append(o.runs.Runs, r.Run)
					dirs = append(dirs, r.Dir)
				}
				if o.err == nil && !o.interrupted {
					for k, r := range o.runs.Runs {
						if err := reports.WriteReproduce(dirs[k], r, o.runs.Runs); err != nil {
							o.err = err
						}
					}
				}
				results[i] = o
				mu.Lock()
				done++
				fmt.Fprintf(stderr, "reproduce: seed %d %s — %d/%d done\n", seeds[i], seedStatus(o.runs, o.err, o.interrupted), done, len(seeds))
				mu.Unlock()
			}
		}()
	}
	for i := range seeds {
		if ctx.Err() != nil {
			break
		}
		idx <- i
	}
	close(idx)
	wg.Wait()

	code := exitPass
	var all []analysis.SeedRuns
	for _, o := range results {
		switch {
		case o.interrupted || (o.err == nil && len(o.runs.Runs) == 0):
			code = exitInterrupted
		case o.err != nil:
			fmt.Fprintf(stderr, "fiomig reproduce: %v\n", o.err)
			if code == exitPass || code == exitInconclusive || code == exitCheckFailed {
				code = exitUsage
			}
		default:
			all = append(all, o.runs)
			code = worse(code, seedCode(o.runs))
		}
	}
	cmd := fmt.Sprintf("fiomig reproduce %s --operator=%s --seeds=%s", name, orDefault(f.operator, inc.Operators.Value), f.seeds)
	if f.faults != "" {
		cmd += " --faults=" + f.faults
	}
	bands, cmps := analysis.JudgeCompare(inc, analysis.Pairs(all))
	code = worse(code, compareCode(bands))
	md := reports.SeedsMarkdown(inc, cmd, all, bands, cmps)
	report := filepath.Join(dir, reports.ReproduceFile)
	if err := os.WriteFile(report, md, 0o644); err != nil {
		fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "\n%s\nreport: %s\n", md, report)
	if code == exitInterrupted {
		fmt.Fprintf(stderr, "fiomig reproduce: interrupted; %s covers the %d seed(s) that finished\n", report, len(all))
	}
	return code
}

// seedCode is one seed's exit code from its bands: 1 an expectation does
// not hold, 3 only inconclusive ones (a fault without evidence), else 0.
func seedCode(s analysis.SeedRuns) int {
	code := exitPass
	for _, r := range s.Runs {
		if !r.Shape.OK {
			if r.Figures.FaultsCheck.Verdict == record.Inconclusive {
				code = worse(code, exitInconclusive)
			} else {
				code = worse(code, exitCheckFailed)
			}
		}
	}
	return code
}

// compareCode is the exit code of the compare expectations judged over
// seeds: 3 when one that does not hold came out inconclusive, 1 when one
// does not hold otherwise, else 0 (not judged counts as holding).
func compareCode(bands []analysis.BandResult) int {
	code := exitPass
	for _, b := range bands {
		switch {
		case !b.Judged || b.OK:
		case b.Got == record.Inconclusive:
			code = worse(code, exitInconclusive)
		default:
			code = worse(code, exitCheckFailed)
		}
	}
	return code
}

// worse of two exit codes: failed over inconclusive over pass.
func worse(a, b int) int {
	rank := func(c int) int {
		switch c {
		case exitCheckFailed:
			return 2
		case exitInconclusive:
			return 1
		case exitPass:
			return 0
		}
		return 3
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func seedStatus(s analysis.SeedRuns, err error, interrupted bool) string {
	switch {
	case err != nil:
		return "error"
	case interrupted:
		return "interrupted"
	}
	st := "every expectation holds"
	if !s.OK() {
		st = "an expectation does not hold"
	}
	if p := analysis.PairOf(s.Runs); p != nil {
		st += fmt.Sprintf(", validation failures prefix %d, fixed %d", p.Prefix.Total, p.Fixed.Total)
	}
	return st
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
