package sim

import (
	"io/fs"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/sim"
)

// Config is the simulated world's configuration: sim.Config itself (its
// Model is what plan.json records; sim.ModelDefaults names the defaults).
type Config = sim.Config

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
	w, err := sim.New(cfg)
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
	case sim.EventStall:
		l.Host, l.Controller, l.NQN, l.Address, l.Action, l.Reason = e.Host, e.Controller, e.NQN, e.Address, e.Action, e.Reason
		l.NSIDs, l.StartS = e.NSIDs, e.StartS
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
