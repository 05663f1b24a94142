package scenario

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
)

// IncidentID is the run `fiomig reproduce` knows how to reproduce.
const IncidentID = "fio-mig-1787159565"

// ReproduceReportFile is the reproduce report in each run directory.
const ReproduceReportFile = "reproduce.md"

// IncidentParams are the incident's parameters (DESIGN.md "The incident to
// reproduce"; issue 4 part 7): 3 hosts that are also the 3 storage nodes,
// 10 volumes with one fio pod each, 23 migrations one at a time sampled
// every 0.1 s, then 2.5 h (9000 s) of settle sampled every 10 s; the
// cutover and the thresholds are fiomig's defaults.
func IncidentParams() record.Params {
	p := DefaultParams()
	p.Migrations, p.Volumes, p.Hosts, p.ConsumersPerVolume = 23, 10, 3, 1
	p.SettleS, p.SettleSampleIntervalS = 9000, 10
	return p
}

// Incident fault schedule (issue 4 part 7: "a seeded fault schedule that
// gives the cascade its first failures, for example dropped CONNECTs or a
// target restart during early validations"): two faults, on two distinct
// migrations among the first five, each a storage-node restart or a window
// of dropped CONNECTs to a node, injected 0.5–2.5 s into Validating (while
// the validation Jobs start: the Job start delay is 1–3 s). Each lasts
// 190–300 s: a fault gives a first failure only when it outlasts the
// validation Job's retry budget — 3 connect+verify attempts 2 s apart,
// each blocked up to the 60 s admin_timeout by a dropped CONNECT, 184 s in
// all (simplyblock-rebalancer validate-migration) — and up to 5 min is an
// SPDK storage-node restart with its lvstore recovery. The window follows
// from that budget, not from the cascade figures; the earlier 20–60 s
// window was outlasted by every retrying Job.
var incidentFaults = faults.SeededOptions{
	Count:  2,
	Kinds:  []string{faults.KindTargetRestart, faults.KindDroppedConnects},
	Phase:  record.PhaseValidating,
	AfterS: [2]float64{0.5, 2.5},
	ForS:   [2]float64{190, 300},
}

// IncidentSchedule is the incident's fault schedule for seed (the same
// for both operator variants).
func IncidentSchedule(seed int64, nodes []string) ([]record.FaultSpec, error) {
	o := incidentFaults
	o.Nodes = nodes
	for i := 1; i <= 5; i++ {
		o.Migrations = append(o.Migrations, fmt.Sprintf("mig-%04d", i))
	}
	return faults.Seeded(seed, o)
}

// ReproduceOptions is one operator's reproduction of the incident.
type ReproduceOptions struct {
	Seed int64
	// Operator is "prefix" or "fixed".
	Operator string
	// ReconnectReset is the kernel switch: "full" (upstream, default) or
	// "partial"; KernelDNR "honor" (default) or "ignore"; TargetDNR makes
	// the targets set DNR on rejections (SPDK does not).
	ReconnectReset string
	KernelDNR      string
	TargetDNR      bool
	// Params default to IncidentParams; Schedule to IncidentSchedule(Seed).
	Params   *record.Params
	Schedule []record.FaultSpec
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
	Figures IncidentFigures
	Shape   Shape
	// FaultErrors are injections or recoveries that failed (also in the timeline).
	FaultErrors []error
	Interrupted bool
}

// Reproduce runs the incident's scenario once, with one operator variant,
// through scenario.Run (a normal run directory: plan.json with the fault
// schedule as executed, timeline.jsonl, summary.json, report.md), then
// computes the incident's figures from the record and writes reproduce.md.
func Reproduce(ctx context.Context, o ReproduceOptions) (ReproduceResult, error) {
	if o.Operator != "prefix" && o.Operator != "fixed" {
		return ReproduceResult{}, fmt.Errorf("reproduce: operator %q: want prefix or fixed", o.Operator)
	}
	if o.ReconnectReset == "" {
		o.ReconnectReset = "full"
	}
	if o.KernelDNR == "" {
		o.KernelDNR = "honor"
	}
	p := IncidentParams()
	if o.Params != nil {
		p = *o.Params
	}
	const podToleranceS = 5.0
	p.Extra = map[string]string{
		"operator": o.Operator, "reconnect_reset": o.ReconnectReset, "kernel_dnr": o.KernelDNR,
		"target_dnr": strconv.FormatBool(o.TargetDNR), "hosts_are_nodes": "true", "pods": "true",
		"pod_tolerance_s": strconv.FormatFloat(podToleranceS, 'g', -1, 64),
		"gap_s":           strconv.FormatFloat(DefaultGapS, 'g', -1, 64),
		"incident":        IncidentID,
	}
	cluster, err := simbackend.New(simbackend.Config{
		Seed: o.Seed, Nodes: 3, Hosts: p.Hosts, Volumes: p.Volumes, ConsumersPerVolume: p.ConsumersPerVolume,
		HostsAreNodes: true, CutoverPauseS: p.CutoverPauseS, Operator: o.Operator,
		ReconnectReset: o.ReconnectReset, KernelDNR: o.KernelDNR, TargetDNR: o.TargetDNR,
		Pods: true, PodToleranceS: podToleranceS,
	})
	if err != nil {
		return ReproduceResult{}, fmt.Errorf("reproduce: simulator: %w", err)
	}
	sched := o.Schedule
	if sched == nil {
		var nodes []string
		for _, n := range cluster.Topology().Nodes {
			nodes = append(nodes, n.Name)
		}
		if sched, err = IncidentSchedule(o.Seed, nodes); err != nil {
			return ReproduceResult{}, err
		}
	}
	inj, err := faults.NewInjector(cluster, sched)
	if err != nil {
		return ReproduceResult{}, err
	}
	defer inj.Close()
	plan := record.Plan{Tool: "fiomig", Scenario: "reproduce " + IncidentID, Seed: o.Seed, Command: o.Command,
		Params: p, Faults: sched}
	// Run recovers what is still injected (recording its lines) and writes
	// the schedule as executed into plan.json.
	res, err := Run(ctx, inj, Config{Plan: plan, OutDir: o.OutDir, StartUnix: o.StartUnix, GapS: DefaultGapS, Progress: o.Progress})
	out := ReproduceResult{Dir: res.Dir, Interrupted: res.Interrupted, Summary: res.Summary, Plan: res.Plan}
	out.FaultErrors = inj.Errors()
	if err != nil || res.Interrupted {
		return out, err
	}
	plan = res.Plan
	tlPath := filepath.Join(res.Dir, record.TimelineFile)
	lines, err := IncidentLines(tlPath)
	if err != nil {
		return out, err
	}
	out.Figures = ComputeIncidentFigures(plan, lines, out.Summary)
	out.Shape = JudgeShape(out.Figures)
	return out, WriteReproduceReport(out, nil)
}

// WriteReproduceReport writes reproduce.md (figures, shape, validation
// failures) into r.Dir; all, when given, are every operator's runs, shown
// side by side.
func WriteReproduceReport(r ReproduceResult, all []ReproduceResult) error {
	var figs []IncidentFigures
	var shapes []Shape
	for _, x := range all {
		figs = append(figs, x.Figures)
		shapes = append(shapes, x.Shape)
	}
	b := IncidentMarkdown(r.Figures, r.Shape, figs, shapes)
	if err := os.WriteFile(filepath.Join(r.Dir, ReproduceReportFile), b, 0o644); err != nil {
		return fmt.Errorf("write reproduce report: %w", err)
	}
	return nil
}
