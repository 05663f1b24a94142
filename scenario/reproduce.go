package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/fiomig/fiomig/analysis"
	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// IncidentParams are an incident's run parameters: its topology and pacing
// over fiomig's default thresholds.
func IncidentParams(inc incidents.Incident) record.Params {
	p := DefaultParams()
	t, pc := inc.Topology, inc.Pacing
	p.Hosts, p.Volumes, p.ConsumersPerVolume = t.Hosts, t.Volumes, t.ConsumersPerVolume
	p.Migrations, p.SampleIntervalS = pc.Migrations, pc.SampleIntervalS
	p.SettleS, p.SettleSampleIntervalS = pc.SettleS, pc.SettleSampleIntervalS
	if pc.MigrationTimeoutS > 0 {
		p.Seed.MigrationTimeoutS = pc.MigrationTimeoutS
	}
	if inc.Model.CutoverPauseS > 0 {
		p.CutoverPauseS = inc.Model.CutoverPauseS
	}
	return p
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
	// ReconnectReset is the kernel switch: "full" (upstream) or "partial";
	// KernelDNR "honor" or "ignore"; TargetDNR makes the targets set DNR on
	// rejections (SPDK does not). Empty (nil) takes the incident's value.
	ReconnectReset string
	KernelDNR      string
	TargetDNR      *bool
	// Params default to IncidentParams; Schedule to IncidentSchedule(Seed).
	Params   *record.Params
	Schedule []record.FaultSpec
	// NoFaults drops the incident's seeded and scheduled faults (fiomig
	// reproduce --faults none): the run shows what the sourced model does
	// with no fault at all (incident.md §6.1). plan.json's params.extra
	// "fault_schedule" says so.
	NoFaults bool
	// ReleaseSources, ListenerRace, SwapReaddFail and NSIDDivergence
	// override the incident file's switches (operators.release_sources,
	// model.listener_race, model.swap_readd_fail, model.nsid_divergence;
	// nil takes the file's, absent there = off).
	ReleaseSources *bool
	ListenerRace   *bool
	SwapReaddFail  *float64
	NSIDDivergence *bool
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
	if o.ReconnectReset == "" {
		o.ReconnectReset = inc.Kernel.ReconnectReset.Value
	}
	if o.KernelDNR == "" {
		o.KernelDNR = inc.Kernel.DNR.Value
	}
	targetDNR := inc.Kernel.TargetDNR.Value == "true"
	if o.TargetDNR != nil {
		targetDNR = *o.TargetDNR
	}
	p := IncidentParams(inc)
	if o.Params != nil {
		p = *o.Params
	}
	sw := IncidentSwitches(inc)
	if o.ReleaseSources != nil {
		sw.ReleaseSources = *o.ReleaseSources
	}
	if o.ListenerRace != nil {
		sw.ListenerRace = *o.ListenerRace
	}
	if o.SwapReaddFail != nil {
		sw.SwapReaddFail = *o.SwapReaddFail
	}
	if o.NSIDDivergence != nil {
		sw.NSIDDivergence = *o.NSIDDivergence
	}
	podToleranceS := inc.Topology.PodToleranceS
	if podToleranceS == 0 {
		podToleranceS = 5
	}
	gapS := inc.Pacing.GapS
	p.Extra = map[string]string{
		"operator": o.Operator, "reconnect_reset": o.ReconnectReset, "kernel_dnr": o.KernelDNR,
		"target_dnr": strconv.FormatBool(targetDNR), "hosts_are_nodes": strconv.FormatBool(inc.Topology.HostsAreNodes),
		"pods":                  strconv.FormatBool(inc.Topology.Pods),
		"pod_tolerance_s":       strconv.FormatFloat(podToleranceS, 'g', -1, 64),
		"gap_s":                 strconv.FormatFloat(gapS, 'g', -1, 64),
		"incident":              inc.Name,
		"control_plane":         inc.Model.ControlPlane.Value,
		"namespaces_per_volume": strconv.Itoa(max(1, inc.Topology.NamespacesPerVolume)),
		"lvol_monitor":          orDefault(inc.Model.LvolMonitor.Value, "off"),
		"csi_restore":           orDefault(csiRestore(inc, o.Operator), "off"),
		"fault_schedule":        "incident",
		"release_sources":       strconv.FormatBool(sw.ReleaseSources),
		"listener_race":         strconv.FormatBool(sw.ListenerRace),
		"swap_readd_fail":       strconv.FormatFloat(sw.SwapReaddFail, 'g', -1, 64),
		"nsid_divergence":       strconv.FormatBool(sw.NSIDDivergence),
	}
	pc := inc.Pacing
	for k, r := range map[string][]float64{"job_start_s": pc.JobStartS, "sync_s": pc.SyncS} {
		if r != nil {
			p.Extra[k] = strconv.FormatFloat(r[0], 'g', -1, 64) + "-" + strconv.FormatFloat(r[1], 'g', -1, 64)
		}
	}
	if o.NoFaults {
		p.Extra["fault_schedule"] = "none (the incident's seeded and scheduled faults dropped)"
	}
	cluster, err := simbackend.New(simbackend.Config{
		Seed: o.Seed, Nodes: inc.Topology.Nodes, Hosts: p.Hosts, Volumes: p.Volumes, ConsumersPerVolume: p.ConsumersPerVolume,
		NamespacesPerVolume: inc.Topology.NamespacesPerVolume,
		HostsAreNodes:       inc.Topology.HostsAreNodes, CutoverPauseS: p.CutoverPauseS, Operator: o.Operator,
		ReconnectReset: o.ReconnectReset, KernelDNR: o.KernelDNR, TargetDNR: targetDNR,
		ControlPlane: inc.Model.ControlPlane.Value,
		LvolMonitor:  inc.Model.LvolMonitor.Value == "on", CSIRestore: csiRestore(inc, o.Operator),
		Pods: inc.Topology.Pods, PodToleranceS: podToleranceS,
		ReleaseSources: sw.ReleaseSources, ListenerRace: sw.ListenerRace, SwapReaddFail: sw.SwapReaddFail,
		NSIDDivergence: sw.NSIDDivergence,
		JobStartMinS:   rangeAt(pc.JobStartS, 0), JobStartMaxS: rangeAt(pc.JobStartS, 1),
		SyncMinS: rangeAt(pc.SyncS, 0), SyncMaxS: rangeAt(pc.SyncS, 1),
	})
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
	res, err := Run(ctx, inj, Config{Plan: plan, OutDir: o.OutDir, StartUnix: o.StartUnix, GapS: gapS,
		MigrationTimeoutS: pc.MigrationTimeoutS, Progress: o.Progress, OnLine: kept.Add})
	out := ReproduceResult{Dir: res.Dir, Interrupted: res.Interrupted, Summary: res.Summary, Plan: res.Plan}
	out.FaultErrors = inj.Errors()
	if err != nil || res.Interrupted {
		return out, err
	}
	plan = res.Plan
	out.Run = analysis.Analyse(inc, plan, kept.Lines(), out.Summary)
	return out, reports.WriteReproduce(out.Dir, out.Run, nil)
}

// Switches are the optional model switches of an incident run (each off
// unless the incident file or a flag turns it on).
type Switches struct {
	ReleaseSources bool
	ListenerRace   bool
	SwapReaddFail  float64
	NSIDDivergence bool
}

// IncidentSwitches are inc's switches as its file sets them (validated by
// incidents.Parse).
func IncidentSwitches(inc incidents.Incident) Switches {
	p, _ := strconv.ParseFloat(orDefault(inc.Model.SwapReaddFail.Value, "0"), 64)
	return Switches{ReleaseSources: inc.Operators.ReleaseSources.Value == "true", ListenerRace: inc.Model.ListenerRace.Value == "on",
		SwapReaddFail: p, NSIDDivergence: inc.Model.NSIDDivergence.Value == "on"}
}

// csiRestore is the sim's CSI restore variant for inc and operator: the
// "operator" value follows the operator's release (prefix: by IP only,
// fixed: by ip:port).
func csiRestore(inc incidents.Incident, operator string) string {
	switch v := inc.Model.CSIRestore.Value; v {
	case "", "off":
		return ""
	case "operator":
		if operator == "fixed" {
			return "ip-port"
		}
		return "ip"
	default:
		return v
	}
}

// rangeAt is r[i] of a validated [min, max] pacing range, 0 (the
// simulator's default) when the file does not set it.
func rangeAt(r []float64, i int) float64 {
	if len(r) != 2 {
		return 0
	}
	return r[i]
}

// IncidentID is the catalogue's first incident (incidents.Default).
const IncidentID = incidents.Default

// LoadIncident is analysis.LoadIncident: the incident named, with every
// figure and check its expectations name checked.
func LoadIncident(name string, dirs ...string) (incidents.Incident, error) {
	return analysis.LoadIncident(name, dirs...)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
