package sim

import (
	"strconv"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// The lvol monitor's repair and the CSI driver's path restore: the two
// components that bring back what sbcli's cancel before continue takes from
// the source's tertiary node (docs/sources.md §4.4, §4.7, §7).

// CSI restore variants (Config.CSIRestore).
const (
	CSIRestoreOff = record.CSIRestoreOff
	// CSIRestoreByIP: the pre-fix CSI driver, which matched endpoints by IP
	// only: a lost path is restored only when no controller of the
	// subsystem is attached at that IP (docs/sources.md §7, OP 5aa711cc PR text).
	CSIRestoreByIP = record.CSIRestoreByIP
	// CSIRestoreByEndpoint: the fixed CSI driver (OP 5aa711cc
	// csi-driver/pkg/util/initiator.go missingEndpoints): a published
	// ip:port with no attached controller (any state) is reconnected.
	CSIRestoreByEndpoint = record.CSIRestoreByEndpoint
)

// LvolMonitorSweepS is the lvol monitor's sweep period (sbcli
// constants.py:153-154, 300 s); LvolMonitorCycleS the most one sweep takes
// to reach an lvol (docs/sources.md §4.7: ≤ 30 s cycle).
const (
	LvolMonitorSweepS = 300.0
	LvolMonitorCycleS = 30.0
)

// CSIMonitorS is the CSI node plugin's monitor loop period; each tick adds
// up to CSIMonitorJitterS (docs/sources.md §7: every 3 s + up to 500 ms);
// after an error the (host, volume) backs off exponentially to CSIBackoffMaxS.
const (
	CSIMonitorS       = 3.0
	CSIMonitorJitterS = 0.5
	CSIBackoffMaxS    = 60.0
)

// startLvolMonitor schedules the lvol monitor (sbcli services/lvol_monitor.py
// :598-640): every LvolMonitorSweepS from a seeded phase, each lvol is
// checked after a seeded delay within LvolMonitorCycleS; on every
// non-leader node of its lvstore (secondary, tertiary; the primary is
// checked, never repaired) a missing subsystem is re-created with its
// namespaces (explicit NSIDs, add_lvol_thread) before the listener at the
// lvol's current lvstore port, a missing listener is re-added, and a
// missing namespace (check_subsystem with the lvol's ns_uuid,
// lvol_monitor.py:605-612: "subsystem missing or has no namespace") is
// re-added at its own NSID (add_lvol_thread's explicit nsid)
// (repair_lvol_registration_on_non_leader, storage_node_ops.py:9936).
// Each namespaced volume's member is an lvol checked this way; a member
// present at another NSID passes the check (it is looked up by uuid)
// [inference], and a re-add whose NSID another member holds fails.
// An lvol in migration is skipped [assumption: the monitor leaves an lvol
// the migration task holds alone].
func (w *World) startLvolMonitor() {
	var sweep func()
	sweep = func() {
		for _, v := range w.volumes {
			w.after(w.uniform(0, LvolMonitorCycleS), func() { w.repairLvol(v) })
		}
		w.after(LvolMonitorSweepS, sweep)
	}
	w.after(w.uniform(0, LvolMonitorSweepS), sweep)
}

// repairLvol is one lvol monitor check of v; it returns the repairs made.
func (w *World) repairLvol(v *Volume) int {
	if v.migration != nil {
		return 0
	}
	n := 0
	for k, ep := range w.listenerEndpoints(v.NQN, v.LVS) {
		if k == 0 || ep.node.down || ep.node.crashed {
			continue
		}
		ts, ok := ep.node.subsystems[v.NQN]
		if !ok {
			ts = ep.node.ensureSubsystem(v)
		}
		if _, has := ts.listener(ep.port); !has || !ok {
			ts.addListener(ep.port, haANA(k))
			n++
		}
		for _, id := range v.NSIDs {
			if _, has := ts.nsidOf(id); !has {
				if _, added := ts.addNS(id, id, w.rng); added {
					n++
				}
			}
		}
	}
	if n > 0 {
		w.monitorRepairs += int64(n)
	}
	return n
}

// startCSIRestore schedules the CSI node plugin's monitor loop on every
// consumer host: each tick, every path of a consumed volume (a listener
// of its current lvstore) that the variant finds missing is connected with
// the CSI driver's options; a failed connect backs the (host, volume) off
// exponentially to CSIBackoffMaxS.
func (w *World) startCSIRestore() {
	type key struct{ h, v int }
	backoff := map[key]float64{}
	next := map[key]float64{}
	var tick func()
	tick = func() {
		for _, v := range w.volumes {
			for _, hi := range v.Consumers {
				k := key{hi, v.Index}
				if w.now < next[k] {
					continue
				}
				if err := w.restorePaths(w.hosts[hi], v); err != nil {
					backoff[k] = min(CSIBackoffMaxS, max(2*backoff[k], CSIMonitorS))
					next[k] = w.now + backoff[k]
				} else {
					backoff[k] = 0
				}
			}
		}
		w.after(CSIMonitorS+w.uniform(0, CSIMonitorJitterS), tick)
	}
	w.after(CSIMonitorS+w.uniform(0, CSIMonitorJitterS), tick)
}

// restorePaths connects h's missing paths of v; the first error is returned.
func (w *World) restorePaths(h *Host, v *Volume) error {
	attachedAt := map[string]bool{} // ip:port, and ip alone
	for _, c := range h.ctrls {
		if c.Spec.NQN != v.NQN || c.State == nvmeof.StateDeleting || c.State == nvmeof.StateDeletingNoIO || c.State == nvmeof.StateDead {
			continue
		}
		attachedAt[c.Spec.Traddr+":"+c.Spec.Trsvcid] = true
		attachedAt[c.Spec.Traddr] = true
	}
	var first error
	for _, ep := range w.listenerEndpoints(v.NQN, v.LVS) {
		if attachedAt[ep.node.IP+":"+strconv.Itoa(ep.port)] || (w.cfg.CSIRestore == CSIRestoreByIP && attachedAt[ep.node.IP]) {
			continue
		}
		c, err := h.connect(ep.target(v.NQN, CSIConnectOptions))
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		c.Origin = "csi"
		w.csiRestores++
	}
	return first
}

// MonitorRepairs and CSIRestores count the lvol monitor's repairs (a
// listener, with its subsystem when that was gone, or a namespace)
// and the CSI driver's restored paths so far.
func (w *World) MonitorRepairs() int64 { return w.monitorRepairs }

// CSIRestores: see MonitorRepairs.
func (w *World) CSIRestores() int64 { return w.csiRestores }
