package sim

import (
	"fmt"
	"sort"

	"github.com/fiomig/fiomig/nvmeof"
)

// Migration is one VolumeMigration: the volume moves from lvstore SrcLVS to
// DstLVS. Its phases are reported as phase events.
type Migration struct {
	ID     string
	Vol    *Volume
	SrcLVS int
	DstLVS int
	Phase  string
	Reason string
	// CutoverWindowS is the all-inaccessible window drawn for its cutover.
	CutoverWindowS float64

	// targetListeners is set while the control plane holds the target
	// listeners CreateMigration added (they are published).
	targetListeners bool
	// created are the nodes on which CreateMigration created the
	// subsystem; added are the target listeners it added.
	created []*Node
	added   []endpoint
	// pendingHosts counts consumer hosts whose validation is not done.
	pendingHosts int
	failed       bool
}

// Terminal reports whether the migration is over.
func (m *Migration) Terminal() bool { return isTerminal(m.Phase) }

// Migrations are all migrations started, in start order.
func (w *World) Migrations() []*Migration { return w.migrations }

// Migration returns the migration with id.
func (w *World) Migration(id string) (*Migration, bool) {
	m, ok := w.migByID[id]
	return m, ok
}

// MigrationPhase is the migration's current phase and whether it is
// terminal ("" and false for an unknown id).
func (w *World) MigrationPhase(id string) (string, bool) {
	m, ok := w.migByID[id]
	if !ok {
		return "", false
	}
	return m.Phase, m.Terminal()
}

// StartMigration creates a VolumeMigration for the volume whose subsystem
// is nqn, to an lvstore other than its current one (chosen with the seed),
// and returns its id. The migration starts Pending now; its progress comes
// out of AdvanceTo. A volume migrates one migration at a time.
func (w *World) StartMigration(nqn string) (string, error) {
	v, ok := w.byNQN[nqn]
	if !ok {
		return "", fmt.Errorf("sim: start migration: unknown subsystem %q", nqn)
	}
	if v.migration != nil {
		return "", fmt.Errorf("sim: start migration of %s: migration %s in progress (%s)", v.Name, v.migration.ID, v.migration.Phase)
	}
	if len(w.lvstores) < 2 {
		return "", fmt.Errorf("sim: start migration of %s: no other lvstore to migrate to", v.Name)
	}
	dst := w.rng.Intn(len(w.lvstores) - 1)
	if dst >= v.LVS {
		dst++
	}
	m := &Migration{ID: fmt.Sprintf("mig-%04d", len(w.migrations)+1), Vol: v, SrcLVS: v.LVS, DstLVS: dst}
	w.migrations = append(w.migrations, m)
	w.migByID[m.ID] = m
	v.migration = m
	var src, tgt []string
	for _, ep := range w.listenerEndpoints(nqn, m.SrcLVS) {
		src = append(src, ep.addr())
	}
	for _, ep := range w.listenerEndpoints(nqn, m.DstLVS) {
		tgt = append(tgt, ep.addr())
	}
	sort.Strings(src)
	sort.Strings(tgt)
	m.Phase = PhasePending
	w.emit(Event{Kind: EventPhase, Migration: m.ID, NQN: nqn, Phase: PhasePending, SourceEndpoints: src, TargetEndpoints: tgt})
	w.after(w.uniform(0.2, 0.6), func() { w.enterValidating(m) })
	return m.ID, nil
}

func (w *World) setPhase(m *Migration, phase, reason string) {
	m.Phase, m.Reason = phase, reason
	w.emit(Event{Kind: EventPhase, Migration: m.ID, NQN: m.Vol.NQN, Phase: phase, Reason: reason})
	if isTerminal(phase) {
		m.Vol.migration = nil
		w.publish(m.Vol)
	}
}

// enterValidating: the control plane's CreateMigration adds the target
// listeners (inaccessible); each consumer host's validation connects them
// and verifies them.
func (w *World) enterValidating(m *Migration) {
	if m.Terminal() {
		return
	}
	w.setPhase(m, PhaseValidating, "")
	w.createMigration(m)
	m.pendingHosts = len(m.Vol.Consumers)
	for _, hi := range m.Vol.Consumers {
		h := w.hosts[hi]
		w.after(w.uniform(0.1, 0.5), func() { w.validateHost(m, h, 0) })
	}
}

// createMigration is the control plane's CreateMigration: on a target node
// that does not hold the subsystem, a subsystem with the same NQN; on an
// overlap node only a listener at the target lvstore's port; listeners
// start inaccessible.
func (w *World) createMigration(m *Migration) {
	for _, ep := range w.listenerEndpoints(m.Vol.NQN, m.DstLVS) {
		if _, ok := ep.node.subsystems[m.Vol.NQN]; !ok {
			m.created = append(m.created, ep.node)
		}
		ts := ep.node.ensureSubsystem(m.Vol)
		if _, ok := ts.listener(ep.port); !ok {
			m.added = append(m.added, ep)
		}
		ts.addListener(ep.port, nvmeof.ANAInaccessible)
	}
	m.targetListeners = true
	w.publish(m.Vol)
}

// validationRounds and validationRoundGapS: the operator's validation Job
// ensures and verifies the target paths three times, 2 s apart.
const (
	validationRounds    = 3
	validationRoundGapS = 2.0
)

// validateHost runs round r of host h's validation: ensure a controller to
// every target listener, then verify each is live.
func (w *World) validateHost(m *Migration, h *Host, r int) {
	if m.Terminal() || m.failed {
		return
	}
	var problems []string
	for _, ep := range w.listenerEndpoints(m.Vol.NQN, m.DstLVS) {
		spec := ep.target(m.Vol.NQN, ControlPlaneConnectOptions)
		c := h.existing(spec)
		if c == nil {
			var err error
			c, err = h.connect(spec)
			if err != nil {
				problems = append(problems, fmt.Sprintf("connect %s: %v", ep.addr(), err))
				continue
			}
		}
		if c.State != nvmeof.StateLive {
			problems = append(problems, fmt.Sprintf("target path %s on %s is %s", ep.addr(), c.Name(), c.State))
		}
	}
	if len(problems) > 0 {
		m.failed = true
		w.failMigration(m, fmt.Sprintf("NVMe path validation failed on host %s: %s", h.Name, problems[0]))
		return
	}
	if r+1 < validationRounds {
		w.after(validationRoundGapS, func() { w.validateHost(m, h, r+1) })
		return
	}
	m.pendingHosts--
	if m.pendingHosts == 0 {
		w.setPhase(m, PhaseRunning, "")
		w.after(w.uniform(3, 8), func() { w.cutover(m) })
	}
}

// failMigration cancels the migration at the control plane (deleting what
// CreateMigration added) and marks it Failed.
func (w *World) failMigration(m *Migration, reason string) {
	w.cancelMigration(m)
	w.setPhase(m, PhaseFailed, reason)
}

// cancelMigration is the control plane's cancel: it deletes the target
// listeners CreateMigration added and the subsystems it created.
func (w *World) cancelMigration(m *Migration) {
	for _, ep := range m.added {
		if ts, ok := ep.node.subsystems[m.Vol.NQN]; ok {
			ts.removeListener(ep.port)
		}
	}
	for _, n := range m.created {
		n.deleteSubsystem(m.Vol.NQN)
	}
	m.added, m.created = nil, nil
	m.targetListeners = false
	w.publish(m.Vol)
}

// deleteSubsystem removes a target subsystem; its connected controllers
// lose their connection.
func (n *Node) deleteSubsystem(nqn string) {
	ts, ok := n.subsystems[nqn]
	if !ok {
		return
	}
	delete(n.subsystems, nqn)
	for _, l := range append([]Listener(nil), ts.Listeners...) {
		ts.removeListener(l.Port)
	}
	for _, c := range append([]*Ctrl(nil), ts.ctrls...) {
		c.transportLost("subsystem deleted")
	}
}

// cutover drives every path of the subsystem inaccessible for the seeded
// window around CutoverPauseS, then makes the target primary optimized and
// the other target listeners non-optimized; the source listeners stay
// inaccessible until completion.
func (w *World) cutover(m *Migration) {
	if m.Terminal() {
		return
	}
	nqn := m.Vol.NQN
	for _, lvs := range []int{m.SrcLVS, m.DstLVS} {
		for _, ep := range w.listenerEndpoints(nqn, lvs) {
			if ts, ok := ep.node.subsystems[nqn]; ok {
				ts.setANA(ep.port, nvmeof.ANAInaccessible)
			}
		}
	}
	j := w.cfg.CutoverJitter
	m.CutoverWindowS = w.cfg.CutoverPauseS * (1 + w.uniform(-j, j))
	w.after(m.CutoverWindowS, func() {
		for k, ep := range w.listenerEndpoints(nqn, m.DstLVS) {
			if ts, ok := ep.node.subsystems[nqn]; ok {
				ts.setANA(ep.port, haANA(k))
			}
		}
		w.after(w.uniform(0.3, 0.8), func() { w.completeMigration(m) })
	})
}

// completeMigration: the operator disconnects every consumer host's source
// controllers, the control plane removes the source listeners (and the
// subsystem from source nodes that do not serve the target lvstore), the
// volume now lives on the target lvstore, and the migration is Completed.
func (w *World) completeMigration(m *Migration) {
	nqn := m.Vol.NQN
	src := w.listenerEndpoints(nqn, m.SrcLVS)
	for _, hi := range m.Vol.Consumers {
		h := w.hosts[hi]
		for _, ep := range src {
			spec := ep.target(nqn, ControlPlaneConnectOptions)
			if c := h.existing(spec); c != nil {
				h.deleteCtrl(c)
			}
		}
	}
	dstNodes := map[*Node]bool{}
	for _, ep := range w.listenerEndpoints(nqn, m.DstLVS) {
		dstNodes[ep.node] = true
	}
	for _, ep := range src {
		if dstNodes[ep.node] {
			if ts, ok := ep.node.subsystems[nqn]; ok {
				ts.removeListener(ep.port)
			}
		} else {
			ep.node.deleteSubsystem(nqn)
		}
	}
	m.Vol.LVS = m.DstLVS
	m.targetListeners = false
	w.setPhase(m, PhaseCompleted, "")
}
