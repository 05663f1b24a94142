package record

import (
	"errors"
	"fmt"
	"math"
)

// ModelVersion is the version of Model's format in plan.json
// (params.model.version). A plan.json without the section (written before
// it existed) carries its switches as strings in params.extra; Params'
// decoder reads them into Model (legacy.go). A later version is refused.
const ModelVersion = 1

// Model is the world a run simulates: the cluster's shape and every
// switch of the simulated control plane, operator, kernel and workload.
// It is the one typed model configuration: fiomig run's flags bind to its
// fields, plan.json records it (params.model), incident files set it by
// the same names (incidents.Incident.World), and the simulator takes it
// whole (sim.Config embeds it). A zero field takes the simulator's default
// named on it (sim.ModelDefaults fills them before a run records its
// plan). On the kube backend only Hosts and Volumes describe the run (the
// cluster's hosts and the PVCs made); the other fields are the
// simulator's and say nothing there.
//
// A field added here is a new switch everywhere at once; fields may be
// added, never renamed (old plan.json files must still load).
type Model struct {
	// Version is ModelVersion when written; 0 in a plan converted from
	// params.extra.
	Version int `json:"version"`

	// Nodes is the number of storage nodes (3). Hosts the consumer hosts
	// (3); HostsAreNodes makes host i the storage node i, as in
	// hyper-converged clusters. Volumes is the number of volumes, one
	// subsystem each (10); ConsumersPerVolume how many hosts connect to
	// each (1). NamespacesPerVolume (1) is the namespaces of a namespaced
	// volume's subsystem, NSIDs 1..N, and NamespacedVolumes how many of
	// the volumes (the last ones) are namespaced (0 = all).
	Nodes               int  `json:"nodes"`
	Hosts               int  `json:"hosts"`
	HostsAreNodes       bool `json:"hosts_are_nodes"`
	Volumes             int  `json:"volumes"`
	ConsumersPerVolume  int  `json:"consumers_per_volume"`
	NamespacesPerVolume int  `json:"namespaces_per_volume"`
	NamespacedVolumes   int  `json:"namespaced_volumes"`
	// CutoverPauseS is the design all-inaccessible window of a cutover,
	// seconds (2.0, simplyblock's cutover).
	CutoverPauseS float64 `json:"cutover_pause_s"`

	// ControlPlane is the control plane's cancel before continue:
	// ControlPlaneSbcli (as sourced) or ControlPlaneFixedCancel (an
	// assumed fix); see docs/simulator.md.
	ControlPlane string `json:"control_plane"`
	// LvolMonitor runs sbcli's lvol monitor repair (every 300 s it
	// re-creates a non-leader's deleted subsystem and listener).
	LvolMonitor bool `json:"lvol_monitor"`
	// CSIRestore is the CSI node plugin's path restore: CSIRestoreOff
	// ("" too), CSIRestoreByIP (pre-fix) or CSIRestoreByEndpoint (fixed).
	CSIRestore string `json:"csi_restore"`
	// ListenerRace, SwapReaddFail (a probability) and NSIDDivergence are
	// the simulated control plane's optional cited defects, off by
	// default (docs/simulator.md).
	ListenerRace   bool    `json:"listener_race"`
	SwapReaddFail  float64 `json:"swap_readd_fail"`
	NSIDDivergence bool    `json:"nsid_divergence"`
	// SyncMinS and SyncMaxS bound the data sync after continue, seconds
	// (3 and 8).
	SyncMinS float64 `json:"sync_min_s"`
	SyncMaxS float64 `json:"sync_max_s"`

	// Operator is the migration operator: OperatorFixed (simplyblock-
	// operator 5aa711cc) or OperatorPrefix (36c00741).
	Operator string `json:"operator"`
	// ReleaseSources is fiomig's extra, not the fix: the fixed operator
	// also runs a release Job for the source paths after the cutover.
	ReleaseSources bool `json:"release_sources"`
	// JobStartMinS and JobStartMaxS bound a path Job's start, seconds (1
	// and 3).
	JobStartMinS float64 `json:"job_start_min_s"`
	JobStartMaxS float64 `json:"job_start_max_s"`

	// ReconnectReset is when the host kernel resets a controller's
	// reconnect counter: ReconnectResetFull (upstream) or
	// ReconnectResetPartial. KernelDNR is whether it stops reconnecting
	// after a CONNECT rejected with DNR: KernelDNRHonor or KernelDNRIgnore.
	// TargetDNR makes the targets set DNR on rejected CONNECTs (SPDK's
	// "does not allow host" reply does not).
	ReconnectReset string `json:"reconnect_reset"`
	KernelDNR      string `json:"kernel_dnr"`
	TargetDNR      bool   `json:"target_dnr"`
	// HostKernel is the consumer hosts' Linux version where the host model
	// depends on it: HostKernel612 ("6.12") or HostKernel61 ("6.1", Debian
	// bookworm's): the TCP SYN retransmission times of a connect nobody
	// answers (1 s and 2 s on 6.12, 1 s on 6.1; both give up after 3 s;
	// docs/host-model.md). Added field (issue 28).
	HostKernel string `json:"host_kernel"`

	// Pods runs one modelled fio pod per volume; a pod dies after
	// PodToleranceS seconds without a completed I/O (5).
	Pods          bool    `json:"pods"`
	PodToleranceS float64 `json:"pod_tolerance_s"`
}

// Values of Model's string switches.
const (
	ControlPlaneSbcli       = "sbcli"
	ControlPlaneFixedCancel = "fixed-cancel"

	CSIRestoreOff        = "off"
	CSIRestoreByIP       = "ip"
	CSIRestoreByEndpoint = "ip-port"

	OperatorPrefix = "prefix"
	OperatorFixed  = "fixed"

	ReconnectResetFull    = "full"
	ReconnectResetPartial = "partial"
	KernelDNRHonor        = "honor"
	KernelDNRIgnore       = "ignore"

	HostKernel612 = "6.12"
	HostKernel61  = "6.1"
)

// Validate reports every value of m no run can take, each naming its
// plan.json field (model.<name>). Zero values are valid (the defaults);
// what depends on the defaults (consumers ≤ hosts, ranges) is the
// simulator's to check once they are filled in (sim.New).
func (m Model) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("model.%s: "+format, append([]any{field}, a...)...))
	}
	oneOf := func(field, v string, allowed ...string) {
		if v == "" {
			return
		}
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		bad(field, "%q: want one of %q", v, allowed)
	}
	oneOf("control_plane", m.ControlPlane, ControlPlaneSbcli, ControlPlaneFixedCancel)
	oneOf("csi_restore", m.CSIRestore, CSIRestoreOff, CSIRestoreByIP, CSIRestoreByEndpoint)
	oneOf("operator", m.Operator, OperatorPrefix, OperatorFixed)
	oneOf("reconnect_reset", m.ReconnectReset, ReconnectResetFull, ReconnectResetPartial)
	oneOf("host_kernel", m.HostKernel, HostKernel612, HostKernel61)
	oneOf("kernel_dnr", m.KernelDNR, KernelDNRHonor, KernelDNRIgnore)
	for _, n := range []struct {
		field string
		v     int
	}{{"nodes", m.Nodes}, {"hosts", m.Hosts}, {"volumes", m.Volumes}, {"consumers_per_volume", m.ConsumersPerVolume},
		{"namespaces_per_volume", m.NamespacesPerVolume}, {"namespaced_volumes", m.NamespacedVolumes}} {
		if n.v < 0 {
			bad(n.field, "%d: negative", n.v)
		}
	}
	for _, s := range []struct {
		field string
		v     float64
	}{{"cutover_pause_s", m.CutoverPauseS}, {"sync_min_s", m.SyncMinS}, {"sync_max_s", m.SyncMaxS},
		{"job_start_min_s", m.JobStartMinS}, {"job_start_max_s", m.JobStartMaxS}, {"pod_tolerance_s", m.PodToleranceS}} {
		if math.IsNaN(s.v) || math.IsInf(s.v, 0) || s.v < 0 {
			bad(s.field, "%g: want a finite number of seconds ≥ 0", s.v)
		}
	}
	if !(m.SwapReaddFail >= 0 && m.SwapReaddFail <= 1) {
		bad("swap_readd_fail", "%g: want a probability 0 to 1", m.SwapReaddFail)
	}
	if m.Version > ModelVersion {
		bad("version", "%d: this fiomig reads model versions up to %d", m.Version, ModelVersion)
	}
	return errors.Join(errs...)
}
