package sim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
)

// More fault hooks (issue 10): a storage node crash, a consumer host ↔
// node partition, CONNECTs rejected by the target, an operator restart, a
// host-side controller reset and a target ANA flap. Each returns evidence
// of what it changed; each undo is idempotent. Every effect is its own
// flag or rule, so undoing one kind of fault never ends another (a target
// restart's StartTarget does not boot a crashed node, and so on).

type faultState struct {
	// partitions are the cut (host, node) pairs.
	partitions map[partitionKey]bool
	// rejectRules make CONNECTs get rejected ("does not allow host").
	rejectRules []*rejectRule
	// operatorDown is set while the operator is stopped; operatorQueue
	// holds the reconciles that came due meanwhile.
	operatorDown     bool
	operatorQueue    []func()
	operatorDeferred int64
}

type partitionKey struct{ host, node string }

type rejectRule struct {
	node     *Node
	port     int    // 0 = every port of the node
	hostNQN  string // "" = every host
	target   string
	host     string
	rejected int64
}

func (w *World) hostByName(name string) (*Host, error) {
	for _, h := range w.hosts {
		if h.Name == name {
			return h, nil
		}
	}
	return nil, fmt.Errorf("sim: unknown host %q", name)
}

func (w *World) hostByNQN(nqn string) *Host {
	for _, h := range w.hosts {
		if h.NQN == nqn {
			return h
		}
	}
	return nil
}

// connectedTo are host h's controllers connected to node n now (admin
// queue up), in instance order; h nil = every host's.
func (w *World) connectedTo(n *Node, h *Host) []*Ctrl {
	var out []*Ctrl
	for _, ts := range n.sortedSubsystems() {
		for _, c := range ts.ctrls {
			if h == nil || c.host == h {
				out = append(out, c)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].host.Index != out[j].host.Index {
			return out[i].host.Index < out[j].host.Index
		}
		return out[i].Instance < out[j].Instance
	})
	return out
}

func ctrlNames(cs []*Ctrl) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.host.Name + "/" + c.Name()
	}
	return strings.Join(names, " ")
}

// CrashNode makes a storage node crash without restarting: it stops
// answering anything (no RST, as a powered-off machine), so its connected
// controllers' paths go silent — they hear nothing until their keep-alive
// expires (hostnet.go) — and their reconnects' SYNs get no answer (each
// attempt fails after World.synTimeoutS). Idempotent. Assumption: the
// node's data is intact when it boots again (simplyblock's other HA nodes
// keep serving meanwhile); a crash that loses the node's state is not
// modelled.
func (w *World) CrashNode(node string) (map[string]string, error) {
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	if n.crashed {
		return map[string]string{"node": n.Name, "already": "true"}, nil
	}
	n.crashed = true
	ctrls := w.connectedTo(n, nil)
	for _, c := range ctrls {
		c.goSilent("node crashed")
	}
	return map[string]string{"node": n.Name, "connected_controllers": strconv.Itoa(len(ctrls)), "controllers": ctrlNames(ctrls)}, nil
}

// BootNode boots a crashed node: its SPDK target starts empty (its
// configuration was in memory) and sbcli re-creates the node's lvols as
// after a restart (recreateLvols: namespaces before listeners; migration
// target listeners only at cutover). Idempotent; a node that is not
// crashed changes nothing. The evidence counts the subsystems re-created.
func (w *World) BootNode(node string) (map[string]string, error) {
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	if !n.crashed {
		return map[string]string{"node": n.Name, "already": "true"}, nil
	}
	n.crashed = false
	// The connections of the crashed target are gone: a host whose
	// keep-alive has not expired yet gets a reset on its next packet
	// (a host still partitioned from the node gets it when that heals).
	n.loseConfiguration("target rebooted")
	w.resumePaths(nil, n)
	recreated := w.recreateLvols(n)
	return map[string]string{"node": n.Name, "booted": "true", "subsystems_recreated": strconv.Itoa(recreated)}, nil
}

// Partition cuts the network between consumer host and storage node in
// both directions: the paths of the host's controllers connected to the
// node go silent — nothing the node sends reaches them (no ANA or
// namespace notice, no FIN or RST) and the host notices only when a
// keep-alive expires (hostnet.go) — and the SYNs of new connects from the
// host to the node get no answer. Other hosts and nodes are untouched.
// Idempotent. Assumption: a TCP connection survives a partition shorter
// than the host's keep-alive timeout (TCP retransmits; nothing resets it),
// so a controller whose keep-alive has not expired when the partition
// heals keeps working and then hears what the node sent meanwhile.
func (w *World) Partition(host, node string) (map[string]string, error) {
	h, err := w.hostByName(host)
	if err != nil {
		return nil, err
	}
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	k := partitionKey{h.Name, n.Name}
	if w.partitions[k] {
		return map[string]string{"host": h.Name, "node": n.Name, "already": "true"}, nil
	}
	if w.partitions == nil {
		w.partitions = map[partitionKey]bool{}
	}
	w.partitions[k] = true
	ctrls := w.connectedTo(n, h)
	for _, c := range ctrls {
		c.goSilent("network partition")
	}
	return map[string]string{"host": h.Name, "node": n.Name, "connected_controllers": strconv.Itoa(len(ctrls)), "controllers": ctrlNames(ctrls)}, nil
}

// Heal ends Partition of host and node (idempotent). Controllers whose
// keep-alive had not expired yet resume (see Partition); the others are
// reconnecting and succeed at their next attempt.
func (w *World) Heal(host, node string) (map[string]string, error) {
	h, err := w.hostByName(host)
	if err != nil {
		return nil, err
	}
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	k := partitionKey{h.Name, n.Name}
	if !w.partitions[k] {
		return map[string]string{"host": h.Name, "node": n.Name, "already": "true"}, nil
	}
	delete(w.partitions, k)
	resumed := w.resumePaths(h, n)
	return map[string]string{"host": h.Name, "node": n.Name, "resumed_controllers": strconv.Itoa(resumed)}, nil
}

// silentNode reports whether node n is silent to host hostNQN: crashed,
// dropping every packet, or partitioned from that host.
func (w *World) silentNode(n *Node, hostNQN string) bool {
	if n.crashed || n.blackhole {
		return true
	}
	if len(w.partitions) == 0 {
		return false
	}
	h := w.hostByNQN(hostNQN)
	return h != nil && w.partitions[partitionKey{h.Name, n.Name}]
}

// synDropped reports, without counting it, whether a SYN from host
// hostNQN to ip:port gets no answer now (fabricConnect's first two
// cases).
func (w *World) synDropped(ip string, port int, hostNQN string) bool {
	n, ok := w.nodeByIP[ip]
	if !ok {
		return false
	}
	if w.silentNode(n, hostNQN) {
		return true
	}
	for _, r := range w.dropRules {
		if r.node == n && (r.port == 0 || r.port == port) {
			return true
		}
	}
	return false
}

// RejectConnects makes the target reject every Fabrics CONNECT to target
// (a node name or IP, or one ip:port) from host ("" = every host) with
// SPDK's "Subsystem … does not allow host … to connect at this address"
// (no DNR, as SPDK sends it), counted with the node's rejected CONNECTs.
// Established connections are untouched. Injecting the same rule twice is
// an error.
func (w *World) RejectConnects(target, host string) (map[string]string, error) {
	n, port, err := w.resolveTarget(target)
	if err != nil {
		return nil, err
	}
	hostNQN := ""
	if host != "" {
		h, err := w.hostByName(host)
		if err != nil {
			return nil, err
		}
		hostNQN = h.NQN
	}
	for _, r := range w.rejectRules {
		if r.node == n && r.port == port && r.hostNQN == hostNQN {
			return nil, fmt.Errorf("sim: CONNECTs to %s from %q are already rejected", target, host)
		}
	}
	w.rejectRules = append(w.rejectRules, &rejectRule{node: n, port: port, hostNQN: hostNQN, target: target, host: host})
	return map[string]string{"node": n.Name, "port": strconv.Itoa(port), "host": host}, nil
}

// StopRejectingConnects ends RejectConnects(target, host) and returns how
// many CONNECTs it rejected (idempotent: 0 when no such rule).
func (w *World) StopRejectingConnects(target, host string) (int64, error) {
	for i, r := range w.rejectRules {
		if r.target == target && r.host == host {
			w.rejectRules = append(w.rejectRules[:i], w.rejectRules[i+1:]...)
			return r.rejected, nil
		}
	}
	return 0, nil
}

// RejectingConnects is how many CONNECTs the rule RejectConnects(target,
// host) has rejected so far, and whether it is active.
func (w *World) RejectingConnects(target, host string) (int64, bool) {
	for _, r := range w.rejectRules {
		if r.target == target && r.host == host {
			return r.rejected, true
		}
	}
	return 0, false
}

// rejectConnect counts and reports whether a reject rule hits a CONNECT.
func (w *World) rejectConnect(n *Node, port int, hostNQN string) bool {
	hit := false
	for _, r := range w.rejectRules {
		if r.node == n && (r.port == 0 || r.port == port) && (r.hostNQN == "" || r.hostNQN == hostNQN) {
			r.rejected++
			hit = true
		}
	}
	return hit
}

// StopOperator stops the operator (its pod restarts): reconciles that come
// due while it is down — picking up a Pending migration, acting on a Job's
// result, polling the control plane — wait in its work queue. Validation
// and release Jobs are pods of their own and keep running; the control
// plane keeps cutting over on its own. Idempotent.
func (w *World) StopOperator() map[string]string {
	if w.operatorDown {
		return map[string]string{"already": "true"}
	}
	w.operatorDown = true
	w.operatorDeferred = 0
	inProgress := 0
	for _, m := range w.migrations {
		if !m.Terminal() {
			inProgress++
		}
	}
	return map[string]string{"operator": "stopped", "migrations_in_progress": strconv.Itoa(inProgress)}
}

// StartOperator starts the operator again: it re-lists the VolumeMigrations
// and runs every reconcile that waited, each after the usual reconcile
// delay (controller-runtime's initial list fills the work queue).
// Idempotent.
func (w *World) StartOperator() map[string]string {
	if !w.operatorDown {
		return map[string]string{"already": "true"}
	}
	w.operatorDown = false
	q := w.operatorQueue
	w.operatorQueue = nil
	for _, fn := range q {
		w.operatorAfter(w.reconcileDelay(), fn)
	}
	return map[string]string{"operator": "started", "reconciles_deferred": strconv.FormatInt(w.operatorDeferred, 10)}
}

// OperatorDeferred counts the reconciles that waited for the operator since
// the last StopOperator.
func (w *World) OperatorDeferred() int64 { return w.operatorDeferred }

// operatorAfter schedules an operator reconcile d seconds from now; if the
// operator is down then, it waits in the queue until StartOperator.
func (w *World) operatorAfter(d float64, fn func()) {
	w.after(d, func() {
		if w.operatorDown {
			w.operatorQueue = append(w.operatorQueue, fn)
			w.operatorDeferred++
			return
		}
		fn()
	})
}

// ResetControllers is `echo 1 > /sys/class/nvme/nvmeN/reset_controller` on
// every live controller of host (only those at node's IP when node is not
// ""): each goes resetting, tears its queues down and reconnects at once
// (Linux 6.12 drivers/nvme/host/tcp.c:2734-2760 nvme_reset_ctrl_work:
// teardown, connecting, setup; a failed setup falls into the reconnect loop
// with reconnect_delay). A controller that is not live is left alone
// (core.c:207-215 nvme_reset_ctrl refuses with -EBUSY). The
// evidence names the controllers reset.
func (w *World) ResetControllers(host, node string) (map[string]string, error) {
	h, err := w.hostByName(host)
	if err != nil {
		return nil, err
	}
	ip := ""
	if node != "" {
		n, _, err := w.resolveTarget(node)
		if err != nil {
			return nil, err
		}
		ip = n.IP
	}
	var reset []*Ctrl
	for _, c := range h.Controllers() {
		if c.State != nvmeof.StateLive || (ip != "" && c.Spec.Traddr != ip) {
			continue
		}
		reset = append(reset, c)
		c.reset()
	}
	return map[string]string{"host": h.Name, "controllers_reset": strconv.Itoa(len(reset)), "controllers": ctrlNames(reset)}, nil
}

// reset runs the kernel's controller reset on a live controller.
// Assumption: the reset's reconnect is logged as a reconnect attempt
// (the kernel logs nothing of its own for a successful TCP reset).
func (c *Ctrl) reset() {
	c.disconnectTarget("controller reset")
	c.setState(nvmeof.StateResetting)
	c.host.kernelLog(c.Name(), "resetting controller")
	gen := c.gen
	c.host.w.after(teardownS, func() {
		if c.gen != gen {
			return
		}
		c.enterConnecting()
		c.reconnectAttempt()
	})
}

// ForceANAInaccessible makes every listener of node report ANA
// inaccessible (an ANA flap: simplyblock's HA marks a node's paths
// inaccessible, e.g. while it fails over), whatever the control plane set;
// each host controller connected to the node gets an ANA change notice.
// The control plane's own ANA changes meanwhile take effect when the flap
// ends. Idempotent. Assumption: a flap moves every listener of the node at
// once (one ANA group per node).
func (w *World) ForceANAInaccessible(node string) (map[string]string, error) {
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	if n.anaForced {
		return map[string]string{"node": n.Name, "already": "true"}, nil
	}
	flipped := 0
	for _, ts := range n.sortedSubsystems() {
		for _, l := range ts.Listeners {
			if l.ANA == nvmeof.ANAOptimized || l.ANA == nvmeof.ANANonOptimized {
				flipped++
			}
		}
	}
	n.anaForced = true
	ctrls := w.connectedTo(n, nil)
	for _, c := range ctrls {
		c.anaChangeNotice()
	}
	return map[string]string{"node": n.Name, "listeners_made_inaccessible": strconv.Itoa(flipped), "controllers_notified": strconv.Itoa(len(ctrls))}, nil
}

// RestoreANA ends ForceANAInaccessible: the listeners report their own ANA
// state again, announced to connected controllers. Idempotent.
func (w *World) RestoreANA(node string) (map[string]string, error) {
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	if !n.anaForced {
		return map[string]string{"node": n.Name, "already": "true"}, nil
	}
	n.anaForced = false
	ctrls := w.connectedTo(n, nil)
	for _, c := range ctrls {
		c.anaChangeNotice()
	}
	return map[string]string{"node": n.Name, "controllers_notified": strconv.Itoa(len(ctrls))}, nil
}
