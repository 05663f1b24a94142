package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/fiomig/fiomig/analysis"
	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/sim"
)

// IncidentParams are an incident's run parameters: its pacing over
// fiomig's default thresholds, and the world it simulates with operator
// (incidents.Incident.World, defaults filled in).
func IncidentParams(inc incidents.Incident, operator string) (record.Params, error) {
	p := DefaultParams()
	pc := inc.Pacing
	p.Migrations, p.SampleIntervalS = pc.Migrations, pc.SampleIntervalS
	p.SettleS, p.SettleSampleIntervalS = pc.SettleS, pc.SettleSampleIntervalS
	p.GapS, p.MigrationWaitS = pc.GapS, pc.MigrationTimeoutS
	if pc.MigrationTimeoutS > 0 {
		p.Seed.MigrationTimeoutS = pc.MigrationTimeoutS
	}
	p.Faults, p.Incident, p.FaultSchedule = "", inc.Name, "incident"
	m, err := inc.World(operator)
	if err != nil {
		return p, fmt.Errorf("%s: %w", inc.File, err)
	}
	p.Model = sim.ModelDefaults(m)
	return p, nil
}

// IncidentSchedule is an incident's fault schedule for seed: the explicit
// entries, then the seeded family drawn over its migrations and nodes (the
// same for every operator variant).
func IncidentSchedule(inc incidents.Incident, seed int64, nodes []string) ([]record.FaultSpec, error) {
	sched := slices.Clone(inc.Faults.Scheduled)
	if s := inc.Faults.Seeded; s != nil {
		o := faults.SeededOptions{Count: s.Count, Kinds: s.Kinds, Phase: s.Phase, AfterS: s.AfterS, ForS: s.ForS, Nodes: nodes}
		for i := s.FirstMigration; i <= s.LastMigration; i++ {
			o.Migrations = append(o.Migrations, fmt.Sprintf("mig-%04d", i))
		}
		drawn, err := faults.Seeded(seed, o)
		if err != nil {
			return nil, fmt.Errorf("%s: faults.seeded: %w", inc.File, err)
		}
		sched = append(sched, drawn...)
	}
	return sched, nil
}

// ReproduceOptions is one operator's reproduction of the incident.
type ReproduceOptions struct {
	// Incident is what to reproduce (LoadIncident).
	Incident incidents.Incident
	Seed     int64
	// Operator is "prefix" or "fixed".
	Operator string
	// Params default to IncidentParams; their Model is always the
	// incident's world for Operator, changed by Override when set (fiomig
	// reproduce's model flags: --reconnect-reset, --release-sources, ...).
	Params   *record.Params
	Override func(*record.Model)
	// Schedule defaults to IncidentSchedule(Seed).
	Schedule []record.FaultSpec
	// NoFaults drops the incident's seeded and scheduled faults (fiomig
	// reproduce --faults none): the run shows what the sourced model does
	// with no fault at all (docs/incidents.md). plan.json's params
	// "fault_schedule" says so.
	NoFaults bool
	// Command is the command line recorded in plan.json.
	Command   string
	OutDir    string
	StartUnix int64
	Progress  io.Writer
}

// ReproduceResult is one operator's run.
type ReproduceResult struct {
	Dir     string
	Plan    record.Plan
	Summary record.Summary
	// Run is the incident analysis of the record: figures, bands, shape.
	analysis.Run
	// FaultErrors are injections or recoveries that failed (also in the timeline).
	FaultErrors []error
	Interrupted bool
}

// Reproduce runs the incident's scenario once, with one operator variant,
// through scenario.Run (a normal run directory: plan.json with the fault
// schedule as executed, timeline.jsonl, summary.json, report.md), then
// computes the incident's figures from the record and writes reproduce.md.
func Reproduce(ctx context.Context, o ReproduceOptions) (ReproduceResult, error) {
	inc := o.Incident
	if inc.Name == "" {
		return ReproduceResult{}, errors.New("reproduce: no incident")
	}
	if o.Operator != "prefix" && o.Operator != "fixed" {
		return ReproduceResult{}, fmt.Errorf("reproduce: operator %q: want prefix or fixed", o.Operator)
	}
	p, err := IncidentParams(inc, o.Operator)
	if err != nil {
		return ReproduceResult{}, err
	}
	if o.Params != nil {
		m := p.Model
		p = *o.Params
		p.Model = m
	}
	if o.Override != nil {
		o.Override(&p.Model)
		p.Model = sim.ModelDefaults(p.Model)
	}
	if o.NoFaults {
		p.FaultSchedule = "none (the incident's seeded and scheduled faults dropped)"
	}
	cluster, err := simbackend.New(simbackend.Config{Seed: o.Seed, Model: p.Model})
	if err != nil {
		return ReproduceResult{}, fmt.Errorf("reproduce %s: simulator: %w", inc.File, err)
	}
	sched := o.Schedule
	if o.NoFaults {
		sched = []record.FaultSpec{}
	}
	if sched == nil {
		var nodes []string
		for _, n := range cluster.Topology().Nodes {
			nodes = append(nodes, n.Name)
		}
		if sched, err = IncidentSchedule(inc, o.Seed, nodes); err != nil {
			return ReproduceResult{}, err
		}
	}
	inj, err := faults.NewInjector(cluster, sched)
	if err != nil {
		return ReproduceResult{}, err
	}
	defer inj.Close()
	plan := record.Plan{Tool: "fiomig", Scenario: "reproduce " + inc.Name, Seed: o.Seed, Command: o.Command,
		Params: p, Faults: sched}
	// Run recovers what is still injected (recording its lines) and writes
	// the schedule as executed into plan.json.
	// The harness's wait for one migration: the incident's (the seed
	// harness moves on after it), else Run's default.
	var kept analysis.IncidentKeeper // the lines the figures need, kept as written
	res, err := Run(ctx, inj, Config{Plan: plan, OutDir: o.OutDir, StartUnix: o.StartUnix, Progress: o.Progress, OnLine: kept.Add})
	out := ReproduceResult{Dir: res.Dir, Interrupted: res.Interrupted, Summary: res.Summary, Plan: res.Plan}
	out.FaultErrors = inj.Errors()
	if err != nil || res.Interrupted {
		return out, err
	}
	plan = res.Plan
	out.Run = analysis.Analyse(inc, plan, kept.Lines(), out.Summary)
	return out, reports.WriteReproduce(out.Dir, out.Run, nil)
}

// IncidentID is the catalogue's first incident (incidents.Default).
const IncidentID = incidents.Default

// LoadIncident is analysis.LoadIncident: the incident named, with every
// figure and check its expectations name checked.
func LoadIncident(name string, dirs ...string) (incidents.Incident, error) {
	return analysis.LoadIncident(name, dirs...)
}
