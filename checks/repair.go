package checks

import (
	"fmt"
	"math"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// Bounds of the sourced repairs a settle period may have to wait for,
// seconds (docs/sources.md):
//
//   - LvolMonitorRepairS: sbcli's lvol monitor re-creates a non-leader's
//     deleted subsystem and listener, or re-adds a missing namespace, on
//     its sweep every 300 s, reaching each lvol within about 30 s of the
//     sweep's start (§4.7); an lvol in migration waits for the next sweep;
//   - CSIRestoreS: the CSI driver's monitor reconnects a published ip:port
//     without a controller every 3 s (+ up to 0.5 s jitter), backing off
//     to 60 s while the connect fails (§7).
const (
	LvolMonitorRepairS = 300 + 30.0
	CSIRestoreS        = 60 + 3.5
)

// RepairWindowS is how long after a path went missing, or a namespace went
// from a node, the sourced repairs the run's model enables may still bring
// it back: the lvol monitor's repair then the CSI restore's reconnect
// (393.5 s) with --lvol-monitor, the CSI restore alone (63.5 s) with
// --csi-restore ip or ip-port, 0 with neither (plan.params.model). A
// settle period at least this long judges the end state after them
// (scenario.DefaultParams' 400 s); a shorter one (--workload=fio's)
// leaves what they may still repair unjudged (repairPending).
func RepairWindowS(plan record.Plan) float64 {
	m := plan.Params.Model
	w := 0.0
	if m.CSIRestore != "" && m.CSIRestore != record.CSIRestoreOff {
		w = CSIRestoreS
	}
	if m.LvolMonitor {
		w += LvolMonitorRepairS
	}
	return w
}

// repairPending says why a finding on subsystem nqn at the end of the
// settle period may still be repaired — the sourced repairs' window
// (RepairWindowS) from since, or from the end of the subsystem's last
// migration when that is later (the lvol monitor skips an lvol in
// migration), reaches past the record's end — or "" when it may not.
// since is when the finding began (+Inf when unknown: the end of the
// subsystem's last migration, or the run's start, stands for it).
func (r *runIndex) repairPending(nqn string, since float64) string {
	w := RepairWindowS(r.plan)
	if w <= 0 {
		return ""
	}
	from := since
	if math.IsInf(from, 1) {
		from = 0
	}
	for _, mg := range r.migrations {
		if mg.nqn == nqn && !math.IsInf(mg.terminal, 1) && mg.terminal > from {
			from = mg.terminal
		}
	}
	if r.settleEnd-from >= w {
		return ""
	}
	return fmt.Sprintf("a sourced repair may still come: the record ends %s after %s, within the %s the run's repairs may take (lvol monitor, CSI restore: docs/sources.md §4.7, §7; settle %s)",
		fmtS(r.settleEnd-from), fmtS(from), fmtS(w), fmtS(r.plan.Params.SettleS))
}

// goneSince is when missing endpoint m's controller went from its host
// (+Inf when the record does not show it there before).
func (r *runIndex) goneSince(m record.MissingEndpoint) float64 {
	if sp, ok := r.seen[m.Host][m.NQN+"\x00"+m.Endpoint]; ok && sp.gone > sp.lastSeen {
		return sp.gone
	}
	return math.Inf(1)
}

// repairableLeak reports whether a sourced repair may still fix a leak of
// this kind: the lvol monitor re-adds a namespace missing on a node
// (no-namespace, controller-not-contributing).
func repairableLeak(kind string) bool {
	return kind == string(nvmeof.DefectNoNamespace) || kind == string(nvmeof.DefectControllerNotContributing)
}
