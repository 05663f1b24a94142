package sim

import (
	"errors"
	"fmt"

	"github.com/fiomig/fiomig/record"
)

// Config is the world's shape and its knobs. Zero fields take the defaults
// documented on each field (see withDefaults).
type Config struct {
	// Seed fixes every random choice of the world (one *rand.Rand from it).
	Seed int64

	// Model is the world's shape and every switch a run records in
	// plan.json (params.model) and an incident file sets; its fields are
	// documented there, their defaults in ModelDefaults. The fields below
	// it are the simulator's own knobs, never recorded.
	//
	// Nodes: each storage node serves its own logical volume store
	// (lvstore) as primary and the next HA-1 nodes' lvstores as
	// secondary/tertiary. Volume i is consumed by hosts i, i+1, ... modulo
	// Hosts. A namespaced volume's NSIDs are 1..NamespacesPerVolume (sbcli
	// add_lvol_thread adds them with explicit NSIDs; max_namespace_per_subsys
	// > 1 takes the batch migration path: the whole subsystem moves); a
	// single-namespace volume's NSID is 2 + i%3 on purpose, so that the
	// kernel's head index H of nvmeSnH differs from the NSID.
	//
	// ReleaseSources: the fixed operator runs a release Job for the source
	// paths on every consumer host after the cutover, before the control
	// plane removes the source listeners; off by default, as in the fixed
	// operator (simplyblock-operator 5aa711cc releases migration paths only
	// in cancelAndFail and reconcileAbort; nothing after Completed). The
	// prefix operator ignores it (36c00741 releases nothing at all).
	//
	// ControlPlane: ControlPlaneSbcli (sbcli main's _cleanup_created as
	// sourced, which ignores the tertiaries — it deletes the volume's
	// subsystem on the source's tertiary and leaves the target tertiary's
	// listener) or ControlPlaneFixedCancel (an assumed fix: the overlap
	// computed with the tertiaries, as create_migration computes it, so
	// every target node only loses the migration's listener). See
	// controlplane.go cpCancel.
	//
	// LvolMonitor (monitor.go) brings back a non-leader's subsystem and
	// listener that a cancel deleted, ≤ 300 s + 30 s later. CSIRestore runs
	// the CSI node plugin's path restore (CSIRestoreByIP pre-fix,
	// CSIRestoreByEndpoint fixed).
	//
	// SyncMinS/SyncMaxS: the control plane cuts over a uniform draw from
	// [SyncMinS, SyncMaxS) seconds after continue (defaults 3 and 8
	// [assumption]; docs/incidents.md's pacing puts a batch sync at 60-180 s
	// [assumption], which an incident file may set). JobStartMinS/MaxS: a
	// path Job (validation and release Jobs alike: pod scheduling, image
	// pull, container start) starts a uniform draw from that range before
	// its first round (defaults 1 and 3 [assumption]; the incident's pacing
	// 10-30 s [assumption]); the Jobs are pulled with imagePullPolicy Always.
	//
	// ListenerRace, SwapReaddFail and NSIDDivergence are optional, cited
	// switches of the simulated control plane, all off by default: no
	// source says any of them happened in fio-mig-1787159565.
	// ListenerRace: on a target node that does not hold the subsystem (a
	// non-overlap node), CreateMigration creates the subsystem and its
	// listener before it adds the namespaces (sbcli migration_controller.py
	// :1180 → :1197 → :1204, once per batch member) and every member's
	// add_ns fails there [assumption: the switch's], which create_migration
	// only logs; a host controller connecting there is live with no
	// namespace (SB 97ef965c2) until the task runner's pre-cutover check
	// adds the namespace back (for a batch only the first member's; see
	// controlplane.go ensureTargetNamespaces). SwapReaddFail is the
	// probability that one namespace re-add of the batch cutover's two-pass
	// swap fails (sbcli tasks_runner_batch_migration.py :509, non-fatal):
	// that node's controllers stay live with a partial leg set.
	// NSIDDivergence: in each batch cutover's two-pass swap, one overlap
	// node (drawn from the seed) re-adds two adjacent members in the other
	// order, so that SPDK's lowest-free NSID gives them each other's NSID
	// there (the re-add passes no nsid, :509; sbcli's branch fix fabb18694
	// passes it). The hosts' kernels refuse them on that node's controllers
	// ("IDs don't match for shared namespace N"; SB
	// lvol_controller.py:1264-1276). Which node and pair is an assumption:
	// SB re-adds in ns_id order (migration_controller.py :823-833), so this
	// stands for any cause of a divergent NSID.
	//
	// ReconnectReset: ReconnectResetFull (upstream: after a fully
	// successful reconnect) or ReconnectResetPartial (also whenever an
	// attempt got as far as the Fabrics CONNECT, as field reports say some
	// kernels do). KernelDNR: KernelDNRHonor (newer kernels) or
	// KernelDNRIgnore. HostKernel: HostKernel612 or HostKernel61, the TCP
	// SYN timers of a connect nobody answers (hostnet.go synTimers).
	record.Model

	// HA is the number of nodes serving each lvstore: one primary listener
	// (ANA optimized) and HA-1 secondaries (non-optimized) per subsystem
	// (default min(3, Nodes)).
	HA int
	// BasePort is the NVMe/TCP port of node 0's lvstore; lvstore i listens
	// on BasePort+2i on every node serving it (default 4426, as simplyblock).
	BasePort int
	// CutoverJitter is the relative spread of the cutover window: each
	// window lasts CutoverPauseS*(1+u) with u uniform in [-CutoverJitter,
	// +CutoverJitter] from the seed (default 0.25; negative = no jitter).
	CutoverJitter float64
	// AENLatencyS is the mean delay between a target's ANA change and the
	// host's legs showing it (asynchronous event + ANA log page read),
	// seconds; each notice draws uniformly from [0.5, 1.5]×AENLatencyS
	// (default 0.02; negative = immediate).
	AENLatencyS float64

	// ControlPlaneConnect overrides the connect options the control plane
	// answers CreateMigration with (zero value: ControlPlaneConnectOptions,
	// simplyblock's 3600/2/8/4). A CtrlLossTmo of -1 or 0 here shows the
	// pre-fix operator silently dropping it.
	ControlPlaneConnect *ConnectOptions

	// Pods (Model) run on each volume's first consumer host.
	//
	// PodIOPS is each pod's completion rate while a path serves (default 1000).
	PodIOPS float64
	// PodIODepth is each pod's I/O depth: what is queued while I/O waits
	// (default 16).
	PodIODepth int
	// IOIntervalS is the interval of the pods' io events (default 1 s).
	IOIntervalS float64

	// Clock drives time; nil means a fresh VirtualClock.
	Clock Clock
}

// Control plane variants (Config.ControlPlane).
const (
	ControlPlaneSbcli       = record.ControlPlaneSbcli
	ControlPlaneFixedCancel = record.ControlPlaneFixedCancel
)

// Operator variants (Config.Operator).
const (
	OperatorPrefix = record.OperatorPrefix
	OperatorFixed  = record.OperatorFixed
)

// Kernel switches (Config.ReconnectReset, Config.KernelDNR).
const (
	ReconnectResetFull    = record.ReconnectResetFull
	ReconnectResetPartial = record.ReconnectResetPartial
	KernelDNRHonor        = record.KernelDNRHonor
	KernelDNRIgnore       = record.KernelDNRIgnore
)

// Defaults of Config.
const (
	DefaultNodes              = 3
	DefaultHosts              = 3
	DefaultVolumes            = 10
	DefaultConsumersPerVolume = 1
	DefaultBasePort           = 4426
	DefaultCutoverPauseS      = 2.0
	DefaultCutoverJitter      = 0.25
	DefaultSyncMinS           = 3.0
	DefaultSyncMaxS           = 8.0
	DefaultJobStartMinS       = 1.0
	DefaultJobStartMaxS       = 3.0
)

// ModelDefaults fills every zero field of m with its default: 3 nodes, 3
// hosts, 10 volumes, 1 consumer and 1 namespace per volume, a 2 s cutover,
// the sbcli control plane, the fixed operator, CSI restore off, the
// upstream kernel (full reconnect reset, DNR honoured), pods tolerating
// 5 s without I/O, a 3-8 s data sync and a 1-3 s Job start. A run
// records its model with them filled in, so that plan.json states every
// switch.
func ModelDefaults(m record.Model) record.Model {
	m.Version = record.ModelVersion
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setString := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	setInt(&m.Nodes, DefaultNodes)
	setInt(&m.Hosts, DefaultHosts)
	setInt(&m.Volumes, DefaultVolumes)
	setInt(&m.ConsumersPerVolume, DefaultConsumersPerVolume)
	setInt(&m.NamespacesPerVolume, 1)
	if m.CutoverPauseS == 0 {
		m.CutoverPauseS = DefaultCutoverPauseS
	}
	setString(&m.ReconnectReset, ReconnectResetFull)
	setString(&m.KernelDNR, KernelDNRHonor)
	setString(&m.HostKernel, HostKernel612)
	setString(&m.ControlPlane, ControlPlaneSbcli)
	setString(&m.Operator, OperatorFixed)
	setString(&m.CSIRestore, CSIRestoreOff)
	if m.PodToleranceS == 0 {
		m.PodToleranceS = 5
	}
	if m.SyncMinS == 0 && m.SyncMaxS == 0 {
		m.SyncMinS, m.SyncMaxS = DefaultSyncMinS, DefaultSyncMaxS
	}
	if m.JobStartMinS == 0 && m.JobStartMaxS == 0 {
		m.JobStartMinS, m.JobStartMaxS = DefaultJobStartMinS, DefaultJobStartMaxS
	}
	return m
}

func (c Config) withDefaults() Config {
	c.Model = ModelDefaults(c.Model)
	if c.HA == 0 {
		c.HA = min(3, c.Nodes)
	}
	if c.BasePort == 0 {
		c.BasePort = DefaultBasePort
	}
	if c.CutoverJitter == 0 {
		c.CutoverJitter = DefaultCutoverJitter
	} else if c.CutoverJitter < 0 {
		c.CutoverJitter = 0
	}
	if c.AENLatencyS == 0 {
		c.AENLatencyS = 0.02
	} else if c.AENLatencyS < 0 {
		c.AENLatencyS = 0
	}
	if c.PodIOPS == 0 {
		c.PodIOPS = 1000
	}
	if c.PodIODepth == 0 {
		c.PodIODepth = 16
	}
	if c.IOIntervalS == 0 {
		c.IOIntervalS = 1
	}
	if c.Clock == nil {
		c.Clock = &VirtualClock{}
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Nodes < 1 {
		errs = append(errs, fmt.Errorf("nodes %d: need at least 1", c.Nodes))
	}
	if c.Hosts < 1 {
		errs = append(errs, fmt.Errorf("hosts %d: need at least 1", c.Hosts))
	}
	if c.Volumes < 0 {
		errs = append(errs, fmt.Errorf("volumes %d: negative", c.Volumes))
	}
	if c.ConsumersPerVolume < 1 || c.ConsumersPerVolume > c.Hosts {
		errs = append(errs, fmt.Errorf("consumers per volume %d: need 1..hosts (%d)", c.ConsumersPerVolume, c.Hosts))
	}
	if c.NamespacesPerVolume < 1 || c.NamespacesPerVolume > 64 {
		errs = append(errs, fmt.Errorf("namespaces per volume %d: need 1..64", c.NamespacesPerVolume))
	}
	if c.NamespacedVolumes < 0 || c.NamespacedVolumes > c.Volumes {
		errs = append(errs, fmt.Errorf("namespaced volumes %d: need 0..volumes (%d)", c.NamespacedVolumes, c.Volumes))
	}
	if c.HA < 1 || c.HA > c.Nodes {
		errs = append(errs, fmt.Errorf("HA %d: need 1..nodes (%d)", c.HA, c.Nodes))
	}
	if c.HostsAreNodes && c.Hosts > c.Nodes {
		errs = append(errs, fmt.Errorf("hosts are nodes but hosts %d > nodes %d", c.Hosts, c.Nodes))
	}
	if c.BasePort < 1 || c.BasePort+2*c.Nodes > 65535 {
		errs = append(errs, fmt.Errorf("base port %d: out of range for %d nodes", c.BasePort, c.Nodes))
	}
	if c.CutoverPauseS < 0 {
		errs = append(errs, fmt.Errorf("cutover pause %g s: negative", c.CutoverPauseS))
	}
	if c.CutoverJitter >= 1 {
		errs = append(errs, fmt.Errorf("cutover jitter %g: must be < 1", c.CutoverJitter))
	}
	if err := c.Model.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.SyncMinS < 0 || c.SyncMaxS < c.SyncMinS {
		errs = append(errs, fmt.Errorf("sync duration [%g, %g] s: need 0 <= SyncMinS <= SyncMaxS", c.SyncMinS, c.SyncMaxS))
	}
	if c.JobStartMinS < 0 || c.JobStartMaxS < c.JobStartMinS {
		errs = append(errs, fmt.Errorf("job start [%g, %g] s: need 0 <= JobStartMinS <= JobStartMaxS", c.JobStartMinS, c.JobStartMaxS))
	}
	if c.PodToleranceS < 0 || c.PodIOPS < 0 || c.PodIODepth < 0 || c.IOIntervalS <= 0 {
		errs = append(errs, errors.New("pod tolerance, IOPS, I/O depth must not be negative and the I/O interval must be positive"))
	}
	return errors.Join(errs...)
}
