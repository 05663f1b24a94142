package harness

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
	"github.com/fiomig/fiomig/sim"
	"github.com/fiomig/fiomig/workload"
)

// Options are how a run reports and what it keeps; none of them changes
// the run record's bytes but SummaryOnly (no reports).
type Options struct {
	// Progress receives the schedule's size, one line per migration and
	// per stage, the first naming the run directory; nil = silent. Warn
	// receives what went wrong without changing the verdict (a kube run's
	// cleanup); nil = Progress.
	Progress, Warn io.Writer
	// StartUnix names the run directory fio-mig-<StartUnix>; 0 = the wall
	// clock now.
	StartUnix int64
	// SummaryOnly writes summary.json and no report (shrink's tries).
	SummaryOnly bool
	// OnLine, when set, is given every timeline line as written.
	OnLine func(record.Line)
	// Command is plan.json's command; "" = the spec's (Spec.Command).
	Command string
	// Scenario is plan.json's scenario name; "" = "migrations".
	Scenario string
	// Fio are the real-fio workload's knobs that are not the run's
	// parameters (fio's binary, mount point, timeouts: tests).
	Fio scenario.FioOptions
}

// Result is what a finished or interrupted run left behind: its run
// directory, plan.json as written, summary.json (verdicts), and whether a
// signal ended it early.
type Result = scenario.Result

// Run builds, runs, judges and reports one run of s: the simulated world
// (virtual time, or the wall clock with real fio for --workload=fio) or a
// Kubernetes cluster (Backend kube), the fault schedule (s.Schedule, or
// drawn from Params.Faults on the run's topology), the run directory with
// plan.json, timeline.jsonl, summary.json and the reports. A spec or input
// no run can take is a UsageError; a backend or I/O failure another error;
// the verdicts are in Result.Summary (ExitCode maps them). A ctx ended
// before anything ran returns Interrupted with no directory.
func Run(ctx context.Context, s Spec, o Options) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	if s.Backend == BackendKube {
		return runKube(ctx, s, o)
	}
	p := s.planParams()
	// The fault schedule is drawn on the world's topology (the same for
	// both workloads).
	cluster, err := scenario.SimCluster(s.Seed, p)
	if err != nil {
		return Result{}, Usagef("simulator: %v", err)
	}
	if p.IsFio() {
		sched, err := s.schedule(cluster.Topology(), nil, nil)
		cluster.Close()
		if err != nil {
			return Result{}, err
		}
		if err := workload.Available(); err != nil {
			return Result{}, Usagef("--workload=fio cannot run here: %v", err)
		}
		if ctx.Err() != nil {
			return Result{Interrupted: true}, nil
		}
		fo := o.Fio
		fo.RateIOPS, fo.CorruptWrite = p.FioRateIOPS, p.FioCorruptWrite
		fmt.Fprintf(progress(o), "  faults: %d scheduled (%s)\n", len(sched), p.Faults)
		return scenario.RunFio(ctx, s.Seed, s.config(p, sched, o), fo)
	}
	defer cluster.Close()
	return RunOn(ctx, cluster, s, o)
}

// RunOn runs s on a cluster the caller built (and closes): the suites'
// backends, the kube path. The schedule is s.Schedule, or drawn from
// Params.Faults on cluster's topology.
func RunOn(ctx context.Context, cluster backend.Cluster, s Spec, o Options) (Result, error) {
	return runOn(ctx, cluster, s, s.planParams(), nil, nil, o)
}

func runOn(ctx context.Context, cluster backend.Cluster, s Spec, p record.Params, kinds []string, allowed func(string) error, o Options) (Result, error) {
	sched, err := s.schedule(cluster.Topology(), kinds, allowed)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(progress(o), "  faults: %d scheduled (%s)\n", len(sched), orDefault(p.Faults, record.FaultsDefault))
	if ctx.Err() != nil {
		return Result{Interrupted: true}, nil
	}
	return scenario.Run(ctx, cluster, s.config(p, sched, o))
}

// planParams are the params plan.json records for s: the settle interval
// resolved, the simulator's model with its defaults filled in (every
// switch stated), the fio settings only for a fio run.
func (s Spec) planParams() record.Params {
	p := s.Params
	if p.SettleSampleIntervalS == 0 {
		p.SettleSampleIntervalS = p.SampleIntervalS
	}
	if p.Faults == "" {
		p.Faults = record.FaultsDefault
	}
	if p.Workload == record.WorkloadSim {
		p.Workload = ""
	}
	if !p.IsFio() {
		p.FioRateIOPS, p.FioCorruptWrite = 0, 0
	}
	p.Model = sim.ModelDefaults(p.Model)
	p.Kube = nil
	return p
}

// schedule is s.Schedule, or the schedule Params.Faults draws on topo: a
// fault file's (its targets checked against topo), or the default one
// for the kinds asked (kinds, when not nil, replaces the selection's: the
// kube backend's for "default"). allowed, when set, refuses kinds the
// backend cannot inject. Errors are UsageErrors.
func (s Spec) schedule(topo record.Topology, kinds []string, allowed func(string) error) ([]record.FaultSpec, error) {
	sched := s.Schedule
	if sched == nil {
		if kinds == nil {
			var err error
			if kinds, err = s.faultKinds(); err != nil {
				return nil, Usagef("--faults: %v", err)
			}
		}
		var err error
		if sched, err = scenario.FaultSchedule(s.Seed, s.Params, topo, kinds, s.faultFile()); err != nil {
			return nil, UsageError{err}
		}
	}
	if allowed != nil {
		for _, f := range sched {
			if err := allowed(f.Fault); err != nil {
				return nil, Usagef("%s: %v", strings.TrimPrefix(s.Params.Faults, record.FaultsFilePrefix), err)
			}
		}
	}
	return sched, nil
}

// config is scenario.Run's configuration of s's run.
func (s Spec) config(p record.Params, sched []record.FaultSpec, o Options) scenario.Config {
	cmd, name, start := o.Command, o.Scenario, o.StartUnix
	if cmd == "" {
		cmd = s.Command()
	}
	if name == "" {
		name = "migrations"
	}
	if start == 0 {
		start = time.Now().Unix()
	}
	return scenario.Config{
		Plan:   record.Plan{Tool: "fiomig", Scenario: name, Seed: s.Seed, Command: cmd, Params: p, Faults: sched},
		OutDir: s.Out, StartUnix: start, SummaryOnly: o.SummaryOnly, Progress: o.Progress, OnLine: o.OnLine,
	}
}

func progress(o Options) io.Writer {
	if o.Progress == nil {
		return io.Discard
	}
	return o.Progress
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
