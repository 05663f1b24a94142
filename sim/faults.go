package sim

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

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

// DropConnects makes every CONNECT (first connect or reconnect) to target —
// a node name or IP, or one ip:port — get no answer until StopDroppingConnects:
// the initiator waits Config.ConnectTimeoutS and fails. Established
// connections are not affected. Injecting twice is one rule.
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

// StopTarget takes a storage node's target down (its listeners vanish):
// with silent false the process restarts — connections are reset at once
// and new TCP connections are refused; with silent true the node stops
// answering — hosts notice after their keep-alive timeout (kato) and new
// CONNECTs get no answer. The evidence counts the ports that stopped
// listening and the host controllers connected to the node then.
// Idempotent.
func (w *World) StopTarget(node string, silent bool) (map[string]string, error) {
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	if n.down || n.blackhole {
		return map[string]string{"node": n.Name, "already": "true"}, nil
	}
	var ctrls []*Ctrl
	for _, ts := range n.sortedSubsystems() {
		ctrls = append(ctrls, ts.ctrls...)
	}
	var names []string
	for _, c := range ctrls {
		names = append(names, c.host.Name+"/"+c.Name())
	}
	if silent {
		n.blackhole = true
		for _, c := range ctrls {
			c.silentLoss()
		}
	} else {
		n.down = true
		for _, c := range ctrls {
			c.transportLost("target restarted")
		}
	}
	return map[string]string{"node": n.Name, "ports_down": strconv.Itoa(len(n.ports)),
		"connected_controllers": strconv.Itoa(len(ctrls)), "controllers": strings.Join(names, " "),
		"silent": strconv.FormatBool(silent)}, nil
}

// StartTarget brings a stopped node's target back: listeners first, the
// subsystems' namespaces Config.NamespaceAttachDelayS later (announced to
// connected controllers by a namespace-changed notice). The evidence counts
// the host controllers of the node that are connecting at this instant.
// Idempotent.
func (w *World) StartTarget(node string) (map[string]string, error) {
	n, _, err := w.resolveTarget(node)
	if err != nil {
		return nil, err
	}
	if !n.down && !n.blackhole {
		return map[string]string{"node": n.Name, "already": "true"}, nil
	}
	n.down, n.blackhole = false, false
	w.reattachNamespaces(n)
	connecting := 0
	for _, h := range w.hosts {
		for _, c := range h.ctrls {
			if c.Spec.Traddr == n.IP && c.State == nvmeof.StateConnecting {
				connecting++
			}
		}
	}
	return map[string]string{"node": n.Name, "reconnecting_controllers": strconv.Itoa(connecting)}, nil
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

// silentLoss: the target stopped answering; the host notices when a
// keep-alive command times out (kato, sent every kato/2), then starts error
// recovery. Until then the controller looks live and I/O sent to it hangs.
func (c *Ctrl) silentLoss() {
	gen := c.gen
	kato := float64(c.Spec.Options.KeepAliveTmo)
	c.hung = true
	c.host.w.after(c.host.w.uniform(kato, 1.5*kato), func() {
		if c.gen != gen || c.State != nvmeof.StateLive || !c.hung {
			return
		}
		c.host.kernelLog(c.Name(), "I/O tag 0 (0000) type 4 opcode 0x18 (Keep Alive) QID 0 timeout")
		c.transportLost("keep-alive timeout")
	})
}

// namespaceChangeNotice: the target's namespaces changed (asynchronous
// event); the host rescans after the AEN latency.
func (c *Ctrl) namespaceChangeNotice() {
	gen := c.gen
	c.host.w.after(c.host.w.aenLatency(), func() {
		if c.gen != gen || c.State != nvmeof.StateLive || c.ts == nil {
			return
		}
		c.syncNamespaces()
	})
}
