package sim

import (
	"errors"
	"fmt"
)

// Config is the world's shape and its knobs. Zero fields take the defaults
// documented on each field (see withDefaults).
type Config struct {
	// Seed fixes every random choice of the world (one *rand.Rand from it).
	Seed int64
	// Nodes is the number of storage nodes (default 3). Each serves its own
	// logical volume store (lvstore) as primary and the next HA-1 nodes'
	// lvstores as secondary/tertiary.
	Nodes int
	// Hosts is the number of consumer hosts (default 3).
	Hosts int
	// HostsAreNodes makes host i the storage node i (same name and IP), as
	// in hyper-converged clusters; requires Hosts <= Nodes.
	HostsAreNodes bool
	// Volumes is the number of volumes, one subsystem each (default 10).
	Volumes int
	// ConsumersPerVolume is how many hosts consume (connect) each volume
	// (default 1); volume i is consumed by hosts i, i+1, ... modulo Hosts.
	ConsumersPerVolume int
	// NamespacesPerVolume is the number of namespaces of a namespaced
	// volume's subsystem (default 1), NSIDs 1..N (sbcli add_lvol_thread
	// adds them with explicit NSIDs; max_namespace_per_subsys > 1 takes
	// the batch migration path: the whole subsystem moves). A
	// single-namespace volume's NSID is 2 + i%3 on purpose, so that the
	// kernel's head index H of nvmeSnH differs from the NSID.
	NamespacesPerVolume int
	// NamespacedVolumes is how many volumes (the last ones) have
	// NamespacesPerVolume namespaces; the others have one, which mixes
	// single and namespaced volumes as the seed harness does (10 + 6).
	// 0 = every volume.
	NamespacedVolumes int
	// HA is the number of nodes serving each lvstore: one primary listener
	// (ANA optimized) and HA-1 secondaries (non-optimized) per subsystem
	// (default min(3, Nodes)).
	HA int
	// BasePort is the NVMe/TCP port of node 0's lvstore; lvstore i listens
	// on BasePort+2i on every node serving it (default 4426, as simplyblock).
	BasePort int
	// CutoverPauseS is the design all-inaccessible window of a cutover,
	// seconds (default 2.0, simplyblock's cutover).
	CutoverPauseS float64
	// CutoverJitter is the relative spread of the cutover window: each
	// window lasts CutoverPauseS*(1+u) with u uniform in [-CutoverJitter,
	// +CutoverJitter] from the seed (default 0.25; negative = no jitter).
	CutoverJitter float64
	// AENLatencyS is the mean delay between a target's ANA change and the
	// host's legs showing it (asynchronous event + ANA log page read),
	// seconds; each notice draws uniformly from [0.5, 1.5]×AENLatencyS
	// (default 0.02; negative = immediate).
	AENLatencyS float64

	// ReconnectReset selects when the kernel resets a controller's
	// reconnect counter: ReconnectResetFull (upstream, default: after a
	// fully successful reconnect) or ReconnectResetPartial (also whenever
	// an attempt got as far as the Fabrics CONNECT, as field reports say
	// some kernels do).
	ReconnectReset string
	// KernelDNR selects whether the kernel stops reconnecting after a
	// CONNECT rejected with the DNR bit: KernelDNRHonor (newer kernels,
	// default) or KernelDNRIgnore.
	KernelDNR string
	// TargetDNR makes the target set DNR on rejected CONNECTs; SPDK's
	// "does not allow host" reply does not (default false).
	TargetDNR bool

	// HostKernel is the consumer hosts' Linux version where the model
	// depends on it: HostKernel612 (default, 6.12) or HostKernel61 (6.1,
	// Debian bookworm's kernel). It selects the TCP SYN timers that end a
	// connect nobody answers (hostnet.go synGiveUpS: 3 s on both, with the
	// NVMe/TCP host's one SYN retry).
	HostKernel string
	// ControlPlaneConnect overrides the connect options the control plane
	// answers CreateMigration with (zero value: ControlPlaneConnectOptions,
	// simplyblock's 3600/2/8/4). A CtrlLossTmo of -1 or 0 here shows the
	// pre-fix operator silently dropping it.
	ControlPlaneConnect *ConnectOptions

	// Operator selects the migration operator variant: OperatorFixed
	// (default) or OperatorPrefix (see operator.go).
	Operator string
	// ReleaseSources is fiomig's extra, not part of the fix: the fixed
	// operator runs a release Job for the source paths on every consumer
	// host after the cutover, before the control plane removes the source
	// listeners. Off by default, as in the fixed operator (simplyblock-operator
	// 5aa711cc releases migration paths only in cancelAndFail and
	// reconcileAbort; nothing after Completed). The prefix operator ignores
	// it (36c00741 releases nothing at all).
	ReleaseSources bool
	// ControlPlane selects the control plane's cancel before continue:
	// ControlPlaneSbcli (default: sbcli main's _cleanup_created as sourced,
	// which ignores the tertiaries — it deletes the volume's subsystem on
	// the source's tertiary and leaves the target tertiary's listener) or
	// ControlPlaneFixedCancel (an assumed fix: the overlap computed with
	// the tertiaries, as create_migration computes it, so every target node
	// only loses the migration's listener). See controlplane.go cpCancel.
	ControlPlane string

	// LvolMonitor runs sbcli's lvol monitor repair (monitor.go): it brings
	// back a non-leader's subsystem and listener that a cancel deleted,
	// ≤ 300 s + 30 s later. Off by default (the main job's record is kept
	// as it was); incidents turn it on.
	LvolMonitor bool
	// CSIRestore runs the CSI node plugin's path restore: CSIRestoreOff
	// (default), CSIRestoreByIP (pre-fix) or CSIRestoreByEndpoint (fixed).
	CSIRestore string

	// SyncMinS and SyncMaxS bound the data sync after continue: the
	// control plane cuts over a uniform draw from [SyncMinS, SyncMaxS)
	// seconds later (defaults 3 and 8 [assumption], what fiomig run has
	// always used; research/incident.md §6.1 pacing puts a batch sync at
	// 60-180 s [assumption], which an incident file may set).
	SyncMinS, SyncMaxS float64
	// JobStartMinS and JobStartMaxS bound a path Job's start (validation
	// and release Jobs alike: pod scheduling, image pull, container start)
	// before it runs its first round: a uniform draw from [JobStartMinS,
	// JobStartMaxS) seconds (defaults 1 and 3 [assumption], what fiomig run
	// has always used; research/incident.md §6.1 pacing puts a Job at
	// 10-30 s [assumption], which an incident file may set). The Jobs are
	// pulled with imagePullPolicy Always (research/kube.md §4).
	JobStartMinS, JobStartMaxS float64

	// Optional, cited switches of the simulated control plane, all off by
	// default: no source says any of them happened in fio-mig-1787159565
	// (research/incident.md §2 "Sourced ways", §6.1 last list).
	//
	// ListenerRace: on a target node that does not hold the subsystem (a
	// non-overlap node), CreateMigration creates the subsystem and its
	// listener before it adds the namespaces (sbcli
	// migration_controller.py :1180 → :1197 → :1204, once per batch member)
	// and every member's add_ns fails there [assumption: the switch's],
	// which create_migration only logs; a host controller connecting there
	// is live with no namespace (SB 97ef965c2) until the task runner's
	// pre-cutover check adds the namespace back (for a batch only the
	// first member's; see controlplane.go ensureTargetNamespaces).
	ListenerRace bool
	// SwapReaddFail is the probability that one namespace re-add of the
	// batch cutover's two-pass swap fails (sbcli
	// tasks_runner_batch_migration.py :509, non-fatal): that node's
	// controllers stay live with a partial leg set. 0 = never.
	SwapReaddFail float64
	// NSIDDivergence: in each batch cutover's two-pass swap, one overlap
	// node (drawn from the seed) re-adds two adjacent members in the
	// other order, so that SPDK's lowest-free NSID gives them each other's
	// NSID there (the re-add passes no nsid, :509; sbcli's branch fix
	// fabb18694 passes it). The hosts' kernels refuse them on that node's
	// controllers ("IDs don't match for shared namespace N"; SB
	// lvol_controller.py:1264-1276). Which node and pair is an
	// assumption: SB re-adds in ns_id order (migration_controller.py
	// :823-833), so this stands for any cause of a divergent NSID.
	NSIDDivergence bool

	// Pods runs one modelled fio pod per volume (on its first consumer host).
	Pods bool
	// PodToleranceS: a pod dies when no I/O completes for longer than this
	// (default 5 s).
	PodToleranceS float64
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
	ControlPlaneSbcli       = "sbcli"
	ControlPlaneFixedCancel = "fixed-cancel"
)

// Operator variants (Config.Operator).
const (
	OperatorPrefix = "prefix"
	OperatorFixed  = "fixed"
)

// Kernel switches (Config.ReconnectReset, Config.KernelDNR).
const (
	ReconnectResetFull    = "full"
	ReconnectResetPartial = "partial"
	KernelDNRHonor        = "honor"
	KernelDNRIgnore       = "ignore"
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

func (c Config) withDefaults() Config {
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.Hosts == 0 {
		c.Hosts = DefaultHosts
	}
	if c.Volumes == 0 {
		c.Volumes = DefaultVolumes
	}
	if c.ConsumersPerVolume == 0 {
		c.ConsumersPerVolume = DefaultConsumersPerVolume
	}
	if c.NamespacesPerVolume == 0 {
		c.NamespacesPerVolume = 1
	}
	if c.HA == 0 {
		c.HA = min(3, c.Nodes)
	}
	if c.BasePort == 0 {
		c.BasePort = DefaultBasePort
	}
	if c.CutoverPauseS == 0 {
		c.CutoverPauseS = DefaultCutoverPauseS
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
	if c.ReconnectReset == "" {
		c.ReconnectReset = ReconnectResetFull
	}
	if c.KernelDNR == "" {
		c.KernelDNR = KernelDNRHonor
	}
	if c.HostKernel == "" {
		c.HostKernel = HostKernel612
	}
	if c.ControlPlane == "" {
		c.ControlPlane = ControlPlaneSbcli
	}
	if c.Operator == "" {
		c.Operator = OperatorFixed
	}
	if c.CSIRestore == "" {
		c.CSIRestore = CSIRestoreOff
	}
	if c.PodToleranceS == 0 {
		c.PodToleranceS = 5
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
	if c.SyncMinS == 0 && c.SyncMaxS == 0 {
		c.SyncMinS, c.SyncMaxS = DefaultSyncMinS, DefaultSyncMaxS
	}
	if c.JobStartMinS == 0 && c.JobStartMaxS == 0 {
		c.JobStartMinS, c.JobStartMaxS = DefaultJobStartMinS, DefaultJobStartMaxS
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
	if c.ReconnectReset != ReconnectResetFull && c.ReconnectReset != ReconnectResetPartial {
		errs = append(errs, fmt.Errorf("reconnect reset %q: want %q or %q", c.ReconnectReset, ReconnectResetFull, ReconnectResetPartial))
	}
	if c.KernelDNR != KernelDNRHonor && c.KernelDNR != KernelDNRIgnore {
		errs = append(errs, fmt.Errorf("kernel DNR %q: want %q or %q", c.KernelDNR, KernelDNRHonor, KernelDNRIgnore))
	}
	if c.ControlPlane != ControlPlaneSbcli && c.ControlPlane != ControlPlaneFixedCancel {
		errs = append(errs, fmt.Errorf("control plane %q: want %q or %q", c.ControlPlane, ControlPlaneSbcli, ControlPlaneFixedCancel))
	}
	if c.CSIRestore != CSIRestoreOff && c.CSIRestore != CSIRestoreByIP && c.CSIRestore != CSIRestoreByEndpoint {
		errs = append(errs, fmt.Errorf("CSI restore %q: want %q, %q or %q", c.CSIRestore, CSIRestoreOff, CSIRestoreByIP, CSIRestoreByEndpoint))
	}
	if c.Operator != OperatorPrefix && c.Operator != OperatorFixed {
		errs = append(errs, fmt.Errorf("operator %q: want %q or %q", c.Operator, OperatorPrefix, OperatorFixed))
	}
	if c.SyncMinS < 0 || c.SyncMaxS < c.SyncMinS {
		errs = append(errs, fmt.Errorf("sync duration [%g, %g] s: need 0 <= SyncMinS <= SyncMaxS", c.SyncMinS, c.SyncMaxS))
	}
	if c.JobStartMinS < 0 || c.JobStartMaxS < c.JobStartMinS {
		errs = append(errs, fmt.Errorf("job start [%g, %g] s: need 0 <= JobStartMinS <= JobStartMaxS", c.JobStartMinS, c.JobStartMaxS))
	}
	if !(c.SwapReaddFail >= 0 && c.SwapReaddFail <= 1) {
		errs = append(errs, fmt.Errorf("swap re-add failure probability %g: need 0..1", c.SwapReaddFail))
	}
	if c.HostKernel != HostKernel612 && c.HostKernel != HostKernel61 {
		errs = append(errs, fmt.Errorf("host kernel %q: want %q or %q", c.HostKernel, HostKernel612, HostKernel61))
	}
	if c.PodToleranceS < 0 || c.PodIOPS < 0 || c.PodIODepth < 0 || c.IOIntervalS <= 0 {
		errs = append(errs, errors.New("pod tolerance, IOPS, I/O depth must not be negative and the I/O interval must be positive"))
	}
	return errors.Join(errs...)
}
