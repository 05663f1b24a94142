package scenario

import (
	"strconv"

	"github.com/fiomig/fiomig/backend"
	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/record"
)

// DefaultParams are the main job's parameters (DESIGN.md; fiomig run's flag
// defaults): 23 migrations of 10 volumes on 3 hosts, one consumer per
// volume, sampled every 0.1 s, a ~2 s cutover, CUTOVER_PAUSE_CRIT_S 5.0,
// CUTOVER_FREEZES_ALLOWED 1, a 30 s attribution margin and 400 s of settle
// sampled every 1 s: longer than the sourced repairs take to bring back what
// a cancel removed (sbcli's lvol monitor: 300 s sweep + 30 s cycle; the CSI
// restore's backoff: up to 60 s), so path completeness and leaks are judged
// after them (research/incident.md §4, upstream.md §2.7). With 60 s a
// tertiary path lost to sbcli's cancel was still missing at the end.
func DefaultParams() record.Params {
	return record.Params{
		Migrations: 23, Volumes: 10, Hosts: 3, ConsumersPerVolume: 1,
		SampleIntervalS: 0.1, SettleSampleIntervalS: 1, CutoverPauseS: 2.0,
		PauseCritS: 5.0, FreezesAllowed: 1, SettleS: 400, AttributionMarginS: 30,
		Seed: record.SeedThresholds{}.WithDefaults(),
	}
}

// DefaultGapS is the default virtual time between migrations, in seconds.
const DefaultGapS = 5.0

// SimCluster builds the embedded simulator for a seed and parameters
// (SimConfig).
func SimCluster(seed int64, p record.Params) (backend.Cluster, error) {
	return simbackend.New(SimConfig(seed, p))
}

// SimConfig is the simulator's configuration for a seed and parameters,
// for both workloads (SimCluster, RunFio): 3 storage nodes, p.Hosts
// consumer hosts, p.Volumes volumes, and the model switches `fiomig run`
// records in p.Extra (control_plane "" = sbcli, namespaces_per_volume,
// namespaced_volumes, lvol_monitor, csi_restore, release_sources,
// listener_race, swap_readd_fail, nsid_divergence; absent keys, as in older
// plan.json files, leave the switch off).
func SimConfig(seed int64, p record.Params) simbackend.Config {
	return simbackend.Config{
		Seed: seed, Nodes: 3, Hosts: p.Hosts, Volumes: p.Volumes,
		ConsumersPerVolume: p.ConsumersPerVolume, CutoverPauseS: p.CutoverPauseS,
		ControlPlane:        p.Extra["control_plane"],
		NamespacesPerVolume: atoiOr(p.Extra["namespaces_per_volume"], 1), NamespacedVolumes: atoiOr(p.Extra["namespaced_volumes"], 0),
		LvolMonitor: p.Extra["lvol_monitor"] == "true", CSIRestore: p.Extra["csi_restore"],
		ReleaseSources: p.Extra["release_sources"] == "true",
		ListenerRace:   p.Extra["listener_race"] == "true", SwapReaddFail: atofOr(p.Extra["swap_readd_fail"], 0),
		NSIDDivergence: p.Extra["nsid_divergence"] == "true",
	}
}

// atofOr is s as a float64, or d when s is empty (plan.json of older runs).
func atofOr(s string, d float64) float64 {
	if x, err := strconv.ParseFloat(s, 64); err == nil {
		return x
	}
	return d
}

// atoiOr is s as an int, or d when s is empty (plan.json of older runs).
func atoiOr(s string, d int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return d
}
