package sim

import (
	"fmt"
	"math/rand"
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
			if !ok && w.cfg.ListenerRace {
				// Config.ListenerRace: subsystem_create (:1180), then the
				// listener (:1197), then add_ns (:1204), whose failure
				// create_migration only logs [sourced order and
				// non-fatality; the failure is the switch's assumption].
				// The namespaces come back only at the pre-cutover check
				// (ensureTargetNamespaces).
				ts.NSIDs = nil
				m.raced = append(m.raced, ep.node)
			}
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
// when the sync is done, a uniform draw from [Config.SyncMinS,
// Config.SyncMaxS) seconds later (default 3-8 s [assumption]).
func (w *World) cpContinue(m *Migration) {
	m.cp = cpSyncing
	w.after(w.uniform(w.cfg.SyncMinS, w.cfg.SyncMaxS), func() {
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
	w.ensureTargetNamespaces(m)
	flipAt := m.CutoverWindowS
	var overlap []endpoint
	if m.Vol.batch() {
		overlap = w.overlapTargets(m)
		if end := w.twoPassSwap(m, overlap); end > flipAt {
			// Step 5 follows the swap (sequential RPCs): the window
			// lasts as long as the swap when the swap is longer.
			flipAt = end
			m.CutoverWindowS = end
		}
	}
	w.after(flipAt, func() {
		// Steps 2 and 3 of the Done handler [sourced:
		// tasks_runner_lvol_migration.py:2154-2164, batch
		// tasks_runner_batch_migration.py _flip_ana_to_optimized]: every
		// source path inaccessible right before the target goes optimized
		// (step 5) — again, so a source listener a target restart
		// re-created inside the window (recreateLvols) is no exception.
		for _, ep := range w.listenerEndpoints(nqn, m.SrcLVS) {
			if ts, ok := ep.node.subsystems[nqn]; ok {
				ts.setANA(ep.port, nvmeof.ANAInaccessible)
			}
		}
		for k, ep := range w.listenerEndpoints(nqn, m.DstLVS) {
			if ts, ok := ep.node.subsystems[nqn]; ok {
				ts.setANA(ep.port, haANA(k))
			}
		}
		// Step 6 of a batch cutover (tasks_runner_batch_migration.py
		// :533-547) [sourced]: the old source-port listener goes from every
		// overlap target node, which disconnects the host controllers at
		// it (their reconnects are then rejected, "does not allow host").
		srcPort := w.lvstores[m.SrcLVS].Port
		for _, ep := range overlap {
			if ts, ok := ep.node.subsystems[nqn]; ok && srcPort != ep.port {
				ts.removeListener(srcPort)
			}
		}
		m.cp = cpCutDone
	})
}

// batch reports whether the volume migrates as a batch: the whole
// subsystem, one member migration per namespace (sbcli
// simplyblock_web/api/v2/cluster/subsystem/migration.py:83, is_batch =
// max_namespace_per_subsys > 1; in the model, a volume with more than one
// namespace).
func (v *Volume) batch() bool { return len(v.NSIDs) > 1 }

// overlapTargets are the target listener positions (target primary,
// secondary, tertiary order) on nodes that also serve the source lvstore,
// skipping nodes whose target is down or crashed (their RPCs fail, which
// the cutover only logs) — sbcli _build_paths's overlap_ids
// (tasks_runner_lvol_migration.py:650-684).
func (w *World) overlapTargets(m *Migration) []endpoint {
	src := map[*Node]bool{}
	for _, ep := range w.listenerEndpoints(m.Vol.NQN, m.SrcLVS) {
		src[ep.node] = true
	}
	var out []endpoint
	for _, ep := range w.listenerEndpoints(m.Vol.NQN, m.DstLVS) {
		if src[ep.node] && !ep.node.down && !ep.node.crashed && !ep.node.blackhole {
			out = append(out, ep)
		}
	}
	return out
}

// Swap RPC durations [assumption: no source times sbcli's SPDK RPCs; each
// is a JSON-RPC round trip through the node's API, tens of milliseconds].
const (
	SwapRPCMinS = 0.005
	SwapRPCMaxS = 0.05
)

// swapSeedSalt derives the swap's stream from Config.Seed.
const swapSeedSalt = 0x5a4b3c2d1e0f

// swapRand is the seeded source of the batch swap's draws (RPC durations,
// the hosts' rescan delays for its notices, the switches' picks): a stream
// of its own derived from Config.Seed, so that modelling the swap moves no
// other draw (the operator's, the pods', the faults') and a run with and
// without the swap differ by what the swap does, not by a reshuffled seed.
// The same seed still gives the same run.
func (w *World) swapRand() *rand.Rand {
	if w.swapRng == nil {
		w.swapRng = rand.New(rand.NewSource(w.cfg.Seed ^ swapSeedSalt))
	}
	return w.swapRng
}

// twoPassSwap schedules the batch cutover's namespace swap (step 4 of
// sbcli tasks_runner_batch_migration.py _flip_ana_to_optimized :333) and
// returns how long after now it ends. On each overlap target node in turn
// (:458-521) [sourced]: subsystem_get, then pass 1 removes every member's
// namespace (:472-495), then pass 2 re-adds every member, in ns_id order,
// with no NSID (:497-521), so SPDK gives each the lowest free NSID
// (TargetSubsystem.addNS). Each removal and re-add notifies the node's
// connected controllers, whose rescan, when it falls between a member's
// removal and its re-add, drops that controller's leg; the next rescan
// restores it (Ctrl.nsAttrNotice). Each RPC takes a seeded
// [SwapRPCMinS, SwapRPCMaxS) [assumption]. Optional switches:
// Config.SwapReaddFail (a re-add fails, non-fatal: the node serves the
// others) and Config.NSIDDivergence (one node re-adds a pair of members in
// the other order).
func (w *World) twoPassSwap(m *Migration, overlap []endpoint) float64 {
	nqn := m.Vol.NQN
	members := m.Vol.NSIDs // ns_id order
	r := w.swapRand()
	diverge, pair := -1, 0
	if w.cfg.NSIDDivergence && len(overlap) > 0 && len(members) > 1 {
		diverge = r.Intn(len(overlap))
		pair = r.Intn(len(members) - 1)
	}
	t := 0.0
	rpc := func() float64 { t += SwapRPCMinS + (SwapRPCMaxS-SwapRPCMinS)*r.Float64(); return t }
	for k, ep := range overlap {
		n := ep.node
		rpc() // subsystem_get
		for _, id := range members {
			w.after(rpc(), func() {
				if ts, ok := n.subsystems[nqn]; ok {
					if nsid, has := ts.nsidOf(id); has {
						ts.removeNS(nsid, r)
					}
				}
			})
		}
		order := append([]int(nil), members...)
		if k == diverge {
			order[pair], order[pair+1] = order[pair+1], order[pair]
		}
		for _, id := range order {
			at := rpc()
			if w.cfg.SwapReaddFail > 0 && r.Float64() < w.cfg.SwapReaddFail {
				m.readdFailed = append(m.readdFailed, fmt.Sprintf("%s nsid %d", n.Name, id))
				continue // "add ns ... failed" (:510-513), non-fatal
			}
			w.after(at, func() {
				if ts, ok := n.subsystems[nqn]; ok {
					if _, has := ts.nsidOf(id); !has {
						ts.addNS(id, 0, r)
					}
				}
			})
		}
	}
	return t
}

// ensureTargetNamespaces is the task runner's pre-cutover check of the
// target nodes (tasks_runner_lvol_migration.py _ensure_nvmf_state_on_node
// :760-773, batch: tasks_runner_batch_migration.py :356-380) [sourced]: on
// a node whose subsystem this migration created, a missing namespace is
// added (no NSID: into an empty subsystem SPDK gives it NSID 1, the first
// member's; the model keeps the volume's NSID). For a batch only the first
// member is checked ("a representative stand-in"), so the other members
// stay missing there. Only Config.ListenerRace leaves one missing.
func (w *World) ensureTargetNamespaces(m *Migration) {
	for _, n := range m.raced {
		ts, ok := n.subsystems[m.Vol.NQN]
		if !ok || n.down || n.crashed {
			continue
		}
		if id := m.Vol.NSIDs[0]; !containsInt(ts.NSIDs, id) {
			ts.addNS(id, id, w.rng)
		}
	}
	m.raced = nil
}

// ReaddFailures are the namespace re-adds of migration id's two-pass swap
// that failed (Config.SwapReaddFail), as "node nsid N".
func (w *World) ReaddFailures(id string) []string {
	if m, ok := w.migByID[id]; ok {
		return append([]string(nil), m.readdFailed...)
	}
	return nil
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

// deleteSubsystem removes a target subsystem; SPDK disconnects the qpairs
// of its connected controllers (Ctrl.targetClosed).
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
		c.targetClosed("subsystem deleted")
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
