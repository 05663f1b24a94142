package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// Causes of a failed path validation, named as docs/sources.md §9.4 names
// them. ValidationFailure.Cause is one of these; "injected fault"
// and "unexplained" carry a qualifier in parentheses (the fault kind, the
// failure's signal).
const (
	// CauseSubsystemLoss: the endpoint's node did not hold the volume's
	// subsystem (the target answered "Could not find subsystem") after an
	// earlier migration of the same volume was cancelled before continue —
	// sbcli's _cleanup_created deletes the subsystem on the source's tertiary
	// (SB migration_controller.py:247-311, docs/sources.md §4.4) until the
	// lvol monitor repairs it. A connecting leak failing at its own target
	// address in that window is its symptom (docs/sources.md §5.4: only then
	// can a connecting leak fail a validation); the fixed operator fails the
	// same migration because its connect does not take effect.
	CauseSubsystemLoss = "sbcli subsystem-loss window"
	// CauseZeroLegLeak: a live controller an earlier failed migration's
	// validation left, with no leg or fewer legs than the subsystem has
	// namespaces (docs/sources.md §4.10 mechanisms 1 and 3).
	CauseZeroLegLeak = "live zero/partial-leg leak"
	// CauseParkedLeak: a live leak whose every leg is inaccessible — the
	// target tertiary's listener a pre-continue cancel leaves (docs/sources.md
	// §4.4).
	CauseParkedLeak = "parked leak at tgt.ter"
	// CauseConnectingLeak: a connecting leak while the node held the
	// subsystem (docs/sources.md §5.4 says this cannot fail a validation in
	// the sourced topology; named when it does).
	CauseConnectingLeak = "connecting leak, subsystem present"
	// CauseServingLeak: a live leak with an accessible leg.
	CauseServingLeak = "live serving leak"
	// CauseCompletedPathLeak: a controller left by a migration that
	// completed (its source or target path), which no operator releases
	// (OP 5aa711cc releases only in cancelAndFail and reconcileAbort).
	CauseCompletedPathLeak = "leak of a completed migration's path"
	// CauseMissingLegs: the failing controller was not a leak (this
	// validation's own, or a volume path of the CSI driver) but was live
	// with no leg or fewer legs than the subsystem has namespaces: the
	// namespace was missing or refused on that node — what the cited sbcli
	// defects leave (listener before namespace, a failed re-add in the
	// batch swap, diverging NSIDs the kernel refuses; docs/sources.md
	// §4.10). A control-plane cause the fix does not touch.
	CauseMissingLegs = "live path missing namespaces"
	// CauseFault prefixes "injected fault (<kind>)": an injected fault was
	// active on the failing endpoint's node or port (or the failing host,
	// or the operator) when the validation failed, or ended less than
	// FaultGraceS before.
	CauseFault = "injected fault"
	// CauseUnexplained prefixes "unexplained (<signal>)": none of the
	// above; the signal is how it failed (ValidationFailure.Signal).
	CauseUnexplained = "unexplained"
)

// FaultGraceS is how long after a fault's recovery a validation failure is
// still put down to it: a CONNECT sent while CONNECTs were dropped fails
// only after nvme_core's admin_timeout (60 s, sim/config.go), and the
// validation Job retries 2 s later.
const FaultGraceS = 62.0

// subsystemLossWindowS is how far back before a failure a controller's
// "Connect Invalid Data Parameter, subsysnqn" rejection still shows that
// its node lacked the subsystem: two reconnect_delay (2 s) periods and a
// margin.
const subsystemLossWindowS = 5.0

// FixRemovedCauses are the causes the fixed operator removes: leaks a
// failed validation left (OP 5aa711cc releases a failed validation's paths
// in cancelAndFail and reconcileAbort). The subsystem-loss window is a
// control-plane defect the fix does not touch.
var FixRemovedCauses = []string{CauseZeroLegLeak, CauseParkedLeak, CauseConnectingLeak, CauseServingLeak}

// CauseOrder is the order of the causes in tables and notes.
var CauseOrder = []string{CauseSubsystemLoss, CauseZeroLegLeak, CauseParkedLeak, CauseConnectingLeak, CauseServingLeak,
	CauseCompletedPathLeak, CauseMissingLegs, CauseFault, CauseUnexplained}

// CauseClass is the cause without its qualifier ("injected fault
// (target-restart)" → "injected fault").
func CauseClass(cause string) string {
	c, _, _ := strings.Cut(cause, " (")
	return c
}

// SortedCauses are the keys of counts in CauseOrder, qualified ones by name.
func SortedCauses(counts map[string]int) []string {
	var out []string
	for k := range counts {
		out = append(out, k)
	}
	rank := func(c string) int {
		if i := slices.Index(CauseOrder, CauseClass(c)); i >= 0 {
			return i
		}
		return len(CauseOrder)
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}

// faultWindow is one injected fault: kind, target, [from, to] seconds.
type faultWindow struct {
	kind, target string
	from, to     float64
}

// faultWindows are the injected faults of lines, each from its inject line
// to its recover line (the end of the run if none; an instant fault with
// no recover line ends where it began).
func faultWindows(lines []record.Line, lastT float64) []faultWindow {
	var out []faultWindow
	open := map[string]int{}
	for _, l := range lines {
		if l.Kind != record.KindFault {
			continue
		}
		key := l.Fault + " " + l.Target
		switch l.Action {
		case "inject":
			open[key] = len(out)
			out = append(out, faultWindow{kind: l.Fault, target: l.Target, from: l.T, to: lastT})
		case "recover":
			if i, ok := open[key]; ok {
				out[i].to = l.T
				delete(open, key)
			}
		}
	}
	return out
}

// faultOn is the kind of a fault active at v (see CauseFault), "" if none.
// nodeName maps an endpoint's ip to its node's name.
func faultOn(v ValidationFailure, ws []faultWindow, nodeName map[string]string) string {
	node := nodeName[endpointNode(v.Endpoint)]
	for _, w := range ws {
		if v.AtS < w.from || v.AtS > w.to+FaultGraceS {
			continue
		}
		// Hosts may be storage nodes too (hosts_are_nodes): a fault on the
		// failing host's name hits it as a host only when it is a host
		// fault (reset-controller).
		hit := w.target == "operator" || (v.Host != "" && w.target == v.Host && w.kind == "reset-controller")
		if node != "" {
			hit = hit || w.target == node || w.target == v.Endpoint || w.target == v.Host+"/"+node
		} else if v.Host != "" {
			hit = hit || strings.HasPrefix(w.target, v.Host+"/")
		}
		if hit {
			return w.kind
		}
	}
	return ""
}

// legsKind reads controller ctrl of a host sample: "zero/partial" (no leg,
// or fewer legs than the subsystem has namespaces), "parked" (every leg
// inaccessible), "serving", or "" when the sample does not hold it.
func legsKind(sample record.Line, ctrl string) string {
	for _, c := range sample.Controllers {
		if c.Name != ctrl {
			continue
		}
		nsids := 0
		for _, s := range sample.Subsystems {
			if s.NQN == c.NQN {
				nsids = max(nsids, len(s.NSIDs))
			}
		}
		if len(c.Legs) == 0 || len(c.Legs) < nsids {
			return "zero/partial"
		}
		for _, l := range c.Legs {
			if l.ANA != "inaccessible" {
				return "serving"
			}
		}
		return "parked"
	}
	return ""
}

// leakCause is the cause of a failure on a leak: by the origin's outcome,
// the controller's state and its legs in the host's sample at the failure
// (or the Inspect defect the detail names when no sample holds it).
func leakCause(v ValidationFailure, originCompleted bool, sample record.Line) string {
	switch {
	case originCompleted:
		return CauseCompletedPathLeak
	case v.State != "" && v.State != "live", v.State == "" && strings.Contains(v.Detail, " is connecting"):
		return CauseConnectingLeak
	}
	switch legsKind(sample, v.Controller) {
	case "zero/partial":
		return CauseZeroLegLeak
	case "parked":
		return CauseParkedLeak
	case "serving":
		return CauseServingLeak
	}
	if strings.Contains(v.Detail, "not-contributing") || strings.Contains(v.Detail, "no-namespace") {
		return CauseZeroLegLeak
	}
	return CauseServingLeak
}

// RestartListenerQualifier follows the restart's fault kind in the cause of
// a failure restartLostListener explains: "injected fault (target-restart,
// migration listener lost until cutover)".
const RestartListenerQualifier = ", migration listener lost until cutover"

// restartKinds are the injected faults that end a node's SPDK process, so
// that its whole NVMe-oF configuration is lost and sbcli re-creates what
// its lvol records name (sim StopTarget/StartTarget, CrashNode/BootNode).
var restartKinds = []string{"target-restart", "node-crash"}

// restartLostListener is the kind of the node restart that explains
// failure v at one of its migration's own target addresses (targets, the
// Pending line's), "" if none does. The failure's endpoint is on a node
// whose restart window began before the failure and ended after the
// migration's CreateMigration (createdAt): the node was down at the create,
// whose listener add on it then fails and is only logged (SB
// migration_controller.py:1154-1174, docs/sources.md §4.4), or went down
// after it and lost the listener with the rest of SPDK's in-memory
// configuration. Either way the listener stays missing until the cutover:
// sbcli's restart re-creates the lvols at their record's lvstore port only
// (storage_node_ops.py recreate_lvstore :8921-8938, add_lvol_thread
// :9790-9897), and the migration task re-creates its own target listener
// once, right before its cutover (tasks_runner_lvol_migration.py:723-800
// _ensure_nvmf_state_on_node), which a failed validation never reaches.
// SPDK answers a CONNECT for a present subsystem with no listener at that
// address "Subsystem '%s' does not allow host '%s' to connect at this
// address." (lib/nvmf/ctrlr.c, SCT command-specific / INVALID_HOST;
// docs/sources.md §3), so the failure must show that answer: in its
// detail, or — the fixed operator's "no controller", a connecting leak's
// state — by the node having counted "not allowed" answers since it came
// back (counted(from): its target lines; a host's kernel line carries no
// address, and reading every one would cost reproduce its speed). A
// restart still active, or ended within FaultGraceS, is faultOn's.
func restartLostListener(v ValidationFailure, targets []string, createdAt float64, ws []faultWindow,
	nodeName map[string]string, counted func(from float64) bool) string {
	if !slices.Contains(targets, v.Endpoint) {
		return ""
	}
	node := nodeName[endpointNode(v.Endpoint)]
	for _, w := range ws {
		if w.target != node || !slices.Contains(restartKinds, w.kind) || w.from > v.AtS || w.to < createdAt || w.to > v.AtS {
			continue
		}
		if strings.Contains(v.Detail, "to connect at this address") || counted(max(createdAt, w.to)) {
			return w.kind
		}
	}
	return ""
}

// PodKill is one fio pod that died (its io line with pod_state killed): on
// which host, for which subsystem, when, and why its volume stopped serving
// it (podKillCause).
type PodKill struct {
	Pod   string  `json:"pod"`
	Host  string  `json:"host"`
	NQN   string  `json:"nqn"`
	AtS   float64 `json:"at_s"`
	Cause string  `json:"cause"`
}

// podOutageLookbackS is how far before a pod's kill its outage is looked
// for: the pods' tolerance (5 s, fio_migration_test.py) and a margin.
const podOutageLookbackS = 10.0

// podKillCause says why pod kill k's volume served no I/O. serving are the
// volume's published paths then (the source's while a migration has not
// completed, the target's after); cutover is the migration of the volume in
// its data sync or cutover then ("" if none); missing(ep) reports that the
// host's controller at ep was answered "Could not find subsystem" then.
// When every serving path is accounted for — an injected fault active on
// its node (or on the host's link to it), or the subsystem missing there —
// it is an outage, named path by path: not a cutover pause. Otherwise,
// with a migration in its cutover, "cutover of mig-N"; else unexplained.
func podKillCause(k PodKill, serving []string, cutover string, ws []faultWindow, nodeName map[string]string,
	missing func(ep string) bool) string {
	var down []string
	for _, ep := range serving {
		node := nodeName[endpointNode(ep)]
		why := ""
		for _, w := range ws {
			if (w.target == node || w.target == ep || w.target == k.Host+"/"+node) && w.from <= k.AtS && w.to >= k.AtS {
				why = w.kind
				break
			}
		}
		if why == "" && missing(ep) {
			why = "subsystem missing"
		}
		if why == "" {
			break
		}
		down = append(down, node+" "+why)
	}
	switch {
	case len(serving) > 0 && len(down) == len(serving):
		return "outage: every path down (" + strings.Join(down, ", ") + ")"
	case cutover != "":
		return "cutover of " + cutover
	}
	return CauseUnexplained
}

// podKillsNote groups the killed pods by cause: "5 fio pod(s) killed:
// fio-a, fio-b at 105.9 s — outage: every path down (...)".
func podKillsNote(ks []PodKill) string {
	var order []string
	pods := map[string][]string{}
	at := map[string]float64{}
	for _, k := range ks {
		if _, ok := pods[k.Cause]; !ok {
			order = append(order, k.Cause)
			at[k.Cause] = k.AtS
		}
		pods[k.Cause] = append(pods[k.Cause], k.Pod)
	}
	var parts []string
	for _, c := range order {
		parts = append(parts, fmt.Sprintf("%s from %.1f s — %s", strings.Join(pods[c], ", "), at[c], c))
	}
	out := fmt.Sprintf("%d fio pod(s) killed (no I/O for longer than their tolerance): %s", len(ks), strings.Join(parts, "; "))
	for _, c := range order {
		if strings.HasPrefix(c, "outage") {
			return out + "; an outage is injected faults and sbcli's subsystem loss stacking up, not the incident's " +
				"6 s and 8 s cutover pauses (no sourced cause in the model, docs/sources.md §9.4)"
		}
	}
	return out
}

// notAllowedRose: a node's target lines (see notFoundRose) show a CONNECT
// answered "does not allow host" between from and the first report at or
// after to.
func notAllowedRose(ls []record.Line, from, to float64) bool {
	return counterRose(ls, from, to, func(l record.Line) (int64, bool) {
		if l.NotAllowedConnects == nil {
			return 0, false
		}
		return *l.NotAllowedConnects, true
	})
}
