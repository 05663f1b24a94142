package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// HypothesesResult is fiomig reproduce --hypotheses: every combination of
// the incident's hypotheses over the seeds, ranked.
type HypothesesResult struct {
	Dir string
	// Ranked are the combinations that ran on every seed, closest first
	// (analysis.RankHypotheses).
	Ranked []analysis.HypothesisResult
	// Report is the top reproduce.md, Markdown its text.
	Report   string
	Markdown []byte
	// ExitCode: 0 when a combination reproduces every modelled symptom, 1
	// when none does, 2 when a run could not be made, 130 when ctx ended
	// first.
	ExitCode int
	Errors   []error
}

// Hypotheses runs every combination of r.Incident's hypotheses
// (incidents.Incident.Combinations) on every seed with every operator of
// r — the (combination, seed) pairs through the one worker pool, jobs at
// once, each operator after the other — into
// <r.Out>/hypotheses-<name>-<unix>/H<n>/seed-N (plan.json and summary.json
// of each run: the timelines are dropped once analysed). It ranks the
// combinations by the distance of their symptom profile (the runs of the
// operator the incident ran) to the observed one, judges the fix against
// the prefix operator under each, and writes the report
// (reports.HypothesesMarkdown) as the top reproduce.md. log gets one line
// per (combination, seed) done. An error is returned only when the
// directory or the report cannot be written.
func Hypotheses(ctx context.Context, r Reproduction, seeds []int64, jobs int, command string, log io.Writer) (HypothesesResult, error) {
	inc := r.Incident
	combos := inc.Combinations()
	start := r.StartUnix
	if start == 0 {
		start = time.Now().Unix()
	}
	r.StartUnix = start
	dir, err := record.CreateUniqueDir(r.Out, "hypotheses-"+inc.Name+"-"+strconv.FormatInt(start, 10), "hypotheses")
	if err != nil {
		return HypothesesResult{}, UsageError{err}
	}
	type outcome struct {
		runs             analysis.SeedRuns
		err              error
		ran, interrupted bool
	}
	results := make([][]outcome, len(combos))
	for i := range results {
		results[i] = make([]outcome, len(seeds))
	}
	var mu sync.Mutex
	done, total := 0, len(combos)*len(seeds)
	forEach(ctx, total, jobs, func(k int) bool {
		c, seed := combos[k/len(seeds)], seeds[k%len(seeds)]
		o := outcome{runs: analysis.SeedRuns{Seed: seed}, ran: true}
		x := r
		x.Incident, x.Hypothesis = c.Incident, c.ID
		out := filepath.Join(dir, c.ID, fmt.Sprintf("seed-%d", seed))
		for _, op := range r.Operators {
			res, err := reproduceOne(ctx, x, op, seed, out, nil, true)
			if err == nil && res.Dir != "" && !res.Interrupted {
				err = os.Remove(filepath.Join(res.Dir, record.TimelineFile))
			}
			if err != nil {
				o.err = fmt.Errorf("%s seed %d, %s: %w", c.ID, seed, op, err)
				break
			}
			if res.Interrupted {
				o.interrupted = true
				break
			}
			o.runs.Runs = append(o.runs.Runs, res.Run)
		}
		mu.Lock()
		defer mu.Unlock()
		results[k/len(seeds)][k%len(seeds)] = o
		done++
		status := "done"
		switch {
		case o.err != nil:
			status = "error"
		case o.interrupted:
			status = "interrupted"
		}
		fmt.Fprintf(log, "hypotheses: %s (%s) seed %d %s — %d/%d\n", c.ID, c.Label(), seed, status, done, total)
		return false
	})
	out := HypothesesResult{Dir: dir}
	for i, c := range combos {
		var runs []analysis.SeedRuns
		complete := true
		for _, o := range results[i] {
			switch {
			case !o.ran || o.interrupted:
				out.ExitCode, complete = ExitInterrupted, false
			case o.err != nil:
				out.Errors, complete = append(out.Errors, o.err), false
				if out.ExitCode != ExitInterrupted {
					out.ExitCode = ExitUsage
				}
			default:
				runs = append(runs, o.runs)
			}
		}
		if complete {
			out.Ranked = append(out.Ranked, analysis.JudgeHypothesis(inc, c, runs))
		}
	}
	analysis.RankHypotheses(out.Ranked)
	if out.ExitCode == ExitPass {
		out.ExitCode = ExitFail
		for _, h := range out.Ranked {
			if h.Reproduces {
				out.ExitCode = ExitPass
			}
		}
	}
	out.Markdown = reports.HypothesesMarkdown(inc, command, seeds, out.Ranked)
	out.Report = filepath.Join(dir, reports.ReproduceFile)
	return out, os.WriteFile(out.Report, out.Markdown, 0o644)
}

// Combination is the combination of inc's hypotheses named id ("H3"), or
// an error naming the known ones.
func Combination(inc incidents.Incident, id string) (incidents.Combination, error) {
	cs := inc.Combinations()
	for _, c := range cs {
		if c.ID == id {
			return c, nil
		}
	}
	if len(cs) == 0 {
		return incidents.Combination{}, Usagef("--hypothesis %s: %s declares no hypotheses", id, inc.File)
	}
	return incidents.Combination{}, Usagef("--hypothesis %q: want H1 to H%d (%s declares %d combinations; fiomig reproduce %s --hypotheses lists them)",
		id, len(cs), inc.File, len(cs), inc.Name)
}
