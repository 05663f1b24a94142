package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/collectors"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// Config is one run of the migrations scenario.
type Config struct {
	// Plan is written to plan.json before anything runs; Topology is filled
	// in from the cluster. Plan.Params drives the run.
	Plan record.Plan
	// OutDir is the parent of the run directory fio-mig-<StartUnix>.
	OutDir string
	// StartUnix names the run directory (unix seconds when the run started;
	// the caller reads the wall clock, the scenario never does).
	StartUnix int64
	// SummaryOnly writes summary.json (without churn, which needs the
	// timeline) and no report, plots or junit.xml: for tests and sweeps
	// that read only the summary.
	SummaryOnly bool
	// Progress receives one line per migration and per stage, the first
	// naming the run directory once created; nil = silent.
	Progress io.Writer
	// OnLine, when set, is given every line appended to the timeline, as
	// written (times rounded), in order: a caller that needs some of them
	// afterwards (analysis.IncidentKeeper) keeps them instead of reading the file
	// back.
	OnLine func(record.Line)
}

// DefaultMigrationWaitS is how long a run waits for one migration when
// Params.MigrationWaitS is 0, seconds.
const DefaultMigrationWaitS = 3600.0

// Result is what a finished (or interrupted) run left behind.
type Result struct {
	Dir string
	// Plan is plan.json as finally written (topology, executed faults).
	Plan    record.Plan
	Summary record.Summary
	// Interrupted is true when ctx ended the run early; the timeline holds
	// everything sampled until then, and summary.json (Summary) judges it
	// with Interrupted set and an inconclusive verdict (no reports).
	Interrupted bool
}

// Run executes cfg on cluster and writes the run record and the reports.
// It returns an error for a backend or I/O failure; check verdicts are in
// Result.Summary.
func Run(ctx context.Context, cluster backend.Cluster, cfg Config) (Result, error) {
	p := cfg.Plan.Params
	if p.SampleIntervalS <= 0 {
		return Result{}, errors.New("scenario: sample interval must be > 0")
	}
	if p.SettleSampleIntervalS <= 0 {
		p.SettleSampleIntervalS = p.SampleIntervalS
	}
	if p.MigrationWaitS <= 0 {
		p.MigrationWaitS = DefaultMigrationWaitS
	}
	switch p.TimelineFormat {
	case 0, record.FormatChangeOnly:
		p.TimelineFormat = record.FormatChangeOnly
		p.HeartbeatIntervalS = p.SampleIntervalS
	case record.FormatFull:
		p.HeartbeatIntervalS = 0
	default:
		return Result{}, fmt.Errorf("scenario: timeline format version %d is not %d or %d", p.TimelineFormat, record.FormatFull, record.FormatChangeOnly)
	}
	wait := p.MigrationWaitS
	p.MigrationWaitS = cfg.Plan.Params.MigrationWaitS // recorded as given (0: the default)
	cfg.Plan.Params = p
	cfg.Plan.Topology = cluster.Topology()
	cfg.Plan.Backend = cluster.Name()
	if cfg.Plan.Faults == nil {
		cfg.Plan.Faults = []record.FaultSpec{}
	}
	if _, ok := cluster.(FaultScheduler); !ok && len(cfg.Plan.Faults) > 0 {
		// A schedule and a bare cluster: the Injector runs the schedule
		// (the caller still closes the cluster).
		inj, err := faults.NewInjector(cluster, cfg.Plan.Faults)
		if err != nil {
			return Result{}, err
		}
		cluster = inj
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}

	dir, err := record.CreateRunDir(cfg.OutDir, cfg.StartUnix)
	if err != nil {
		return Result{}, err
	}
	res := Result{Dir: dir}
	// The first progress line names the run directory (fiomig reproduce
	// starts its next operator once it is written).
	fmt.Fprintf(progress, "recording to %s\n", dir)
	if err := record.WriteJSON(filepath.Join(dir, record.PlanFile), cfg.Plan); err != nil {
		return res, err
	}
	tl, err := record.CreateTimeline(filepath.Join(dir, record.TimelineFile))
	if err != nil {
		return res, err
	}
	// One write per sampling tick (runner.step flushes before the clock moves on).
	tl.SetBatched(true)
	// The checks judge exactly the lines written, as they are written,
	// without re-decoding them and without keeping them (checks.Judge).
	judge := checks.NewJudge(cfg.Plan)
	var states record.Expander
	report := NewReportLines(cfg.Plan) // the per-tick states the report's swimlanes need, bounded
	report.Dropped = cfg.SummaryOnly
	written := 0
	reasons := map[string]string{} // why a migration ended Failed or Aborted, for the progress line
	tl.OnAppend = func(l record.Line) error {
		written++
		if cfg.OnLine != nil {
			cfg.OnLine(l)
		}
		if l.Kind == record.KindPhase && l.Reason != "" && record.IsTerminal(l.Phase) {
			reasons[l.Migration] = l.Reason
		}
		return states.Push(l, func(x record.Line) error {
			report.Add(x)
			return judge.Add(x)
		})
	}
	r := &runner{cluster: cluster, tl: tl, sampler: collectors.NewSampler(cluster.Hosts(), tl), reasons: reasons}
	var runErr error
	if p.TimelineFormat == record.FormatChangeOnly {
		r.sampler.ChangeOnly = true
		runErr = tl.Append(record.Line{T: 0, Kind: record.KindFormat, Version: p.TimelineFormat, HeartbeatIntervalS: p.HeartbeatIntervalS})
	}
	if runErr == nil {
		runErr = r.migrations(ctx, cfg, wait, progress)
	}
	// Faults still injected are recovered whatever happened, and their
	// recovery lines recorded, before the timeline is closed.
	if rc, ok := cluster.(FaultRecoverer); ok {
		for _, l := range rc.RecoverAll() {
			if err := tl.Append(l); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	if cerr := tl.Close(); runErr == nil && cerr != nil {
		runErr = cerr
	}
	// plan.json gets the fault schedule as executed (an interrupted run's
	// too: its faults-landed, and fiomig report's re-judge of it, pair the
	// fault lines with the migrations they fired on, not with "#N").
	if ex, ok := cluster.(FaultScheduler); ok {
		cfg.Plan.Faults = ex.Executed()
		if err := record.WriteJSON(filepath.Join(dir, record.PlanFile), cfg.Plan); err != nil && runErr == nil {
			runErr = err
		}
	}
	if errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded) {
		res.Interrupted = true
		res.Plan = cfg.Plan
		// The checks over what was written: the streaming judge saw every
		// line (the writer keeps none, so tl.Kept() would judge nothing).
		res.Summary = InterruptedSummary(cfg.Plan, nil)
		if written > 0 {
			if sum, jerr := judge.Summary(cfg.Plan); jerr == nil {
				res.Summary = checks.Interrupted(reports.WithStats(sum))
			}
		}
		return res, record.WriteJSON(filepath.Join(dir, record.SummaryFile), res.Summary)
	}
	if runErr != nil {
		return res, runErr
	}
	res.Plan = cfg.Plan
	// Judge from the record alone: the lines as written to timeline.jsonl
	// (TestJudgedFromTheRecordAlone checks the file gives the same summary).
	sum, err := judge.Summary(cfg.Plan)
	if err != nil {
		return res, err
	}
	res.Summary = reports.WithStats(sum)
	if cfg.SummaryOnly {
		return res, record.WriteJSON(filepath.Join(dir, record.SummaryFile), res.Summary)
	}
	if report.Dropped {
		fmt.Fprintf(progress, "report: over %d host states, no swimlanes drawn (the checks saw every one)\n", ReportStatesMax)
	}
	if err := reports.WriteRun(dir, reports.Input{Plan: cfg.Plan, Summary: res.Summary, Timeline: report.Lines()}); err != nil {
		return res, err
	}
	return res, nil
}

// InterruptedSummary is summary.json of a run stopped by a signal: the
// checks over what timeline holds (none without a line), Interrupted set,
// and the verdict fail if a check failed on what was recorded, else
// inconclusive (checks.Interrupted).
func InterruptedSummary(plan record.Plan, timeline []record.Line) record.Summary {
	sum := record.Summary{Seed: plan.Seed, Checks: []record.CheckResult{}, Migrations: []record.MigrationSummary{},
		Unattributed: []record.HostWindow{}, LeakedControllers: []record.Leak{}, MissingEndpoints: []record.MissingEndpoint{}}
	if len(timeline) > 0 {
		sum = checks.Evaluate(plan, timeline)
	}
	return checks.Interrupted(sum)
}

// FaultRecoverer is a cluster with faults injected (faults.Injector):
// RecoverAll recovers every fault still active and returns the fault lines.
type FaultRecoverer interface {
	RecoverAll() []record.Line
}

// FaultScheduler is a cluster that knows the fault schedule as executed.
type FaultScheduler interface {
	Executed() []record.FaultSpec
}

type runner struct {
	cluster backend.Cluster
	tl      *record.TimelineWriter
	sampler *collectors.Sampler
	reasons map[string]string // migration → its terminal phase line's reason
}

// step advances the world to t, appends what happened, then samples.
func (r *runner) step(t float64) error {
	lines, err := r.cluster.AdvanceTo(t)
	if err != nil {
		return fmt.Errorf("advance to t=%.3f s: %w", t, err)
	}
	for _, l := range lines {
		if err := r.tl.Append(l); err != nil {
			return err
		}
	}
	if err := r.sampler.SampleAll(r.cluster.Now()); err != nil {
		return err
	}
	return r.tl.Flush()
}

// runFor steps every interval for d seconds of cluster time, or until stop
// returns true, checking ctx between steps.
func (r *runner) runFor(ctx context.Context, d, interval float64, stop func() bool) error {
	start := r.cluster.Now()
	for i := 1; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Multiply rather than accumulate, so float error never drifts.
		t := start + float64(i)*interval
		if t > start+d+1e-9 {
			return nil
		}
		if err := r.step(t); err != nil {
			return err
		}
		if stop != nil && stop() {
			return nil
		}
	}
}

func (r *runner) migrations(ctx context.Context, cfg Config, wait float64, progress io.Writer) error {
	p := cfg.Plan.Params
	if err := r.step(r.cluster.Now()); err != nil {
		return err
	}
	vols := cfg.Plan.Topology.Volumes
	if len(vols) == 0 && p.Migrations > 0 {
		return errors.New("scenario: the cluster has no volumes to migrate")
	}
	// Volumes are migrated in a seeded order: a permutation per round.
	rng := rand.New(rand.NewPCG(uint64(cfg.Plan.Seed), 0x6d6967726174696f))
	var order []int
	for i := 0; i < p.Migrations; i++ {
		if len(order) == 0 {
			order = rng.Perm(len(vols))
		}
		vol := vols[order[0]]
		order = order[1:]

		start := r.cluster.Now()
		id, err := r.cluster.StartMigration(vol.NQN)
		if err != nil {
			return fmt.Errorf("migration %d of volume %s: %w", i+1, vol.Name, err)
		}
		err = r.runFor(ctx, wait, p.SampleIntervalS, func() bool {
			_, done := r.cluster.MigrationPhase(id)
			return done
		})
		if err != nil {
			return err
		}
		phase, done := r.cluster.MigrationPhase(id)
		note := ""
		if !done {
			note = fmt.Sprintf(" (not terminal after %.0f s; moving on)", wait)
		} else if why := r.reasons[id]; why != "" {
			note = ": " + why
		}
		fmt.Fprintf(progress, "[%d/%d] %s volume %s: %s after %.1f s%s\n",
			i+1, p.Migrations, id, vol.Name, phase, r.cluster.Now()-start, note)
		if p.GapS > 0 && i+1 < p.Migrations {
			if err := r.runFor(ctx, p.GapS, p.SampleIntervalS, nil); err != nil {
				return err
			}
		}
	}
	if p.SettleS > 0 {
		fmt.Fprintf(progress, "settling for %.0f s (sampled every %.3g s)\n", p.SettleS, p.SettleSampleIntervalS)
		if err := r.runFor(ctx, p.SettleS, p.SettleSampleIntervalS, nil); err != nil {
			return err
		}
	}
	return nil
}
