package sim

import (
	"container/heap"
	"fmt"
	"math/rand"
	"slices"
	"sort"
)

// World is the deterministic simulated cluster: storage nodes with their
// SPDK-like targets, consumer hosts with their kernel NVMe-oF initiators,
// volumes, and the control plane's migrations. It is driven by one
// goroutine: AdvanceTo runs every event due up to a time, in (time,
// scheduling order) order, and returns what happened.
//
// All randomness comes from one *rand.Rand seeded with Config.Seed; time
// comes from Config.Clock. The same Config gives the same events and the
// same rendered sysfs trees.
type World struct {
	cfg   Config
	rng   *rand.Rand
	clock Clock
	now   float64

	queue eventQueue
	seq   uint64
	out   []Event
	spare []Event // a slice AdvanceTo returned, handed back by Recycle

	nodes    []*Node
	lvstores []*LVStore
	hosts    []*Host
	volumes  []*Volume
	byNQN    map[string]*Volume
	nodeByIP map[string]*Node

	migrations []*Migration
	migByID    map[string]*Migration
	phaseHook  func(*Migration, string)

	dropRules []*dropRule
	// faultState holds the other fault hooks' state (faultkinds.go).
	faultState
	pods []*Pod
	// monitorRepairs and csiRestores count the lvol monitor's repairs and
	// the CSI driver's restored paths (monitor.go).
	monitorRepairs, csiRestores int64
	// swapRng is the batch cutover swap's own stream (controlplane.go
	// swapRand).
	swapRng *rand.Rand
}

// New builds the world at time 0: every volume's subsystem on the nodes of
// its lvstore with its listeners, every consumer host connected to every
// listener of the volumes it consumes (with the CSI driver's connect
// options), and the control plane's initial endpoints published. The
// initial endpoints events are returned by the first AdvanceTo.
func New(cfg Config) (*World, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
	}
	w := &World{
		cfg:      cfg,
		rng:      rand.New(rand.NewSource(cfg.Seed)),
		clock:    cfg.Clock,
		byNQN:    map[string]*Volume{},
		nodeByIP: map[string]*Node{},
		migByID:  map[string]*Migration{},
	}
	w.now = w.clock.Now()
	w.buildTopology()
	for _, v := range w.volumes {
		w.publish(v)
	}
	for _, v := range w.volumes {
		for _, hi := range v.Consumers {
			h := w.hosts[hi]
			for _, ep := range w.listenerEndpoints(v.NQN, v.LVS) {
				c, err := h.connect(ep.target(v.NQN, CSIConnectOptions))
				if err != nil {
					return nil, fmt.Errorf("sim: initial connect of host %s to %s at %s: %w", h.Name, v.NQN, ep.addr(), err)
				}
				c.Origin = "csi"
			}
		}
	}
	for _, n := range w.nodes {
		w.emitTarget(n)
	}
	w.scheduleTargetReport()
	if cfg.LvolMonitor {
		w.startLvolMonitor()
	}
	if cfg.CSIRestore != CSIRestoreOff {
		w.startCSIRestore()
	}
	if cfg.Pods {
		w.startPods()
	}
	return w, nil
}

// Config is the world's configuration with defaults applied.
func (w *World) Config() Config { return w.cfg }

// Now is the world's time: seconds since run start.
func (w *World) Now() float64 { return w.now }

// Rand is the world's seeded random source, for callers (fault schedules)
// that must draw from the same seed. Drawing from it changes what follows.
func (w *World) Rand() *rand.Rand { return w.rng }

// AdvanceTo runs every event due at or before t (t >= Now) and returns the
// events reported on the way, in time order. The clock is asked to wait
// until each event's time before it is applied, and until t at the end.
func (w *World) AdvanceTo(t float64) ([]Event, error) {
	if t < w.now {
		return nil, fmt.Errorf("sim: advance to %.6f s: before now (%.6f s)", t, w.now)
	}
	for w.queue.Len() > 0 && w.queue[0].t <= t {
		ev := heap.Pop(&w.queue).(*scheduled)
		w.clock.WaitUntil(ev.t)
		if ev.t > w.now {
			w.now = ev.t
		}
		ev.fn()
	}
	w.clock.WaitUntil(t)
	w.now = t
	out := w.out
	w.out, w.spare = w.spare, nil
	return out, nil
}

// Recycle hands back a slice AdvanceTo returned, once the caller is done
// with it (it must not read it again), so that a later AdvanceTo fills it
// instead of growing a new one: a run emits hundreds of megabytes of
// events. Optional.
func (w *World) Recycle(evs []Event) {
	clear(evs)
	w.spare = evs[:0]
}

// NextEventTime is the time of the next scheduled event and whether there
// is one.
func (w *World) NextEventTime() (float64, bool) {
	if w.queue.Len() == 0 {
		return 0, false
	}
	return w.queue[0].t, true
}

// at schedules fn at time t (clamped to now).
func (w *World) at(t float64, fn func()) {
	if t < w.now {
		t = w.now
	}
	w.seq++
	heap.Push(&w.queue, &scheduled{t: t, seq: w.seq, fn: fn})
}

// after schedules fn d seconds from now.
func (w *World) after(d float64, fn func()) { w.at(w.now+d, fn) }

func (w *World) emit(e Event) {
	e.T = w.now
	w.out = append(w.out, e)
}

// uniform draws from [lo, hi) with the world's rng.
func (w *World) uniform(lo, hi float64) float64 { return lo + (hi-lo)*w.rng.Float64() }

// Nodes are the storage nodes, by index.
func (w *World) Nodes() []*Node { return w.nodes }

// Hosts are the consumer hosts, by index.
func (w *World) Hosts() []*Host { return w.hosts }

// Volumes are the volumes, by index.
func (w *World) Volumes() []*Volume { return w.volumes }

// Volume returns the volume whose subsystem is nqn.
func (w *World) Volume(nqn string) (*Volume, bool) {
	v, ok := w.byNQN[nqn]
	return v, ok
}

// Endpoints is what the control plane publishes for nqn: canonical ip:port
// endpoints, sorted (nil for an unknown nqn).
func (w *World) Endpoints(nqn string) []string {
	v, ok := w.byNQN[nqn]
	if !ok {
		return nil
	}
	return append([]string(nil), v.published...)
}

// publish recomputes a volume's published endpoints (the listeners of its
// current lvstore, plus those of a migration's target lvstore while one
// holds target listeners) and reports them when they changed.
func (w *World) publish(v *Volume) {
	var eps []string
	for _, ep := range w.listenerEndpoints(v.NQN, v.LVS) {
		eps = append(eps, ep.addr())
	}
	if m := v.migration; m != nil && m.targetListeners {
		for _, ep := range w.listenerEndpoints(v.NQN, m.DstLVS) {
			eps = append(eps, ep.addr())
		}
	}
	sort.Strings(eps)
	if slices.Equal(eps, v.published) && v.publishedOnce {
		return
	}
	v.published = eps
	v.publishedOnce = true
	w.emit(Event{Kind: EventEndpoints, NQN: v.NQN, Endpoints: append([]string(nil), eps...)})
}

type scheduled struct {
	t   float64
	seq uint64
	fn  func()
}

type eventQueue []*scheduled

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*scheduled)) }
func (q *eventQueue) Pop() any {
	old := *q
	n := len(old)
	x := old[n-1]
	old[n-1] = nil
	*q = old[:n-1]
	return x
}

// aenLatency draws one AEN-to-legs delay.
func (w *World) aenLatency() float64 {
	m := w.cfg.AENLatencyS
	if m <= 0 {
		return 0
	}
	return w.uniform(0.5*m, 1.5*m)
}

// TargetReportIntervalS is how often the nodes' cumulative rejected CONNECT
// counters are reported (only the counters that changed), seconds.
const TargetReportIntervalS = 10.0

func (w *World) scheduleTargetReport() {
	w.after(TargetReportIntervalS, func() {
		for _, n := range w.nodes {
			if n.rejected != n.reported {
				w.emitTarget(n)
			}
		}
		w.scheduleTargetReport()
	})
}
