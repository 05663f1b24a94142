package sim

import (
	"io/fs"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/sim"
)

// Config is the simulated cluster's shape and knobs. Zero values take the
// simulator's defaults (package sim, Config).
type Config struct {
	// Seed fixes every random choice of the world.
	Seed int64
	// Nodes is the number of storage nodes (default 3).
	Nodes int
	// Hosts is the number of consumer hosts (default 3).
	Hosts int
	// Volumes is the number of volumes, one subsystem each (default 10).
	Volumes int
	// ConsumersPerVolume is how many hosts consume each volume (default 1).
	ConsumersPerVolume int
	// NamespacesPerVolume is the namespaces per subsystem (default 1).
	NamespacesPerVolume int
	// NamespacedVolumes: how many volumes (the last) have
	// NamespacesPerVolume namespaces, the others one (0 = all;
	// sim.Config.NamespacedVolumes).
	NamespacedVolumes int
	// CutoverPauseS is the design all-inaccessible window of a cutover,
	// seconds (default 2.0).
	CutoverPauseS float64
	// CutoverJitter is the relative seeded spread of that window (default
	// 0.25; negative = none).
	CutoverJitter float64
	// HostsAreNodes makes the hosts the storage nodes themselves.
	HostsAreNodes bool
	// ReconnectReset is "full" (upstream, default) or "partial".
	ReconnectReset string
	// KernelDNR is "honor" (default) or "ignore".
	KernelDNR string
	// TargetDNR makes targets set DNR on rejected CONNECTs (SPDK does not).
	TargetDNR bool
	// Operator is the operator variant: "fixed" (default) or "prefix".
	Operator string
	// ReleaseSources: fiomig's extra release Job for the source paths after
	// the cutover, fixed operator only, off by default (not part of the
	// fix; sim.Config.ReleaseSources).
	ReleaseSources bool
	// ControlPlane is the control plane's cancel: "sbcli" (default) or
	// "fixed-cancel" (sim.Config.ControlPlane).
	ControlPlane string
	// LvolMonitor and CSIRestore: sim.Config's switches of the same names.
	LvolMonitor bool
	CSIRestore  string
	// SyncMinS and SyncMaxS bound the data sync after continue, seconds
	// (default 3-8; sim.Config's fields of the same names).
	SyncMinS, SyncMaxS float64
	// JobStartMinS and JobStartMaxS bound a path Job's start, seconds
	// (default 1-3; sim.Config's fields of the same names).
	JobStartMinS, JobStartMaxS float64
	// ListenerRace, SwapReaddFail and NSIDDivergence are the simulated
	// control plane's optional cited switches, off by default (sim.Config's
	// fields of the same names, research/incident.md §6.1).
	ListenerRace   bool
	SwapReaddFail  float64
	NSIDDivergence bool
	// Pods runs one modelled fio pod per volume (io lines, pod deaths).
	Pods bool
	// PodToleranceS: a pod dies after this long without a completed I/O
	// (default 5 s).
	PodToleranceS float64
	// ConnectTimeoutS: how long a CONNECT that gets no answer blocks
	// (default 60 s, nvme_core admin_timeout).
	ConnectTimeoutS float64
	// Tune, when set, adjusts the simulator's configuration last (any
	// sim.Config knob not listed here).
	Tune func(*sim.Config)
	// Clock drives time; nil means virtual time.
	Clock sim.Clock
}

func (c Config) simConfig() sim.Config {
	sc := sim.Config{
		Seed: c.Seed, Nodes: c.Nodes, Hosts: c.Hosts, Volumes: c.Volumes,
		ConsumersPerVolume: c.ConsumersPerVolume, NamespacesPerVolume: c.NamespacesPerVolume, NamespacedVolumes: c.NamespacedVolumes,
		LvolMonitor: c.LvolMonitor, CSIRestore: c.CSIRestore,
		CutoverPauseS: c.CutoverPauseS, CutoverJitter: c.CutoverJitter, HostsAreNodes: c.HostsAreNodes,
		ReconnectReset: c.ReconnectReset, KernelDNR: c.KernelDNR, TargetDNR: c.TargetDNR,
		SyncMinS: c.SyncMinS, SyncMaxS: c.SyncMaxS, JobStartMinS: c.JobStartMinS, JobStartMaxS: c.JobStartMaxS,
		ListenerRace: c.ListenerRace, SwapReaddFail: c.SwapReaddFail, NSIDDivergence: c.NSIDDivergence,
		Operator: c.Operator, ReleaseSources: c.ReleaseSources, ControlPlane: c.ControlPlane, Pods: c.Pods, PodToleranceS: c.PodToleranceS, ConnectTimeoutS: c.ConnectTimeoutS,
		Clock: c.Clock,
	}
	if c.Tune != nil {
		c.Tune(&sc)
	}
	return sc
}

// Cluster is the simulated cluster; it implements backend.Cluster and
// every fault knob of package faults (faults.go).
type Cluster struct {
	w     *sim.World
	hosts []backend.Host
	// gate is set when other goroutines read the world (FioCluster's FUSE
	// requests): every call that changes the world holds its lock and
	// wakes them after (changing). nil on virtual time.
	gate *gateClock
}

// changing takes the world's lock for a call that changes the world, when
// other goroutines read it, and returns what releases it and wakes them
// (I/O held on the world's state looks again): `defer c.changing()()`.
// Without a gate it does nothing.
func (c *Cluster) changing() func() {
	g := c.gate
	if g == nil {
		return func() {}
	}
	g.mu.Lock()
	return func() {
		g.broadcast()
		g.mu.Unlock()
	}
}

var _ backend.Cluster = (*Cluster)(nil)

// New builds the simulated world (see sim.New). The initial endpoints lines
// (t = 0, one per volume) and target counter lines come out of the first
// AdvanceTo.
func New(cfg Config) (*Cluster, error) {
	w, err := sim.New(cfg.simConfig())
	if err != nil {
		return nil, err
	}
	c := &Cluster{w: w}
	for _, h := range w.Hosts() {
		c.hosts = append(c.hosts, host{h})
	}
	return c, nil
}

// World is the underlying simulator, for faults and tests.
func (c *Cluster) World() *sim.World { return c.w }

// Name implements backend.Cluster.
func (c *Cluster) Name() string { return "sim" }

// Now implements backend.Cluster.
func (c *Cluster) Now() float64 { return c.w.Now() }

// AdvanceTo implements backend.Cluster: it runs the world to t and returns
// the timeline lines of what happened, in time order.
func (c *Cluster) AdvanceTo(t float64) ([]record.Line, error) {
	evs, err := c.w.AdvanceTo(t)
	if err != nil {
		return nil, err
	}
	out := make([]record.Line, 0, len(evs))
	for _, e := range evs {
		out = append(out, Line(e))
	}
	c.w.Recycle(evs)
	return out, nil
}

// Line turns one simulator event into one timeline line.
func Line(e sim.Event) record.Line {
	l := record.Line{T: e.T, Kind: e.Kind}
	switch e.Kind {
	case sim.EventPhase:
		l.Migration, l.NQN, l.Phase, l.Reason = e.Migration, e.NQN, e.Phase, e.Reason
		l.SourceEndpoints, l.TargetEndpoints = e.SourceEndpoints, e.TargetEndpoints
		l.Details = e.Details
	case sim.EventEndpoints:
		l.NQN, l.Endpoints = e.NQN, e.Endpoints
	case sim.EventKernel:
		l.Host, l.Controller, l.Message = e.Host, e.Controller, e.Message
	case sim.EventTarget:
		l.Node, l.RejectedConnects, l.NotAllowedConnects = e.Node, record.Int64(e.RejectedConnects), record.Int64(e.NotAllowedConnects)
	case sim.EventIO:
		l.Volume, l.NQN, l.Host = e.Volume, e.NQN, e.Host
		n := &[3]int64{e.Completed, e.Errors, e.Queued} // one allocation for the three counters
		l.Completed, l.Errors, l.Queued = &n[0], &n[1], &n[2]
		l.Pod, l.PodState, l.Reason = e.Pod, e.PodState, e.Reason
		if e.VerifyErrors > 0 {
			l.Errno, l.VerifyErrors = e.Errno, record.Int64(e.VerifyErrors)
		}
	case sim.EventFault:
		l.Fault, l.Action, l.Target, l.Evidence = e.Fault, e.Action, e.Target, e.Evidence
	}
	return l
}

// Topology implements backend.Cluster.
func (c *Cluster) Topology() record.Topology {
	var t record.Topology
	for _, n := range c.w.Nodes() {
		t.Nodes = append(t.Nodes, record.Node{Name: n.Name, IP: n.IP})
	}
	hosts := c.w.Hosts()
	for _, h := range hosts {
		t.Hosts = append(t.Hosts, record.HostInfo{Name: h.Name, HostNQN: h.NQN})
	}
	for _, v := range c.w.Volumes() {
		vi := record.VolumeInfo{Name: v.Name, NQN: v.NQN, NSIDs: append([]int(nil), v.NSIDs...)}
		for _, hi := range v.Consumers {
			vi.Consumers = append(vi.Consumers, hosts[hi].Name)
		}
		t.Volumes = append(t.Volumes, vi)
	}
	return t
}

// Hosts implements backend.Cluster.
func (c *Cluster) Hosts() []backend.Host { return c.hosts }

// Endpoints implements backend.Cluster.
func (c *Cluster) Endpoints(nqn string) []string { return c.w.Endpoints(nqn) }

// StartMigration implements backend.Cluster.
func (c *Cluster) StartMigration(nqn string) (string, error) {
	defer c.changing()()
	return c.w.StartMigration(nqn)
}

// MigrationPhase implements backend.Cluster.
func (c *Cluster) MigrationPhase(id string) (string, bool) { return c.w.MigrationPhase(id) }

// Close implements backend.Cluster; the simulator holds nothing.
func (c *Cluster) Close() error { return nil }

// host adapts a simulated host to backend.Host.
type host struct{ h *sim.Host }

func (h host) Name() string    { return h.h.Name }
func (h host) HostNQN() string { return h.h.NQN }
func (h host) Sysfs() fs.FS    { return h.h.Sysfs() }

// Version implements backend.Versioned.
func (h host) Version() uint64 { return h.h.Version() }
