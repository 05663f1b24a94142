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
	h, err := newHypotheses(r, seeds, log, false)
	if err != nil {
		return HypothesesResult{}, err
	}
	forEach(ctx, len(h.combos)*len(seeds), jobs, func(k int) bool {
		c, seed := h.task(k)
		o := hypOutcome{runs: analysis.SeedRuns{Seed: seed}, ran: true}
		x, out := h.world(c), h.seedDir(c, seed)
		for _, op := range h.r.Operators {
			res, err := reproduceOne(ctx, x, op, seed, out, nil, true)
			if err == nil && res.Dir != "" && !res.Interrupted {
				err = os.Remove(filepath.Join(res.Dir, record.TimelineFile))
			}
			if err != nil {
				o.err = hypError(c, seed, op, err)
				break
			}
			if res.Interrupted {
				o.interrupted = true
				break
			}
			o.runs.Runs = append(o.runs.Runs, res.Run)
		}
		h.done(k, o)
		return false
	})
	return h.finish(command)
}

// hypRun is fiomig reproduce --hypotheses under way: the (combination,
// seed) outcomes so far, the k-th being combination k / len(seeds) on
// seed k mod len(seeds). A local run (Hypotheses) and a farm
// (FarmHypotheses) feed it and finish it the same way.
type hypRun struct {
	r      Reproduction
	combos []incidents.Combination
	seeds  []int64
	dir    string
	log    io.Writer
	mu     sync.Mutex
	// results are by combination, then seed.
	results [][]hypOutcome
	count   int
}

// hypOutcome is one combination's runs on one seed, every operator's.
type hypOutcome struct {
	runs             analysis.SeedRuns
	err              error
	ran, interrupted bool
}

// newHypotheses starts r over seeds into <r.Out>/hypotheses-<name>-<unix>
// (r.StartUnix, 0 = now); existing reuses that directory (a farm
// attached to: its runs are written again) instead of making a new one.
func newHypotheses(r Reproduction, seeds []int64, log io.Writer, existing bool) (*hypRun, error) {
	if r.StartUnix == 0 {
		r.StartUnix = time.Now().Unix()
	}
	h := &hypRun{r: r, combos: r.Incident.Combinations(), seeds: seeds, log: log}
	name := "hypotheses-" + r.Incident.Name + "-" + strconv.FormatInt(r.StartUnix, 10)
	var err error
	if existing {
		h.dir = filepath.Join(r.Out, name)
		err = os.MkdirAll(h.dir, 0o755)
	} else {
		h.dir, err = record.CreateUniqueDir(r.Out, name, "hypotheses")
	}
	if err != nil {
		return nil, UsageError{err}
	}
	h.results = make([][]hypOutcome, len(h.combos))
	for i := range h.results {
		h.results[i] = make([]hypOutcome, len(seeds))
	}
	return h, nil
}

// task is the combination and seed of outcome k.
func (h *hypRun) task(k int) (incidents.Combination, int64) {
	return h.combos[k/len(h.seeds)], h.seeds[k%len(h.seeds)]
}

// world is the reproduction of combination c.
func (h *hypRun) world(c incidents.Combination) Reproduction {
	x := h.r
	x.Incident, x.Hypothesis = c.Incident, c.ID
	return x
}

// seedDir is where combination c's runs of seed go.
func (h *hypRun) seedDir(c incidents.Combination, seed int64) string {
	return filepath.Join(h.dir, c.ID, fmt.Sprintf("seed-%d", seed))
}

func hypError(c incidents.Combination, seed int64, op string, err error) error {
	return fmt.Errorf("%s seed %d, %s: %w", c.ID, seed, op, err)
}

// done records outcome k and says so on the log.
func (h *hypRun) done(k int, o hypOutcome) {
	c, seed := h.task(k)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.results[k/len(h.seeds)][k%len(h.seeds)] = o
	h.count++
	status := "done"
	switch {
	case o.err != nil:
		status = "error"
	case o.interrupted:
		status = "interrupted"
	}
	fmt.Fprintf(h.log, "hypotheses: %s (%s) seed %d %s — %d/%d\n", c.ID, c.Label(), seed, status, h.count, len(h.combos)*len(h.seeds))
}

// finish ranks the combinations that ran on every seed and writes the
// report as the top reproduce.md; command is the one it names.
func (h *hypRun) finish(command string) (HypothesesResult, error) {
	inc := h.r.Incident
	out := HypothesesResult{Dir: h.dir}
	for i, c := range h.combos {
		var runs []analysis.SeedRuns
		complete := true
		for _, o := range h.results[i] {
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
	out.Markdown = reports.HypothesesMarkdown(inc, command, h.seeds, out.Ranked)
	out.Report = filepath.Join(h.dir, reports.ReproduceFile)
	return out, os.WriteFile(out.Report, out.Markdown, 0o644)
}

// HypothesesNote says what fiomig reproduce --hypotheses' exit code means,
// after its report.
const HypothesesNote = "Exit 0: a combination reproduces every modelled symptom; 1: none does (a ranking judges no band).\n"

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
