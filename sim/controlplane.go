package sim

import (
	"fmt"
	"strconv"

	"github.com/fiomig/fiomig/nvmeof"
)

// The simulated simplyblock control plane: CreateMigration, continue (data
// sync then cutover), cancel, and the final removal of the source
// listeners. Listener changes reach connected hosts as the target would
// send them (ANA change notices, disconnects).

// cpCreateMigration is CreateMigration, after sbcli
// simplyblock_core/controllers/migration_controller.py create_migration
// (source of the behaviour). A target node that serves the source lvstore
// (primary, secondary or tertiary: an "overlap" node) already holds the
// subsystem from its source role and only gets an inaccessible listener at
// the target lvstore's port; if that subsystem is gone from the node (an
// earlier cancel deleted it), the listener cannot be added and the node
// serves nothing for the volume, though its connect string is still in the
// answer. Any other target node gets the subsystem (namespaces attached,
// the volume's consumers allowed) when it has none, and an inaccessible
// listener. The answer is one connection per target listener position with
// the control plane's connect options (ctrl-loss-tmo 3600, reconnect-delay
// 2, fast-io-fail 8, keep-alive 4).
func (w *World) cpCreateMigration(m *Migration) {
	nqn := m.Vol.NQN
	srcRole := map[*Node]bool{}
	for _, ep := range w.listenerEndpoints(nqn, m.SrcLVS) {
		srcRole[ep.node] = true
	}
	for _, ep := range w.listenerEndpoints(nqn, m.DstLVS) {
		ts, ok := ep.node.subsystems[nqn]
		switch {
		case srcRole[ep.node] && !ok:
			// nvmf_subsystem_add_listener on a missing subsystem fails;
			// create_migration logs it and goes on.
		case srcRole[ep.node]:
			if _, had := ts.listener(ep.port); !had {
				m.added = append(m.added, ep)
			}
			ts.addListener(ep.port, nvmeof.ANAInaccessible)
		default:
			if !ok {
				m.created = append(m.created, ep.node)
			}
			ts = ep.node.ensureSubsystem(m.Vol)
			if _, had := ts.listener(ep.port); !had {
				m.added = append(m.added, ep)
			}
			ts.addListener(ep.port, nvmeof.ANAInaccessible)
		}
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
	w.restoreMigrationListeners(m) // faults.go: what a target restart took
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
	if r := m.retry; r != nil {
		r.done++
		if r.done < r.freezes {
			w.after(m.CutoverWindowS, func() { w.cpCutoverRollback(m) })
			return
		}
		if r.lostBlocks > 0 {
			w.after(m.CutoverWindowS+r.detectAfterS, func() { w.loseWrites(m.Vol, r.lostBlocks) })
		}
	}
	w.after(m.CutoverWindowS, func() {
		for k, ep := range w.listenerEndpoints(nqn, m.DstLVS) {
			if ts, ok := ep.node.subsystems[nqn]; ok {
				ts.setANA(ep.port, haANA(k))
			}
		}
		m.cp = cpCutDone
	})
}

// cpCutoverRollback ends a cutover attempt that is to be retried (a
// retried-cutover fault: no source says why the real cutover retried): the
// source listeners report their HA states again, I/O resumes on the source
// for a seeded 3–8 s, and the cutover starts over — one more freeze.
func (w *World) cpCutoverRollback(m *Migration) {
	for k, ep := range w.listenerEndpoints(m.Vol.NQN, m.SrcLVS) {
		if ts, ok := ep.node.subsystems[m.Vol.NQN]; ok {
			ts.setANA(ep.port, haANA(k))
		}
	}
	m.cp = cpSyncing
	w.after(w.uniform(3, 8), func() {
		if m.cp == cpSyncing {
			w.cpCutover(m)
		}
	})
}

// RetryCutover arms migration id's cutover to be retried until it froze
// the subsystem freezes times (>= 2), after which lostBlocks writes of the
// volume are lost and its first pod's verify reports them (errno 84)
// detectAfterS seconds after the last cutover window. The migration must
// not have started its cutover yet. Evidence: the migration, its phase,
// the freezes and lost blocks armed.
func (w *World) RetryCutover(id string, freezes int, lostBlocks int64, detectAfterS float64) (map[string]string, error) {
	m, ok := w.Migration(id)
	switch {
	case !ok:
		return nil, fmt.Errorf("retry cutover: no migration %q", id)
	case freezes < 2:
		return nil, fmt.Errorf("retry cutover %s: freezes %d: want at least 2", id, freezes)
	case lostBlocks < 0 || detectAfterS < 0:
		return nil, fmt.Errorf("retry cutover %s: lost blocks and detect delay must not be negative", id)
	case m.cp >= cpCutover:
		return nil, nil // the cutover already started: no evidence
	}
	m.retry = &cutoverRetry{freezes: freezes, lostBlocks: lostBlocks, detectAfterS: detectAfterS}
	return map[string]string{"migration": id, "phase": m.Phase, "freezes_armed": strconv.Itoa(freezes),
		"lost_blocks_armed": strconv.FormatInt(lostBlocks, 10)}, nil
}

// CutoverRetryReport is what an armed retried cutover did so far: the
// cutover windows it opened. Once armed the retries run their course (a
// control plane's retry cannot be called back), so recovery only reports.
func (w *World) CutoverRetryReport(id string) map[string]string {
	m, ok := w.Migration(id)
	if !ok || m.retry == nil {
		return nil
	}
	return map[string]string{"cutover_windows_so_far": strconv.Itoa(m.retry.done)}
}

// loseWrites makes the volume's first live pod report lost writes: its
// next io interval carries errno 84 (EILSEQ) and verify_errors blocks.
func (w *World) loseWrites(v *Volume, blocks int64) {
	for _, p := range w.pods {
		if p.Vol == v && !p.Dead {
			p.lostBlocks += blocks
			return
		}
	}
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

// cpCancel is the control plane's cancel. Two code paths, after sbcli
// (source of the behaviour):
//
//   - before continue (the migration is still pre-created, which is the
//     whole validation): simplyblock_core/controllers/migration_controller.py
//     cancel_migration → _cleanup_created. It handles only the target
//     lvstore's primary and secondary node: where that node is the source
//     lvstore's primary or secondary (its overlap test ignores the source
//     tertiary) it removes the listener at the target port; anywhere else it
//     deletes the subsystem by NQN, even when the node held it before as the
//     source's tertiary, so the volume's own source path there goes too. The
//     target tertiary node is not touched: its target-port listener stays.
//   - after continue (data sync running): the task runner's cleanup_target
//     (simplyblock_core/services/tasks_runner_lvol_migration.py
//     _handle_cleanup_target → migration_controller.cleanup_subsystem_or_ns)
//     on the target primary, secondary and tertiary: a subsystem this
//     migration created is deleted; on a node that held it before, only the
//     volume's namespace is removed (nvmf_subsystem_remove_ns) and every
//     listener stays, so connected host controllers stay live and lose the
//     namespace (namespace-changed notice).
//
// Config.ControlPlane ControlPlaneFixedCancel (an assumed fix, no source)
// counts the tertiaries as overlap too, so a cancel before continue removes
// only the migration's listener on every target node.
//
// Deleted subsystems and removed listeners disconnect their host
// controllers, whose reconnects are then rejected ("could not find
// subsystem", "does not allow host ... to connect at this address").
func (w *World) cpCancel(m *Migration) {
	nqn := m.Vol.NQN
	dst := w.listenerEndpoints(nqn, m.DstLVS)
	if m.cp == cpCreated {
		src := w.listenerEndpoints(nqn, m.SrcLVS)
		// sbcli: primary and secondary only; fixed-cancel: the tertiary too.
		roles := 2
		if w.cfg.ControlPlane == ControlPlaneFixedCancel {
			roles = 3
		}
		overlap := map[*Node]bool{}
		for k, ep := range src {
			if k < roles {
				overlap[ep.node] = true
			}
		}
		for k, ep := range dst {
			if k >= roles {
				break
			}
			if overlap[ep.node] {
				if ts, ok := ep.node.subsystems[nqn]; ok {
					ts.removeListener(ep.port)
				}
			} else {
				ep.node.deleteSubsystem(nqn)
			}
		}
	} else {
		created := map[*Node]bool{}
		for _, n := range m.created {
			created[n] = true
		}
		for _, ep := range dst {
			if created[ep.node] {
				ep.node.deleteSubsystem(nqn)
			} else if ts, ok := ep.node.subsystems[nqn]; ok {
				ts.removeNamespaces()
			}
		}
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
