package sim

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"

	"github.com/fiomig/fiomig/nvmeof"
)

// Fault hooks: the faults package (and `fiomig reproduce`) drives these.
// Each returns evidence of what it observed changing; none emits a fault
// event itself (the caller records the fault line with the evidence).

// dropRule makes CONNECTs to a node (port 0) or to one ip:port get no
// answer while it is active.
type dropRule struct {
	node    *Node
	port    int
	dropped int64
}

func (w *World) dropConnect(n *Node, port int) bool {
	hit := false
	for _, r := range w.dropRules {
		if r.node == n && (r.port == 0 || r.port == port) {
			r.dropped++
			hit = true
		}
	}
	return hit
}

// resolveTarget parses a fault target: a node name, a node IP, or ip:port.
func (w *World) resolveTarget(target string) (*Node, int, error) {
	for _, n := range w.nodes {
		if n.Name == target || n.IP == target {
			return n, 0, nil
		}
	}
	if ap, err := netip.ParseAddrPort(target); err == nil {
		if n, ok := w.nodeByIP[ap.Addr().String()]; ok {
			return n, int(ap.Port()), nil
		}
	}
	return nil, 0, fmt.Errorf("sim: fault target %q: not a node name, node IP or node ip:port", target)
}

// DropConnects makes every new connection (first connect or reconnect) to
// target — a node name or IP, or one ip:port — get no answer until
// StopDroppingConnects: its SYN is dropped (a firewall rule on new
// connections only), so the initiator's connect fails when the kernel's
// SYN timers give up (World.synTimeoutS, 3 s). Established connections
// are not affected. Injecting twice is one rule. Each connect attempt the
// rule hits counts once (not each retransmitted SYN).
func (w *World) DropConnects(target string) (map[string]string, error) {
	n, port, err := w.resolveTarget(target)
	if err != nil {
		return nil, err
	}
	for _, r := range w.dropRules {
		if r.node == n && r.port == port {
			return map[string]string{"target": target, "already": "true"}, nil
		}
	}
	w.dropRules = append(w.dropRules, &dropRule{node: n, port: port})
	return map[string]string{"target": target, "node": n.Name, "port": strconv.Itoa(port)}, nil
}

// DroppedConnects is how many CONNECTs the active DropConnects rule for
// target has dropped so far (an nftables rule's counter), and whether such
// a rule is active.
func (w *World) DroppedConnects(target string) (int64, bool) {
	n, port, err := w.resolveTarget(target)
	if err != nil {
		return 0, false
	}
	for _, r := range w.dropRules {
		if r.node == n && r.port == port {
			return r.dropped, true
		}
	}
	return 0, false
}

// StopDroppingConnects ends DropConnects for target (idempotent); the
// evidence counts the CONNECTs that got no answer meanwhile.
func (w *World) StopDroppingConnects(target string) (map[string]string, error) {
	n, port, err := w.resolveTarget(target)
	if err != nil {
		return nil, err
	}
	for i, r := range w.dropRules {
		if r.node == n && r.port == port {
			w.dropRules = append(w.dropRules[:i], w.dropRules[i+1:]...)
			return map[string]string{"target": target, "dropped_connects": strconv.FormatInt(r.dropped, 10)}, nil
		}
	}
	return map[string]string{"target": target, "dropped_connects": "0", "already": "true"}, nil
}

// StopTarget takes a storage node's target down. With silent false the
// SPDK process restarts: connections are reset at once, new TCP
// connections are refused, and its NVMe-oF configuration — every
// subsystem, namespace and listener — is gone, since SPDK keeps it in
// memory only [sourced: docs/sources.md §3, §4.8];
// StartTarget brings back what sbcli re-creates. With silent true the node
// drops every packet: its connected controllers' paths go silent (they
// hear nothing until their keep-alive expires or StartTarget, hostnet.go)
// and new SYNs get no answer; it keeps its configuration [assumption: a
// node that stops answering keeps its SPDK process]. The evidence counts
// the ports that stopped listening, the subsystems lost and the host
// controllers connected to the node then. Idempotent.
func (w *World) StopTarget(node string, silent bool) (map[string]string, error) {
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	if n.down || n.blackhole {
		return map[string]string{"node": n.Name, "already": "true"}, nil
	}
	ctrls := w.connectedTo(n, nil)
	lost := 0
	if silent {
		n.blackhole = true
		for _, c := range ctrls {
			c.goSilent("target silent")
		}
	} else {
		n.down = true
		lost = n.loseConfiguration("target restarted")
	}
	return map[string]string{"node": n.Name, "ports_down": strconv.Itoa(len(n.ports)),
		"connected_controllers": strconv.Itoa(len(ctrls)), "controllers": ctrlNames(ctrls),
		"subsystems_lost": strconv.Itoa(lost), "silent": strconv.FormatBool(silent)}, nil
}

// StartTarget brings a stopped node's target back. After a restart (not
// silent) sbcli re-creates the lvol subsystems the node serves (see
// recreateLvols): each with its namespaces before its listener, so no host
// sees a listener in front of an empty subsystem; a migration's target
// listeners are not among them and come back only at that migration's
// cutover (restoreMigrationListeners). A silent stop ends with the node
// answering again, its configuration unchanged. The evidence counts the
// subsystems re-created and the host controllers of the node that are
// connecting at this instant; controllers whose keep-alive had not expired
// resume and hear what the target sent meanwhile. Idempotent.
func (w *World) StartTarget(node string) (map[string]string, error) {
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	if !n.down && !n.blackhole {
		return map[string]string{"node": n.Name, "already": "true"}, nil
	}
	recreated := 0
	if n.down {
		recreated = w.recreateLvols(n)
	}
	n.down, n.blackhole = false, false
	w.resumePaths(nil, n)
	connecting := 0
	for _, h := range w.hosts {
		for _, c := range h.ctrls {
			if c.Spec.Traddr == n.IP && c.State == nvmeof.StateConnecting {
				connecting++
			}
		}
	}
	return map[string]string{"node": n.Name, "subsystems_recreated": strconv.Itoa(recreated),
		"reconnecting_controllers": strconv.Itoa(connecting)}, nil
}

// loseConfiguration is an SPDK process ending: every subsystem of the node
// goes with its namespaces and listeners, and the connections of the host
// controllers connected to it close (Ctrl.targetClosed). It returns the
// number of subsystems lost.
func (n *Node) loseConfiguration(reason string) int {
	subs := n.sortedSubsystems()
	n.subsystems = map[string]*TargetSubsystem{}
	for _, ts := range subs {
		ts.Listeners = nil
		for _, c := range append([]*Ctrl(nil), ts.ctrls...) {
			c.targetClosed(reason)
		}
	}
	return len(subs)
}

// recreateLvols is sbcli bringing a restarted node's lvols back [sourced:
// simplyblock_core/storage_node_ops.py recreate_lvstore and
// recreate_lvstore_on_non_leader, which re-create every lvol whose DB record
// places it on an lvstore the node serves (get_lvols_by_node_id of that
// lvstore's primary, :8921, :7813) through add_lvol_thread (:9790-9897):
// the subsystem, the namespace at its explicit NSID, then the listener at
// the record's lvstore port — the namespace before the listener — with the
// node's role's ANA state (primary optimized, :8938; others non-optimized,
// :8524)]: for every volume whose record lvstore (recordLVS) the node
// serves, the subsystem with its namespaces and then the listener. A
// subsystem an earlier cancel deleted from the node comes back too
// [inference: the restart re-creates from sbcli's lvol records, not from
// what the node held]. The restart is not migration-aware: a migration's
// target listeners are not among what it re-creates (the migration task
// restores them once, right before its cutover,
// tasks_runner_lvol_migration.py:723-800, restoreMigrationListeners). When
// the restart ends during a cutover whose record still names the source,
// the target listener on the node comes back too, inaccessible inside the
// cutover window and with its HA state after it [assumption: that state
// ensure covers the cutover step, so a restart inside or after the window
// does not lose the target path for good]. The re-creation is one step at
// StartTarget [inference: the restart sequence's duration is the fault's
// down time]. Returns the subsystems re-created.
func (w *World) recreateLvols(n *Node) int {
	k := 0
	for _, v := range w.volumes {
		created := false
		rec := v.recordLVS()
		for role, ep := range w.listenerEndpoints(v.NQN, rec) {
			if ep.node != n {
				continue
			}
			ts := n.ensureSubsystem(v) // subsystem_create, add_ns
			ts.addListener(ep.port, haANA(role))
			created = true
		}
		if m := v.migration; m != nil && rec != m.DstLVS && (m.cp == cpCutover || m.cp == cpCutDone) {
			for role, ep := range w.listenerEndpoints(v.NQN, m.DstLVS) {
				if ep.node != n {
					continue
				}
				ana := nvmeof.ANAInaccessible
				if m.cp == cpCutDone {
					ana = haANA(role)
				}
				n.ensureSubsystem(v).addListener(ep.port, ana)
				created = true
			}
		}
		if created {
			k++
		}
	}
	return k
}

// recordLVS is the lvstore sbcli's lvol record names for the volume (the
// record's node_id and lvs_name). A single-volume migration points the
// record at the target right after its cutover's ANA flip
// (tasks_runner_lvol_migration.py:2221 _apply_migration_to_db, :209-236)
// [sourced]; a batch member only at its cleanup_source (:2594; the batch
// runner's "waiting for apply_migration_to_db() at this worker's
// CLEANUP_SOURCE", tasks_runner_batch_migration.py:197-201) [sourced],
// which the model folds into cpFinish.
func (v *Volume) recordLVS() int {
	if m := v.migration; m != nil && m.cp == cpCutDone && !v.batch() {
		return m.DstLVS
	}
	return v.LVS
}

// restoreMigrationListeners is the migration task ensuring its NVMe-oF
// state on the target nodes at cutover [sourced: sbcli
// tasks_runner_lvol_migration.py:723-792 _ensure_nvmf_state_on_node]: a
// target listener that a target restart took is added again, inaccessible
// (the cutover sets its ANA next). A node without the subsystem is left
// alone here [not modelled: that function's re-create of a missing
// subsystem, :743-751, docs/sources.md §4.10 item 1]. Returns the
// listeners restored.
func (w *World) restoreMigrationListeners(m *Migration) int {
	k := 0
	for _, ep := range w.listenerEndpoints(m.Vol.NQN, m.DstLVS) {
		ts, ok := ep.node.subsystems[m.Vol.NQN]
		if !ok || ep.node.down {
			continue
		}
		if _, has := ts.listener(ep.port); !has {
			ts.addListener(ep.port, nvmeof.ANAInaccessible)
			k++
		}
	}
	return k
}

func (n *Node) sortedSubsystems() []*TargetSubsystem {
	nqns := make([]string, 0, len(n.subsystems))
	for q := range n.subsystems {
		nqns = append(nqns, q)
	}
	sort.Strings(nqns)
	out := make([]*TargetSubsystem, len(nqns))
	for i, q := range nqns {
		out[i] = n.subsystems[q]
	}
	return out
}

// LeaveLeftoverController gives host a controller for subsystem nqn at
// ip:port as a dirty start leaves one (an earlier run's migration path whose
// listener is gone): it connects while a temporary listener exists, then
// the listener goes, so the controller is connecting and retrying with opts.
// Returns the controller's name.
func (w *World) LeaveLeftoverController(host, nqn, addr string, opts ConnectOptions) (string, error) {
	var h *Host
	for _, x := range w.hosts {
		if x.Name == host {
			h = x
		}
	}
	v, ok := w.byNQN[nqn]
	if h == nil || !ok {
		return "", fmt.Errorf("sim: leftover: unknown host %q or subsystem %q", host, nqn)
	}
	n, port, err := w.resolveTarget(addr)
	if err != nil || port == 0 || !n.serves(port) {
		return "", fmt.Errorf("sim: leftover: %q is not a served node ip:port", addr)
	}
	ts := n.ensureSubsystem(v)
	_, had := ts.listener(port)
	if had {
		return "", fmt.Errorf("sim: leftover: %s has a listener for %s at %s", n.Name, v.Name, addr)
	}
	ts.addListener(port, nvmeof.ANAInaccessible)
	c, err := h.connect(ConnectSpec{NQN: nqn, Transport: "tcp", Traddr: n.IP, Trsvcid: strconv.Itoa(port), Options: opts})
	ts.removeListener(port)
	if err != nil {
		return "", err
	}
	c.Origin = "leftover"
	return c.Name(), nil
}
