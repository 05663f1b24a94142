package sim

import (
	"strconv"

	"github.com/fiomig/fiomig/nvmeof"
)

// The simulated simplyblock control plane: CreateMigration, continue (data
// sync then cutover), cancel, and the final removal of the source
// listeners. Listener changes reach connected hosts as the target would
// send them (ANA change notices, disconnects).

// cpCreateMigration is CreateMigration: on a target node that does not hold
// the subsystem, a subsystem with the same NQN (namespaces attached, the
// volume's consumers allowed); on an overlap node only a listener at the
// target lvstore's port; every target listener starts inaccessible. The
// answer is one connection per target listener with the control plane's
// connect options (ctrl-loss-tmo 3600, reconnect-delay 2, fast-io-fail 8,
// keep-alive 4).
func (w *World) cpCreateMigration(m *Migration) {
	nqn := m.Vol.NQN
	for _, ep := range w.listenerEndpoints(nqn, m.DstLVS) {
		if _, ok := ep.node.subsystems[nqn]; !ok {
			m.created = append(m.created, ep.node)
		}
		ts := ep.node.ensureSubsystem(m.Vol)
		if _, ok := ts.listener(ep.port); !ok {
			m.added = append(m.added, ep)
		}
		ts.addListener(ep.port, nvmeof.ANAInaccessible)
		o := ControlPlaneConnectOptions
		if w.cfg.ControlPlaneConnect != nil {
			o = *w.cfg.ControlPlaneConnect
		}
		m.answer = append(m.answer, nvmeof.Target{Transport: "tcp", Traddr: ep.node.IP, Trsvcid: strconv.Itoa(ep.port), NQN: nqn,
			CtrlLossTmo: nvmeof.Int(o.CtrlLossTmo), ReconnectDelay: nvmeof.Int(o.ReconnectDelay),
			FastIOFailTmo: nvmeof.Int(o.FastIOFailTmo), KeepAliveTmo: nvmeof.Int(o.KeepAliveTmo)})
	}
	m.cp = cpCreated
	m.targetListeners = true
	w.publish(m.Vol)
}

// cpContinue starts the data sync; the control plane cuts over on its own
// when the sync is done (seeded 3–8 s).
func (w *World) cpContinue(m *Migration) {
	m.cp = cpSyncing
	w.after(w.uniform(3, 8), func() {
		if m.cp == cpSyncing {
			w.cpCutover(m)
		}
	})
}

// cpCutover drives every path of the subsystem inaccessible for the seeded
// window around CutoverPauseS, then makes the target primary optimized and
// the other target listeners non-optimized; the source listeners stay
// inaccessible until the operator finishes.
func (w *World) cpCutover(m *Migration) {
	nqn := m.Vol.NQN
	m.cp = cpCutover
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
		m.cp = cpCutDone
	})
}

// cpFinish removes the source listeners (and the subsystem from source
// nodes that do not serve the target lvstore); the volume now lives on the
// target lvstore.
func (w *World) cpFinish(m *Migration) {
	nqn := m.Vol.NQN
	dstNodes := map[*Node]bool{}
	for _, ep := range w.listenerEndpoints(nqn, m.DstLVS) {
		dstNodes[ep.node] = true
	}
	for _, ep := range w.listenerEndpoints(nqn, m.SrcLVS) {
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
	m.cp = cpFinished
}

// cpCancel deletes what CreateMigration added: the target listeners it
// added and the subsystems it created. The target then rejects CONNECTs to
// those listeners ("does not allow host ... to connect at this address").
func (w *World) cpCancel(m *Migration) {
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
	m.cp = cpCancelled
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

// sourceTargets are the nvmeof targets of the migration's source listeners.
func (w *World) sourceTargets(m *Migration) []nvmeof.Target {
	var out []nvmeof.Target
	for _, ep := range w.listenerEndpoints(m.Vol.NQN, m.SrcLVS) {
		out = append(out, nvmeof.Target{Transport: "tcp", Traddr: ep.node.IP, Trsvcid: strconv.Itoa(ep.port), NQN: m.Vol.NQN})
	}
	return out
}
